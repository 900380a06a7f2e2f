package controllers_test

import (
	"context"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/controllers"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// ensured records the namespaces the controller asks for a default
// ServiceAccount in.
type ensured chan string

func (e ensured) EnsureServiceAccount(_ context.Context, ns, name string) error {
	if name == "default" {
		e <- ns
	}
	return nil
}

// The controller acts on active namespaces, and again when a namespace's
// default ServiceAccount is deleted; not on terminating namespaces nor on
// other ServiceAccounts.
func TestServiceAccountsFollowNamespaces(t *testing.T) {
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
		(&controllers.ServiceAccounts{Namespaces: namespaces, Accounts: accounts, Server: got}).Run(ctx)
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

func decodeNamespacedItem(key string, value []byte, rev int64) (*watchcache.Item, error) {
	it, err := decodeItem(key, value, rev)
	if err == nil {
		it.Namespace = "a"
	}
	return it, err
}
