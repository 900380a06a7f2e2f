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
	"github.com/crdserver/crdserver/internal/conversion"
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
			end := !h.appendEvent(c, &frame, ev)
			// Drain what is already queued into the same write.
			for more := !end; more && frame.Len() < 64<<10; {
				select {
				case ev2, ok := <-w.ResultChan():
					if !ok {
						more = false
						break
					}
					if !h.appendEvent(c, &frame, ev2) {
						more, end = false, true
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
			if end {
				return
			}
		}
	}
}

// appendEvent appends ev's frame to buf and reports whether the watch
// goes on: after an Error event, or an event that cannot be sent (its
// conversion failed), it ends, the latter with an Error event that says
// why.
func (h *Handler) appendEvent(c *call, buf *bytes.Buffer, ev watchcache.Event) bool {
	start := buf.Len()
	err := h.encodeEvent(c, buf, ev)
	if err == nil {
		return ev.Type != watchcache.Error
	}
	h.log.Error("encoding watch event", "resource", c.gr().String(), "err", err)
	buf.Truncate(start)
	if ev.Type != watchcache.Error {
		h.encodeEvent(c, buf, watchcache.Event{Type: watchcache.Error, Err: err})
	}
	return false
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
		// Converted once per event and version: watchers of one
		// version share the converter's result.
		encoded := ev.Item.JSON
		if !inVersion(c, encoded) {
			conv, err := convertStored(c, []conversion.Object{{JSON: encoded, Key: ev.Item.Key, Revision: ev.Item.Revision}})
			if err != nil {
				return err
			}
			encoded = conv[0]
		}
		if c.media.As == "" {
			buf.Write(encoded)
			break
		}
		obj, err := decodeStored(encoded)
		if err != nil {
			return err
		}
		out, err := h.asRequested(c, obj)
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
