package etcd

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/storage/embedded"
)

// lossyKV commits transactions but, while lose is set, answers them as a
// connection lost after the commit would: Unavailable.
type lossyKV struct {
	pb.KVClient
	lose *atomic.Bool
}

func (k lossyKV) Txn(ctx context.Context, in *pb.TxnRequest, opts ...grpc.CallOption) (*pb.TxnResponse, error) {
	resp, err := k.KVClient.Txn(ctx, in, opts...)
	if err == nil && k.lose.Load() {
		return nil, status.Error(codes.Unavailable, "error reading from server: EOF")
	}
	return resp, err
}

// A create or update whose answer is lost after etcd committed it is
// acknowledged, with its revision; one that did not happen still fails
// with ErrUnavailable.
func TestSettleLostAnswers(t *testing.T) {
	s, err := embedded.Start(context.Background(), embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var lose atomic.Bool
	b, err := New(context.Background(), Config{Endpoints: s.Endpoints(), KV: lossyKV{KVClient: s.KV(), lose: &lose}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()

	lose.Store(true)
	rev, err := b.Create(ctx, "/settle/a", []byte("v1"))
	if err != nil {
		t.Fatalf("create whose answer was lost: %v", err)
	}
	kv, err := b.Get(ctx, "/settle/a")
	if err != nil || kv.ModRevision != rev || string(kv.Value) != "v1" {
		t.Fatalf("after create: %+v, %v; want v1 at %d", kv, err, rev)
	}
	rev2, err := b.Update(ctx, "/settle/a", []byte("v2"), rev)
	if err != nil || rev2 <= rev {
		t.Fatalf("update whose answer was lost: %d, %v", rev2, err)
	}
	// An update that failed its precondition wrote nothing: the value is
	// not the one asked for, so the lost answer stays a failure.
	if _, err := b.Update(ctx, "/settle/a", []byte("v3"), rev); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("stale update whose answer was lost: %v, want ErrUnavailable", err)
	}
}
