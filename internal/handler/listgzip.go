package handler

import (
	"bufio"
	"bytes"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/compress"
	"github.com/crdserver/crdserver/internal/conversion"
)

// writeConvertingGzipped answers a JSON list whose objects objs (items
// idx of l) a conversion webhook converts, gzipping each object as soon
// as it and those before it are converted, instead of converting all and
// then compressing: a long list's first conversion then costs about the
// time its reviews take rather than that plus the compression
// (docs/conversion.md). The compressed answer is held until every
// object has converted, so that a failed conversion is still answered
// with its error and nothing else. It reports false, having written
// nothing, when the list is answered otherwise: the client does not take
// gzip (or audit keeps the answer), the answer is small, every object's
// conversion is kept already (the list then streams, and the client reads
// it as it is compressed) or the converter does not stream, or every
// compressor is busy.
func (h *Handler) writeConvertingGzipped(c *call, lm metav1.ListMeta, l listed, objs []conversion.Object, idx []int) bool {
	if c.media.As != "" || c.media.Type != codec.MediaJSON || c.media.Pretty || !c.def.Custom() ||
		!compress.Allowed(c.r.Context()) {
		return false
	}
	if ec, ok := conversion.For(c.def).(conversion.EachConverter); !ok || !ec.Pending(c.apiVersion(), objs) {
		// Nothing to wait for: the list streams as it is written.
		return false
	}
	size := 0
	for _, it := range l.items {
		if size += it.Len(); size > compress.Threshold {
			break
		}
	}
	if size <= compress.Threshold {
		return false
	}
	gw := compress.Take()
	if gw == nil {
		return false
	}
	defer compress.Put(gw)

	var body bytes.Buffer
	gw.Reset(&body)
	bw := listWriters.Get().(*bufio.Writer)
	bw.Reset(gw)
	defer func() {
		bw.Reset(nil)
		listWriters.Put(bw)
	}()
	bw.Write(objectListHead(c, lm))
	next := 0
	writeTo := func(end int) {
		for ; next < end; next++ {
			if next > 0 {
				bw.WriteByte(',')
			}
			l.at(next).writeTo(bw)
		}
	}
	err := c.conv().FromStoredEach(c.r.Context(), objs, func(j int, b []byte) error {
		i := idx[j]
		l.encoded[i].body = b
		writeTo(i + 1)
		return nil
	})
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return true
	}
	writeTo(l.len())
	bw.WriteString("]}\n")
	// Writes to memory do not fail.
	_ = bw.Flush()
	_ = gw.Close()

	hd := c.w.Header()
	hd.Set("Content-Type", codec.MediaJSON)
	hd.Set("Content-Encoding", "gzip")
	hd.Add("Vary", "Accept-Encoding")
	c.w.WriteHeader(http.StatusOK)
	if _, err := c.w.Write(body.Bytes()); err != nil {
		h.log.Debug("writing a list", "resource", c.gr(), "err", err)
	}
	return true
}
