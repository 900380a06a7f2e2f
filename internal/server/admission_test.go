package server

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage/memory"
)

// TestStoredAdmissionLists: admission's registrations are listed again
// only when their cache moved on; a list meanwhile is the last one, and a
// registration stored after it is in the next.
func TestStoredAdmissionLists(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	def := builtin.MutatingWebhookConfigurations()
	backend := memory.New()
	defer backend.Close()
	s := newStores(ctx, backend, registry.New([]*registry.Definition{def}), "/registry", slog.New(slog.DiscardHandler), nil)
	defer s.stop()
	st := s.ensure(def)
	if err := st.Cache.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	sa := newStoredAdmission(s)
	// store writes a configuration and waits until the cache has it.
	store := func(name string) {
		t.Helper()
		rev, err := backend.Create(ctx, st.Key("", name), []byte(`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","metadata":{"name":"`+name+`"}}`))
		if err != nil {
			t.Fatal(err)
		}
		for st.Cache.Revision() < rev {
			if ctx.Err() != nil {
				t.Fatalf("the cache never reached revision %d", rev)
			}
			time.Sleep(time.Millisecond)
		}
	}
	names := func() []string {
		t.Helper()
		items, err := sa.WebhookConfigurations(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range items {
			out = append(out, it.Name)
		}
		return out
	}
	store("a")
	if got := names(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("listed %v, want [a]", got)
	}
	first, _ := sa.WebhookConfigurations(ctx, true)
	again, _ := sa.WebhookConfigurations(ctx, true)
	if &first[0] != &again[0] {
		t.Error("the cache did not move on, and the list was made again")
	}
	store("b")
	if got := names(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("after a second registration, listed %v, want [a b]", got)
	}
}
