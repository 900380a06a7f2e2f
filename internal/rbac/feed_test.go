package rbac_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authz"
	"github.com/crdserver/crdserver/internal/rbac"
	"github.com/crdserver/crdserver/internal/storage/etcd"
	"github.com/crdserver/crdserver/internal/storage/etcdtest"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// TestFeed: an index fed by watch caches on real etcd holds what was
// stored before the feed started, follows creates, updates and deletes,
// and so decides as the stored objects say.
func TestFeed(t *testing.T) {
	backend, err := etcd.New(context.Background(), etcd.Config{Endpoints: etcdtest.StartEmbedded(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	put := func(key string, obj any) {
		t.Helper()
		data, _ := json.Marshal(obj)
		if kv, err := backend.Get(ctx, key); err == nil {
			_, err = backend.Update(ctx, key, data, kv.ModRevision)
			if err != nil {
				t.Fatal(err)
			}
			return
		}
		if _, err := backend.Create(ctx, key, data); err != nil {
			t.Fatal(err)
		}
	}
	cache := func(prefix string) *watchcache.Cache {
		c := watchcache.New(backend, prefix, decode, watchcache.Options{})
		go c.Start(ctx)
		return c
	}
	const p = "/registry/rbac.authorization.k8s.io/"
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}}
	put(p+"clusterroles/reader", reader)
	put(p+"rolebindings/team/bob", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "bob"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "bob"}}})

	ix := rbac.NewIndex()
	f := &rbac.Feed{Index: ix, Sources: rbac.Sources{
		Roles: cache(p + "roles/"), ClusterRoles: cache(p + "clusterroles/"),
		RoleBindings: cache(p + "rolebindings/"), ClusterRoleBindings: cache(p + "clusterrolebindings/"),
	}}
	go f.Run(ctx)
	select {
	case <-f.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the feed did not load the stored objects")
	}
	z := &rbac.Authorizer{Index: ix}
	bob := &authn.User{Name: "bob"}
	get := authz.Attributes{User: bob, Verb: "get", Resource: "configmaps", Namespace: "team", Name: "c", ResourceRequest: true}
	decides := func(want authz.Decision, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			d, _, _ := z.Authorize(ctx, get)
			if d == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: decision %v, want %v", what, d, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	decides(authz.Allow, "as stored before the feed started")
	reader.Rules[0].Verbs = []string{"list"}
	put(p+"clusterroles/reader", reader)
	decides(authz.NoOpinion, "after the role lost get")
	reader.Rules[0].Verbs = []string{"get"}
	put(p+"clusterroles/reader", reader)
	decides(authz.Allow, "after the role got it back")
	kv, err := backend.Get(ctx, p+"rolebindings/team/bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := backend.Delete(ctx, p+"rolebindings/team/bob", kv.ModRevision); err != nil {
		t.Fatal(err)
	}
	decides(authz.NoOpinion, "after the binding was deleted")
}

// decode is the stored object as the cache's item, with its namespace
// and name.
func decode(key string, value []byte, rev int64) (*watchcache.Item, error) {
	var m metav1.PartialObjectMetadata
	if err := json.Unmarshal(value, &m); err != nil {
		return nil, err
	}
	it := &watchcache.Item{Key: key, Revision: rev, Namespace: m.Namespace, Name: m.Name}
	it.SetJSON(value, nil, nil)
	return it, nil
}
