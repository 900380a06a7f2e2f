package etcd

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"unsafe"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/crdserver/crdserver/internal/storage/embedded"
)

// recordingKV keeps the last transaction it was sent, and answers it
// with an empty response.
type recordingKV struct {
	pb.KVClient
	got *pb.TxnRequest
}

func (k *recordingKV) Txn(_ context.Context, in *pb.TxnRequest, _ ...grpc.CallOption) (*pb.TxnResponse, error) {
	k.got = in
	return &pb.TxnResponse{}, nil
}

// putRequest is the transaction the client builds for putAt's compare,
// put and get, holding the value itself rather than a copy.
func TestPutRequest(t *testing.T) {
	value := []byte(`{"apiVersion":"v1","kind":"ConfigMap"}`)
	for _, expectedRev := range []int64{0, 7} {
		for _, lease := range []clientv3.LeaseID{clientv3.NoLease, 5} {
			for _, readOnFailure := range []bool{false, true} {
				rec := &recordingKV{}
				txn := clientv3.NewKVFromKVClient(rec, nil).Txn(context.Background()).
					If(clientv3.Compare(clientv3.ModRevision("/k/a"), "=", expectedRev)).
					Then(clientv3.OpPut("/k/a", string(value), clientv3.WithLease(lease)))
				if readOnFailure {
					txn = txn.Else(clientv3.OpGet("/k/a"))
				}
				if _, err := txn.Commit(); err != nil {
					t.Fatal(err)
				}
				got := putRequest("/k/a", value, expectedRev, lease, readOnFailure)
				if !proto.Equal(got, rec.got) {
					t.Errorf("rev %d, lease %d, read on failure %v:\n got  %v\n want %v", expectedRev, lease, readOnFailure, got, rec.got)
				}
				if v := got.Success[0].GetRequestPut().Value; unsafe.SliceData(v) != unsafe.SliceData(value) {
					t.Errorf("the request holds a copy of the value")
				}
			}
		}
	}
}

// BenchmarkUpdateInProcess is an update of a 4 KB value through the
// embedded etcd's in-process KV, with the transaction putAt builds
// (request) and with the client's (client: a copy of the value more).
func BenchmarkUpdateInProcess(b *testing.B) {
	s, err := embedded.Start(context.Background(), embedded.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	value := bytes.Repeat([]byte("x"), 4096)
	runs := 0 // a key for each run, as b.Run runs a function more than once
	for _, bc := range []struct {
		name   string
		client bool
	}{{"request", false}, {"client", true}} {
		b.Run(bc.name, func(b *testing.B) {
			be, err := New(context.Background(), Config{Endpoints: s.Endpoints(), KV: s.KV(), LocalRevision: s.Revision})
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			if bc.client {
				be.kv = nil
			}
			ctx := context.Background()
			runs++
			key := fmt.Sprintf("/bench/update/%s/%d", bc.name, runs)
			rev, err := be.Create(ctx, key, value)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if rev, err = be.Update(ctx, key, value, rev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
