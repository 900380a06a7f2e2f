package handler

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// minWatchTimeout is upstream's --min-request-timeout: a watch without
// timeoutSeconds ends after a random time between one and two of these, so
// that clients rebalance.
const minWatchTimeout = 30 * time.Minute

// watch streams events from the watch cache as JSON frames.
func (h *Handler) watch(c *call) {
	opts, err := listOptions(c)
	if err == nil {
		err = cacheResourceVersionError(opts.ResourceVersion)
	}
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	timeout := minWatchTimeout + time.Duration(rand.Int64N(int64(minWatchTimeout)))
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	ctx := c.r.Context()
	w, err := c.store.Cache.Watch(ctx, watchcache.WatchOptions{
		Namespace:            c.info.Namespace,
		ResourceVersion:      opts.ResourceVersion,
		ResourceVersionMatch: string(opts.ResourceVersionMatch),
		Labels:               opts.LabelSelector,
		Fields:               opts.FieldSelector,
		AllowBookmarks:       opts.AllowWatchBookmarks,
		SendInitialEvents:    opts.SendInitialEvents,
		// Upstream sends a last bookmark two seconds before the timeout.
		FinalBookmarkAt: h.now().Add(timeout - 2*time.Second),
	})
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	defer w.Stop()

	flusher, _ := c.w.(http.Flusher)
	c.w.Header().Set("Content-Type", "application/json")
	c.w.Header().Set("Transfer-Encoding", "chunked")
	c.w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var frame bytes.Buffer
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		case <-h.stopWatches:
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			frame.Reset()
			if err := h.encodeEvent(c, &frame, ev); err != nil {
				h.log.Error("encoding watch event", "resource", c.gr().String(), "err", err)
				return
			}
			// Drain what is already queued into the same write.
			for more := true; more && frame.Len() < 64<<10; {
				select {
				case ev2, ok := <-w.ResultChan():
					if !ok {
						more = false
						break
					}
					if err := h.encodeEvent(c, &frame, ev2); err != nil {
						return
					}
				default:
					more = false
				}
			}
			if _, err := c.w.Write(frame.Bytes()); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			if ev.Type == watchcache.Error {
				return
			}
		}
	}
}

// encodeEvent appends one watch frame: {"type":...,"object":...}\n.
func (h *Handler) encodeEvent(c *call, buf *bytes.Buffer, ev watchcache.Event) error {
	buf.WriteString(`{"type":"`)
	buf.WriteString(string(ev.Type))
	buf.WriteString(`","object":`)
	switch ev.Type {
	case watchcache.Bookmark:
		md := map[string]any{"resourceVersion": strconv.FormatInt(ev.Revision, 10), "creationTimestamp": nil}
		if ev.InitialEventsEnd {
			md["annotations"] = map[string]any{metav1.InitialEventsAnnotationKey: "true"}
		}
		out, err := h.asRequested(c, map[string]any{"kind": c.def.Kind, "apiVersion": c.apiVersion(), "metadata": md})
		if err != nil {
			return err
		}
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		buf.Write(b)
	case watchcache.Error:
		st := apierrors.NewInternalError(ev.Err).Status()
		if s, ok := ev.Err.(apierrors.APIStatus); ok {
			st = s.Status()
		}
		st.Kind, st.APIVersion = "Status", "v1"
		b, err := json.Marshal(st)
		if err != nil {
			return err
		}
		buf.Write(b)
	default:
		if c.media.As == "" && inVersion(c, ev.Item.JSON) {
			buf.Write(ev.Item.JSON)
			break
		}
		obj, err := decodeStored(ev.Item.JSON)
		if err != nil {
			return err
		}
		out, err := h.asRequested(c, toRequestVersion(c, obj))
		if err != nil {
			return err
		}
		b, err := codec.Marshal(out)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	buf.WriteString("}\n")
	return nil
}
