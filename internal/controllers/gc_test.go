package controllers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crdserver/crdserver/internal/controllers"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// gcStore is a GCServer over real storage and watch caches, with a delete
// that honours finalizers and preconditions as the handler's does.
type gcStore struct {
	backend   storage.Interface
	resources []controllers.GCResource
	prefix    string
}

type meta struct {
	metav1.ObjectMeta `json:"metadata"`
}

var (
	parts = schema.GroupResource{Group: "example.com", Resource: "parts"}
	racks = schema.GroupResource{Group: "example.com", Resource: "racks"}
)

func newGCStore(ctx context.Context, t *testing.T, backend storage.Interface, prefix string) *gcStore {
	s := &gcStore{backend: backend, prefix: prefix}
	for _, r := range []struct {
		gr         schema.GroupResource
		kind       string
		namespaced bool
	}{{parts, "Part", true}, {racks, "Rack", false}} {
		cache := watchcache.New(backend, s.keyPrefix(r.gr), decodeItem, watchcache.Options{})
		go cache.Start(ctx)
		t.Cleanup(cache.Stop)
		s.resources = append(s.resources, controllers.GCResource{Resource: r.gr, Kind: r.kind, Namespaced: r.namespaced, Cache: cache})
	}
	return s
}

func (s *gcStore) keyPrefix(r schema.GroupResource) string { return s.prefix + r.Resource + "/" }

func (s *gcStore) key(r schema.GroupResource, ns, name string) string {
	if ns == "" {
		return s.keyPrefix(r) + name
	}
	return s.keyPrefix(r) + ns + "/" + name
}

func (s *gcStore) Resources() []controllers.GCResource { return s.resources }

func (s *gcStore) read(r schema.GroupResource, ns, name string) (*meta, storage.KeyValue, error) {
	kv, err := s.backend.Get(context.Background(), s.key(r, ns, name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, kv, controllers.ErrGCNotFound
	}
	if err != nil {
		return nil, kv, err
	}
	var m meta
	if err := json.Unmarshal(kv.Value, &m); err != nil {
		return nil, kv, err
	}
	m.ResourceVersion = strconv.FormatInt(kv.ModRevision, 10)
	return &m, kv, nil
}

func (s *gcStore) Get(_ context.Context, r schema.GroupResource, ns, name string) (*controllers.GCObject, error) {
	m, _, err := s.read(r, ns, name)
	if err != nil {
		return nil, err
	}
	return &controllers.GCObject{UID: m.UID, ResourceVersion: m.ResourceVersion, Deleting: m.DeletionTimestamp != nil, Finalizers: m.Finalizers, OwnerReferences: m.OwnerReferences}, nil
}

func (s *gcStore) Delete(ctx context.Context, r schema.GroupResource, ns, name string, obj *controllers.GCObject, policy metav1.DeletionPropagation) error {
	m, kv, err := s.read(r, ns, name)
	if err != nil {
		return err
	}
	if m.UID != obj.UID || m.ResourceVersion != obj.ResourceVersion {
		return controllers.ErrGCConflict
	}
	switch policy {
	case metav1.DeletePropagationForeground:
		m.Finalizers = append(m.Finalizers, metav1.FinalizerDeleteDependents)
	case metav1.DeletePropagationOrphan:
		m.Finalizers = append(m.Finalizers, metav1.FinalizerOrphanDependents)
	}
	if len(m.Finalizers) == 0 {
		_, _, err = s.backend.Delete(ctx, kv.Key, kv.ModRevision)
	} else {
		now := metav1.Now()
		m.DeletionTimestamp = &now
		data, _ := json.Marshal(m)
		_, err = s.backend.Update(ctx, kv.Key, data, kv.ModRevision)
	}
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return controllers.ErrGCNotFound
	case errors.Is(err, storage.ErrConflict):
		return controllers.ErrGCConflict
	}
	return err
}

func (s *gcStore) Update(ctx context.Context, r schema.GroupResource, ns, name string, uid types.UID, change func(*controllers.GCObject) bool) error {
	for {
		m, kv, err := s.read(r, ns, name)
		if err != nil {
			return err
		}
		o := &controllers.GCObject{UID: m.UID, Finalizers: m.Finalizers, OwnerReferences: m.OwnerReferences}
		if m.UID != uid || !change(o) {
			return nil
		}
		m.Finalizers, m.OwnerReferences = o.Finalizers, o.OwnerReferences
		if m.DeletionTimestamp != nil && len(m.Finalizers) == 0 {
			_, _, err = s.backend.Delete(ctx, kv.Key, kv.ModRevision)
		} else {
			data, _ := json.Marshal(m)
			_, err = s.backend.Update(ctx, kv.Key, data, kv.ModRevision)
		}
		if errors.Is(err, storage.ErrNotFound) {
			return controllers.ErrGCNotFound
		}
		if !errors.Is(err, storage.ErrConflict) {
			return err
		}
	}
}

// create stores an object of r with uid name-uid.
func (s *gcStore) create(t *testing.T, r schema.GroupResource, ns, name string, owners ...metav1.OwnerReference) metav1.OwnerReference {
	t.Helper()
	m := meta{metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(name + "-uid"), OwnerReferences: owners}}
	data, _ := json.Marshal(m)
	if _, err := s.backend.Create(context.Background(), s.key(r, ns, name), data); err != nil {
		t.Fatal(err)
	}
	kind := map[schema.GroupResource]string{parts: "Part", racks: "Rack"}[r]
	return metav1.OwnerReference{APIVersion: "example.com/v1", Kind: kind, Name: name, UID: m.UID, BlockOwnerDeletion: ptr(true)}
}

func ptr[T any](v T) *T { return &v }

// waitKeys waits until exactly want remain under r's prefix.
func (s *gcStore) waitKeys(t *testing.T, r schema.GroupResource, want ...string) {
	t.Helper()
	slices.Sort(want)
	var got []string
	for range 600 {
		res, err := s.backend.List(context.Background(), s.keyPrefix(r), storage.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, kv := range res.Items {
			got = append(got, kv.Key[len(s.keyPrefix(r)):])
		}
		if slices.Equal(got, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: %d remain %.10q..., want %q", r, len(got), got, want)
}

// Several collectors on one storage, as replicas run them: owners deleted
// in the background, in the foreground and orphaning, a cluster-scoped
// owner and a dangling reference all end as with one collector.
func TestGarbageCollectorReplicas(t *testing.T) {
	backend := newBackend(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newGCStore(ctx, t, backend, "/test/gc/")

	bg := s.create(t, parts, "ns", "bg")
	fg := s.create(t, parts, "ns", "fg")
	orphan := s.create(t, parts, "ns", "orphan")
	rack := s.create(t, racks, "", "rack")
	for i := range 100 {
		s.create(t, parts, "ns", fmt.Sprintf("bg-%d", i), bg)
		s.create(t, parts, "ns", fmt.Sprintf("fg-%d", i), fg)
		s.create(t, parts, "other", fmt.Sprintf("racked-%d", i), rack)
	}
	s.create(t, parts, "ns", "orphan-0", orphan)
	s.create(t, parts, "ns", "dangling", metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Part", Name: "ghost", UID: "ghost-uid"})

	var wg sync.WaitGroup
	for range 3 {
		gc := controllers.NewGarbageCollector(s, nil)
		wg.Go(func() { gc.Run(ctx) })
	}
	for _, o := range []struct {
		r      schema.GroupResource
		ns     string
		ref    metav1.OwnerReference
		policy metav1.DeletionPropagation
	}{{parts, "ns", bg, metav1.DeletePropagationBackground}, {parts, "ns", fg, metav1.DeletePropagationForeground},
		{parts, "ns", orphan, metav1.DeletePropagationOrphan}, {racks, "", rack, metav1.DeletePropagationBackground}} {
		cur, err := s.Get(ctx, o.r, o.ns, o.ref.Name)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, o.r, o.ns, o.ref.Name, cur, o.policy); err != nil {
			t.Fatal(err)
		}
	}
	s.waitKeys(t, parts, "ns/orphan-0")
	s.waitKeys(t, racks)
	if o, err := s.Get(ctx, parts, "ns", "orphan-0"); err != nil || len(o.OwnerReferences) != 0 {
		t.Errorf("orphan-0: %+v, %v; want it without owners", o, err)
	}
	cancel()
	wg.Wait() // Run returns once its workers have
}

// unseenParts is the store with a parts cache that never starts: the
// collector's graph never sees a part, as when a resource's watch lags
// behind its owner's deletion.
type unseenParts struct{ *gcStore }

func (u unseenParts) Resources() []controllers.GCResource {
	out := slices.Clone(u.gcStore.Resources())
	for i, r := range out {
		if r.Resource == parts {
			out[i].Cache = watchcache.New(u.backend, u.keyPrefix(parts), decodeItem, watchcache.Options{})
		}
	}
	return out
}

// An owner deleted orphaning its dependents leaves them without their
// reference to it even when the graph had not seen them yet: kept, the
// reference would have them collected later as dependents of a gone owner.
func TestGarbageCollectorOrphansUnseenDependents(t *testing.T) {
	backend := newBackend(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newGCStore(ctx, t, backend, "/test/gc-unseen/")
	rack := s.create(t, racks, "", "rack")
	s.create(t, parts, "ns", "p1", rack)
	s.create(t, parts, "other", "p2", rack, metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Rack", Name: "spare", UID: "spare-uid"})
	s.create(t, parts, "ns", "p3") // names no owner

	gc := controllers.NewGarbageCollector(unseenParts{s}, nil)
	var wg sync.WaitGroup
	wg.Go(func() { gc.Run(ctx) })
	defer func() {
		cancel()
		wg.Wait()
	}()
	cur, err := s.Get(ctx, racks, "", "rack")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, racks, "", "rack", cur, metav1.DeletePropagationOrphan); err != nil {
		t.Fatal(err)
	}
	s.waitKeys(t, racks)
	for _, p := range []struct {
		ns, name string
		want     []types.UID
	}{{"ns", "p1", nil}, {"other", "p2", []types.UID{"spare-uid"}}, {"ns", "p3", nil}} {
		o, err := s.Get(ctx, parts, p.ns, p.name)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		var got []types.UID
		for _, r := range o.OwnerReferences {
			got = append(got, r.UID)
		}
		if !slices.Equal(got, p.want) {
			t.Errorf("%s owners after the rack's orphaning deletion: %v, want %v", p.name, got, p.want)
		}
	}
}
