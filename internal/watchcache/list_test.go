package watchcache

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/crdserver/crdserver/internal/storage"
)

// history writes the fixture every list test reads:
//
//	r1 create a/x1 app=x   r2 create a/y1 app=y   r3 create b/x2 app=x
//	r4 update a/x1 app=y   r5 delete a/y1
func history(r *rig) [6]int64 {
	var revs [6]int64
	revs[1] = r.create("a", "x1", "app", "x")
	revs[2] = r.create("a", "y1", "app", "y")
	revs[3] = r.create("b", "x2", "app", "x")
	revs[4] = r.update("a", "x1", "app", "y")
	revs[5] = r.delete("a", "y1")
	r.waitRev(revs[5])
	return revs
}

func TestListResourceVersions(t *testing.T) { forEachBackend(t, testListResourceVersions) }

func testListResourceVersions(t *testing.T, newStore func(testing.TB) storage.Interface) {
	r := newRig(t, newStore(t), Options{})
	revs := history(r)
	rv := func(i int) string { return strconv.FormatInt(revs[i], 10) }
	sel := func(s string) labels.Selector { l, _ := labels.Parse(s); return l }

	tests := []struct {
		name    string
		opts    ListOptions
		want    []string
		wantRV  int64
		wantErr int32 // HTTP code
	}{
		{name: "consistent", opts: ListOptions{}, want: []string{"a/x1", "b/x2"}, wantRV: revs[5]},
		{name: "any", opts: ListOptions{ResourceVersion: "0"}, want: []string{"a/x1", "b/x2"}, wantRV: revs[5]},
		{name: "any ignores limit", opts: ListOptions{ResourceVersion: "0", Limit: 1}, want: []string{"a/x1", "b/x2"}, wantRV: revs[5]},
		{name: "not older than", opts: ListOptions{ResourceVersion: rv(3), ResourceVersionMatch: MatchNotOlderThan}, want: []string{"a/x1", "b/x2"}, wantRV: revs[5]},
		{name: "legacy rv without limit is not older than", opts: ListOptions{ResourceVersion: rv(3)}, want: []string{"a/x1", "b/x2"}, wantRV: revs[5]},
		{name: "legacy rv with limit is exact", opts: ListOptions{ResourceVersion: rv(3), Limit: 10}, want: []string{"a/x1", "a/y1", "b/x2"}, wantRV: revs[3]},
		{name: "exact", opts: ListOptions{ResourceVersion: rv(3), ResourceVersionMatch: MatchExact}, want: []string{"a/x1", "a/y1", "b/x2"}, wantRV: revs[3]},
		{name: "exact early", opts: ListOptions{ResourceVersion: rv(2), ResourceVersionMatch: MatchExact}, want: []string{"a/x1", "a/y1"}, wantRV: revs[2]},
		{name: "exact current", opts: ListOptions{ResourceVersion: rv(5), ResourceVersionMatch: MatchExact}, want: []string{"a/x1", "b/x2"}, wantRV: revs[5]},
		{name: "exact namespace", opts: ListOptions{Namespace: "a", ResourceVersion: rv(4), ResourceVersionMatch: MatchExact}, want: []string{"a/x1", "a/y1"}, wantRV: revs[4]},
		{name: "namespace", opts: ListOptions{Namespace: "b"}, want: []string{"b/x2"}, wantRV: revs[5]},
		{name: "label", opts: ListOptions{Labels: sel("app=x")}, want: []string{"b/x2"}, wantRV: revs[5]},
		{name: "label exact", opts: ListOptions{Labels: sel("app=x"), ResourceVersion: rv(3), ResourceVersionMatch: MatchExact}, want: []string{"a/x1", "b/x2"}, wantRV: revs[3]},
		{name: "label set-based", opts: ListOptions{Labels: sel("app in (x,y)")}, want: []string{"a/x1", "b/x2"}, wantRV: revs[5]},
		{name: "field", opts: ListOptions{Fields: fields.OneTermEqualSelector("metadata.name", "x2")}, want: []string{"b/x2"}, wantRV: revs[5]},
		{name: "field namespace", opts: ListOptions{Fields: fields.OneTermEqualSelector("metadata.namespace", "a")}, want: []string{"a/x1"}, wantRV: revs[5]},
		{name: "no match", opts: ListOptions{Namespace: "zzz"}, want: []string{}, wantRV: revs[5]},
		{name: "exact zero", opts: ListOptions{ResourceVersion: "0", ResourceVersionMatch: MatchExact}, wantErr: http.StatusBadRequest},
		{name: "exact empty", opts: ListOptions{ResourceVersionMatch: MatchExact}, wantErr: http.StatusBadRequest},
		{name: "not older than empty", opts: ListOptions{ResourceVersionMatch: MatchNotOlderThan}, wantErr: http.StatusBadRequest},
		{name: "unknown match", opts: ListOptions{ResourceVersion: "1", ResourceVersionMatch: "Newest"}, wantErr: http.StatusBadRequest},
		{name: "bad rv", opts: ListOptions{ResourceVersion: "abc"}, wantErr: http.StatusBadRequest},
		{name: "negative rv", opts: ListOptions{ResourceVersion: "-3"}, wantErr: http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := r.cache.List(context.Background(), tt.opts)
			if tt.wantErr != 0 {
				if code := apierrors.ReasonForError(err); err == nil || statusCode(err) != tt.wantErr {
					t.Fatalf("err = %v (%s), want code %d", err, code, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := names(res.Items); !slices.Equal(got, tt.want) {
				t.Errorf("items = %v, want %v", got, tt.want)
			}
			if res.ResourceVersion != tt.wantRV {
				t.Errorf("rv = %d, want %d", res.ResourceVersion, tt.wantRV)
			}
			if res.Continue != "" || res.RemainingItemCount != nil {
				t.Errorf("unexpected continue %q / remaining %v", res.Continue, res.RemainingItemCount)
			}
		})
	}
}

func statusCode(err error) int32 {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return se.Status().Code
	}
	return 0
}

// Items of an exact list carry the resourceVersion they had then.
func TestListExactItemsKeepTheirRevision(t *testing.T) {
	r := newMemRig(t, Options{})
	revs := history(r)
	res, err := r.cache.List(context.Background(), ListOptions{ResourceVersion: strconv.FormatInt(revs[3], 10), ResourceVersionMatch: MatchExact})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		want := map[string]int64{"x1": revs[1], "y1": revs[2], "x2": revs[3]}[it.Name]
		if it.Revision != want {
			t.Errorf("%s at rev %d, want %d", it.Name, it.Revision, want)
		}
	}
}

func TestListTooLargeResourceVersion(t *testing.T) {
	forEachBackend(t, testListTooLargeResourceVersion)
}

func testListTooLargeResourceVersion(t *testing.T, newStore func(testing.TB) storage.Interface) {
	for _, match := range []string{MatchNone, MatchNotOlderThan, MatchExact} {
		t.Run("match="+match, func(t *testing.T) {
			r := newRig(t, newStore(t), Options{})
			cur := r.create("a", "x")
			r.waitRev(cur)
			done := make(chan struct{})
			var err error
			go func() {
				defer close(done)
				_, err = r.cache.List(context.Background(), ListOptions{ResourceVersion: strconv.FormatInt(cur+100, 10), ResourceVersionMatch: match})
			}()
			r.stepUntil(done, 500*time.Millisecond)
			if !apierrors.IsTimeout(err) || !IsTooLargeResourceVersion(err) {
				t.Fatalf("err = %v, want 504 Timeout with ResourceVersionTooLarge", err)
			}
			want := fmt.Sprintf("Timeout: Too large resource version: %d, current: %d", cur+100, cur)
			if err.Error() != want {
				t.Errorf("message %q, want %q", err.Error(), want)
			}
			var se *apierrors.StatusError
			errors.As(err, &se)
			if se.ErrStatus.Details.RetryAfterSeconds != 1 {
				t.Errorf("retry after %d, want 1", se.ErrStatus.Details.RetryAfterSeconds)
			}
		})
	}
}

// A reader waiting for a revision is released by the event that reaches it.
func TestListWaitsForRevision(t *testing.T) {
	r := newMemRig(t, Options{})
	cur := r.cache.Revision()
	done := make(chan ListResult)
	go func() {
		res, err := r.cache.List(context.Background(), ListOptions{ResourceVersion: strconv.FormatInt(cur+1, 10), ResourceVersionMatch: MatchNotOlderThan})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	time.Sleep(10 * time.Millisecond)
	r.create("a", "late")
	res := <-done
	if got := names(res.Items); !slices.Equal(got, []string{"a/late"}) {
		t.Errorf("items = %v", got)
	}
}

// A consistent list on an idle prefix is served from the cache once a
// progress notification says it is current.
func TestListConsistentIdlePrefix(t *testing.T) { forEachBackend(t, testListConsistentIdlePrefix) }

func testListConsistentIdlePrefix(t *testing.T, newStore func(testing.TB) storage.Interface) {
	r := newRig(t, newStore(t), Options{})
	r.create("a", "x")
	for i := range 3 { // writes elsewhere move the revision
		if _, err := r.store.Create(r.ctx, fmt.Sprintf("/registry/other/%d", i), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	storeRev, _ := r.store.CurrentRevision(r.ctx)
	before := r.listCalls()
	var res ListResult
	var err error
	r.ticking(func() { res, err = r.cache.List(context.Background(), ListOptions{}) })
	if err != nil {
		t.Fatal(err)
	}
	if res.ResourceVersion != storeRev {
		t.Errorf("rv = %d, want storage's %d", res.ResourceVersion, storeRev)
	}
	if r.mem != nil && r.listCalls() != before {
		t.Error("consistent list read storage; want the cache")
	}
}

// When the cache can't catch up in time, a consistent list reads storage.
func TestListConsistentFallsBackToStorage(t *testing.T) {
	r := newMemRig(t, Options{})
	r.create("a", "x")
	r.mem.setNoProgress(true)
	if _, err := r.store.Create(r.ctx, "/registry/other/1", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	storeRev, _ := r.store.CurrentRevision(r.ctx)
	before := r.listCalls()
	done := make(chan struct{})
	var res ListResult
	var err error
	go func() {
		defer close(done)
		res, err = r.cache.List(context.Background(), ListOptions{})
	}()
	r.stepUntil(done, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.ResourceVersion != storeRev || !slices.Equal(names(res.Items), []string{"a/x"}) {
		t.Errorf("got %v at %d, want [a/x] at %d", names(res.Items), res.ResourceVersion, storeRev)
	}
	if r.mem != nil && r.listCalls() == before {
		t.Error("storage was not read")
	}
}

func fill(r *rig, n int) []string {
	var want []string
	var last int64
	for i := range n {
		ns := fmt.Sprintf("ns%d", i%3)
		name := fmt.Sprintf("o%02d", i)
		app := "y"
		if i%4 == 0 {
			app = "x"
		}
		last = r.create(ns, name, "app", app)
		want = append(want, ns+"/"+name)
	}
	r.waitRev(last)
	slices.Sort(want)
	return want
}

// collect pages through a list, checking that every page reads the same
// revision and the remaining counts add up.
func collect(t *testing.T, c *Cache, opts ListOptions, between func(page int)) ([]string, int) {
	t.Helper()
	var got []string
	var rev int64
	pages := 0
	for {
		res, err := c.List(context.Background(), opts)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		pages++
		if opts.Limit > 0 && int64(len(res.Items)) > opts.Limit {
			t.Fatalf("page %d has %d items > limit %d", pages, len(res.Items), opts.Limit)
		}
		if rev == 0 {
			rev = res.ResourceVersion
		} else if res.ResourceVersion != rev {
			t.Fatalf("page %d at rev %d, first page at %d", pages, res.ResourceVersion, rev)
		}
		got = append(got, names(res.Items)...)
		if res.Continue == "" {
			if res.RemainingItemCount != nil {
				t.Errorf("last page has remainingItemCount %d", *res.RemainingItemCount)
			}
			return got, pages
		}
		selects := opts.Labels != nil || opts.Fields != nil
		if selects && res.RemainingItemCount != nil {
			t.Errorf("page %d: remainingItemCount with a selector", pages)
		}
		if !selects {
			if res.RemainingItemCount == nil {
				t.Fatalf("page %d: no remainingItemCount", pages)
			}
		}
		if between != nil {
			between(pages)
		}
		opts.Continue = res.Continue
		opts.ResourceVersion = ""
		opts.ResourceVersionMatch = ""
	}
}

func TestListPagination(t *testing.T) { forEachBackend(t, testListPagination) }

func testListPagination(t *testing.T, newStore func(testing.TB) storage.Interface) {
	r := newRig(t, newStore(t), Options{})
	all := fill(r, 25)
	xs := []string{}
	for _, n := range all {
		var i int
		fmt.Sscanf(n[len(n)-2:], "%d", &i)
		if i%4 == 0 {
			xs = append(xs, n)
		}
	}
	sel, _ := labels.Parse("app=x")
	tests := []struct {
		name      string
		opts      ListOptions
		want      []string
		wantPages int
	}{
		{name: "all", opts: ListOptions{Limit: 10}, want: all, wantPages: 3},
		{name: "exact pages", opts: ListOptions{Limit: 5}, want: all, wantPages: 5},
		{name: "one page", opts: ListOptions{Limit: 100}, want: all, wantPages: 1},
		{name: "selector", opts: ListOptions{Limit: 2, Labels: sel}, want: xs, wantPages: 4},
		{name: "namespace", opts: ListOptions{Limit: 3, Namespace: "ns1"}, want: filterNS(all, "ns1"), wantPages: 3},
		{name: "namespace selector", opts: ListOptions{Limit: 1, Namespace: "ns0", Labels: sel}, want: filterNS(xs, "ns0"), wantPages: 3},
		{name: "not older than", opts: ListOptions{Limit: 10, ResourceVersion: fmt.Sprint(r.cache.Revision()), ResourceVersionMatch: MatchNotOlderThan}, want: all, wantPages: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, pages := collect(t, r.cache, tt.opts, nil)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v\nwant %v", got, tt.want)
			}
			if pages != tt.wantPages {
				t.Errorf("%d pages, want %d", pages, tt.wantPages)
			}
		})
	}
}

func filterNS(in []string, ns string) []string {
	var out []string
	for _, n := range in {
		if len(n) > len(ns) && n[:len(ns)+1] == ns+"/" {
			out = append(out, n)
		}
	}
	return out
}

// Pages after the first read the first page's snapshot, whatever is
// written in between.
func TestListPaginationIsASnapshot(t *testing.T) { forEachBackend(t, testListPaginationIsASnapshot) }

func testListPaginationIsASnapshot(t *testing.T, newStore func(testing.TB) storage.Interface) {
	r := newRig(t, newStore(t), Options{})
	all := fill(r, 12)
	i := 0
	got, _ := collect(t, r.cache, ListOptions{Limit: 4}, func(page int) {
		i++
		r.create("ns0", fmt.Sprintf("new%d", i))
		r.delete("ns2", "o11")
		r.waitRev(r.create("ns2", "o11"))
		_ = page
	})
	if !slices.Equal(got, all) {
		t.Errorf("got %v\nwant %v", got, all)
	}
}

func TestListRemainingItemCount(t *testing.T) {
	r := newMemRig(t, Options{})
	fill(r, 25)
	res, err := r.cache.List(context.Background(), ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.RemainingItemCount == nil || *res.RemainingItemCount != 15 {
		t.Fatalf("remaining = %v, want 15", res.RemainingItemCount)
	}
	res, err = r.cache.List(context.Background(), ListOptions{Limit: 10, Continue: res.Continue})
	if err != nil {
		t.Fatal(err)
	}
	if res.RemainingItemCount == nil || *res.RemainingItemCount != 5 {
		t.Fatalf("remaining = %v, want 5", res.RemainingItemCount)
	}
}

// The token has upstream's format so clients and other servers agree.
func TestContinueTokenFormat(t *testing.T) {
	r := newMemRig(t, Options{})
	r.create("a", "x1")
	rev := r.create("a", "x2")
	r.waitRev(rev)
	for _, tt := range []struct{ ns, start string }{{"", "a/x1\\u0000"}, {"a", "x1\\u0000"}} {
		res, err := r.cache.List(context.Background(), ListOptions{Namespace: tt.ns, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		b, err := base64.RawURLEncoding.DecodeString(res.Continue)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"v":"meta.k8s.io/v1","rv":%d,"start":"%s"}`, rev, tt.start)
		if string(b) != want {
			t.Errorf("token %s, want %s", b, want)
		}
	}
}

func TestListBadContinue(t *testing.T) {
	r := newMemRig(t, Options{})
	r.create("a", "x1")
	rev := r.create("a", "x2")
	r.waitRev(rev)
	good, err := r.cache.List(context.Background(), ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name string
		opts ListOptions
		want int32
	}{
		{name: "not base64", opts: ListOptions{Continue: "%%%"}, want: 400},
		{name: "not json", opts: ListOptions{Continue: enc("nope")}, want: 400},
		{name: "wrong version", opts: ListOptions{Continue: enc(`{"v":"v2","rv":1,"start":"a"}`)}, want: 400},
		{name: "zero rv", opts: ListOptions{Continue: enc(`{"v":"meta.k8s.io/v1","rv":0,"start":"a"}`)}, want: 400},
		{name: "empty start", opts: ListOptions{Continue: enc(`{"v":"meta.k8s.io/v1","rv":1,"start":""}`)}, want: 400},
		{name: "path traversal", opts: ListOptions{Continue: enc(`{"v":"meta.k8s.io/v1","rv":1,"start":"../x"}`)}, want: 400},
		{name: "with rv", opts: ListOptions{Continue: good.Continue, ResourceVersion: "1"}, want: 400},
		{name: "with match", opts: ListOptions{Continue: good.Continue, ResourceVersionMatch: MatchNotOlderThan}, want: 400},
		{name: "with rv 0 is fine", opts: ListOptions{Continue: good.Continue, ResourceVersion: "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.cache.List(context.Background(), tt.opts)
			if tt.want == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if statusCode(err) != tt.want || !apierrors.IsBadRequest(err) {
				t.Fatalf("err = %v, want %d BadRequest", err, tt.want)
			}
		})
	}
}

// Once the window has moved past a token's revision the cache reads
// storage at that revision; once storage compacted it, the answer is 410
// with upstream's message and a token that continues at the latest state.
func TestListExpiredContinue(t *testing.T) { forEachBackend(t, testListExpiredContinue) }

func testListExpiredContinue(t *testing.T, newStore func(testing.TB) storage.Interface) {
	r := newRig(t, newStore(t), Options{WindowSize: 2})
	fill(r, 6)
	first, err := r.cache.List(context.Background(), ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 { // push the first page's revision out of the window
		r.create("zz", fmt.Sprintf("later%d", i))
	}
	r.waitRev(first.ResourceVersion + 5)

	before := r.listCalls()
	second, err := r.cache.List(context.Background(), ListOptions{Limit: 2, Continue: first.Continue})
	if err != nil {
		t.Fatal(err)
	}
	if r.mem != nil && r.listCalls() == before {
		t.Error("expected a storage read for a revision outside the window")
	}
	if second.ResourceVersion != first.ResourceVersion || !slices.Equal(names(second.Items), []string{"ns1/o01", "ns1/o04"}) {
		t.Errorf("second page %v at %d", names(second.Items), second.ResourceVersion)
	}

	r.compact(r.cache.Revision())
	_, err = r.cache.List(context.Background(), ListOptions{Limit: 2, Continue: second.Continue})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("err = %v, want 410 Expired", err)
	}
	if err.Error() != msgInconsistentContinue {
		t.Errorf("message = %q", err.Error())
	}
	var se *apierrors.StatusError
	errors.As(err, &se)
	tok := se.ErrStatus.ListMeta.Continue
	start, rv, derr := decodeContinue(tok, testPrefix)
	if derr != nil || rv != -1 || start != key("ns1", "o04")+"\x00" {
		t.Fatalf("inconsistent token = %q (%q, %d, %v)", tok, start, rv, derr)
	}
	// The inconsistent token continues at the latest revision.
	rest, err := r.cache.List(context.Background(), ListOptions{Limit: 100, Continue: tok})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ns2/o02", "ns2/o05"}
	for i := range 5 {
		want = append(want, fmt.Sprintf("zz/later%d", i))
	}
	if !slices.Equal(names(rest.Items), want) || rest.ResourceVersion != r.cache.Revision() {
		t.Errorf("rest = %v at %d", names(rest.Items), rest.ResourceVersion)
	}
}

func TestListExactOutsideWindow(t *testing.T) { forEachBackend(t, testListExactOutsideWindow) }

func testListExactOutsideWindow(t *testing.T, newStore func(testing.TB) storage.Interface) {
	r := newRig(t, newStore(t), Options{WindowSize: 2})
	revs := history(r)
	res, err := r.cache.List(context.Background(), ListOptions{ResourceVersion: strconv.FormatInt(revs[2], 10), ResourceVersionMatch: MatchExact})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names(res.Items), []string{"a/x1", "a/y1"}) || res.ResourceVersion != revs[2] {
		t.Errorf("got %v at %d", names(res.Items), res.ResourceVersion)
	}
	r.compact(revs[4])
	_, err = r.cache.List(context.Background(), ListOptions{ResourceVersion: strconv.FormatInt(revs[2], 10), ResourceVersionMatch: MatchExact})
	if !apierrors.IsResourceExpired(err) || err.Error() != msgListExpired {
		t.Fatalf("err = %v, want 410 %q", err, msgListExpired)
	}
	// Inside the window still served from memory.
	before := r.listCalls()
	res, err = r.cache.List(context.Background(), ListOptions{ResourceVersion: strconv.FormatInt(revs[4], 10), ResourceVersionMatch: MatchExact})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names(res.Items), []string{"a/x1", "a/y1", "b/x2"}) || r.listCalls() != before {
		t.Errorf("got %v, storage reads %d", names(res.Items), r.listCalls()-before)
	}
}

// Storage errors reach the client as Status errors.
func TestListStorageErrors(t *testing.T) {
	r := newRig(t, &failingStore{memStore: newMemStore()}, Options{})
	fs := r.store.(*failingStore)
	fs.fail.Store(true)
	_, err := r.cache.List(context.Background(), ListOptions{})
	if statusCode(err) != http.StatusServiceUnavailable {
		t.Fatalf("err = %v, want 503", err)
	}
}

type failingStore struct {
	*memStore
	fail atomic.Bool
}

func (f *failingStore) CurrentRevision(ctx context.Context) (int64, error) {
	if f.fail.Load() {
		return 0, fmt.Errorf("dial: %w", storage.ErrUnavailable)
	}
	return f.memStore.CurrentRevision(ctx)
}

// Before its first list the cache answers lists from storage and refuses
// watches with 429, as upstream does while it initializes.
func TestNotReady(t *testing.T) {
	store := newMemStore()
	if _, err := store.Create(context.Background(), key("a", "x"), object("a", "x")); err != nil {
		t.Fatal(err)
	}
	c := New(store, testPrefix, testDecode, Options{Logger: slog.New(slog.DiscardHandler)})
	defer c.Stop()
	for _, opts := range []ListOptions{{}, {ResourceVersion: "0"}, {ResourceVersion: "2", ResourceVersionMatch: MatchExact}, {Limit: 1}} {
		res, err := c.List(context.Background(), opts)
		if err != nil {
			t.Fatalf("%+v: %v", opts, err)
		}
		if !slices.Equal(names(res.Items), []string{"a/x"}) {
			t.Errorf("%+v: %v", opts, names(res.Items))
		}
	}
	_, err := c.List(context.Background(), ListOptions{ResourceVersion: "50", ResourceVersionMatch: MatchNotOlderThan})
	if !IsTooLargeResourceVersion(err) {
		t.Errorf("not older than a future revision: %v", err)
	}
	if _, err := c.Watch(context.Background(), WatchOptions{}); !apierrors.IsTooManyRequests(err) {
		t.Errorf("watch before ready: %v, want 429", err)
	}
	if c.Revision() != 0 {
		t.Errorf("revision %d before the first list", c.Revision())
	}
}
