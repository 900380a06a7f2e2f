package webhook_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/webhook"
	"github.com/crdserver/crdserver/internal/webhook/webhooktest"
)

// BenchmarkPost calls a local HTTP/2 webhook that answers 1 KiB at once,
// with a 2 KiB body as an AdmissionReview of a small object is: one call
// at a time, and 16 at once as the admission workload makes them. The
// webhook server runs in the same process, so its CPU and allocations
// count too.
func BenchmarkPost(b *testing.B) {
	answer := bytes.Repeat([]byte("a"), 1<<10)
	srv := webhooktest.Start(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
	c, err := (&webhook.Manager{}).Client(webhook.ClientConfig{URL: srv.URL + "/admit", CABundle: srv.CABundle})
	if err != nil {
		b.Fatal(err)
	}
	body := bytes.Repeat([]byte("b"), 2<<10)
	call := func(b *testing.B) {
		if got, err := c.Post(context.Background(), body, 10*time.Second); err != nil || len(got) != len(answer) {
			b.Fatalf("%d bytes, %v", len(got), err)
		}
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			call(b)
		}
	})
	b.Run("parallel16", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				call(b)
			}
		})
	})
}

// BenchmarkPostReview calls a local HTTP/2 webhook as a list's
// conversion does: four reviews at once, each 1.75 MB (500 objects of
// 3.5 KB) each way, the webhook answering with a declared length, as
// net/http does for an answer written at once with its Content-Length.
func BenchmarkPostReview(b *testing.B) {
	const size = 1750 << 10
	answer := bytes.Repeat([]byte("a"), size)
	srv := webhooktest.Start(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		w.Write(answer)
	}))
	c, err := (&webhook.Manager{}).Client(webhook.ClientConfig{URL: srv.URL + "/convert", CABundle: srv.CABundle})
	if err != nil {
		b.Fatal(err)
	}
	body := bytes.Repeat([]byte("b"), size)
	b.SetBytes(2 * size)
	b.ReportAllocs()
	b.SetParallelism(2) // 4 at once on 2 cores, as parallelReviews
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if got, err := c.Post(context.Background(), body, 10*time.Second); err != nil || len(got) != len(answer) {
				b.Fatalf("%d bytes, %v", len(got), err)
			}
		}
	})
}
