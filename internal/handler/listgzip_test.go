package handler_test

import (
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crdserver/crdserver/internal/compress"
	"github.com/crdserver/crdserver/internal/webhook/webhooktest"
)

// A list whose objects a webhook converts is gzipped for a client that
// takes gzip (compressed while the reviews are under way), sent as it is
// when no compressor is free, and answered with the webhook's error when
// a review fails, whatever was compressed before it.
func TestListConvertedGzipped(t *testing.T) {
	e := newEnv(t)
	var failing atomic.Bool
	hook := webhooktest.Start(t, webhooktest.Conversion(func(obj map[string]any, to string) (map[string]any, error) {
		if failing.Load() {
			return nil, errors.New("the oven is cold")
		}
		obj["apiVersion"] = to
		return obj, nil
	}, nil))
	schema := `{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"x":{"type":"string"}}}}}}`
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"gizmos.lists.example.com"},
 "spec":{"group":"lists.example.com","scope":"Namespaced",
  "names":{"plural":"gizmos","singular":"gizmo","kind":"Gizmo"},
  "conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],
   "clientConfig":{"url":"` + hook.URL + `/convert","caBundle":"` + base64.StdEncoding.EncodeToString(hook.CABundle) + `"}}},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":` + schema + `},
   {"name":"v2","served":true,"storage":false,"schema":` + schema + `}]}}`
	if r := e.do(req{method: "POST", path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body: crd}); r.code != 201 {
		t.Fatalf("creating the CRD: %d %s", r.code, r.body)
	}
	const v1 = "/apis/lists.example.com/v1/namespaces/default/gizmos"
	const n = 300 // of 700 bytes and more: over compress.Threshold
	pad := strings.Repeat("z", 700)
	for i := range n {
		body := `{"apiVersion":"lists.example.com/v1","kind":"Gizmo","metadata":{"name":"g` + strconv.Itoa(i) + `"},"spec":{"x":"` + pad + `"}}`
		for try := 0; ; try++ {
			r := e.do(req{method: "POST", path: v1, body: body})
			if r.code == 201 {
				break
			}
			if r.code != 404 || try == 300 {
				t.Fatalf("creating gizmo %d: %d %s", i, r.code, r.body)
			}
			sleep() // the CRD is served once the registry has seen it
		}
	}
	// set changes gizmo g7's x.
	set := func(x string) {
		t.Helper()
		r := e.do(req{method: "PATCH", path: v1 + "/g7", body: `{"spec":{"x":"` + x + `"}}`, contentType: "application/merge-patch+json"})
		if r.code != 200 {
			t.Fatalf("changing g7: %d %s", r.code, r.body)
		}
	}

	// list gets the gizmos at v2, asking for gzip, and reports whether
	// the answer was gzipped.
	list := func() (code int, body []byte, gzipped bool) {
		t.Helper()
		hr, _ := http.NewRequest("GET", e.srv.URL+"/apis/lists.example.com/v2/namespaces/default/gizmos", nil)
		hr.Header.Set("Accept-Encoding", "gzip")
		res, err := e.client.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var rd io.Reader = res.Body
		if gzipped = res.Header.Get("Content-Encoding") == "gzip"; gzipped {
			if rd, err = gzip.NewReader(res.Body); err != nil {
				t.Fatal(err)
			}
		}
		if body, err = io.ReadAll(rd); err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, body, gzipped
	}
	check := func(what string, body []byte, changed string) {
		t.Helper()
		var l struct {
			Items []struct {
				APIVersion string
				Metadata   struct{ Name string }
				Spec       struct{ X string }
			}
		}
		if err := json.Unmarshal(body, &l); err != nil || len(l.Items) != n {
			t.Fatalf("%s: %d items (%v), want %d", what, len(l.Items), err, n)
		}
		for _, it := range l.Items {
			want := pad
			if it.Metadata.Name == "g7" {
				want = changed
			}
			if it.APIVersion != "lists.example.com/v2" || it.Spec.X != want {
				t.Fatalf("%s: %s at %s with x of %d bytes, want v2 and %d", what, it.Metadata.Name, it.APIVersion, len(it.Spec.X), len(want))
			}
		}
	}

	code, body, gzipped := list()
	if code != http.StatusOK || !gzipped {
		t.Fatalf("first list: %d, gzipped %v: %.200s", code, gzipped, body)
	}
	check("first list", body, pad)

	// Every compressor busy: the list is answered, not compressed.
	set("seven")
	var busy []*compress.Writer
	for gw := compress.Take(); gw != nil; gw = compress.Take() {
		busy = append(busy, gw)
	}
	code, body, gzipped = list()
	for _, gw := range busy {
		compress.Put(gw)
	}
	if code != http.StatusOK || gzipped {
		t.Fatalf("list with every compressor busy: %d, gzipped %v: %.200s", code, gzipped, body)
	}
	check("list with every compressor busy", body, "seven")

	// The webhook failing for the one changed gizmo, after the hundreds
	// before it in the list.
	set("again")
	failing.Store(true)
	code, body, gzipped = list()
	if code != http.StatusInternalServerError || gzipped || !strings.Contains(string(body), "the oven is cold") {
		t.Fatalf("list with a failing review: %d, gzipped %v: %.300s", code, gzipped, body)
	}
	failing.Store(false)
	code, body, _ = list()
	if code != http.StatusOK {
		t.Fatalf("list once the webhook works again: %d %.200s", code, body)
	}
	check("list once the webhook works again", body, "again")
}
