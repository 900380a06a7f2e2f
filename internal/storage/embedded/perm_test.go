package embedded_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/crdserver/crdserver/internal/storage/embedded"
)

func TestStartDirModes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(dir string) string
	}{
		{"missing parents", func(dir string) string { return filepath.Join(dir, "a", "b") }},
		{"existing 0755", func(dir string) string {
			d := filepath.Join(dir, "d")
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			return d
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := embedded.Start(context.Background(), embedded.Config{Dir: tc.setup(t.TempDir())})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
		})
	}
}
