package loadgen

import (
	"encoding/json"
	"testing"
)

func TestRawBodies(t *testing.T) {
	b := newFakeBench(t, Config{ObjectSize: 2048}, fakeClient())
	body := b.bodies.create(`bench-"7"`)
	var obj map[string]any
	if err := json.Unmarshal(body, &obj); err != nil {
		t.Fatalf("create body is not JSON: %v\n%s", err, body)
	}
	if got := obj["metadata"].(map[string]any)["name"]; got != `bench-"7"` {
		t.Errorf("name = %v", got)
	}
	if n := len(body); n < 2000 || n > 2100 {
		t.Errorf("create body is %d bytes, want about 2048", n)
	}
}

func TestRawScans(t *testing.T) {
	obj := []byte(`{"apiVersion":"v1","kind":"Widget","metadata":{"annotations":{"` + annotationSeq + `":"42"},"name":"a","resourceVersion":"1234"}}`)
	if rv, err := resourceVersionOf(obj); err != nil || rv != "1234" {
		t.Errorf("resourceVersionOf = %q, %v", rv, err)
	}
	if _, err := resourceVersionOf([]byte(`{"metadata":{}}`)); err == nil {
		t.Error("resourceVersionOf found a resourceVersion in an object without one")
	}
	if seq := seqOf(obj); seq != 42 {
		t.Errorf("seqOf = %d, want 42", seq)
	}
	if seq := seqOf([]byte(`{"metadata":{}}`)); seq != -1 {
		t.Errorf("seqOf without the annotation = %d, want -1", seq)
	}
	for ev, want := range map[string]string{
		`{"type":"MODIFIED","object":{"type":"ADDED"}}`: "MODIFIED",
		`{"type":"BOOKMARK","object":{}}`:               "BOOKMARK",
		`{"type":"ERROR","object":{"kind":"Status"}}`:   "ERROR",
		`{"object":{}}`: "",
	} {
		if got := eventType([]byte(ev)); got != want {
			t.Errorf("eventType(%s) = %q, want %q", ev, got, want)
		}
	}
}
