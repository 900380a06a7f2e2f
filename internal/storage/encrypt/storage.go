package encrypt

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/crdserver/crdserver/internal/storage"
)

// Wrap returns s with values encrypted by t on their way in and decrypted
// on their way out; with a nil t it returns s. A value that does not
// decrypt fails the read that met it (a watch ends with an EventError),
// as upstream's storage does, rather than being skipped silently.
func Wrap(s storage.Interface, t *Transformer) storage.Interface {
	if t == nil {
		return s
	}
	return &encrypted{Interface: s, pick: func(string) *Transformer { return t }}
}

// ByPrefix is Wrap for storage shared by several resources: a key under
// one of prefixes' keys uses that prefix's transformer (the longest
// prefix wins), any other key is stored as it is. It is for the few
// writers that bypass the resources' own stores (the kubernetes Service,
// cluster IP records), so that they store what the stores read.
func ByPrefix(s storage.Interface, prefixes map[string]*Transformer) storage.Interface {
	routes := map[string]*Transformer{}
	for p, t := range prefixes {
		if t != nil {
			routes[p] = t
		}
	}
	if len(routes) == 0 {
		return s
	}
	return &encrypted{Interface: s, pick: func(key string) *Transformer {
		var best string
		for p := range routes {
			if strings.HasPrefix(key, p) && len(p) > len(best) {
				best = p
			}
		}
		return routes[best]
	}}
}

type encrypted struct {
	storage.Interface
	// pick is the transformer of a key; nil stores the value as it is.
	pick func(key string) *Transformer
}

func (e *encrypted) toStorage(key string, value []byte) ([]byte, error) {
	t := e.pick(key)
	if t == nil {
		return value, nil
	}
	data, err := t.ToStorage(key, value)
	if err != nil {
		return nil, fmt.Errorf("encrypting %s: %w", key, err)
	}
	return data, nil
}

func (e *encrypted) fromStorage(key string, stored []byte) ([]byte, bool, error) {
	t := e.pick(key)
	if t == nil {
		return stored, false, nil
	}
	v, stale, err := t.FromStorage(key, stored)
	if err != nil {
		return nil, false, fmt.Errorf("decrypting %s: %w", key, err)
	}
	return v, stale, nil
}

var (
	_ storage.Interface       = (*encrypted)(nil)
	_ storage.LocalRevisioner = (*encrypted)(nil)
	_ storage.WatchRestarter  = (*encrypted)(nil)
	_ storage.Expirer         = (*encrypted)(nil)
)

func (e *encrypted) decrypt(kv *storage.KeyValue) error {
	v, stale, err := e.fromStorage(kv.Key, kv.Value)
	if err != nil {
		return err
	}
	kv.Value, kv.Stale = v, stale
	return nil
}

func (e *encrypted) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	kv, err := e.Interface.Get(ctx, key)
	if err != nil {
		return kv, err
	}
	return kv, e.decrypt(&kv)
}

func (e *encrypted) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	res, err := e.Interface.List(ctx, prefix, opts)
	if err != nil {
		return res, err
	}
	for i := range res.Items {
		if err := e.decrypt(&res.Items[i]); err != nil {
			return storage.ListResult{}, err
		}
	}
	return res, nil
}

func (e *encrypted) Create(ctx context.Context, key string, value []byte) (int64, error) {
	data, err := e.toStorage(key, value)
	if err != nil {
		return 0, err
	}
	return e.Interface.Create(ctx, key, data)
}

func (e *encrypted) Update(ctx context.Context, key string, value []byte, expectedRev int64) (int64, error) {
	data, err := e.toStorage(key, value)
	if err != nil {
		return 0, err
	}
	return e.Interface.Update(ctx, key, data, expectedRev)
}

func (e *encrypted) CreateWithTTL(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error) {
	data, err := e.toStorage(key, value)
	if err != nil {
		return 0, err
	}
	return storage.CreateWithTTL(ctx, e.Interface, key, data, ttl)
}

func (e *encrypted) UpdateWithTTL(ctx context.Context, key string, value []byte, expectedRev int64, ttl time.Duration) (int64, error) {
	data, err := e.toStorage(key, value)
	if err != nil {
		return 0, err
	}
	return storage.UpdateWithTTL(ctx, e.Interface, key, data, expectedRev, ttl)
}

func (e *encrypted) Delete(ctx context.Context, key string, expectedRev int64) (storage.KeyValue, int64, error) {
	kv, rev, err := e.Interface.Delete(ctx, key, expectedRev)
	if err != nil {
		return kv, rev, err
	}
	return kv, rev, e.decrypt(&kv)
}

// LocalRevision passes the wrapped storage's through.
func (e *encrypted) LocalRevision() (int64, bool) {
	if l, ok := e.Interface.(storage.LocalRevisioner); ok {
		return l.LocalRevision()
	}
	return 0, false
}

// RestartWatches passes the wrapped storage's through.
func (e *encrypted) RestartWatches(reason string) { storage.RestartWatches(e.Interface, reason) }

// Watch decrypts each event's values in a goroutine of its own, which
// ends with the wrapped watch.
func (e *encrypted) Watch(ctx context.Context, prefix string, fromRev int64) <-chan storage.Event {
	in := e.Interface.Watch(ctx, prefix, fromRev)
	out := make(chan storage.Event, cap(in))
	go func() {
		defer close(out)
		for ev := range in {
			if err := e.decryptEvent(&ev); err != nil {
				ev = storage.Event{Type: storage.EventError, Err: err, Revision: ev.Revision}
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
			if ev.Type == storage.EventError {
				return
			}
		}
	}()
	return out
}

func (e *encrypted) decryptEvent(ev *storage.Event) error {
	if len(ev.Value) == 0 {
		return nil
	}
	plain, _, err := e.fromStorage(ev.Key, ev.Value)
	if err != nil {
		return err
	}
	ev.Value = plain
	return nil
}
