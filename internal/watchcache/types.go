// Package watchcache keeps, per resource, the current objects and a window of
// recent events, fed by one storage watch, and serves LIST and WATCH from
// memory with the resourceVersion semantics of kube-apiserver.
package watchcache

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// Item is one object as the cache holds it: encoded once, shared by every
// list and watcher. Items are immutable: never modify what JSON, Head or
// AppendTo give. The cache keeps no decoded form (memory); callers that
// need one decode JSON, or keep what they derive from it with the item
// (View).
type Item struct {
	Key       string
	Revision  int64 // ModRevision = metadata.resourceVersion
	Namespace string
	Name      string
	// json is the object with metadata.resourceVersion set, less the
	// parts it shares with other items (see SetJSON).
	json   []byte
	shared []sharedPart
	// inline holds shared when it is a single part: most items share
	// one (the field set of their one managedFields entry).
	inline [1]sharedPart
	// MetaStart and MetaEnd are where the metadata object is in JSON():
	// JSON()[MetaStart:MetaEnd], when MetaEnd > 0 (0: not known).
	MetaStart, MetaEnd int32
	// rawManagedFields is where its decoder found metadata.managedFields
	// in the form codec keeps as a Raw (see SetRawManagedFields).
	rawManagedFields [2]int32
	Labels           Labels
	// Fields holds the values field selectors may use: any selectable
	// fields. metadata.name and metadata.namespace may be left out (nil
	// when there is nothing else): selectors read them from Name and
	// Namespace, which saves a map per object.
	Fields fields.Set

	// views holds forms of the object derived from JSON by View's
	// callers, at most maxViews of them, the most recent last. The slice
	// is never modified once stored; a new view stores a new one.
	views atomic.Pointer[[]*view]
}

// view is one derived form, built once by the first View call for its key
// while later calls for the key wait for it.
type view struct {
	key   any
	once  sync.Once
	value any
}

// maxViews bounds the views an item keeps: one per form in use (the Table
// cells of the version clients read, say), with room for a second while
// clients move from one definition of a form to the next.
const maxViews = 2

// View returns what build derives from the item for key, building it on
// the first call for key and keeping it with the item, so that every list
// and watch of this revision shares it. key is comparable and names what
// build depends on besides the item (a compiled set of Table columns); a
// new key builds anew, and the oldest view makes room. Concurrent calls
// for one key build once: the others wait for it. The value must not be
// modified once returned.
func (it *Item) View(key any, build func(*Item) any) any {
	v := it.viewFor(key)
	v.once.Do(func() { v.value = build(it) })
	return v.value
}

// viewFor returns the item's view for key, adding an unbuilt one if it
// has none.
func (it *Item) viewFor(key any) *view {
	var fresh *view
	for {
		old := it.views.Load()
		var next []*view
		if old != nil {
			for _, v := range *old {
				if v.key == key {
					return v
				}
			}
			next = make([]*view, 0, maxViews)
			next = append(next, (*old)[max(0, len(*old)-maxViews+1):]...)
		}
		if fresh == nil {
			fresh = &view{key: key}
		}
		next = append(next, fresh)
		if it.views.CompareAndSwap(old, &next) {
			return fresh
		}
	}
}

// itemFields is the field set a selector matches an item against: Fields,
// with metadata.name and metadata.namespace (for namespaced objects) from
// the item when Fields leaves them out.
type itemFields struct{ it *Item }

var _ fields.Fields = itemFields{}

func (f itemFields) Has(field string) bool {
	if f.it.Fields.Has(field) {
		return true
	}
	switch field {
	case "metadata.name":
		return true
	case "metadata.namespace":
		return f.it.Namespace != ""
	}
	return false
}

func (f itemFields) Get(field string) string {
	if v, ok := f.it.Fields[field]; ok {
		return v
	}
	switch field {
	case "metadata.name":
		return f.it.Name
	case "metadata.namespace":
		return f.it.Namespace
	}
	return ""
}

// Decoder turns a stored value into an Item. It sets
// metadata.resourceVersion to rev in JSON.
type Decoder func(key string, value []byte, rev int64) (*Item, error)

// Match values for ListOptions.ResourceVersionMatch.
const (
	MatchNone         = ""
	MatchNotOlderThan = "NotOlderThan"
	MatchExact        = "Exact"
)

// ListOptions are the list query parameters, already parsed.
type ListOptions struct {
	// Namespace restricts the list to one namespace ("" = all).
	Namespace string
	// ResourceVersion as sent by the client: "" (consistent read), "0"
	// (any), or a revision.
	ResourceVersion      string
	ResourceVersionMatch string
	Limit                int64
	Continue             string
	Labels               labels.Selector // nil = everything
	Fields               fields.Selector // nil = everything
}

// ListResult is one page.
type ListResult struct {
	Items           []*Item
	ResourceVersion int64
	// Continue is the token for the next page, "" on the last page.
	Continue           string
	RemainingItemCount *int64
}

// WatchOptions are the watch query parameters, already parsed.
type WatchOptions struct {
	Namespace            string
	ResourceVersion      string
	ResourceVersionMatch string
	Labels               labels.Selector
	Fields               fields.Selector
	AllowBookmarks       bool
	// SendInitialEvents, when non-nil and true, starts with ADDED events for
	// every current object followed by a BOOKMARK annotated
	// k8s.io/initial-events-end: "true".
	SendInitialEvents *bool
	// FinalBookmarkAt, when set with AllowBookmarks, sends one more
	// bookmark at that time: the handler sets it shortly before the watch's
	// timeout, as upstream does, so clients resume from a recent revision.
	FinalBookmarkAt time.Time
}

// EventType is the watch event type as it appears on the wire.
type EventType string

const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Bookmark EventType = "BOOKMARK"
	Error    EventType = "ERROR"
)

// Event is one watch event. For Added/Modified/Deleted, Item is the object
// (for Deleted: its last state, with the revision of the delete). For
// Bookmark, Revision is set and InitialEventsEnd marks the end of initial
// events. For Error, Err is a *apierrors.StatusError (410 Expired, ...).
type Event struct {
	Type             EventType
	Item             *Item
	Revision         int64
	InitialEventsEnd bool
	Err              error
}
