package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdLine is the serving line's embedded etcd client URL.
var etcdLine = regexp.MustCompile(`crdserver serving.* etcd=(\S+)`)

// etcdValue reads key straight from srv's embedded etcd, past the server.
func etcdValue(t *testing.T, srv *server, key string) []byte {
	t.Helper()
	var endpoint string
	for _, l := range srv.log.lines() {
		if m := etcdLine.FindStringSubmatch(l); m != nil {
			endpoint = strings.Trim(m[1], `"`)
		}
	}
	if endpoint == "" {
		t.Fatal("the server did not log its etcd endpoint")
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("etcd has no key %s", key)
	}
	return resp.Kvs[0].Value
}

func encryptionConfig(t *testing.T, path, providers string) {
	t.Helper()
	cfg := `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
` + providers
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestEncryptionAtRest(t *testing.T) {
	dir := t.TempDir()
	data, cfg := filepath.Join(dir, "data"), filepath.Join(dir, "encryption.yaml")
	key1 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x11}, 32))
	key2 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x22}, 32))
	const secretKey = "/registry/secrets/default/db"
	password := func(srv *server) string {
		out := kubectl(t, srv, "get", "secret", "db", "-o", "jsonpath={.data.password}")
		b, _ := base64.StdEncoding.DecodeString(out)
		return string(b)
	}

	// A secret written before encryption was configured.
	encryptionConfig(t, cfg, "  - aescbc: {keys: [{name: key1, secret: "+key1+"}]}\n  - identity: {}\n")
	srv := startServerArgs(t, data, "--encryption-provider-config", cfg)
	kubectl(t, srv, "create", "secret", "generic", "db", "--from-literal=password=hunter2")
	kubectl(t, srv, "create", "configmap", "plain", "--from-literal=colour=blue")
	stored := etcdValue(t, srv, secretKey)
	if !bytes.HasPrefix(stored, []byte("k8s:enc:aescbc:v1:key1:")) || bytes.Contains(stored, []byte("hunter2")) || bytes.Contains(stored, []byte("aHVudGVyMg==")) {
		t.Fatalf("etcd holds %q for the secret, want aescbc ciphertext under key1", stored)
	}
	if v := etcdValue(t, srv, "/registry/configmaps/default/plain"); !bytes.Contains(v, []byte("blue")) {
		t.Errorf("configmaps are not listed, yet etcd holds %q", v)
	}
	if got := password(srv); got != "hunter2" {
		t.Errorf("kubectl reads password %q, want hunter2", got)
	}
	srv.stop(t)

	// Rotation, upstream's way: the new key first, the old one still
	// read; rewriting every secret moves it to the new key.
	encryptionConfig(t, cfg, "  - aesgcm: {keys: [{name: key2, secret: "+key2+"}]}\n  - aescbc: {keys: [{name: key1, secret: "+key1+"}]}\n")
	srv = startServerArgs(t, data, "--encryption-provider-config", cfg)
	if got := password(srv); got != "hunter2" {
		t.Errorf("after adding key2, password %q, want hunter2", got)
	}
	kubectlStdin(t, srv, kubectl(t, srv, "get", "secrets", "-A", "-o", "json"), "replace", "-f", "-")
	if v := etcdValue(t, srv, secretKey); !bytes.HasPrefix(v, []byte("k8s:enc:aesgcm:v1:key2:")) {
		t.Fatalf("after kubectl replace etcd holds %q, want aesgcm under key2", v[:min(len(v), 30)])
	}
	srv.stop(t)

	// key1 removed: everything still reads.
	encryptionConfig(t, cfg, "  - aesgcm: {keys: [{name: key2, secret: "+key2+"}]}\n")
	srv = startServerArgs(t, data, "--encryption-provider-config", cfg)
	if got := password(srv); got != "hunter2" {
		t.Errorf("with key2 alone, password %q, want hunter2", got)
	}
}

// With every resource encrypted (*.*) and no identity provider, the
// objects the server writes itself (the kubernetes Service and its
// endpoints) are encrypted too, so it starts, serves them, and etcd holds
// no plaintext of any kind.
func TestEncryptionAllResources(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "encryption.yaml")
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x33}, 32))
	if err := os.WriteFile(cfg, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: ['*.*']
  providers:
  - secretbox: {keys: [{name: k, secret: `+key+`}]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServerArgs(t, filepath.Join(dir, "data"), "--encryption-provider-config", cfg)
	kubectl(t, srv, "create", "configmap", "colours", "--from-literal=sky=blue")
	if out := kubectl(t, srv, "get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP}"); out == "" {
		t.Error("the kubernetes Service has no cluster IP")
	}
	if out := kubectl(t, srv, "get", "configmap", "colours", "-o", "jsonpath={.data.sky}"); out != "blue" {
		t.Errorf("configmap data %q, want blue", out)
	}
	for _, key := range []string{"/registry/configmaps/default/colours", "/registry/services/default/kubernetes", "/registry/namespaces/default"} {
		if v := etcdValue(t, srv, key); !bytes.HasPrefix(v, []byte("k8s:enc:secretbox:v1:k:")) {
			t.Errorf("etcd holds %q at %s, want secretbox ciphertext", v[:min(len(v), 40)], key)
		}
	}
}
