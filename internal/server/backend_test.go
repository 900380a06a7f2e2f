package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/crdserver/crdserver/internal/server"
)

// A server on memory storage serves, and keeps no etcd data on disk.
func TestMemoryStorage(t *testing.T) {
	dir := t.TempDir()
	client := dynamic.NewForConfigOrDie(startMemory(t, dir))
	ns, err := client.Resource(nsGVR).Get(t.Context(), "default", metav1.GetOptions{})
	if err != nil || ns.GetName() != "default" {
		t.Fatalf("reading the default namespace from memory storage: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd")); !os.IsNotExist(err) {
		t.Errorf("memory storage left an etcd directory (stat: %v)", err)
	}
}

// startMemory starts a server on memory storage in dir, stopped when the
// test ends, and returns its admin config.
func startMemory(t *testing.T, dir string) *rest.Config {
	t.Helper()
	s, err := server.Start(context.Background(), server.Config{DataDir: dir, SecurePort: 0, Storage: server.StorageMemory})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestStorageConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  server.Config
		want string
	}{
		{"unknown storage", server.Config{Storage: "disk"}, `storage "disk": must be etcd or memory`},
		{"memory with etcd servers", server.Config{Storage: server.StorageMemory, EtcdServers: []string{"http://127.0.0.1:2379"}}, "memory storage cannot use etcd servers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.DataDir = t.TempDir()
			s, err := server.Start(context.Background(), tc.cfg)
			if err == nil {
				s.Shutdown()
				t.Fatalf("Start succeeded, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Start: %v, want %q", err, tc.want)
			}
		})
	}
}
