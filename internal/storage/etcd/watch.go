package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

	"github.com/crdserver/crdserver/internal/storage"
)

// Watch implements storage.Interface. With fromRev 0 it first reads the
// current revision, so every change committed after Watch is called is
// delivered; etcd registers watches asynchronously and "from now" on its
// side could miss writes made right after Watch returns.
//
// etcd delivers the events of one revision in one response; they are sent
// on the channel one after another, before anything of a later revision.
// A progress event is sent only when its revision is at least fromRev.
func (b *Backend) Watch(ctx context.Context, prefix string, fromRev int64) <-chan storage.Event {
	out := make(chan storage.Event, 1)
	if fromRev <= 0 {
		rev, err := b.CurrentRevision(ctx)
		if err != nil {
			out <- storage.Event{Type: storage.EventError, Err: fmt.Errorf("watch %q: %w", prefix, err)}
			close(out)
			return out
		}
		fromRev = rev
	}
	// Derive from the watches' parent but end with the caller's ctx.
	wctx, cancel := context.WithCancel(b.watches.context())
	stop := context.AfterFunc(ctx, cancel)
	wch := b.client.Watch(wctx, prefix,
		clientv3.WithPrefix(),
		clientv3.WithRev(fromRev+1),
		clientv3.WithProgressNotify())
	go func() {
		defer close(out)
		defer cancel()
		defer stop()
		w := watchStream{ctx: ctx, out: out, prefix: prefix, lastRev: fromRev}
		for resp := range wch {
			if !w.handle(resp) {
				return
			}
		}
		// The client closes the channel when wctx ends, which is either
		// the caller's ctx (no error to report) or Close.
		if ctx.Err() == nil {
			w.send(storage.Event{Type: storage.EventError, Err: fmt.Errorf("watch %q: %w: watch closed", prefix, storage.ErrUnavailable)})
		}
	}()
	return out
}

// watchStream translates the responses of one etcd watch.
type watchStream struct {
	ctx     context.Context
	out     chan<- storage.Event
	prefix  string
	lastRev int64 // the revision the consumer has seen everything up to
}

// handle sends the events of one response and reports whether the watch
// goes on.
func (w *watchStream) handle(resp clientv3.WatchResponse) bool {
	if resp.CompactRevision != 0 {
		w.send(storage.Event{Type: storage.EventError, Err: fmt.Errorf("watch %q from revision %d (compacted at %d): %w",
			w.prefix, w.lastRev, resp.CompactRevision, storage.ErrCompacted)})
		return false
	}
	if err := resp.Err(); err != nil {
		if w.ctx.Err() != nil {
			return false
		}
		w.send(storage.Event{Type: storage.EventError, Err: watchErr(w.ctx, w.prefix, err)})
		return false
	}
	if resp.IsProgressNotify() {
		// etcd answers progress requests for the whole stream; a watch
		// that starts in the future must not report an older revision.
		if rev := resp.Header.Revision; rev >= w.lastRev {
			w.lastRev = rev
			return w.send(storage.Event{Type: storage.EventProgress, Revision: rev})
		}
		return true
	}
	for _, ev := range resp.Events {
		if !w.send(toEvent(ev)) {
			return false
		}
		w.lastRev = ev.Kv.ModRevision
	}
	return true
}

func (w *watchStream) send(ev storage.Event) bool {
	select {
	case w.out <- ev:
		return true
	case <-w.ctx.Done():
		return false
	}
}

func toEvent(ev *clientv3.Event) storage.Event {
	out := storage.Event{Key: string(ev.Kv.Key), Revision: ev.Kv.ModRevision}
	switch ev.Type {
	case mvccpb.Event_DELETE:
		out.Type = storage.EventDelete
	default:
		out.Type = storage.EventPut
		out.Value = ev.Kv.Value
		out.Created = ev.Kv.CreateRevision == ev.Kv.ModRevision
	}
	return out
}

func watchErr(ctx context.Context, prefix string, err error) error {
	if errors.Is(err, context.Canceled) {
		// Canceled by Close, not by the consumer (checked before).
		return fmt.Errorf("watch %q: %w: %w", prefix, storage.ErrUnavailable, err)
	}
	return mapErr(ctx, "watch", prefix, err)
}

// RequestProgress implements storage.Interface. etcd answers only once
// every watch of this backend has caught up with the store (and none
// waits for a revision that does not exist yet); callers needing a
// progress event should repeat the request until it arrives.
func (b *Backend) RequestProgress(ctx context.Context) error {
	// Same metadata as the watches, the caller's cancellation.
	pctx, cancel := context.WithCancel(b.watches.context())
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	if err := b.client.RequestProgress(pctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("request progress: %w", ctx.Err())
		}
		return mapErr(pctx, "request progress", "", err)
	}
	return nil
}

// watchParent is the parent context of every watch of a Backend. The etcd
// client multiplexes watches whose contexts carry the same gRPC metadata
// onto one stream, and RequestProgress only reaches the stream matching
// its context's metadata; deriving every watch and every progress request
// from one parent keeps them on one stream. The parent carries
// WithRequireLeader so watches fail over when their member loses its
// leader instead of hanging.
//
// A member that is frozen or cut off cannot say it lost its leader: its
// stream just falls silent. restart ends every watch (each sees
// ErrUnavailable and resumes from its revision) and gives the new ones
// metadata of their own, so the client opens a new stream, on a member
// that serves, instead of adding them to the silent one.
type watchParent struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	gen    int // restarts so far: the new stream's metadata
	// asked is when RestartWatches last restarted the watches.
	asked time.Time
}

func (p *watchParent) context() context.Context {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ctx
}

// restart ends the watches of the current parent and makes a new one.
func (p *watchParent) restart() {
	p.mu.Lock()
	old := p.cancel
	ctx := clientv3.WithRequireLeader(context.Background())
	if p.gen > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, "crdserver-watch-stream", strconv.Itoa(p.gen))
	}
	p.gen++
	p.ctx, p.cancel = context.WithCancel(ctx)
	p.mu.Unlock()
	if old != nil {
		old()
	}
}

// restartEvery bounds how often RestartWatches restarts the watches:
// every watch cache of the backend reads through the one stream, and each
// may find it silent at about the same moment.
const restartEvery = 10 * time.Second

// RestartWatches implements storage.WatchRestarter: the watches move to a
// new stream, at most once per restartEvery.
func (b *Backend) RestartWatches(reason string) {
	now := time.Now()
	if !b.watches.mayRestart(now) {
		return
	}
	b.log.Warn("etcd: restarting watches on a new stream", "reason", reason)
	b.watches.restart()
}

// mayRestart reports whether a restart asked for at now is due, and notes
// it when it is.
func (p *watchParent) mayRestart(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.asked.IsZero() && now.Sub(p.asked) < restartEvery {
		return false
	}
	p.asked = now
	return true
}

// stop ends every watch, for good.
func (p *watchParent) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cancel()
}
