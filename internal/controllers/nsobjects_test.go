package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/controllers"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// ensured records the namespaces the controller ensures its object in.
type ensured chan string

func (e ensured) ensure(_ context.Context, ns string) error {
	e <- ns
	return nil
}

// The controller acts on active namespaces, and again when a namespace's
// default ServiceAccount is deleted; not on terminating namespaces nor on
// other ServiceAccounts, nor on changes of the default one, which is not
// its to keep as it was.
func TestNamespaceObjectsFollowNamespaces(t *testing.T) {
	backend := newBackend(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	put := func(key, value string) {
		t.Helper()
		if _, err := backend.Create(ctx, key, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	del := func(key string) {
		t.Helper()
		if _, _, err := backend.Delete(ctx, key, 0); err != nil {
			t.Fatal(err)
		}
	}
	put("/sa-test/ns/a", `{"metadata":{"name":"a"}}`)
	put("/sa-test/ns/x", terminatingNS)
	put("/sa-test/sa/a/default", `{"metadata":{"name":"default","namespace":"a"}}`)
	put("/sa-test/sa/a/other", `{"metadata":{"name":"other","namespace":"a"}}`)
	namespaces := watchcache.New(backend, "/sa-test/ns/", decodeItem, watchcache.Options{})
	accounts := watchcache.New(backend, "/sa-test/sa/", decodeNamespacedItem, watchcache.Options{})
	go namespaces.Start(ctx)
	go accounts.Start(ctx)

	got := make(ensured, 10)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		(&controllers.NamespaceObjects{Name: "test", Namespaces: namespaces, Objects: accounts, Object: "default", Ensure: got.ensure}).Run(ctx)
	}()
	expect := func(want string) {
		t.Helper()
		select {
		case ns := <-got:
			if ns != want {
				t.Fatalf("ensured in %q, want %q", ns, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("nothing ensured, want %q", want)
		}
	}
	expect("a")
	del("/sa-test/sa/a/other")
	// A deletion before the controller's watch of ServiceAccounts starts
	// is part of the state it starts from, not an event: delete again
	// until one is seen.
	for attempt, deleted := 0, false; !deleted; attempt++ {
		if attempt == 30 {
			t.Fatal("the deletion of the default service account was never acted on")
		}
		del("/sa-test/sa/a/default")
		select {
		case ns := <-got:
			if ns != "a" {
				t.Fatalf("ensured in %q, want %q", ns, "a")
			}
			deleted = true
		case <-time.After(time.Second):
			put("/sa-test/sa/a/default", `{"metadata":{"name":"default","namespace":"a"}}`)
		}
	}
	put("/sa-test/sa/a/default", `{"metadata":{"name":"default","namespace":"a"}}`)
	change(t, backend, "/sa-test/sa/a/default", `{"metadata":{"name":"default","namespace":"a","labels":{"x":"y"}}}`)
	put("/sa-test/ns/b", `{"metadata":{"name":"b"}}`)
	expect("b")
	select {
	case ns := <-got:
		t.Errorf("ensured again in %q", ns)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	<-returned
}

// change writes value at key, which exists.
func change(t *testing.T, backend storage.Interface, key, value string) {
	t.Helper()
	if _, err := storage.GuaranteedUpdate(context.Background(), backend, key, func(storage.KeyValue) ([]byte, error) { return []byte(value), nil }); err != nil {
		t.Fatal(err)
	}
}

// An object whose content is the controller's (the kube-root-ca.crt
// ConfigMap) is ensured again when it changes.
func TestOwnedNamespaceObjectsFollowChanges(t *testing.T) {
	backend := newBackend(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for key, value := range map[string]string{
		"/owned-test/ns/a":                  `{"metadata":{"name":"a"}}`,
		"/owned-test/cm/a/kube-root-ca.crt": `{"metadata":{"name":"kube-root-ca.crt","namespace":"a"},"data":{"ca.crt":"x"}}`,
	} {
		if _, err := backend.Create(ctx, key, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	namespaces := watchcache.New(backend, "/owned-test/ns/", decodeItem, watchcache.Options{})
	configMaps := watchcache.New(backend, "/owned-test/cm/", decodeNamespacedItem, watchcache.Options{})
	go namespaces.Start(ctx)
	go configMaps.Start(ctx)
	got := make(ensured, 10)
	go (&controllers.NamespaceObjects{Name: "test", Namespaces: namespaces, Objects: configMaps, Object: "kube-root-ca.crt", Owned: true, Ensure: got.ensure}).Run(ctx)
	if ns := <-got; ns != "a" {
		t.Fatalf("ensured in %q, want a", ns)
	}
	// A change before the controller's watch starts is not an event:
	// change again until one is seen.
	for attempt := 0; ; attempt++ {
		if attempt == 30 {
			t.Fatal("the change of the ConfigMap was never acted on")
		}
		change(t, backend, "/owned-test/cm/a/kube-root-ca.crt", fmt.Sprintf(`{"metadata":{"name":"kube-root-ca.crt","namespace":"a"},"data":{"ca.crt":"%d"}}`, attempt))
		select {
		case ns := <-got:
			if ns != "a" {
				t.Fatalf("ensured in %q, want a", ns)
			}
			return
		case <-time.After(time.Second):
		}
	}
}

func decodeNamespacedItem(key string, value []byte, rev int64) (*watchcache.Item, error) {
	it, err := decodeItem(key, value, rev)
	if err == nil {
		it.Namespace = "a"
	}
	return it, err
}
