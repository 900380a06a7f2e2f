package etcd_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/storage/etcdtest"
)

// value2K is about the size of a small custom resource in JSON.
var value2K = bytes.Repeat([]byte("x"), 2048)

func BenchmarkCreate(b *testing.B) {
	s := newBackend(b, etcdtest.StartEmbedded(b))
	ctx := context.Background()
	i := 0
	for b.Loop() {
		if _, err := s.Create(ctx, fmt.Sprintf("/bench/create/%d", i), value2K); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkGet(b *testing.B) {
	s := newBackend(b, etcdtest.StartEmbedded(b))
	ctx := context.Background()
	if _, err := s.Create(ctx, "/bench/get", value2K); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Get(ctx, "/bench/get"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpdate(b *testing.B) {
	s := newBackend(b, etcdtest.StartEmbedded(b))
	ctx := context.Background()
	rev, err := s.Create(ctx, "/bench/update", value2K)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if rev, err = s.Update(ctx, "/bench/update", value2K, rev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkList reads 1000 values of 2 KiB in one List.
func BenchmarkList(b *testing.B) {
	s := newBackend(b, etcdtest.StartEmbedded(b))
	ctx := context.Background()
	const n = 1000
	for i := range n {
		if _, err := s.Create(ctx, fmt.Sprintf("/bench/list/%04d", i), value2K); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(n * int64(len(value2K)))
	for b.Loop() {
		res, err := s.List(ctx, "/bench/list/", storage.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Items) != n {
			b.Fatalf("listed %d items, want %d", len(res.Items), n)
		}
	}
}
