package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cgdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/crdserver/crdserver/internal/registry"
)

// testDefinitions is a core built-in and CRD-like definitions covering both
// scopes, several versions (one not served), status and scale, short names,
// categories, a terminating definition and an unserved storage version.
func testDefinitions() []*registry.Definition {
	return []*registry.Definition{{
		Group: "", Resource: "namespaces", Singular: "namespace", Kind: "Namespace", ListKind: "NamespaceList",
		ShortNames: []string{"ns"}, Scope: registry.Cluster,
		Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"},
		Hooks: struct{}{}, // a built-in: subresources come sorted by name
		Versions: []registry.Version{{
			Name: "v1", Served: true, Storage: true,
			Subresources: registry.Subresources{
				Status: true,
				Other:  []registry.OtherSubresource{{Name: "finalize", Verbs: []string{"update"}}},
			},
		}},
	}, {
		Group: "stable.example.com", Resource: "crontabs", Singular: "crontab", Kind: "CronTab", ListKind: "CronTabList",
		ShortNames: []string{"ct"}, Categories: []string{"all"}, Scope: registry.Namespaced,
		Versions: []registry.Version{
			{Name: "v1beta1", Served: true},
			{Name: "v1", Served: true, Storage: true, Subresources: registry.Subresources{
				Status: true,
				Scale:  &registry.Scale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
			}},
			{Name: "v2alpha1", Served: false},
		},
	}, {
		Group: "stable.example.com", Resource: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList",
		Scope:    registry.Cluster,
		Versions: []registry.Version{{Name: "v1", Served: true, Storage: true}},
	}, {
		Group: "example.com", Resource: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList",
		Scope: registry.Cluster, Terminating: true,
		Versions: []registry.Version{
			{Name: "v1alpha1", Served: true},
			{Name: "v1beta2", Served: false, Storage: true},
		},
	}}
}

var (
	nsResource = metav1.APIResource{
		Name: "namespaces", SingularName: "namespace", Kind: "Namespace",
		Verbs:      []string{"create", "delete", "get", "list", "patch", "update", "watch"},
		ShortNames: []string{"ns"}, StorageVersionHash: "Q3oi5N2YM8M=",
	}
	crontabV1Resources = []metav1.APIResource{{
		Name: "crontabs", SingularName: "crontab", Namespaced: true, Kind: "CronTab",
		Verbs:      customResourceVerbs,
		ShortNames: []string{"ct"}, Categories: []string{"all"},
		StorageVersionHash: StorageVersionHash("stable.example.com", "v1", "CronTab"),
	}, {
		// status before scale, as apiextensions-apiserver lists them
		Name: "crontabs/status", Namespaced: true, Kind: "CronTab", Verbs: []string{"get", "patch", "update"},
	}, {
		Name: "crontabs/scale", Namespaced: true, Group: "autoscaling", Version: "v1", Kind: "Scale",
		Verbs: []string{"get", "patch", "update"},
	}}
	widgetResource = metav1.APIResource{
		Name: "widgets", SingularName: "widget", Kind: "Widget", Verbs: customResourceVerbs,
		StorageVersionHash: StorageVersionHash("stable.example.com", "v1", "Widget"),
	}
)

func newTestServer(t *testing.T, defs []*registry.Definition) (*httptest.Server, *registry.Registry) {
	t.Helper()
	reg := registry.New(defs)
	srv := httptest.NewServer(New(reg))
	t.Cleanup(srv.Close)
	return srv, reg
}

func get(t *testing.T, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

const (
	acceptV2      = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
	acceptV2beta1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)

const plainCT = "text/plain; charset=utf-8"

func TestDocuments(t *testing.T) {
	srv, _ := newTestServer(t, testDefinitions())
	host := strings.TrimPrefix(srv.URL, "http://")
	notFound := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: "the server could not find the requested resource",
		Reason: metav1.StatusReasonNotFound, Details: &metav1.StatusDetails{}, Code: 404,
	}
	tests := []struct {
		name     string
		path     string
		accept   string
		wantCode int
		wantCT   string
		want     any // decoded into a new value of the same type
	}{{
		name: "api", path: "/api", wantCode: 200, wantCT: "application/json",
		want: &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
			Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
				{ClientCIDR: "0.0.0.0/0", ServerAddress: host},
			},
		},
	}, {
		name: "api trailing slash", path: "/api/", accept: "application/json", wantCode: 200, wantCT: "application/json",
		want: &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
			Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
				{ClientCIDR: "0.0.0.0/0", ServerAddress: host},
			},
		},
	}, {
		name: "core v1", path: "/api/v1", wantCode: 200, wantCT: "application/json",
		want: &metav1.APIResourceList{
			// Upstream's core list names no apiVersion.
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList"},
			GroupVersion: "v1",
			APIResources: []metav1.APIResource{nsResource, {
				Name: "namespaces/finalize", Kind: "Namespace", Verbs: []string{"update"},
			}, {
				Name: "namespaces/status", Kind: "Namespace", Verbs: []string{"get", "patch", "update"},
			}},
		},
	}, {
		name: "group list", path: "/apis", wantCode: 200, wantCT: "application/json",
		want: &metav1.APIGroupList{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			// Ordered by their first APIService's name, as upstream's
			// list is: v1.stable.example.com, then v1alpha1.example.com.
			Groups: []metav1.APIGroup{{
				Name: "stable.example.com",
				Versions: []metav1.GroupVersionForDiscovery{
					{GroupVersion: "stable.example.com/v1", Version: "v1"},
					{GroupVersion: "stable.example.com/v1beta1", Version: "v1beta1"},
				},
				PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "stable.example.com/v1", Version: "v1"},
			}, {
				Name:             "example.com",
				Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: "example.com/v1alpha1", Version: "v1alpha1"}},
				PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "example.com/v1alpha1", Version: "v1alpha1"},
			}},
		},
	}, {
		name: "group", path: "/apis/stable.example.com", wantCode: 200, wantCT: "application/json",
		want: &metav1.APIGroup{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
			Name:     "stable.example.com",
			Versions: []metav1.GroupVersionForDiscovery{
				{GroupVersion: "stable.example.com/v1", Version: "v1"},
				{GroupVersion: "stable.example.com/v1beta1", Version: "v1beta1"},
			},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "stable.example.com/v1", Version: "v1"},
		},
	}, {
		name: "group version with subresources", path: "/apis/stable.example.com/v1", wantCode: 200, wantCT: "application/json",
		want: &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "stable.example.com/v1",
			APIResources: append(slices.Clone(crontabV1Resources), widgetResource),
		},
	}, {
		// v1beta1 has no subresources; the hash names the storage version.
		name: "group version without subresources", path: "/apis/stable.example.com/v1beta1", wantCode: 200, wantCT: "application/json",
		want: &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "stable.example.com/v1beta1",
			APIResources: []metav1.APIResource{crontabV1Resources[0]},
		},
	}, {
		// Terminating: no create/update/patch; storage version unserved: no hash.
		name: "terminating", path: "/apis/example.com/v1alpha1", wantCode: 200, wantCT: "application/json",
		want: &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "example.com/v1alpha1",
			APIResources: []metav1.APIResource{{
				Name: "gadgets", SingularName: "gadget", Kind: "Gadget",
				Verbs: []string{"delete", "deletecollection", "get", "list", "watch"},
			}},
		},
	}, {
		name: "unserved version", path: "/apis/stable.example.com/v2alpha1", wantCode: 404, wantCT: plainCT,
	}, {
		name: "unserved storage version", path: "/apis/example.com/v1beta2", wantCode: 404, wantCT: plainCT,
	}, {
		// Outside the built-in groups upstream answers a plain-text 404.
		name: "unknown group", path: "/apis/nope.example.com", wantCode: 404, wantCT: plainCT,
	}, {
		name: "unknown group version", path: "/apis/nope.example.com/v1", wantCode: 404, wantCT: plainCT,
	}, {
		name: "unknown version of a custom group", path: "/apis/stable.example.com/v2", wantCode: 404, wantCT: plainCT,
	}, {
		name: "unknown core version", path: "/api/v2", wantCode: 404, wantCT: "application/json", want: notFound,
	}, {
		name: "resource path", path: "/apis/stable.example.com/v1/crontabs", wantCode: 404, wantCT: plainCT,
	}, {
		name: "aggregated group version not supported", path: "/apis/stable.example.com", accept: acceptV2,
		wantCode: 200, wantCT: "application/json",
		want: &metav1.APIGroup{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
			Name:     "stable.example.com",
			Versions: []metav1.GroupVersionForDiscovery{
				{GroupVersion: "stable.example.com/v1", Version: "v1"},
				{GroupVersion: "stable.example.com/v1beta1", Version: "v1beta1"},
			},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "stable.example.com/v1", Version: "v1"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tt.accept != "" {
				hdr["Accept"] = tt.accept
			}
			resp, body := get(t, srv.URL+tt.path, hdr)
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, tt.wantCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != tt.wantCT {
				t.Errorf("Content-Type = %q, want %q", ct, tt.wantCT)
			}
			if tt.want == nil {
				if string(body) != "404 page not found\n" {
					t.Errorf("body %q, want upstream's plain 404", body)
				}
				return
			}
			got := reflect.New(reflect.TypeOf(tt.want).Elem()).Interface()
			if err := json.Unmarshal(body, got); err != nil {
				t.Fatalf("decoding %s: %v", body, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				w, _ := json.Marshal(tt.want)
				t.Errorf("body =\n%s\nwant\n%s", body, w)
			}
		})
	}
}

// wantAggregated is the aggregated form of testDefinitions: /api and /apis.
func wantAggregated() (core, named []apidiscoveryv2.APIGroupDiscovery) {
	gvk := func(g, v, k string) *metav1.GroupVersionKind {
		return &metav1.GroupVersionKind{Group: g, Version: v, Kind: k}
	}
	sub := []string{"get", "patch", "update"}
	crontab := func(v string, subresources bool) apidiscoveryv2.APIResourceDiscovery {
		r := apidiscoveryv2.APIResourceDiscovery{
			Resource: "crontabs", ResponseKind: gvk("stable.example.com", v, "CronTab"),
			Scope: apidiscoveryv2.ScopeNamespace, SingularResource: "crontab", Verbs: customResourceVerbs,
			ShortNames: []string{"ct"}, Categories: []string{"all"},
		}
		if subresources {
			r.Subresources = []apidiscoveryv2.APISubresourceDiscovery{
				{Subresource: "status", ResponseKind: gvk("stable.example.com", v, "CronTab"), Verbs: sub},
				{Subresource: "scale", ResponseKind: gvk("autoscaling", "v1", "Scale"), Verbs: sub},
			}
		}
		return r
	}
	core = []apidiscoveryv2.APIGroupDiscovery{{
		Versions: []apidiscoveryv2.APIVersionDiscovery{{
			Version: "v1", Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
			Resources: []apidiscoveryv2.APIResourceDiscovery{{
				// A built-in's kinds name no group or version, and its
				// subresources are sorted, as in upstream's document.
				Resource: "namespaces", ResponseKind: gvk("", "", "Namespace"),
				Scope: apidiscoveryv2.ScopeCluster, SingularResource: "namespace",
				Verbs:      []string{"create", "delete", "get", "list", "patch", "update", "watch"},
				ShortNames: []string{"ns"},
				Subresources: []apidiscoveryv2.APISubresourceDiscovery{
					{Subresource: "finalize", ResponseKind: gvk("", "", "Namespace"), Verbs: []string{"update"}},
					{Subresource: "status", ResponseKind: gvk("", "", "Namespace"), Verbs: sub},
				},
			}},
		}},
	}}
	named = []apidiscoveryv2.APIGroupDiscovery{{
		ObjectMeta: metav1.ObjectMeta{Name: "example.com"},
		Versions: []apidiscoveryv2.APIVersionDiscovery{{
			Version: "v1alpha1", Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
			Resources: []apidiscoveryv2.APIResourceDiscovery{{
				Resource: "gadgets", ResponseKind: gvk("example.com", "v1alpha1", "Gadget"),
				Scope: apidiscoveryv2.ScopeCluster, SingularResource: "gadget",
				Verbs: []string{"delete", "deletecollection", "get", "list", "watch"},
			}},
		}},
	}, {
		ObjectMeta: metav1.ObjectMeta{Name: "stable.example.com"},
		Versions: []apidiscoveryv2.APIVersionDiscovery{{
			Version: "v1", Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
			Resources: []apidiscoveryv2.APIResourceDiscovery{crontab("v1", true), {
				Resource: "widgets", ResponseKind: gvk("stable.example.com", "v1", "Widget"),
				Scope: apidiscoveryv2.ScopeCluster, SingularResource: "widget", Verbs: customResourceVerbs,
			}},
		}, {
			Version: "v1beta1", Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
			Resources: []apidiscoveryv2.APIResourceDiscovery{crontab("v1beta1", false)},
		}},
	}}
	return core, named
}

func TestAggregated(t *testing.T) {
	srv, _ := newTestServer(t, testDefinitions())
	wantCore, wantNamed := wantAggregated()
	for _, path := range []string{"/api", "/apis"} {
		want := wantNamed
		if path == "/api" {
			want = wantCore
		}
		t.Run(path+" v2", func(t *testing.T) {
			resp, body := get(t, srv.URL+path, map[string]string{"Accept": acceptV2})
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if ok, err := cgdiscovery.ContentTypeIsGVK(resp.Header.Get("Content-Type"),
				schema.GroupVersionKind{Group: "apidiscovery.k8s.io", Version: "v2", Kind: "APIGroupDiscoveryList"}); !ok || err != nil {
				t.Errorf("Content-Type %q is not aggregated v2 (%v)", resp.Header.Get("Content-Type"), err)
			}
			var got apidiscoveryv2.APIGroupDiscoveryList
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if got.Kind != "APIGroupDiscoveryList" || got.APIVersion != "apidiscovery.k8s.io/v2" {
				t.Errorf("type meta = %+v", got.TypeMeta)
			}
			if !reflect.DeepEqual(got.Items, want) {
				w, _ := json.Marshal(want)
				t.Errorf("items =\n%s\nwant\n%s", body, w)
			}
		})
		// kube-apiserver 1.35+ no longer serves v2beta1: kubectl 1.27-1.29,
		// which ask for it, fall back to the unaggregated documents.
		t.Run(path+" v2beta1", func(t *testing.T) {
			resp, body := get(t, srv.URL+path, map[string]string{"Accept": acceptV2beta1})
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			var got metav1.TypeMeta
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if want := map[string]string{"/api": "APIVersions", "/apis": "APIGroupList"}[path]; got.Kind != want {
				t.Errorf("kind = %q, want %q", got.Kind, want)
			}
		})
	}
}

// TestMediaTypes checks the forms and refusals kube-apiserver 1.37 gave
// for the same Accept headers and methods: aggregated whenever a clause
// asks for apidiscovery.k8s.io/v2 (whatever its quality), JSON, YAML and
// protobuf otherwise, and the REST router's 405 and 406 on its routes
// (the core documents and a built-in group version's resources).
func TestMediaTypes(t *testing.T) {
	srv, _ := newTestServer(t, testDefinitions())
	const (
		agg      = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
		aggCT    = agg
		routeMsg = "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf"
		plainMsg = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	)
	for _, tc := range []struct {
		method, path, accept string
		code                 int
		ctype                string // or the Status message for an error
	}{
		{"GET", "/apis", "", 200, "application/json"},
		{"GET", "/apis", cgdiscovery.AcceptV2, 200, aggCT},
		{"GET", "/apis", "application/json; g=apidiscovery.k8s.io; v=v2; as=APIGroupDiscoveryList", 200, aggCT},
		{"GET", "/apis", "application/json," + agg, 200, aggCT},
		{"GET", "/apis", agg + ";q=0,application/json", 200, aggCT},
		{"GET", "/apis", "garbage;;;," + agg, 200, aggCT},
		{"GET", "/api", "application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", 200, "application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"},
		{"GET", "/apis", "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", 200, "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"},
		{"GET", "/apis", "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json", 200, "application/json"},
		{"GET", "/apis", "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", 406, plainMsg},
		{"GET", "/api", "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", 406, plainMsg},
		{"GET", "/apis", "text/html", 406, plainMsg},
		{"GET", "/apis", "application/*", 200, "application/json"},
		{"HEAD", "/apis", "", 200, "application/json"},
		{"GET", "/api", "text/html", 406, routeMsg},
		{"GET", "/api", "application/*", 406, routeMsg},
		{"GET", "/api", "*/*;q=0.5", 200, "application/json"},
		{"HEAD", "/api", "", 405, "the server does not allow this method on the requested resource"},
		{"POST", "/apis", "", 200, "application/json"},
		{"PUT", "/apis/stable.example.com/v1", "", 200, "application/json"},
		{"POST", "/api/v1", "", 405, "the server does not allow this method on the requested resource"},
		{"GET", "/api/v1", "application/yaml", 200, "application/yaml"},
		{"GET", "/api/v1", "application/vnd.kubernetes.protobuf", 200, "application/vnd.kubernetes.protobuf"},
		{"GET", "/api/v1", "application/*", 406, routeMsg},
		{"GET", "/api/v1", "application/json;as=Table;v=v1;g=meta.k8s.io", 406, plainMsg},
		{"GET", "/apis/stable.example.com", "application/yaml", 200, "application/yaml"},
		{"GET", "/apis/stable.example.com", "application/*", 200, "application/json"},
		{"GET", "/apis/stable.example.com", "text/plain", 406, plainMsg},
		{"GET", "/apis/stable.example.com/v1", "text/plain", 406, plainMsg},
		{"GET", "/apis/stable.example.com/v1", "application/vnd.kubernetes.protobuf", 200, "application/vnd.kubernetes.protobuf"},
		{"HEAD", "/apis/stable.example.com/v1", "", 200, "application/json"},
	} {
		t.Run(tc.method+" "+tc.path+" "+tc.accept, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code {
				t.Fatalf("code %d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			if tc.code != 200 && tc.method != "HEAD" {
				var st metav1.Status
				if err := json.Unmarshal(body, &st); err != nil || st.Message != tc.ctype {
					t.Errorf("status %q (%v), want %q", st.Message, err, tc.ctype)
				}
				return
			}
			if ct := resp.Header.Get("Content-Type"); tc.code == 200 && ct != tc.ctype {
				t.Errorf("Content-Type %q, want %q", ct, tc.ctype)
			}
			if strings.Contains(tc.ctype, "protobuf") && !bytes.HasPrefix(body, []byte("k8s\x00")) {
				t.Errorf("protobuf body %q", body)
			}
		})
	}
}

func TestETag(t *testing.T) {
	srv, reg := newTestServer(t, testDefinitions())
	for _, tc := range []struct{ path, accept string }{
		{"/api", ""}, {"/api", acceptV2}, {"/apis", ""}, {"/apis", acceptV2},
		{"/api/v1", ""}, {"/apis/stable.example.com", ""}, {"/apis/stable.example.com/v1", ""},
	} {
		t.Run(tc.path+" "+tc.accept, func(t *testing.T) {
			hdr := map[string]string{"Accept": tc.accept}
			resp, _ := get(t, srv.URL+tc.path, hdr)
			etag := resp.Header.Get("ETag")
			if etag == "" || etag[0] != '"' {
				t.Fatalf("ETag = %q", etag)
			}
			if v := resp.Header.Get("Vary"); v != "Accept" {
				t.Errorf("Vary = %q", v)
			}
			hdr["If-None-Match"] = etag
			resp, body := get(t, srv.URL+tc.path, hdr)
			if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
				t.Errorf("conditional GET: status %d, body %q", resp.StatusCode, body)
			}
			hdr["If-None-Match"] = `"other"`
			if resp, _ := get(t, srv.URL+tc.path, hdr); resp.StatusCode != http.StatusOK {
				t.Errorf("other etag: status %d", resp.StatusCode)
			}
		})
	}

	// The aggregated and plain /apis differ, and so do their tags.
	plain, _ := get(t, srv.URL+"/apis", nil)
	agg, _ := get(t, srv.URL+"/apis", map[string]string{"Accept": acceptV2})
	if plain.Header.Get("ETag") == agg.Header.Get("ETag") {
		t.Error("plain and aggregated /apis share an ETag")
	}

	// A swap that changes nothing keeps the tags; one that adds a group
	// changes /apis.
	before, _ := get(t, srv.URL+"/apis", map[string]string{"Accept": acceptV2})
	reg.Swap(testDefinitions())
	same, _ := get(t, srv.URL+"/apis", map[string]string{"Accept": acceptV2})
	if before.Header.Get("ETag") != same.Header.Get("ETag") {
		t.Error("ETag changed over an identical swap")
	}
	reg.Swap(append(testDefinitions(), &registry.Definition{
		Group: "new.example.com", Resource: "things", Singular: "thing", Kind: "Thing", ListKind: "ThingList",
		Scope: registry.Namespaced, Versions: []registry.Version{{Name: "v1", Served: true, Storage: true}},
	}))
	after, body := get(t, srv.URL+"/apis", map[string]string{"Accept": acceptV2, "If-None-Match": before.Header.Get("ETag")})
	if after.StatusCode != http.StatusOK || !strings.Contains(string(body), "new.example.com") {
		t.Errorf("after adding a group: status %d body %s", after.StatusCode, body)
	}
}

// TestPretty: a document, aggregated or not, and a Status are indented
// as upstream indents them (encoding/json.Indent, no final newline) when
// ?pretty, the User-Agent or the Accept clause that chose the form asks;
// the ETag stays the document's.
func TestPretty(t *testing.T) {
	srv, _ := newTestServer(t, testDefinitions())
	curl := map[string]string{"User-Agent": "curl/8.5.0"}
	for _, tc := range []struct {
		path        string
		plain, asks map[string]string
		pretty      bool
	}{
		{"/apis", nil, curl, true},
		{"/api", nil, curl, true},
		{"/api/v1", nil, nil, false},
		{"/apis/stable.example.com/v1?pretty=1", nil, nil, true},
		{"/apis/stable.example.com?pretty=false", nil, curl, false},
		{"/apis", map[string]string{"Accept": acceptV2}, map[string]string{"Accept": acceptV2, "User-Agent": "Mozilla/5.0"}, true},
		{"/apis", map[string]string{"Accept": acceptV2}, map[string]string{"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;pretty=1,application/json"}, true},
		// pretty=1 counts in the clause that chose the form only.
		{"/apis", map[string]string{"Accept": acceptV2}, map[string]string{"Accept": acceptV2 + ";pretty=1"}, false},
		{"/apis", nil, map[string]string{"Accept": acceptV2beta1 + ";pretty=1"}, true},
		{"/api/v9", nil, curl, true},
	} {
		plainResp, plain := get(t, srv.URL+strings.Split(tc.path, "?")[0], tc.plain)
		resp, body := get(t, srv.URL+tc.path, tc.asks)
		want := plain
		if tc.pretty {
			var buf bytes.Buffer
			if err := json.Indent(&buf, bytes.TrimSuffix(plain, []byte("\n")), "", "  "); err != nil {
				t.Fatal(err)
			}
			want = buf.Bytes()
		}
		if resp.StatusCode != plainResp.StatusCode || !bytes.Equal(body, want) || resp.Header.Get("Content-Length") != strconv.Itoa(len(want)) ||
			resp.Header.Get("ETag") != plainResp.Header.Get("ETag") || resp.Header.Get("Content-Type") != plainResp.Header.Get("Content-Type") {
			t.Errorf("GET %s %v: %d %v\n%s\nwant %d %v\n%s", tc.path, tc.asks, resp.StatusCode, resp.Header, body, plainResp.StatusCode, plainResp.Header, want)
		}
	}
}

// TestClientGo drives the documents through client-go's discovery client,
// aggregated and legacy, the way kubectl api-resources does.
func TestClientGo(t *testing.T) {
	srv, _ := newTestServer(t, testDefinitions())
	client := cgdiscovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL})
	for name, dc := range map[string]*cgdiscovery.DiscoveryClient{
		"aggregated": client,
		"legacy":     client.WithLegacy().(*cgdiscovery.DiscoveryClient),
	} {
		t.Run(name, func(t *testing.T) {
			groups, lists, err := dc.ServerGroupsAndResources()
			if err != nil {
				t.Fatal(err)
			}
			var gotGroups []string
			for _, g := range groups {
				gotGroups = append(gotGroups, g.Name+"="+g.PreferredVersion.Version)
			}
			// The legacy list orders groups by their first APIService's
			// name, the aggregated document by group name.
			wantGroups := []string{"=v1", "example.com=v1alpha1", "stable.example.com=v1"}
			if name == "legacy" {
				wantGroups = []string{"=v1", "stable.example.com=v1", "example.com=v1alpha1"}
			}
			if !slices.Equal(gotGroups, wantGroups) {
				t.Errorf("groups = %q, want %q", gotGroups, wantGroups)
			}
			got := map[string][]string{}
			for _, l := range lists {
				for _, r := range l.APIResources {
					got[l.GroupVersion] = append(got[l.GroupVersion], r.Name+" "+r.Kind+" "+strings.Join(r.Verbs, ","))
				}
				sort.Strings(got[l.GroupVersion])
			}
			cr := strings.Join(customResourceVerbs, ",")
			want := map[string][]string{
				"v1": {
					"namespaces Namespace create,delete,get,list,patch,update,watch",
					"namespaces/finalize Namespace update",
					"namespaces/status Namespace get,patch,update",
				},
				"example.com/v1alpha1": {"gadgets Gadget delete,deletecollection,get,list,watch"},
				"stable.example.com/v1": {
					"crontabs CronTab " + cr,
					"crontabs/scale Scale get,patch,update",
					"crontabs/status CronTab get,patch,update",
					"widgets Widget " + cr,
				},
				"stable.example.com/v1beta1": {"crontabs CronTab " + cr},
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("resources =\n%q\nwant\n%q", got, want)
			}

			preferred, err := dc.ServerPreferredResources()
			if err != nil {
				t.Fatal(err)
			}
			var gvrs []string
			for _, l := range preferred {
				for _, r := range l.APIResources {
					gvrs = append(gvrs, l.GroupVersion+" "+r.Name)
				}
			}
			sort.Strings(gvrs)
			wantGVRs := []string{"example.com/v1alpha1 gadgets", "stable.example.com/v1 crontabs", "stable.example.com/v1 widgets", "v1 namespaces"}
			if !slices.Equal(gvrs, wantGVRs) {
				t.Errorf("preferred resources = %q, want %q", gvrs, wantGVRs)
			}

			// The per group-version document, as kubectl reads it for a
			// single group version.
			l, err := dc.ServerResourcesForGroupVersion("stable.example.com/v1")
			if err != nil {
				t.Fatal(err)
			}
			if len(l.APIResources) != 4 || l.APIResources[0].ShortNames[0] != "ct" || l.APIResources[0].Categories[0] != "all" {
				t.Errorf("stable.example.com/v1 = %+v", l.APIResources)
			}
		})
	}
}

// TestConcurrentSwaps reads documents while the registry changes; run with
// -race.
func TestConcurrentSwaps(t *testing.T) {
	srv, reg := newTestServer(t, testDefinitions())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 20; i++ {
			defs := testDefinitions()
			defs[2].Terminating = i%2 == 0
			reg.Swap(defs)
		}
	}()
	for i := 0; i < 20; i++ {
		for _, tc := range []struct{ path, accept string }{{"/apis", acceptV2}, {"/api", ""}, {"/apis/stable.example.com/v1", ""}} {
			if resp, _ := get(t, srv.URL+tc.path, map[string]string{"Accept": tc.accept}); resp.StatusCode != 200 {
				t.Errorf("%s: status %d", tc.path, resp.StatusCode)
			}
		}
	}
	<-done
}

func BenchmarkBuild(b *testing.B) {
	t := registry.NewTable(1, manyDefinitions(200))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := build(t); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkServeCached(b *testing.B) {
	h := New(registry.New(manyDefinitions(200)))
	req := httptest.NewRequest(http.MethodGet, "/apis", nil)
	req.Header.Set("Accept", acceptV2)
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}

// manyDefinitions returns n CRD-like definitions over n/4 groups.
func manyDefinitions(n int) []*registry.Definition {
	var defs []*registry.Definition
	for i := 0; i < n; i++ {
		defs = append(defs, &registry.Definition{
			Group: fmt.Sprintf("g%d.example.com", i/4), Resource: fmt.Sprintf("things%d", i), Singular: fmt.Sprintf("thing%d", i),
			Kind: fmt.Sprintf("Thing%d", i), ListKind: fmt.Sprintf("Thing%dList", i), Scope: registry.Namespaced,
			Versions: []registry.Version{
				{Name: "v1beta1", Served: true},
				{Name: "v1", Served: true, Storage: true, Subresources: registry.Subresources{Status: true}},
			},
		})
	}
	return defs
}

// TestPaths checks the paths the root index lists of discovery: those of
// served versions alone, /apis/ beside /apis as upstream's index lists it,
// and a table swap's.
func TestPaths(t *testing.T) {
	reg := registry.New(testDefinitions())
	h := New(reg)
	got := h.Paths()
	slices.Sort(got)
	want := []string{"/api", "/api/v1", "/apis", "/apis/", "/apis/example.com", "/apis/example.com/v1alpha1",
		"/apis/stable.example.com", "/apis/stable.example.com/v1", "/apis/stable.example.com/v1beta1"}
	if !slices.Equal(got, want) {
		t.Errorf("paths %q, want %q", got, want)
	}
	reg.Swap(testDefinitions()[:1])
	if got := h.Paths(); len(got) != 4 {
		t.Errorf("after a swap, paths %q, want /api, /api/v1, /apis and /apis/", got)
	}
}
