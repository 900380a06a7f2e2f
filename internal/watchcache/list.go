package watchcache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/third_party/forked/golang/btree"

	"github.com/crdserver/crdserver/internal/storage"
)

// filter is what a list or watch selects: a namespace, labels, fields.
type filter struct {
	ns     string
	labels labels.Selector // nil = everything
	fields fields.Selector // nil = everything
}

func newFilter(ns string, l labels.Selector, f fields.Selector) filter {
	if l != nil && l.Empty() {
		l = nil
	}
	if f != nil && f.Empty() {
		f = nil
	}
	return filter{ns: ns, labels: l, fields: f}
}

// selects reports whether a label or field selector narrows the result
// (the namespace is part of the key range, not a selector).
func (f *filter) selects() bool { return f.labels != nil || f.fields != nil }

func (f *filter) matches(it *Item) bool {
	if f.ns != "" && it.Namespace != f.ns {
		return false
	}
	// A pointer: Labels would be copied to the heap to become an interface.
	if f.labels != nil && !f.labels.Matches(&it.Labels) {
		return false
	}
	if f.fields != nil && !f.fields.Matches(itemFields{it}) {
		return false
	}
	return true
}

// query is one list request once its resourceVersion semantics are settled.
type query struct {
	filter
	listPrefix string // the cache prefix, narrowed to the namespace
	limit      int64
	start      string // first key to return (from a continue token), "" = listPrefix
	continuing bool   // start came from a continue token
}

// listPrefix returns the key prefix of a namespace's objects ("" = all).
// Keys are prefix + [namespace + "/"] + name.
func (c *Cache) listPrefix(ns string) string {
	if ns == "" {
		return c.prefix
	}
	return c.prefix + ns + "/"
}

// List serves one page with kube-apiserver's resourceVersion semantics:
//
//   - RV "" (no match): a consistent read: the cache waits until it has seen
//     storage's current revision, else the page comes from storage.
//   - RV "0": whatever the cache holds; Limit is ignored, as upstream does.
//   - RV N, match "" or NotOlderThan: the cache's state once it has reached
//     N (504 Timeout after FreshTimeout). With match "" and a Limit, N is
//     read exactly, like upstream.
//   - RV N, match Exact: the state at N, from a kept snapshot or storage
//     (410 Expired when compacted).
//   - Continue: the token's revision exactly (or latest for rv -1), from
//     the token's key on.
func (c *Cache) List(ctx context.Context, opts ListOptions) (ListResult, error) {
	q := query{
		filter:     newFilter(opts.Namespace, opts.Labels, opts.Fields),
		listPrefix: c.listPrefix(opts.Namespace),
		limit:      opts.Limit,
	}
	if q.limit < 0 {
		q.limit = 0
	}
	if opts.Continue != "" {
		// In upstream's order: the options' validation, then storage,
		// which reads the token before the resourceVersion beside it.
		if opts.ResourceVersionMatch != MatchNone {
			return ListResult{}, apierrors.NewBadRequest("resourceVersionMatch is forbidden when continue is provided")
		}
		start, rev, err := decodeContinue(opts.Continue, q.listPrefix)
		if err != nil {
			return ListResult{}, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
		}
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return ListResult{}, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		q.start, q.continuing = start, true
		if rev > 0 {
			return c.listExact(ctx, rev, q)
		}
		return c.listConsistent(ctx, q)
	}

	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return ListResult{}, err
	}
	switch opts.ResourceVersionMatch {
	case MatchExact:
		if rv == 0 {
			return ListResult{}, apierrors.NewBadRequest(fmt.Sprintf("resourceVersionMatch %q requires a non-zero resourceVersion", MatchExact))
		}
		return c.listExact(ctx, rv, q)
	case MatchNotOlderThan:
		if opts.ResourceVersion == "" {
			return ListResult{}, apierrors.NewBadRequest(fmt.Sprintf("resourceVersionMatch %q requires a resourceVersion", MatchNotOlderThan))
		}
		if rv == 0 {
			q.limit = 0
		}
		return c.listLatest(ctx, rv, q)
	case MatchNone:
		switch {
		case opts.ResourceVersion == "":
			return c.listConsistent(ctx, q)
		case rv == 0:
			q.limit = 0
			return c.listLatest(ctx, 0, q)
		case q.limit > 0:
			return c.listExact(ctx, rv, q)
		default:
			return c.listLatest(ctx, rv, q)
		}
	default:
		return ListResult{}, apierrors.NewBadRequest(fmt.Sprintf("unknown resourceVersionMatch %q", opts.ResourceVersionMatch))
	}
}

func parseRV(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	rv, err := strconv.ParseInt(s, 10, 64)
	if err != nil || rv < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %q", s))
	}
	return rv, nil
}

// listConsistent serves the state at storage's current revision.
func (c *Cache) listConsistent(ctx context.Context, q query) (ListResult, error) {
	if !c.isReady() {
		return c.listStorage(ctx, 0, 0, q)
	}
	before := c.Revision()
	rev, err := c.store.CurrentRevision(ctx)
	if err != nil {
		return ListResult{}, c.storageErr("current revision", err)
	}
	ok, err := c.waitFresh(ctx, rev)
	if errors.Is(err, errStoppedWaiting) {
		return c.listStorage(ctx, 0, 0, q)
	}
	if err != nil {
		return ListResult{}, c.storageErr("wait", err)
	}
	if !ok {
		// The watch is lagging; storage still answers consistently.
		c.behind("list", rev, before)
		return c.listStorage(ctx, 0, 0, q)
	}
	snap, cur := c.latest()
	return c.page(snap, cur, q), nil
}

// listLatest serves the cache's state once it is at least minRev.
func (c *Cache) listLatest(ctx context.Context, minRev int64, q query) (ListResult, error) {
	if !c.isReady() {
		return c.listStorage(ctx, 0, minRev, q)
	}
	if minRev > 0 {
		ok, err := c.waitFresh(ctx, minRev)
		if errors.Is(err, errStoppedWaiting) {
			return c.listStorage(ctx, 0, minRev, q)
		}
		if err != nil {
			return ListResult{}, c.storageErr("wait", err)
		}
		if !ok {
			return ListResult{}, errTooLargeRV(minRev, c.Revision())
		}
	}
	snap, cur := c.latest()
	return c.page(snap, cur, q), nil
}

// listExact serves the state at rev: from the snapshot kept with the
// window, or from storage when the window no longer reaches back to rev.
func (c *Cache) listExact(ctx context.Context, rev int64, q query) (ListResult, error) {
	if !c.isReady() {
		return c.listStorage(ctx, rev, 0, q)
	}
	ok, err := c.waitFresh(ctx, rev)
	if errors.Is(err, errStoppedWaiting) {
		return c.listStorage(ctx, rev, 0, q)
	}
	if err != nil {
		return ListResult{}, c.storageErr("wait", err)
	}
	if !ok {
		return ListResult{}, errTooLargeRV(rev, c.Revision())
	}
	snap, found := c.snapshotAt(rev)
	if !found {
		return c.listStorage(ctx, rev, 0, q)
	}
	return c.page(snap, rev, q), nil
}

// page reads one page from an immutable snapshot at rev.
func (c *Cache) page(snap *btree.BTree[*Item], rev int64, q query) ListResult {
	from := q.listPrefix
	if q.start > from {
		from = q.start
	}
	n := snap.Len()
	if q.limit > 0 && int64(n) > q.limit {
		n = int(q.limit)
	}
	if q.selects() {
		n = min(n, 64)
	}
	res := ListResult{Items: make([]*Item, 0, n), ResourceVersion: rev}
	var more bool
	var remaining int64
	countRemaining := !q.selects()
	// Every key in the tree has the cache's prefix; only a namespace's
	// range needs an end check.
	checkPrefix := q.listPrefix != c.prefix
	snap.AscendGreaterOrEqual(&Item{Key: from}, func(it *Item) bool {
		if checkPrefix && !strings.HasPrefix(it.Key, q.listPrefix) {
			return false
		}
		if q.limit > 0 && int64(len(res.Items)) >= q.limit {
			more = true
			if !countRemaining {
				return false
			}
			if q.filter.matches(it) {
				remaining++
			}
			return true
		}
		if q.filter.matches(it) {
			res.Items = append(res.Items, it)
		}
		return true
	})
	if more {
		last := res.Items[len(res.Items)-1].Key
		tok, err := encodeContinue(last+"\x00", q.listPrefix, rev)
		if err != nil {
			// Can't happen: every key in the range has the list prefix.
			c.log.Error("watchcache: encode continue", "err", err)
		}
		res.Continue = tok
		if countRemaining {
			res.RemainingItemCount = &remaining
		}
	}
	return res
}

// listStorage reads a page from storage at rev (0 = latest), collecting
// Limit matches across storage pages when a selector filters. minRev > 0
// asks for a state at least that new.
func (c *Cache) listStorage(ctx context.Context, rev, minRev int64, q query) (ListResult, error) {
	from := q.listPrefix
	if q.start > from {
		from = q.start
	}
	var res ListResult
	var more bool
	var remaining int64 = -1
	for {
		opts := storage.ListOptions{Revision: rev, StartKey: from}
		if q.limit > 0 {
			opts.Limit = q.limit - int64(len(res.Items))
			if q.selects() {
				opts.Limit = q.limit
			}
		}
		page, err := c.store.List(ctx, q.listPrefix, opts)
		switch {
		case errors.Is(err, storage.ErrCompacted):
			if q.continuing {
				return ListResult{}, errContinueCompacted(q.listPrefix, q.start)
			}
			return ListResult{}, apierrors.NewResourceExpired(msgListExpired)
		case errors.Is(err, storage.ErrFutureRev):
			return ListResult{}, errTooLargeRV(rev, c.Revision())
		case err != nil:
			return ListResult{}, c.storageErr("list", err)
		}
		if rev == 0 {
			rev = page.Revision // later pages read the same snapshot
			if rev < minRev {
				return ListResult{}, errTooLargeRV(minRev, rev)
			}
		}
		full := false
		for i, kv := range page.Items {
			it, err := c.decode(kv.Key, kv.Value, kv.ModRevision)
			if err != nil {
				c.log.Error("watchcache: skipping undecodable object", "key", kv.Key, "err", err)
				continue
			}
			if !q.filter.matches(it) {
				continue
			}
			res.Items = append(res.Items, it)
			if q.limit > 0 && int64(len(res.Items)) >= q.limit {
				full = true
				more = i < len(page.Items)-1 || page.More
				if !q.selects() && i == len(page.Items)-1 {
					remaining = page.Remaining
				}
				break
			}
		}
		if full || !page.More || len(page.Items) == 0 {
			break
		}
		from = page.Items[len(page.Items)-1].Key + "\x00"
	}
	if res.Items == nil {
		res.Items = []*Item{}
	}
	res.ResourceVersion = rev
	if more {
		tok, err := encodeContinue(res.Items[len(res.Items)-1].Key+"\x00", q.listPrefix, rev)
		if err != nil {
			c.log.Error("watchcache: encode continue", "err", err)
		}
		res.Continue = tok
		if remaining >= 0 {
			res.RemainingItemCount = &remaining
		}
	}
	return res, nil
}
