package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCELRules runs the cases of testdata/cel (see cel_script_test.go)
// on one server: each rule of seed 001's "Validation Rules Examples" and
// "Transition rules examples" tables, the CronTab rules, messages,
// reasons, field paths, optionalOldSelf, compile and cost errors at CRD
// write, ratcheting and the status subresource, with the output kubectl
// prints. The expected outputs are kube-apiserver 1.37's, read from
// k8s.io/apiextensions-apiserver's CEL validator and apimachinery's
// field.Error.
func TestCELRules(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "cel", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no cases in testdata/cel")
	}
	scripts := make([]*celScript, len(files))
	for i, f := range files {
		scripts[i] = loadCELScript(t, f)
	}
	srv := startServer(t, t.TempDir())
	for _, s := range scripts {
		t.Run(strings.TrimSuffix(filepath.Base(s.file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			s.run(t, srv)
		})
	}
}
