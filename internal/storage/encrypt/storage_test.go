package encrypt_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/storage/encrypt"
	"github.com/crdserver/crdserver/internal/storage/etcd"
	"github.com/crdserver/crdserver/internal/storage/etcdtest"
	"github.com/crdserver/crdserver/internal/storage/storagetest"
)

func transformer(t testing.TB, keys string) *encrypt.Transformer {
	t.Helper()
	c, err := encrypt.ParseConfig([]byte(`
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: ['*.*']
  providers:
  - aesgcm: {keys: [` + keys + `]}
  - identity: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	return c.For(schema.GroupResource{Resource: "anything"})
}

var (
	keyA = "{name: a, secret: " + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)) + "}"
	keyB = "{name: b, secret: " + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32)) + "}"
)

func backend(t testing.TB, endpoints []string) *etcd.Backend {
	t.Helper()
	b, err := etcd.New(context.Background(), etcd.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// The encrypted storage keeps every promise of the storage contract.
func TestConformance(t *testing.T) {
	endpoints := etcdtest.StartEmbedded(t)
	storagetest.Run(t, func(t *testing.T) storage.Interface {
		return encrypt.Wrap(backend(t, endpoints), transformer(t, keyA))
	})
}

func TestStoredEncryptedAndRotated(t *testing.T) {
	ctx := context.Background()
	raw := backend(t, etcdtest.StartEmbedded(t))
	const key = "/registry/secrets/default/s"
	value := []byte(`{"data":{"token":"c2VjcmV0"}}`)

	s := encrypt.Wrap(raw, transformer(t, keyA))
	if _, err := s.Create(ctx, key, value); err != nil {
		t.Fatal(err)
	}
	kv, err := raw.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(kv.Value, []byte("k8s:enc:aesgcm:v1:a:")) || bytes.Contains(kv.Value, []byte("c2VjcmV0")) {
		t.Fatalf("etcd holds %q, want ciphertext under key a", kv.Value)
	}

	// Key b added first: a's values read, marked stale, and one write
	// moves them to b.
	rotated := encrypt.Wrap(raw, transformer(t, keyB+","+keyA))
	kv, err = rotated.Get(ctx, key)
	if err != nil || !bytes.Equal(kv.Value, value) || !kv.Stale {
		t.Fatalf("Get after rotation: %q stale=%v err=%v, want the value, stale", kv.Value, kv.Stale, err)
	}
	// An unchanged value is still written when it is stale.
	if _, err := storage.GuaranteedUpdate(ctx, rotated, key, func(cur storage.KeyValue) ([]byte, error) { return cur.Value, nil }); err != nil {
		t.Fatal(err)
	}
	kv, _ = raw.Get(ctx, key)
	if !bytes.HasPrefix(kv.Value, []byte("k8s:enc:aesgcm:v1:b:")) {
		t.Fatalf("after the rewrite etcd holds %q, want key b", kv.Value[:24])
	}
	// The old key can go now.
	onlyB := encrypt.Wrap(raw, transformer(t, keyB))
	if kv, err := onlyB.Get(ctx, key); err != nil || kv.Stale {
		t.Errorf("Get with only key b: stale=%v err=%v", kv.Stale, err)
	}
	// A reader without the key fails rather than return ciphertext.
	if _, err := encrypt.Wrap(raw, transformer(t, keyA)).Get(ctx, key); err == nil {
		t.Error("a value encrypted with an unknown key was read")
	}
	res, err := encrypt.Wrap(raw, transformer(t, keyA)).List(ctx, "/registry/secrets/", storage.ListOptions{})
	if err == nil {
		t.Errorf("List read a value encrypted with an unknown key: %v", res.Items)
	}
}
