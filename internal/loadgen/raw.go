package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// The raw client speaks the REST API over the same HTTP/2 connection
// client-go would use, but sends pre-encoded JSON and reads each answer
// without decoding it: the status code, plus the new resourceVersion found
// by a byte search. client-go's dynamic client spends more CPU per request
// decoding than a fast server spends serving it, and the load generator
// shares the machine with the server, so decoding would measure the client.
// --client-go restores the decoding client, as an operator would run it.

// rawBodies are the pieces of the create body around the object's name,
// encoded once from the template.
type rawBodies struct {
	before, after []byte
}

const namePlaceholder = "crdserver-bench-name-placeholder"

func newRawBodies(b *bench) (*rawBodies, error) {
	tmpl := b.template.DeepCopy()
	tmpl.SetName(namePlaceholder)
	data, err := json.Marshal(tmpl.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding the template: %w", err)
	}
	before, after, ok := bytes.Cut(data, []byte(`"`+namePlaceholder+`"`))
	if !ok {
		return nil, errors.New("encoding the template: name not found")
	}
	return &rawBodies{before: before, after: after}, nil
}

func (r *rawBodies) create(name string) []byte {
	body := make([]byte, 0, len(r.before)+len(name)+2+len(r.after))
	body = append(body, r.before...)
	body = strconv.AppendQuote(body, name)
	return append(body, r.after...)
}

// collectionPath is the URL path of the resource under load.
func (b *bench) collectionPath() string {
	if b.widgets() {
		gvr := b.widgetsGVR()
		return "/apis/" + gvr.Group + "/" + gvr.Version + "/namespaces/" + b.namespace + "/" + gvr.Resource
	}
	return "/api/v1/namespaces"
}

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// do sends one request and reads the whole answer into a pooled buffer,
// which release returns. An answer other than want is an error quoting the
// start of the body (a Status).
func (b *bench) do(ctx context.Context, method, path string, body []byte, want int) (data []byte, release func(), err error) {
	return b.doAccept(ctx, method, path, body, want, "application/json")
}

// doAccept is do with the given Accept header. A body is JSON, or an
// apply patch for PATCH.
func (b *bench) doAccept(ctx context.Context, method, path string, body []byte, want int, accept string) (data []byte, release func(), err error) {
	ct := "application/json"
	if method == http.MethodPatch {
		ct = "application/apply-patch+yaml"
	}
	return b.doWith(ctx, b.http, method, path, body, want, accept, ct)
}

// doWith is doAccept through client c (another user's, see fairness.go),
// with a body of type ct.
func (b *bench) doWith(ctx context.Context, c *http.Client, method, path string, body []byte, want int, accept, ct string) (data []byte, release func(), err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.nextHost()+path, rd)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", accept)
	if body != nil {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	release = func() { bodyPool.Put(buf) }
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		release()
		return nil, nil, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode != want {
		msg := buf.String()
		release()
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		return nil, nil, &httpError{what: method + " " + path, code: resp.StatusCode, body: msg}
	}
	return buf.Bytes(), release, nil
}

// httpError is an answer other than the one a request expected.
type httpError struct {
	what string
	code int
	body string // the start of the answer
}

func (e *httpError) Error() string { return fmt.Sprintf("%s: HTTP %d: %s", e.what, e.code, e.body) }

// resourceVersionOf finds metadata.resourceVersion in an object's JSON by
// a byte search: the first "resourceVersion" key of our objects is
// metadata's (the template has no other).
func resourceVersionOf(data []byte) (string, error) {
	const key = `"resourceVersion":"`
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return "", errors.New("answer has no resourceVersion")
	}
	rest := data[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return "", errors.New("answer has an unterminated resourceVersion")
	}
	return string(rest[:j]), nil
}

// write sends a create or update and returns the written object's
// resourceVersion.
func (b *bench) write(ctx context.Context, method, path string, body []byte, want int) (string, error) {
	data, release, err := b.do(ctx, method, path, body, want)
	if err != nil {
		return "", err
	}
	defer release()
	return resourceVersionOf(data)
}

func (b *bench) rawCreate(ctx context.Context, name string) error {
	rv, err := b.write(ctx, http.MethodPost, b.collectionPath(), b.bodies.create(name), http.StatusCreated)
	if err != nil {
		return err
	}
	b.pop.addRaw(name, rv)
	return nil
}

func (b *bench) rawGet(ctx context.Context, i int) error {
	s := b.pop.at(i % b.pop.len())
	_, release, err := b.do(ctx, http.MethodGet, b.collectionPath()+"/"+s.name, nil, http.StatusOK)
	if err != nil {
		return err
	}
	release()
	return nil
}

// rawReplace replaces s.obj (already changed by the caller), or its
// subresource sub ("/status"), and keeps the new resourceVersion.
func (b *bench) rawReplace(ctx context.Context, s *slot, sub string) error {
	body, err := json.Marshal(s.obj.Object)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", s.name, err)
	}
	rv, err := b.write(ctx, http.MethodPut, b.collectionPath()+"/"+s.name+sub, body, http.StatusOK)
	if err != nil {
		return err
	}
	s.obj.SetResourceVersion(rv)
	return nil
}

// rawApply sends obj as a server-side apply patch.
func (b *bench) rawApply(ctx context.Context, s *slot, obj map[string]any) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", s.name, err)
	}
	q := url.Values{"fieldManager": {applyManager}, "force": {"true"}}
	rv, err := b.write(ctx, http.MethodPatch, b.collectionPath()+"/"+s.name+"?"+q.Encode(), body, http.StatusOK)
	if err != nil {
		return err
	}
	s.wrote(rv)
	return nil
}

func (b *bench) rawDelete(ctx context.Context, name string) error {
	_, release, err := b.do(ctx, http.MethodDelete, b.collectionPath()+"/"+name, nil, http.StatusOK)
	if he := (*httpError)(nil); errors.As(err, &he) && he.code == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	release()
	return nil
}

// rawWatch is one watch stream read without decoding its objects: each
// event is split off the stream at the newline that ends it (servers
// write one JSON document per line, as encoding/json's Encoder does), and
// only the type and the update number are picked out of its bytes. A
// watch in protobuf (Config.WatchAs metadata-protobuf) is read by pb
// instead.
type rawWatch struct {
	body io.ReadCloser
	rd   *bufio.Reader
	line []byte // an event longer than rd's buffer, assembled
	// kind, when set, is the object kind every JSON event but a
	// BOOKMARK or an ERROR must carry, as `"kind":"..."`: a metadata
	// watch answered with whole objects would measure the wrong thing.
	kind []byte
	pb   *protobufEvents // nil for JSON
}

func (b *bench) startRawWatch(ctx context.Context, resourceVersion string) (*rawWatch, error) {
	q := url.Values{"watch": {"1"}, "resourceVersion": {resourceVersion}}
	if b.selector != "" {
		q.Set("labelSelector", b.selector)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.nextHost()+b.collectionPath()+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", watchAccept[b.cfg.WatchAs])
	resp, err := b.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		resp.Body.Close()
		return nil, fmt.Errorf("watch: HTTP %d: %s", resp.StatusCode, msg)
	}
	w := &rawWatch{body: resp.Body, rd: bufio.NewReaderSize(resp.Body, 64<<10)}
	switch b.cfg.WatchAs {
	case WatchAsMetadata:
		w.kind = []byte(`"kind":"PartialObjectMetadata"`)
	case WatchAsMetadataProtobuf:
		ct := resp.Header.Get("Content-Type")
		if mt, _, _ := mime.ParseMediaType(ct); mt != mediaProtobuf {
			resp.Body.Close()
			return nil, fmt.Errorf("watch: asked for protobuf, answered in %q", ct)
		}
		w.pb = &protobufEvents{rd: w.rd}
	}
	return w, nil
}

// next returns the next event. An event the watch cannot read (a
// protobuf frame that does not decode, an object of another kind than
// asked for) is an ERROR event saying why; err is set once the stream
// has ended or broken.
func (w *rawWatch) next() (watchEvent, error) {
	if w.pb != nil {
		return w.pb.next()
	}
	ev, err := w.rd.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		w.line = append(w.line[:0], ev...)
		for errors.Is(err, bufio.ErrBufferFull) {
			ev, err = w.rd.ReadSlice('\n')
			w.line = append(w.line, ev...)
		}
		ev = w.line
	}
	if err != nil {
		return watchEvent{}, err
	}
	out := watchEvent{typ: watch.EventType(eventType(ev)), seq: seqOf(ev)}
	switch {
	case out.typ == watch.Error:
		out.err = fmt.Errorf("watch error event: %.300s", ev)
	case w.kind != nil && out.typ != watch.Bookmark && !bytes.Contains(ev[:min(len(ev), 128)], w.kind):
		// Servers write the object's kind and apiVersion first, in
		// either order.
		out = watchEvent{typ: watch.Error, seq: -1, err: fmt.Errorf("watch event without %s in its head: %.300s", w.kind, ev)}
	}
	return out, nil
}

func (w *rawWatch) close() { w.body.Close() }

// eventType reads the event's type, which servers write first.
func eventType(ev []byte) string {
	head := ev[:min(len(ev), 32)]
	for _, t := range []string{"MODIFIED", "ADDED", "DELETED", "BOOKMARK", "ERROR"} {
		if bytes.Contains(head, []byte(`"type":"`+t+`"`)) {
			return t
		}
	}
	return ""
}

func seqOf(ev []byte) int64 {
	key := []byte(`"` + annotationSeq + `":"`)
	i := bytes.Index(ev, key)
	if i < 0 {
		return -1
	}
	rest := ev[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return -1
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	if err != nil {
		return -1
	}
	return n
}
