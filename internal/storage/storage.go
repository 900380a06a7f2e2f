// Package storage defines the key-value contract every backend (etcd, embedded
// or external) satisfies, and the errors callers branch on.
//
// Values are opaque bytes: the storage layer never decodes objects. A key's
// ModRevision is the etcd revision of its last write and is what the API
// exposes as metadata.resourceVersion.
package storage

import (
	"context"
	"errors"
	"time"
)

// Errors callers branch on. Backends wrap them with context; use errors.Is.
var (
	ErrNotFound    = errors.New("storage: key not found")
	ErrExists      = errors.New("storage: key already exists")
	ErrConflict    = errors.New("storage: revision precondition failed")
	ErrCompacted   = errors.New("storage: required revision has been compacted")
	ErrFutureRev   = errors.New("storage: required revision is a future revision")
	ErrUnavailable = errors.New("storage: backend unavailable")
)

// KeyValue is one stored value and the revision of its last modification.
type KeyValue struct {
	Key         string
	Value       []byte
	ModRevision int64
	// Stale reports that the value was stored in an older form (an
	// encryption key that no longer writes): a write of the same value
	// must still be made, as that is how keys are rotated.
	Stale bool
}

// ListOptions select a page of keys under a prefix.
type ListOptions struct {
	// Revision reads the snapshot at that revision; 0 reads the latest.
	Revision int64
	// Limit bounds the number of items returned; 0 means no limit.
	Limit int64
	// StartKey, if set, starts the listing at this key (inclusive); it must
	// lie under the prefix. Used for continue tokens.
	StartKey string
}

// ListResult is a page of keys, in key order.
type ListResult struct {
	Items []KeyValue
	// Revision is the snapshot revision the page was read at.
	Revision int64
	// More reports that keys remain after the last item.
	More bool
	// Remaining counts the keys after the last item, when More is true.
	Remaining int64
}

// EventType says what happened to a key.
type EventType int

const (
	EventPut      EventType = iota // created or modified; Event.Created tells which
	EventDelete                    // deleted
	EventProgress                  // no change: the watch has seen every revision up to Event.Revision
	EventError                     // the watch ended; Event.Err says why (ErrCompacted, ...)
)

// Event is one change observed by a watch, in revision order.
type Event struct {
	Type EventType
	Key  string
	// Value is the new value for EventPut. Events carry no previous
	// value: the watch cache, their one reader, holds each key's last
	// state, and etcd would read the old revision back from its store and
	// send it along for every event.
	Value    []byte
	Created  bool  // for EventPut: the key did not exist before this revision
	Revision int64 // the revision of this change (or of the progress notification)
	Err      error // for EventError
}

// Interface is the storage contract. All methods are safe for concurrent use.
type Interface interface {
	// Get reads a key with a consistent (quorum) read. ErrNotFound if absent.
	Get(ctx context.Context, key string) (KeyValue, error)
	// List reads keys under prefix (which should end in "/").
	List(ctx context.Context, prefix string, opts ListOptions) (ListResult, error)
	// Count returns the number of keys under prefix.
	Count(ctx context.Context, prefix string) (int64, error)
	// Create writes a key that must not exist (ErrExists otherwise) and
	// returns the new revision.
	Create(ctx context.Context, key string, value []byte) (int64, error)
	// Update writes a key whose ModRevision must equal expectedRev
	// (ErrConflict otherwise, ErrNotFound if the key is gone).
	Update(ctx context.Context, key string, value []byte, expectedRev int64) (int64, error)
	// Delete removes a key whose ModRevision must equal expectedRev, or any
	// revision when expectedRev is 0. It returns the deleted value and the
	// revision of the delete.
	Delete(ctx context.Context, key string, expectedRev int64) (KeyValue, int64, error)
	// Watch streams changes under prefix with revision > fromRev (fromRev 0:
	// changes after now), followed by progress events. The channel is closed
	// when ctx ends or after an EventError.
	Watch(ctx context.Context, prefix string, fromRev int64) <-chan Event
	// RequestProgress asks every watch of this backend to emit an
	// EventProgress for the current revision soon.
	RequestProgress(ctx context.Context) error
	// CurrentRevision returns the latest revision with a consistent read.
	CurrentRevision(ctx context.Context) (int64, error)
	// Close releases the backend's connections.
	Close() error
}

// LocalRevisioner is implemented by storage that may know its current
// revision in-process, as consistently as CurrentRevision reads it but
// without a round trip: callers that would share one CurrentRevision among
// many readers to save round trips can skip the sharing.
type LocalRevisioner interface {
	// LocalRevision returns the current revision, or false when it must
	// be read with CurrentRevision.
	LocalRevision() (int64, bool)
}

// WatchRestarter is implemented by storage whose watches can fall silent
// without ending: an etcd member that answers other requests but stops
// sending one watch stream's events is noticed by gRPC keepalive only
// after many seconds, while reads that wait for the watch cache to catch
// up see it at once.
type WatchRestarter interface {
	// RestartWatches ends every open watch with an error wrapping
	// ErrUnavailable, for its reader to resume from its revision, and
	// opens the new ones on a new stream. It may do nothing when it
	// restarted them moments ago.
	RestartWatches(reason string)
}

// RestartWatches asks s to restart its watches when it can (see
// WatchRestarter), and reports whether it could.
func RestartWatches(s Interface, reason string) bool {
	r, ok := s.(WatchRestarter)
	if ok {
		r.RestartWatches(reason)
	}
	return ok
}

// GuaranteedUpdate reads key, applies tryUpdate to the current value and
// writes the result with a compare-and-swap, retrying on conflict until
// tryUpdate's result is stored or tryUpdate fails. A tryUpdate that returns
// the current value unchanged (bytes equal) writes nothing, unless the
// value is stale (KeyValue.Stale).
func GuaranteedUpdate(ctx context.Context, s Interface, key string, tryUpdate func(cur KeyValue) ([]byte, error)) (KeyValue, error) {
	for {
		cur, err := s.Get(ctx, key)
		if err != nil {
			return KeyValue{}, err
		}
		next, err := tryUpdate(cur)
		if err != nil {
			return KeyValue{}, err
		}
		if string(next) == string(cur.Value) && !cur.Stale {
			return cur, nil
		}
		rev, err := s.Update(ctx, key, next, cur.ModRevision)
		if errors.Is(err, ErrConflict) {
			if err := ctx.Err(); err != nil {
				return KeyValue{}, err
			}
			continue
		}
		if err != nil {
			return KeyValue{}, err
		}
		return KeyValue{Key: key, Value: next, ModRevision: rev}, nil
	}
}

// Expirer is implemented by storage that can expire keys: a key written
// with a TTL is deleted by the storage itself once the TTL has passed
// since that write (etcd: the key is attached to a lease, as upstream
// attaches events to one). Deleting it is an ordinary delete for
// watchers. A later write without a TTL keeps the key for good. It is
// optional: backends without it keep keys until they are deleted (see
// CreateWithTTL).
type Expirer interface {
	// CreateWithTTL is Create of a key that expires ttl after this write.
	CreateWithTTL(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error)
	// UpdateWithTTL is Update of a key that expires ttl after this write.
	UpdateWithTTL(ctx context.Context, key string, value []byte, expectedRev int64, ttl time.Duration) (int64, error)
}

// CreateWithTTL creates key with s's CreateWithTTL when ttl > 0 and s is
// an Expirer, else with Create: a backend that cannot expire keys keeps
// them.
func CreateWithTTL(ctx context.Context, s Interface, key string, value []byte, ttl time.Duration) (int64, error) {
	if e, ok := s.(Expirer); ok && ttl > 0 {
		return e.CreateWithTTL(ctx, key, value, ttl)
	}
	return s.Create(ctx, key, value)
}

// UpdateWithTTL is CreateWithTTL for Update.
func UpdateWithTTL(ctx context.Context, s Interface, key string, value []byte, expectedRev int64, ttl time.Duration) (int64, error) {
	if e, ok := s.(Expirer); ok && ttl > 0 {
		return e.UpdateWithTTL(ctx, key, value, expectedRev, ttl)
	}
	return s.Update(ctx, key, value, expectedRev)
}
