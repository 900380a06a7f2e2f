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
	"github.com/crdserver/crdserver/internal/registry"
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
	// Zero or none is the server's random timeout; a negative one ends the
	// watch at once, as upstream's timer does.
	timeout := minWatchTimeout + time.Duration(rand.Int64N(int64(minWatchTimeout)))
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds != 0 {
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
		FinalBookmarkAt:      finalBookmarkAt(h.now(), timeout),
	})
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	defer w.Stop()

	hdr := c.w.Header()
	if c.media.Type == codec.MediaProtobuf {
		hdr.Set("Content-Type", codec.MediaProtobuf+";stream=watch")
	} else {
		hdr.Set("Content-Type", "application/json")
	}
	hdr.Set("Transfer-Encoding", "chunked")
	out := newWatchWriter(c.w)
	if streamingList(opts) && acceptsGzip(c.r) {
		hdr.Set("Content-Encoding", "gzip")
		hdr.Add("Vary", "Accept-Encoding")
		out.gzip = true
	}
	c.w.WriteHeader(http.StatusOK)
	out.flushHTTP()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	sent := h.metrics.WatchEvents(c.def.Group, c.version.Name, c.def.Resource)
	var frame bytes.Buffer
	var evs []watchcache.Event
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
			// Take what is already queued too: one write, and one
			// conversion of the batch for events not in the watch's
			// version.
			evs = append(evs[:0], ev)
			closed := false
		drain:
			for len(evs) < conversion.MaxBatch && evs[len(evs)-1].Type != watchcache.Error {
				select {
				case ev2, ok := <-w.ResultChan():
					if !ok {
						closed = true
						break drain
					}
					evs = append(evs, ev2)
				default:
					break drain
				}
			}
			frame.Reset()
			end := closed
			converted, err := convertEvents(c, evs)
			if err != nil {
				h.appendEvent(c, &frame, watchcache.Event{Type: watchcache.Error, Err: err}, nil)
				end = true
			}
			n := 0
			for ; err == nil && n < len(evs); n++ {
				if !h.appendEvent(c, &frame, evs[n], converted[n]) {
					end = true
					break
				}
			}
			if err := out.send(frame.Bytes()); err != nil {
				return
			}
			sent.Add(float64(n))
			if end {
				return
			}
		}
	}
}

// convertEvents converts the objects of evs that are not in the watch's
// version, in one call to the converter, and returns them by event (nil
// for events that need none). Conversions are kept by object and
// revision, so the watch's other watchers of this version reuse them.
func convertEvents(c *call, evs []watchcache.Event) ([][]byte, error) {
	out := make([][]byte, len(evs))
	var objs []conversion.Object
	var idx []int
	for i, ev := range evs {
		if ev.Item != nil && ev.Type != watchcache.Bookmark && ev.Type != watchcache.Error && !inVersion(c, ev.Item.Head()) {
			idx = append(idx, i)
			objs = append(objs, conversion.Object{Cached: ev.Item, Key: ev.Item.Key, Revision: ev.Item.Revision})
		}
	}
	if len(objs) == 0 {
		return out, nil
	}
	conv, err := c.conv().FromStored(c.r.Context(), objs)
	if err != nil {
		return nil, err
	}
	for j, i := range idx {
		out[i] = conv[j]
	}
	return out, nil
}

// appendEvent appends ev's frame to buf and reports whether the watch
// goes on: after an Error event, or an event that cannot be sent (its
// conversion failed), it ends, the latter with an Error event that says
// why.
func (h *Handler) appendEvent(c *call, buf *bytes.Buffer, ev watchcache.Event, converted []byte) bool {
	start := buf.Len()
	err := h.appendFrame(c, buf, ev, converted)
	if err == nil {
		return ev.Type != watchcache.Error
	}
	h.log.Error("encoding watch event", "resource", c.gr().String(), "err", err)
	buf.Truncate(start)
	if ev.Type != watchcache.Error {
		h.appendFrame(c, buf, watchcache.Event{Type: watchcache.Error, Err: err}, nil)
	}
	return false
}

// appendFrame appends ev's frame in the watch's encoding.
func (h *Handler) appendFrame(c *call, buf *bytes.Buffer, ev watchcache.Event, converted []byte) error {
	if c.media.Type != codec.MediaProtobuf {
		return h.encodeEvent(c, buf, ev, converted)
	}
	if ev.Type == watchcache.Bookmark || ev.Type == watchcache.Error {
		// Rare: their JSON frame is re-encoded.
		var frame bytes.Buffer
		if err := h.encodeEvent(c, &frame, ev, converted); err != nil {
			return err
		}
		typ, obj, err := protobufWatchEvent(c, frame.Bytes())
		if err != nil {
			return err
		}
		appendWatchEventFrame(buf, typ, obj)
		return nil
	}
	key := recentKey{item: ev.Item, version: c.version, as: c.media.As, asV: c.media.Version}
	obj, ok := h.recent.get(key)
	if !ok {
		var err error
		if obj, err = protobufEventObject(c, ev, converted); err != nil {
			return err
		}
		h.recent.put(key, obj)
	}
	appendWatchEventFrame(buf, string(ev.Type), obj)
	return nil
}

// protobufEventObject is the object of an event about one in protobuf,
// with its envelope.
func protobufEventObject(c *call, ev watchcache.Event, converted []byte) ([]byte, error) {
	encoded, err := eventObject(c, ev, converted)
	if err != nil {
		return nil, err
	}
	if md, ok := eventMetadata(c, ev.Item, encoded); ok {
		// The metadata forms are transcoded from the encoded metadata,
		// as their lists are.
		raw, err := partialMetadataProtobuf(nil, md.appendTo(nil))
		if err != nil {
			return nil, err
		}
		return codec.ProtobufEnvelope("meta.k8s.io/"+metaVersion(c), "PartialObjectMetadata", raw)
	}
	if encoded == nil {
		encoded = ev.Item.JSON()
	}
	return protobufObject(c, encoded)
}

// eventObject is the object of an event about one, in the watch's
// version: nil for the cached item as it is, else the converted object.
// converted, when not nil, is the object converted already.
func eventObject(c *call, ev watchcache.Event, converted []byte) ([]byte, error) {
	if converted != nil || inVersion(c, ev.Item.Head()) {
		return converted, nil
	}
	conv, err := c.conv().FromStored(c.r.Context(), []conversion.Object{{Cached: ev.Item, Key: ev.Item.Key, Revision: ev.Item.Revision}})
	if err != nil {
		return nil, err
	}
	return conv[0], nil
}

// eventMetadata is the encoded metadata of an event's object when the
// watch asks for a metadata form: cut from the cached item (encoded nil)
// or the converted object, as a metadata list's are. false for other
// forms, or when the metadata cannot be found so, which decoding the
// object reports.
func eventMetadata(c *call, it *watchcache.Item, encoded []byte) (encodedMeta, bool) {
	if c.media.As != "PartialObjectMetadata" && c.media.As != "PartialObjectMetadataList" {
		return encodedMeta{}, false
	}
	if encoded == nil {
		return cutMetadata(it, nil)
	}
	return cutMetadata(nil, encoded)
}

// encodeEvent appends one watch frame: {"type":...,"object":...}\n.
// converted, when not nil, is the event's object in the watch's version.
func (h *Handler) encodeEvent(c *call, buf *bytes.Buffer, ev watchcache.Event, converted []byte) error {
	buf.WriteString(`{"type":"`)
	buf.WriteString(string(ev.Type))
	buf.WriteString(`","object":`)
	switch ev.Type {
	case watchcache.Bookmark:
		md := map[string]any{"resourceVersion": strconv.FormatInt(ev.Revision, 10)}
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
		encoded, err := eventObject(c, ev, converted)
		if err != nil {
			return err
		}
		if c.media.As == "" {
			if encoded == nil {
				ev.Item.WriteTo(buf)
			} else {
				buf.Write(encoded)
			}
			break
		}
		if md, ok := eventMetadata(c, ev.Item, encoded); ok {
			buf.WriteString(partialMetadataHead(c))
			md.writeTo(buf)
			buf.WriteByte('}')
			break
		}
		if c.media.As == "Table" && encoded == nil {
			ok, err := h.appendTableEvent(c, buf, ev.Item)
			if err != nil {
				return err
			}
			if ok {
				break
			}
		}
		if encoded == nil {
			encoded = ev.Item.JSON()
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
	// As upstream's, only a watch's first Table carries the columns.
	c.tableHeadersSent = c.tableHeadersSent || c.media.As == "Table" && ev.Type != watchcache.Error
	return nil
}

// appendTableEvent appends a watch event's object, a cache item in the
// watch's version, as a one-row Table whose cells are those kept with the
// item, without the closing of the frame. It reports false, having
// appended nothing, for built-ins with columns of their own.
func (h *Handler) appendTableEvent(c *call, buf *bytes.Buffer, it *watchcache.Item) (bool, error) {
	if _, ok := c.def.Hooks.(registry.TablePrinter); ok {
		return false, nil
	}
	include, err := tableOptions(c)
	if err != nil {
		return false, err
	}
	p, err := h.printerFor(c)
	if err != nil {
		return false, err
	}
	obj := listItem{item: it}
	row, err := p.rowOf(it, obj)
	if err != nil {
		return false, err
	}
	var md encodedMeta
	if include == metav1.IncludeMetadata {
		metas, err := metadataOf(listed{items: []*watchcache.Item{it}})
		if err != nil {
			return false, err
		}
		md = metas.at(0)
	}
	head, err := tableHead(c, tableHeaders(c, p.headers), metav1.ListMeta{ResourceVersion: rvString(it.Revision)})
	if err != nil {
		return false, err
	}
	buf.Write(head)
	writeTableRow(buf, nil, row, h.now(), include, partialMetadataHead(c), obj, md)
	buf.WriteString("]}")
	return true, nil
}
