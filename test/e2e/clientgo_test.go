package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

var initialNamespaces = []string{"default", "kube-node-lease", "kube-public", "kube-system"}

var namespacesGR = schema.GroupResource{Resource: "namespaces"}

// TestClientGo drives one server with client-go's typed, dynamic, informer,
// watch and discovery clients. Subtests run in order on the same server;
// each leaves no namespace of its own behind except where said.
func TestClientGo(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())

	// First, while only the initial namespaces exist, so counts are exact.
	t.Run("pagination", func(t *testing.T) { testPagination(t, srv) })
	t.Run("typed", func(t *testing.T) { testTyped(t, srv) })
	t.Run("dynamic", func(t *testing.T) { testDynamic(t, srv) })
	t.Run("informer", func(t *testing.T) { testInformer(t, srv) })
	t.Run("watch bookmarks", func(t *testing.T) { testWatchBookmarks(t, srv) })
	t.Run("watch list", func(t *testing.T) { testWatchList(t, srv) })
	t.Run("discovery", func(t *testing.T) { testDiscovery(t, srv) })
}

// testPagination lists 25+4 namespaces ten at a time and checks that every
// one comes exactly once, from one snapshot.
func testPagination(t *testing.T, srv *server) {
	ctx := testContext(t, 60*time.Second)
	ns := srv.Client.CoreV1().Namespaces()
	want := slices.Clone(initialNamespaces)
	for i := range 25 {
		name := fmt.Sprintf("page-%02d", i)
		if _, err := ns.Create(ctx, namespace(name), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		want = append(want, name)
	}
	slices.Sort(want)

	seen := map[string]int{}
	var got []string
	var snapshotRV string
	opts := metav1.ListOptions{Limit: 10}
	for page := 1; ; page++ {
		list, err := ns.List(ctx, opts)
		if err != nil {
			t.Fatalf("list page %d (continue %q): %v", page, opts.Continue, err)
		}
		if len(list.Items) > 10 {
			t.Errorf("page %d has %d items, limit 10", page, len(list.Items))
		}
		for _, item := range list.Items {
			seen[item.Name]++
			got = append(got, item.Name)
		}
		if page == 1 {
			snapshotRV = list.ResourceVersion
			if len(list.Items) != 10 {
				t.Errorf("page 1 has %d items, want 10", len(list.Items))
			}
			if rc := list.RemainingItemCount; rc == nil || *rc != 19 {
				t.Errorf("page 1 remainingItemCount = %v, want 19", deref(rc))
			}
			// Written after the first page: later pages come from the
			// first page's snapshot and must not show it.
			if _, err := ns.Create(ctx, namespace("page-late"), metav1.CreateOptions{}); err != nil {
				t.Fatalf("create page-late: %v", err)
			}
		} else if list.ResourceVersion != snapshotRV {
			t.Errorf("page %d resourceVersion %q, want the first page's %q", page, list.ResourceVersion, snapshotRV)
		}
		if list.Continue == "" {
			break
		}
		if page > 10 {
			t.Fatalf("still a continue token after %d pages", page)
		}
		opts.Continue = list.Continue
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("namespace %s listed %d times", name, n)
		}
	}
	if !slices.IsSorted(got) {
		t.Errorf("paginated list not in name order: %v", got)
	}
	if gotSet := slices.Sorted(maps.Keys(seen)); !slices.Equal(gotSet, want) {
		t.Errorf("paginated list got %d namespaces:\n%v\nwant %d:\n%v", len(gotSet), gotSet, len(want), want)
	}

	// An unknown continue token is a 400 BadRequest or 410 Expired, never
	// a full list.
	if _, err := ns.List(ctx, metav1.ListOptions{Limit: 10, Continue: "not-a-token"}); !apierrors.IsBadRequest(err) && !apierrors.IsResourceExpired(err) {
		t.Errorf("list with a bogus continue token: err %v, want BadRequest", err)
	}
}

func testTyped(t *testing.T, srv *server) {
	ctx := testContext(t, 60*time.Second)
	ns := srv.Client.CoreV1().Namespaces()
	const name = "cg-typed"

	in := namespace(name)
	in.Labels = map[string]string{"stage": "one"}
	created, err := ns.Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
		t.Errorf("created object lacks uid/resourceVersion/creationTimestamp: %+v", created.ObjectMeta)
	}
	if created.Status.Phase != corev1.NamespaceActive {
		t.Errorf("created phase = %q, want Active", created.Status.Phase)
	}
	if !slices.Equal(created.Spec.Finalizers, []corev1.FinalizerName{"kubernetes"}) {
		t.Errorf("created spec.finalizers = %v, want [kubernetes]", created.Spec.Finalizers)
	}
	if want := map[string]string{"stage": "one", "kubernetes.io/metadata.name": name}; !maps.Equal(created.Labels, want) {
		t.Errorf("created labels = %v, want %v", created.Labels, want)
	}

	got, err := ns.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.UID != created.UID || got.ResourceVersion != created.ResourceVersion {
		t.Errorf("get = uid %s rv %s, create returned uid %s rv %s", got.UID, got.ResourceVersion, created.UID, created.ResourceVersion)
	}

	// Update, then the same update from the stale copy conflicts.
	got.Labels["stage"] = "two"
	updated, err := ns.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.Labels["stage"] != "two" || updated.ResourceVersion == created.ResourceVersion {
		t.Errorf("update: labels %v rv %s (was %s)", updated.Labels, updated.ResourceVersion, created.ResourceVersion)
	}
	stale := created.DeepCopy()
	stale.Labels["stage"] = "stale"
	_, err = ns.Update(ctx, stale, metav1.UpdateOptions{})
	wantConflict := apierrors.NewConflict(namespacesGR, name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	if !apierrors.IsConflict(err) {
		t.Errorf("update with stale resourceVersion: err %v, want Conflict", err)
	} else if err.Error() != wantConflict.Error() {
		t.Errorf("conflict message %q, want %q", err.Error(), wantConflict.Error())
	}

	// The three patch types namespaces take.
	patches := []struct {
		typ   types.PatchType
		body  string
		label string
	}{
		{types.MergePatchType, `{"metadata":{"labels":{"merge":"yes"}}}`, "merge"},
		{types.JSONPatchType, `[{"op":"add","path":"/metadata/labels/json","value":"yes"}]`, "json"},
		{types.StrategicMergePatchType, `{"metadata":{"labels":{"strategic":"yes"}}}`, "strategic"},
	}
	for _, p := range patches {
		out, err := ns.Patch(ctx, name, p.typ, []byte(p.body), metav1.PatchOptions{})
		if err != nil {
			t.Errorf("%s patch: %v", p.typ, err)
			continue
		}
		if out.Labels[p.label] != "yes" || out.Labels["stage"] != "two" {
			t.Errorf("%s patch: labels %v, want %s=yes kept with stage=two", p.typ, out.Labels, p.label)
		}
	}

	list, err := ns.List(ctx, metav1.ListOptions{LabelSelector: "merge=yes,json=yes,strategic=yes"})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if names := itemNames(list.Items); !slices.Equal(names, []string{name}) {
		t.Errorf("list by label = %v, want [%s]", names, name)
	}

	// Errors with upstream's reasons and messages.
	_, err = ns.Create(ctx, namespace(name), metav1.CreateOptions{})
	if want := apierrors.NewAlreadyExists(namespacesGR, name); !apierrors.IsAlreadyExists(err) || err.Error() != want.Error() {
		t.Errorf("second create: err %v, want AlreadyExists %q", err, want.Error())
	}
	_, err = ns.Get(ctx, "cg-missing", metav1.GetOptions{})
	if want := apierrors.NewNotFound(namespacesGR, "cg-missing"); !apierrors.IsNotFound(err) || err.Error() != want.Error() {
		t.Errorf("get missing: err %v, want NotFound %q", err, want.Error())
	}
	_, err = ns.Create(ctx, namespace("Bad_Name"), metav1.CreateOptions{})
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Code != http.StatusUnprocessableEntity {
		t.Errorf("create Bad_Name: err %v, want 422 Invalid", err)
	} else if d := status.Status().Details; d == nil || d.Kind != "Namespace" || d.Name != "Bad_Name" ||
		len(d.Causes) != 1 || d.Causes[0].Field != "metadata.name" || d.Causes[0].Type != metav1.CauseType(field.ErrorTypeInvalid) {
		t.Errorf("create Bad_Name: details %+v, want kind Namespace, name Bad_Name, one FieldValueInvalid cause on metadata.name", d)
	}

	// dryRun=All answers as if it wrote, and writes nothing.
	dry, err := ns.Create(ctx, namespace("cg-dry"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	if dry.Name != "cg-dry" || dry.Status.Phase != corev1.NamespaceActive {
		t.Errorf("dry-run create returned name %q phase %q", dry.Name, dry.Status.Phase)
	}
	if _, err := ns.Get(ctx, "cg-dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after dry-run create: err %v, want NotFound", err)
	}
	cur, err := ns.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Labels["dry"] = "yes"
	if out, err := ns.Update(ctx, cur, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil || out.Labels["dry"] != "yes" {
		t.Errorf("dry-run update: err %v", err)
	}
	if after, err := ns.Get(ctx, name, metav1.GetOptions{}); err != nil || after.Labels["dry"] != "" || after.ResourceVersion != cur.ResourceVersion {
		t.Errorf("after dry-run update: err %v, labels %v, rv %s (was %s)", err, after.Labels, after.ResourceVersion, cur.ResourceVersion)
	}

	// Delete answers with the namespace, now Terminating; it is gone once
	// the namespace controller has emptied it and removed the finalizer.
	body, err := srv.Client.CoreV1().RESTClient().Delete().Resource("namespaces").Name(name).Do(ctx).Raw()
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	var terminating corev1.Namespace
	if err := decodeJSON(body, &terminating); err != nil {
		t.Fatalf("delete response: %v\n%s", err, body)
	}
	if terminating.Status.Phase != corev1.NamespaceTerminating || terminating.DeletionTimestamp == nil {
		t.Errorf("delete response: phase %q deletionTimestamp %v, want Terminating with a deletionTimestamp\n%s", terminating.Status.Phase, terminating.DeletionTimestamp, body)
	}
	waitGone(t, srv, name)
}

func testDynamic(t *testing.T, srv *server) {
	ctx := testContext(t, 60*time.Second)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	ns := srv.Dynamic.Resource(gvr)
	const name = "cg-dynamic"

	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata":   map[string]any{"name": name, "labels": map[string]any{"via": "dynamic"}},
	}}
	created, err := ns.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.GetKind() != "Namespace" || created.GetAPIVersion() != "v1" || created.GetUID() == "" {
		t.Errorf("created: kind %q apiVersion %q uid %q", created.GetKind(), created.GetAPIVersion(), created.GetUID())
	}
	if phase, _, _ := unstructured.NestedString(created.Object, "status", "phase"); phase != "Active" {
		t.Errorf("created status.phase = %q, want Active", phase)
	}

	got, err := ns.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	got.SetAnnotations(map[string]string{"updated": "yes"})
	updated, err := ns.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.GetAnnotations()["updated"] != "yes" {
		t.Errorf("update: annotations %v", updated.GetAnnotations())
	}
	_, err = ns.Update(ctx, created, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		t.Errorf("update with stale resourceVersion: err %v, want Conflict", err)
	}

	patched, err := ns.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"merge"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("merge patch: %v", err)
	}
	if l := patched.GetLabels(); l["patched"] != "merge" || l["via"] != "dynamic" {
		t.Errorf("merge patch: labels %v", l)
	}
	patched, err = ns.Patch(ctx, name, types.JSONPatchType, []byte(`[{"op":"replace","path":"/metadata/labels/patched","value":"json"}]`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("json patch: %v", err)
	}
	if l := patched.GetLabels(); l["patched"] != "json" {
		t.Errorf("json patch: labels %v", l)
	}

	list, err := ns.List(ctx, metav1.ListOptions{LabelSelector: "via=dynamic"})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if list.GetKind() != "NamespaceList" || list.GetAPIVersion() != "v1" {
		t.Errorf("list kind %q apiVersion %q, want NamespaceList v1", list.GetKind(), list.GetAPIVersion())
	}
	if len(list.Items) != 1 || list.Items[0].GetName() != name {
		t.Errorf("list by label: %d items", len(list.Items))
	}

	if _, err := ns.Get(ctx, "cg-missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get missing: err %v, want NotFound", err)
	}
	if _, err := ns.Create(ctx, obj, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: err %v, want AlreadyExists", err)
	}
	if err := ns.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	waitGone(t, srv, name)
}

func testInformer(t *testing.T, srv *server) {
	ctx := testContext(t, 60*time.Second)
	const name = "cg-informer"
	type event struct {
		kind string
		ns   *corev1.Namespace
	}
	events := make(chan event, 1000)
	factory := informers.NewSharedInformerFactory(srv.Client, 0)
	inf := factory.Core().V1().Namespaces().Informer()
	send := func(kind string, obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if n, ok := obj.(*corev1.Namespace); ok && n.Name == name {
			events <- event{kind, n}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { send("add", obj) },
		UpdateFunc: func(_, obj any) { send("update", obj) },
		DeleteFunc: func(obj any) { send("delete", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	for _, n := range initialNamespaces {
		if _, ok, _ := inf.GetStore().GetByKey(n); !ok {
			t.Errorf("informer store lacks namespace %s after sync", n)
		}
	}

	next := func(want string) *corev1.Namespace {
		t.Helper()
		for {
			select {
			case e := <-events:
				if e.kind == want {
					return e.ns
				}
				if want != "delete" { // Terminating updates come before delete
					t.Fatalf("informer: got %s event, want %s", e.kind, want)
				}
			case <-ctx.Done():
				t.Fatalf("informer: no %s event for %s", want, name)
			}
		}
	}

	ns := srv.Client.CoreV1().Namespaces()
	if _, err := ns.Create(ctx, namespace(name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if added := next("add"); added.Status.Phase != corev1.NamespaceActive {
		t.Errorf("add event: phase %q", added.Status.Phase)
	}
	if _, err := ns.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"informed":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if upd := next("update"); upd.Labels["informed"] != "yes" {
		t.Errorf("update event: labels %v, want informed=yes", upd.Labels)
	}
	// The typed client sends DeleteOptions in the body, as protobuf.
	if err := ns.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("typed delete: %s", errDetail(err))
	}
	next("delete")
	if _, ok, _ := inf.GetStore().GetByKey(name); ok {
		t.Errorf("informer store still has %s after its delete event", name)
	}
}

// testWatchBookmarks watches with allowWatchBookmarks and a short timeout: the
// server sends a bookmark before the timeout, then ends the watch.
func testWatchBookmarks(t *testing.T, srv *server) {
	ctx := testContext(t, 30*time.Second)
	ns := srv.Client.CoreV1().Namespaces()
	list, err := ns.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 4
	start := time.Now()
	w, err := ns.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true, TimeoutSeconds: ptr(int64(timeout))})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	created, err := ns.Create(ctx, namespace("cg-bookmark"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var added bool
	var bookmarks []string
	for e := range w.ResultChan() {
		n, ok := e.Object.(*corev1.Namespace)
		if !ok {
			t.Fatalf("watch event %s carries %T: %v", e.Type, e.Object, e.Object)
		}
		switch e.Type {
		case watch.Added:
			if n.Name != "cg-bookmark" {
				t.Errorf("watch from the list's resourceVersion: unexpected ADDED %s", n.Name)
			}
			added = n.ResourceVersion == created.ResourceVersion
		case watch.Bookmark:
			if n.Name != "" || n.ResourceVersion == "" {
				t.Errorf("bookmark should carry only a resourceVersion: %+v", n.ObjectMeta)
			}
			bookmarks = append(bookmarks, n.ResourceVersion)
		default:
			t.Errorf("unexpected %s event for %s", e.Type, n.Name)
		}
	}
	took := time.Since(start)
	if !added {
		t.Errorf("watch did not deliver ADDED cg-bookmark at resourceVersion %s", created.ResourceVersion)
	}
	if len(bookmarks) == 0 {
		t.Errorf("no BOOKMARK event during a %ds watch with allowWatchBookmarks (upstream sends one ~2s before the timeout)", timeout)
	}
	for _, rv := range bookmarks {
		if !atLeast(rv, created.ResourceVersion) {
			t.Errorf("bookmark resourceVersion %s is older than the watched create's %s", rv, created.ResourceVersion)
		}
	}
	if took < (timeout-1)*time.Second || took > (timeout+5)*time.Second {
		t.Errorf("watch with timeoutSeconds=%d ended after %v", timeout, took)
	}
	if err := ns.Delete(ctx, "cg-bookmark", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("typed delete: %s", errDetail(err))
	}
	waitGone(t, srv, "cg-bookmark")
}

// testWatchList is client-go's watch-list: a watch that starts with the
// current objects as ADDED events and marks their end with a bookmark.
func testWatchList(t *testing.T, srv *server) {
	ctx := testContext(t, 30*time.Second)
	ns := srv.Client.CoreV1().Namespaces()
	list, err := ns.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := itemNames(list.Items)

	w, err := ns.Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    ptr(true),
		AllowWatchBookmarks:  true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		t.Fatalf("watch-list: %v", err)
	}
	defer w.Stop()
	var initial []string
	var endRV string
	timer := time.NewTimer(15 * time.Second)
	defer timer.Stop()
	for endRV == "" {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended before the initial-events-end bookmark; got ADDED %v", initial)
			}
			n, _ := e.Object.(*corev1.Namespace)
			if n == nil {
				t.Fatalf("watch event %s carries %T: %v", e.Type, e.Object, e.Object)
			}
			switch e.Type {
			case watch.Added:
				initial = append(initial, n.Name)
			case watch.Bookmark:
				if n.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
					endRV = n.ResourceVersion
				}
			default:
				t.Errorf("unexpected %s %s among the initial events", e.Type, n.Name)
			}
		case <-timer.C:
			t.Fatalf("no bookmark with annotation %s=true within 15s; got ADDED %v", metav1.InitialEventsAnnotationKey, initial)
		}
	}
	slices.Sort(initial)
	if !slices.Equal(initial, want) {
		t.Errorf("initial events:\n%v\nwant (as listed):\n%v", initial, want)
	}
	if !atLeast(endRV, list.ResourceVersion) {
		t.Errorf("initial-events-end bookmark at resourceVersion %s, older than the list's %s", endRV, list.ResourceVersion)
	}

	// After the initial events the watch goes on with new writes.
	if _, err := ns.Create(ctx, namespace("cg-watchlist"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch ended before the ADDED event of cg-watchlist")
			}
			if n, _ := e.Object.(*corev1.Namespace); e.Type == watch.Added && n != nil && n.Name == "cg-watchlist" {
				return
			}
			if e.Type != watch.Bookmark {
				t.Errorf("unexpected %s event: %v", e.Type, e.Object)
			}
		case <-timer.C:
			t.Fatal("no ADDED event for cg-watchlist")
		}
	}
}

func testDiscovery(t *testing.T, srv *server) {
	dc := srv.Client.Discovery()
	groups, resources, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("ServerGroupsAndResources: %v", err)
	}
	var core *metav1.APIGroup
	for _, g := range groups {
		if g.Name == "" {
			core = g
		}
	}
	if core == nil || len(core.Versions) == 0 || core.Versions[0].Version != "v1" || core.PreferredVersion.Version != "v1" {
		t.Errorf("core group = %+v, want version v1 preferred", core)
	}
	var nsRes *metav1.APIResource
	for _, rl := range resources {
		if rl.GroupVersion != "v1" {
			continue
		}
		for i := range rl.APIResources {
			if rl.APIResources[i].Name == "namespaces" {
				nsRes = &rl.APIResources[i]
			}
		}
	}
	if nsRes == nil {
		t.Fatalf("discovery of v1 has no namespaces resource: %+v", resources)
	}
	if nsRes.Namespaced || nsRes.Kind != "Namespace" || nsRes.SingularName != "namespace" || !slices.Equal(nsRes.ShortNames, []string{"ns"}) {
		t.Errorf("namespaces resource = %+v, want cluster-scoped kind Namespace, singular namespace, short name ns", *nsRes)
	}
	// As upstream: namespaces have no deletecollection.
	if want := []string{"create", "delete", "get", "list", "patch", "update", "watch"}; !slices.Equal(slices.Sorted(slices.Values(nsRes.Verbs)), want) {
		t.Errorf("namespaces verbs = %v, want %v", nsRes.Verbs, want)
	}

	// Aggregated discovery, which kubectl asks for first: /api as one
	// APIGroupDiscoveryList.
	const aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	var contentType string
	raw, err := dc.RESTClient().Get().AbsPath("/api").SetHeader("Accept", aggregated+",application/json").
		Do(context.Background()).ContentType(&contentType).Raw()
	if err != nil {
		t.Fatalf("aggregated discovery /api: %v", err)
	}
	var agg apidiscoveryv2.APIGroupDiscoveryList
	if err := decodeJSON(raw, &agg); err != nil || contentType != aggregated || agg.Kind != "APIGroupDiscoveryList" {
		t.Errorf("aggregated /api: content type %q, kind %q (%v), want %s", contentType, agg.Kind, err, aggregated)
	}
	var aggNS *apidiscoveryv2.APIResourceDiscovery
	for _, g := range agg.Items {
		for _, v := range g.Versions {
			for i, r := range v.Resources {
				if g.Name == "" && v.Version == "v1" && r.Resource == "namespaces" {
					aggNS = &v.Resources[i]
				}
			}
		}
	}
	if aggNS == nil {
		t.Errorf("aggregated /api has no v1 namespaces:\n%s", raw)
	} else if aggNS.Scope != apidiscoveryv2.ScopeCluster || aggNS.SingularResource != "namespace" ||
		aggNS.ResponseKind == nil || aggNS.ResponseKind.Kind != "Namespace" || !slices.Equal(aggNS.ShortNames, []string{"ns"}) {
		t.Errorf("aggregated discovery of namespaces = %+v, want scope Cluster, singular namespace, kind Namespace, short name ns", *aggNS)
	}

	info, err := dc.ServerVersion()
	if err != nil {
		t.Fatalf("ServerVersion: %v", err)
	}
	v, err := version.ParseSemantic(info.GitVersion)
	if err != nil {
		t.Fatalf("gitVersion %q: %v", info.GitVersion, err)
	}
	if info.Major != "1" || info.Minor != strconv.Itoa(int(v.Minor())) {
		t.Errorf("version major %q minor %q do not match gitVersion %q", info.Major, info.Minor, info.GitVersion)
	}

	doc, err := dc.OpenAPISchema()
	if err != nil {
		t.Fatalf("/openapi/v2: %v", err)
	}
	var found bool
	for _, def := range doc.GetDefinitions().GetAdditionalProperties() {
		found = found || def.GetName() == "io.k8s.api.core.v1.Namespace"
	}
	if !found {
		t.Errorf("/openapi/v2 has no definition io.k8s.api.core.v1.Namespace")
	}
	paths, err := dc.OpenAPIV3().Paths()
	if err != nil {
		t.Fatalf("/openapi/v3: %v", err)
	}
	gv, ok := paths["api/v1"]
	if !ok {
		t.Fatalf("/openapi/v3 paths %v lack api/v1", slices.Collect(maps.Keys(paths)))
	}
	schemaDoc, err := gv.Schema("application/json")
	if err != nil {
		t.Fatalf("/openapi/v3/api/v1: %v", err)
	}
	if !strings.Contains(string(schemaDoc), `"io.k8s.api.core.v1.Namespace"`) {
		t.Errorf("/openapi/v3/api/v1 does not define io.k8s.api.core.v1.Namespace")
	}

	// Every kind of a Kubernetes group that discovery lists has a model
	// with its fields in its group-version's document, as kube-apiserver
	// publishes them (kubectl explain and apply's types read them): an
	// autoscaling/v1 HorizontalPodAutoscaler was once a bare object.
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lists {
		group, version, found := strings.Cut(l.GroupVersion, "/")
		if !found {
			group, version = "", group
		}
		if strings.Contains(group, ".") && !strings.HasSuffix(group, ".k8s.io") {
			continue // custom resources
		}
		path := "apis/" + l.GroupVersion
		if group == "" {
			path = "api/" + version
		}
		doc, err := paths[path].Schema("application/json")
		if err != nil {
			t.Errorf("/openapi/v3/%s: %v", path, err)
			continue
		}
		var parsed struct {
			Components struct {
				Schemas map[string]struct {
					Properties map[string]any                          `json:"properties"`
					GVK        []struct{ Group, Version, Kind string } `json:"x-kubernetes-group-version-kind"`
				} `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(doc, &parsed); err != nil {
			t.Fatalf("/openapi/v3/%s: %v", path, err)
		}
		described := map[string]bool{}
		for _, m := range parsed.Components.Schemas {
			for _, gvk := range m.GVK {
				if gvk.Group == group && gvk.Version == version && len(m.Properties) > 0 {
					described[gvk.Kind] = true
				}
			}
		}
		for _, r := range l.APIResources {
			if l.GroupVersion == "admissionregistration.k8s.io/v1beta1" && strings.HasSuffix(r.Kind, "WebhookConfiguration") {
				continue // served beyond upstream (removed in 1.22), which publishes no model of them
			}
			if !strings.Contains(r.Name, "/") && !described[r.Kind] {
				t.Errorf("/openapi/v3/%s has no model of %s with its fields", path, r.Kind)
			}
		}
	}
}

// waitGone waits until the namespace is deleted for good (its finalizer
// removed by the server's namespace controller).
func waitGone(t *testing.T, srv *server, name string) {
	t.Helper()
	waitFor(t, 20*time.Second, "namespace "+name+" gone", func() (bool, error) {
		_, err := srv.Client.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

// errDetail is err with the HTTP code and reason of its Status, if any.
func errDetail(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		return fmt.Sprintf("%d %s: %v", s.Code, s.Reason, err)
	}
	return err.Error()
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func itemNames(items []corev1.Namespace) []string {
	var names []string
	for _, n := range items {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	return names
}

// atLeast compares resourceVersions as numbers. Clients must treat them as
// opaque, but crdserver documents them as etcd revisions, so order holds.
func atLeast(rv, min string) bool {
	a, err1 := strconv.ParseInt(rv, 10, 64)
	b, err2 := strconv.ParseInt(min, 10, 64)
	return err1 == nil && err2 == nil && a >= b
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
