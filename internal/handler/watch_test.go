package handler_test

import (
	"bytes"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
