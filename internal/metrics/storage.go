package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/storage"
)

// Storage returns s timing every request of one resource's store in
// etcd_request_duration_seconds, with upstream's operation names. Watches
// are not requests and are not timed. A nil m returns s itself.
func (m *Metrics) Storage(s storage.Interface, gr schema.GroupResource) storage.Interface {
	if m == nil {
		return s
	}
	return &timedStorage{Interface: s, etcd: m.etcd, gr: gr}
}

// timedStorage looks its series up at each request, not once: a lookup
// costs far less than the etcd round trip it times, and series appear
// only for operations that happen.
type timedStorage struct {
	storage.Interface
	etcd *prometheus.HistogramVec
	gr   schema.GroupResource
}

func (s *timedStorage) since(op string, start time.Time) {
	s.etcd.WithLabelValues(op, s.gr.Group, s.gr.Resource).Observe(time.Since(start).Seconds())
}

func (s *timedStorage) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	defer s.since("get", time.Now())
	return s.Interface.Get(ctx, key)
}

func (s *timedStorage) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	defer s.since("list", time.Now())
	return s.Interface.List(ctx, prefix, opts)
}

func (s *timedStorage) Count(ctx context.Context, prefix string) (int64, error) {
	defer s.since("listWithCount", time.Now())
	return s.Interface.Count(ctx, prefix)
}

func (s *timedStorage) Create(ctx context.Context, key string, value []byte) (int64, error) {
	defer s.since("create", time.Now())
	return s.Interface.Create(ctx, key, value)
}

func (s *timedStorage) Update(ctx context.Context, key string, value []byte, expectedRev int64) (int64, error) {
	defer s.since("update", time.Now())
	return s.Interface.Update(ctx, key, value, expectedRev)
}

func (s *timedStorage) Delete(ctx context.Context, key string, expectedRev int64) (storage.KeyValue, int64, error) {
	defer s.since("delete", time.Now())
	return s.Interface.Delete(ctx, key, expectedRev)
}

func (s *timedStorage) CurrentRevision(ctx context.Context) (int64, error) {
	defer s.since("getCurrentResourceVersion", time.Now())
	return s.Interface.CurrentRevision(ctx)
}

// LocalRevision passes storage.LocalRevisioner through: without it the
// watch cache would read every consistent get's revision from etcd.
func (s *timedStorage) LocalRevision() (int64, bool) {
	if lr, ok := s.Interface.(storage.LocalRevisioner); ok {
		return lr.LocalRevision()
	}
	return 0, false
}

// RestartWatches passes storage.WatchRestarter through.
func (s *timedStorage) RestartWatches(reason string) { storage.RestartWatches(s.Interface, reason) }

// CreateWithTTL and UpdateWithTTL pass storage.Expirer through, timed
// as the writes they are; a backend without it keeps the key.
func (s *timedStorage) CreateWithTTL(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error) {
	defer s.since("create", time.Now())
	return storage.CreateWithTTL(ctx, s.Interface, key, value, ttl)
}

func (s *timedStorage) UpdateWithTTL(ctx context.Context, key string, value []byte, expectedRev int64, ttl time.Duration) (int64, error) {
	defer s.since("update", time.Now())
	return storage.UpdateWithTTL(ctx, s.Interface, key, value, expectedRev, ttl)
}

var (
	_ storage.LocalRevisioner = (*timedStorage)(nil)
	_ storage.WatchRestarter  = (*timedStorage)(nil)
	_ storage.Expirer         = (*timedStorage)(nil)
)
