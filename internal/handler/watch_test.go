package handler_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Every watch event, bookmarks included, comes in the form the Accept header
// asks for: a metadata-only informer (controller-runtime's OnlyMetadata)
// can't decode a bookmark of the resource's own kind and restarts its watch.
func TestWatchEventsAsRequested(t *testing.T) {
	e := newEnv(t)
	if r := e.do(req{method: "POST", path: "/api/v1/namespaces", body: ns("watched")}); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	const watchList = "/api/v1/namespaces?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
	for _, tc := range []struct{ accept, kind string }{
		{"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "PartialObjectMetadata"},
		{"application/json;as=Table;g=meta.k8s.io;v=v1", "Table"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			r := e.do(req{method: "GET", path: watchList, accept: tc.accept})
			if r.code != 200 {
				t.Fatalf("watch: %d %s", r.code, r.body)
			}
			var types []string
			endMarked := false
			for line := range bytes.Lines(r.body) {
				var ev struct {
					Type   string
					Object map[string]any
				}
				if err := json.Unmarshal(line, &ev); err != nil {
					t.Fatalf("frame %q: %v", line, err)
				}
				types = append(types, ev.Type)
				if ev.Object["kind"] != tc.kind || ev.Object["apiVersion"] != "meta.k8s.io/v1" {
					t.Errorf("%s event is a %v %v, want a meta.k8s.io/v1 %s", ev.Type, ev.Object["apiVersion"], ev.Object["kind"], tc.kind)
				}
				if ev.Type == "BOOKMARK" && str(ev.Object, "metadata", "resourceVersion") == "" {
					t.Errorf("bookmark without a resourceVersion: %s", line)
				}
				if ev.Type == "BOOKMARK" && tc.kind == "PartialObjectMetadata" &&
					str(ev.Object, "metadata", "annotations", metav1.InitialEventsAnnotationKey) == "true" {
					endMarked = true
				}
			}
			if tc.kind == "PartialObjectMetadata" && !endMarked {
				t.Errorf("no bookmark carries the %s annotation: %s", metav1.InitialEventsAnnotationKey, r.body)
			}
			if len(types) < 2 || types[0] != "ADDED" || types[len(types)-1] != "BOOKMARK" {
				t.Errorf("events %v, want the initial ADDED events and then a BOOKMARK", types)
			}
		})
	}
}

// A metadata watch's events carry what a get in the same form answers,
// in JSON and in protobuf, for a custom resource and a built-in: the
// events' metadata is cut from the cached objects, and must be theirs.
func TestWatchMetadataEventsAsGot(t *testing.T) {
	e := newWidgetEnv(t)
	const configMaps = "/api/v1/namespaces/default/configmaps"
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1","labels":{"a":"b"},"annotations":{"note":"x"}},"data":{"k":"v"}}`
	if r := e.do(req{method: "POST", path: configMaps, body: cm}); r.code != 201 {
		t.Fatalf("creating c1: %d %s", r.code, r.body)
	}
	for _, tc := range []struct{ collection, name string }{{widgets, "w1"}, {configMaps, "c1"}} {
		for _, accept := range []string{
			"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
			"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
		} {
			got := e.do(req{method: "GET", path: tc.collection + "/" + tc.name, accept: accept})
			if got.code != 200 {
				t.Fatalf("get %s as %s: %d %s", tc.name, accept, got.code, got.body)
			}
			// A new resource's watch cache fills in the background; until
			// it has, watches get 429 with Retry-After, which clients retry.
			watch := req{method: "GET", path: tc.collection + "?watch=1&resourceVersion=0&timeoutSeconds=1", accept: accept}
			w := e.do(watch)
			for i := 0; w.code == 429 && i < 300; i++ {
				sleep()
				w = e.do(watch)
			}
			if w.code != 200 {
				t.Fatalf("watch %s as %s: %d %s", tc.collection, accept, w.code, w.body)
			}
			var want, ev metav1.PartialObjectMetadata
			var typ string
			if strings.HasPrefix(accept, "application/json") {
				line, _, _ := bytes.Cut(w.body, []byte("\n"))
				var frame struct {
					Type   string
					Object json.RawMessage
				}
				if err := json.Unmarshal(line, &frame); err != nil {
					t.Fatalf("frame %q: %v", line, err)
				}
				typ = frame.Type
				if err := json.Unmarshal(frame.Object, &ev); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(got.body, &want); err != nil {
					t.Fatal(err)
				}
			} else {
				we := protobufFrame(t, w.body)
				typ = we.Type
				ev = protobufMetadata(t, we.Object.Raw)
				want = protobufMetadata(t, got.body)
			}
			if typ != "ADDED" || !equality.Semantic.DeepEqual(ev, want) {
				t.Errorf("%s as %s: first event %s %+v, want ADDED %+v", tc.collection, accept, typ, ev, want)
			}
			if ev.Name != tc.name || len(ev.ManagedFields) == 0 || ev.ResourceVersion == "" {
				t.Errorf("%s as %s: event metadata %+v lacks the object's name, managedFields or resourceVersion", tc.collection, accept, ev.ObjectMeta)
			}
		}
	}
}

// protobufFrame reads the first frame of a protobuf watch.
func protobufFrame(t *testing.T, body []byte) metav1.WatchEvent {
	t.Helper()
	if len(body) < 4 {
		t.Fatalf("watch body %q", body)
	}
	n := binary.BigEndian.Uint32(body)
	if int(n) > len(body)-4 {
		t.Fatalf("frame of %d bytes in %d", n, len(body))
	}
	var we metav1.WatchEvent
	if err := we.Unmarshal(body[4 : 4+n]); err != nil {
		t.Fatal(err)
	}
	return we
}

// protobufMetadata decodes an enveloped protobuf PartialObjectMetadata.
func protobufMetadata(t *testing.T, b []byte) metav1.PartialObjectMetadata {
	t.Helper()
	var env runtime.Unknown
	if !bytes.HasPrefix(b, []byte("k8s\x00")) {
		t.Fatalf("not enveloped: %q", b)
	}
	if err := env.Unmarshal(b[4:]); err != nil {
		t.Fatal(err)
	}
	if env.APIVersion != "meta.k8s.io/v1" || env.Kind != "PartialObjectMetadata" {
		t.Fatalf("envelope of %s %s", env.APIVersion, env.Kind)
	}
	var pm metav1.PartialObjectMetadata
	if err := pm.Unmarshal(env.Raw); err != nil {
		t.Fatal(err)
	}
	return pm
}

// A streaming list (initial events, with bookmarks) is compressed for a
// client that accepts gzip, as kube-apiserver 1.37 compresses it
// (WatchListCompression); other watches are not. Its bookmark names no
// creationTimestamp, and a watch too short for upstream's last bookmark
// (two seconds before the end) gets none.
func TestWatchListCompressed(t *testing.T) {
	e := newEnv(t)
	created := e.do(req{method: "POST", path: "/api/v1/namespaces", body: ns("gzipped")})
	if created.code != 201 {
		t.Fatalf("create: %d %s", created.code, created.body)
	}
	get := func(path, acceptEncoding string) (*http.Response, []byte) {
		t.Helper()
		hr, err := http.NewRequest("GET", e.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		hr.Header.Set("Accept-Encoding", acceptEncoding) // the transport leaves the body as sent
		res, err := e.client.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, b
	}
	const list = "/api/v1/namespaces?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"
	for _, tc := range []struct {
		name, path, acceptEncoding string
		gzipped                    bool
	}{
		{"streaming list", list + "&allowWatchBookmarks=true", "gzip", true},
		{"streaming list, gzip among others", list + "&allowWatchBookmarks=true", "br, gzip", true},
		{"streaming list, gzip with a quality", list + "&allowWatchBookmarks=true", "gzip;q=1", false},
		{"streaming list, identity", list + "&allowWatchBookmarks=true", "identity", false},
		{"no bookmarks", list, "gzip", false},
		{"watch from 0, no bookmarks", "/api/v1/namespaces?watch=true&resourceVersion=0&timeoutSeconds=1", "gzip", false},
		{"watch from 0, a streaming list by default", "/api/v1/namespaces?watch=true&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=1", "gzip", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := get(tc.path, tc.acceptEncoding)
			if res.StatusCode != 200 {
				t.Fatalf("watch: %d %s", res.StatusCode, body)
			}
			if got := res.Header.Get("Content-Encoding") == "gzip"; got != tc.gzipped {
				t.Fatalf("Content-Encoding %q, want gzip: %v", res.Header.Get("Content-Encoding"), tc.gzipped)
			}
			if tc.gzipped {
				if !slices.Contains(res.Header.Values("Vary"), "Accept-Encoding") {
					t.Errorf("Vary %q lacks Accept-Encoding", res.Header.Values("Vary"))
				}
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			var last string
			for line := range bytes.Lines(body) {
				var ev struct {
					Type   string
					Object map[string]any
				}
				if err := json.Unmarshal(line, &ev); err != nil {
					t.Fatalf("frame %q: %v", line, err)
				}
				if ev.Type == "BOOKMARK" {
					md, _ := ev.Object["metadata"].(map[string]any)
					if _, ok := md["creationTimestamp"]; ok {
						t.Errorf("bookmark names a creationTimestamp: %s", line)
					}
				}
				last = ev.Type
			}
			if strings.Contains(tc.path, "allowWatchBookmarks") && last != "BOOKMARK" {
				t.Errorf("last event %q, want the initial events' end: %s", last, body)
			}
			if !strings.Contains(tc.path, "allowWatchBookmarks") && last == "BOOKMARK" {
				t.Errorf("a watch without bookmarks got one: %s", body)
			}
		})
	}
	// A one-second watch that allows bookmarks gets none: upstream's last
	// one would be due before it began. (From "" or "0" it would be a
	// streaming list, as upstream defaults such a watch.)
	rv := str(created.obj(t), "metadata", "resourceVersion")
	_, body := get("/api/v1/namespaces?watch=true&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion="+rv, "identity")
	if len(body) != 0 {
		t.Errorf("one-second watch from now sent %s", body)
	}
}

// A compressed streaming list reaches the client as it is sent: Go's
// gzip reader, as client-go uses it, returns the initial events and their
// end while the watch goes on (a batch must not wait for the next one).
func TestWatchListCompressedStreams(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/api/v1/namespaces?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=600", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.client.Do(hr) // the transport asks for gzip and decompresses
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if !res.Uncompressed {
		t.Fatalf("the streaming list was not compressed")
	}
	dec := json.NewDecoder(res.Body)
	for {
		var ev struct {
			Type   string
			Object map[string]any
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("before the initial events' end: %v", err)
		}
		if ev.Type == "BOOKMARK" && str(ev.Object, "metadata", "annotations", metav1.InitialEventsAnnotationKey) == "true" {
			if ctx.Err() != nil {
				t.Fatal("the initial events' end came only when the request was given up")
			}
			return
		}
	}
}
