package controllers

import (
	"context"
	"log/slog"
	"time"

	"github.com/crdserver/crdserver/internal/watchcache"
)

// watchChanges hands every object added to or modified in cache to
// changed, until ctx ends. A watch that ends (a compaction, a restart of
// the cache) is started again a second later; the cache's first list is
// waited for instead of retried. name words the log line of a failed
// watch.
func watchChanges(ctx context.Context, cache *watchcache.Cache, log *slog.Logger, name string, changed func(*watchcache.Item)) {
	watchEvents(ctx, cache, log, name, func(ev watchcache.Event) {
		if ev.Type == watchcache.Added || ev.Type == watchcache.Modified {
			changed(ev.Item)
		}
	})
}

// watchEvents is watchChanges for every Added, Modified and Deleted
// event. A restarted watch begins with an Added event for every object:
// deletions during the gap between two watches are not seen.
func watchEvents(ctx context.Context, cache *watchcache.Cache, log *slog.Logger, name string, handle func(watchcache.Event)) {
	for ctx.Err() == nil {
		watchOnce(ctx, cache, log, name, handle)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func watchOnce(ctx context.Context, cache *watchcache.Cache, log *slog.Logger, name string, handle func(watchcache.Event)) {
	if err := cache.WaitReady(ctx); err != nil {
		return
	}
	w, err := cache.Watch(ctx, watchcache.WatchOptions{})
	if err != nil {
		if ctx.Err() == nil {
			log.Warn(name+": watch", "err", err)
		}
		return
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watchcache.Error {
				return
			}
			switch ev.Type {
			case watchcache.Added, watchcache.Modified, watchcache.Deleted:
				handle(ev)
			}
		}
	}
}
