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
// it as it is compressed) or the converter does not stream.
func (h *Handler) writeConvertingGzipped(c *call, lm metav1.ListMeta, l listed, objs []conversion.Object, idx []int) bool {
	if c.media.As != "" || c.media.Type != codec.MediaJSON || c.media.Pretty || !c.def.Custom() ||
		!compress.Allowed(c.r.Context()) {
		return false
	}
	size := 0
	for _, it := range l.items {
		if size += it.Len(); size > compress.Threshold {
			break
		}
	}
	if size <= compress.Threshold || !c.conv().Pending(objs) {
		// Small, or nothing to wait for: the list streams as it is
		// written.
		return false
	}
	z := gzipList{c: c, lm: lm, l: l}
	defer z.release()
	err := c.conv().FromStoredEach(c.r.Context(), objs, func(j int, b []byte) error {
		i := idx[j]
		l.encoded[i].body = b
		z.upTo(i + 1)
		return nil
	})
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return true
	}
	if z.gw == nil {
		// No compressor was free: the list goes as any other.
		h.writeListAs(c, lm, l)
		return true
	}
	z.upTo(l.len())
	z.bw.WriteString("]}\n")
	// Writes to memory do not fail.
	_ = z.bw.Flush()
	_ = z.gw.Close()

	hd := c.w.Header()
	hd.Set("Content-Type", codec.MediaJSON)
	hd.Set("Content-Encoding", "gzip")
	hd.Add("Vary", "Accept-Encoding")
	c.w.WriteHeader(http.StatusOK)
	if _, err := c.w.Write(z.body.Bytes()); err != nil {
		h.log.Debug("writing a list", "resource", c.gr(), "err", err)
	}
	return true
}

// gzipList is a JSON list compressed into memory as its objects come in.
// Its compressor is taken when the first object is in, so that a webhook
// that does not answer holds none; if none is free then, the list is not
// compressed here at all.
type gzipList struct {
	c    *call
	lm   metav1.ListMeta
	l    listed
	gw   *compress.Writer // nil until the first object, or when none was free
	off  bool             // none was free
	bw   *bufio.Writer
	body bytes.Buffer
	next int // the first object not yet written
}

// upTo writes the objects before end that are not yet written.
func (z *gzipList) upTo(end int) {
	if z.off {
		return
	}
	if z.gw == nil {
		if z.gw = compress.Take(); z.gw == nil {
			z.off = true
			return
		}
		compress.Reset(z.gw, &z.body)
		z.bw = listWriters.Get().(*bufio.Writer)
		z.bw.Reset(z.gw)
		z.bw.Write(objectListHead(z.c, z.lm))
	}
	for ; z.next < end; z.next++ {
		if z.next > 0 {
			z.bw.WriteByte(',')
		}
		z.l.at(z.next).writeTo(z.bw)
	}
}

// release gives back the compressor and the buffer.
func (z *gzipList) release() {
	if z.gw == nil {
		return
	}
	z.bw.Reset(nil)
	listWriters.Put(z.bw)
	compress.Put(z.gw)
}
