package request

import (
	"errors"
	"net/url"
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	type want struct {
		res                                        bool
		verb, prefix, group, version, ns, resource string
		sub, name                                  string
		parts                                      []string
	}
	cases := []struct {
		method, url string
		want        want
	}{
		// non-resource paths
		{"GET", "/", want{verb: "get"}},
		{"GET", "/healthz", want{verb: "get"}},
		{"GET", "/readyz/etcd", want{verb: "get"}},
		{"GET", "/version", want{verb: "get"}},
		{"GET", "/openapi/v3", want{verb: "get"}},
		{"GET", "/openapi/v3/apis/example.com/v1", want{verb: "get"}},
		{"GET", "/api", want{verb: "get"}},
		{"GET", "/api/v1", want{verb: "get", prefix: ""}},
		{"GET", "/apis", want{verb: "get"}},
		{"GET", "/apis/example.com", want{verb: "get"}},
		{"GET", "/apis/example.com/v1", want{verb: "get"}},
		{"POST", "/apis/example.com/v1", want{verb: "post"}},
		{"GET", "/other/a/b/c", want{verb: "get"}},

		// core group, cluster-scoped and namespaced
		{"GET", "/api/v1/namespaces", want{true, "list", "api", "", "v1", "", "namespaces", "", "", []string{"namespaces"}}},
		{"GET", "/api/v1/namespaces/foo", want{true, "get", "api", "", "v1", "foo", "namespaces", "", "foo", []string{"namespaces", "foo"}}},
		{"PUT", "/api/v1/namespaces/foo/status", want{true, "update", "api", "", "v1", "foo", "namespaces", "status", "foo", []string{"namespaces", "foo", "status"}}},
		{"PUT", "/api/v1/namespaces/foo/finalize", want{true, "update", "api", "", "v1", "foo", "namespaces", "finalize", "foo", []string{"namespaces", "foo", "finalize"}}},
		{"DELETE", "/api/v1/namespaces/foo", want{true, "delete", "api", "", "v1", "foo", "namespaces", "", "foo", []string{"namespaces", "foo"}}},
		{"POST", "/api/v1/namespaces", want{true, "create", "api", "", "v1", "", "namespaces", "", "", []string{"namespaces"}}},
		{"GET", "/api/v1/namespaces/foo/configmaps", want{true, "list", "api", "", "v1", "foo", "configmaps", "", "", []string{"configmaps"}}},
		{"GET", "/api/v1/namespaces/foo/configmaps/bar", want{true, "get", "api", "", "v1", "foo", "configmaps", "", "bar", []string{"configmaps", "bar"}}},
		{"GET", "/api/v1/configmaps", want{true, "list", "api", "", "v1", "", "configmaps", "", "", []string{"configmaps"}}},

		// named groups
		{"GET", "/apis/example.com/v1/widgets", want{true, "list", "apis", "example.com", "v1", "", "widgets", "", "", []string{"widgets"}}},
		{"GET", "/apis/example.com/v1/namespaces/ns1/widgets", want{true, "list", "apis", "example.com", "v1", "ns1", "widgets", "", "", []string{"widgets"}}},
		{"GET", "/apis/example.com/v1/namespaces/ns1/widgets/w", want{true, "get", "apis", "example.com", "v1", "ns1", "widgets", "", "w", []string{"widgets", "w"}}},
		{"HEAD", "/apis/example.com/v1/namespaces/ns1/widgets/w", want{true, "get", "apis", "example.com", "v1", "ns1", "widgets", "", "w", []string{"widgets", "w"}}},
		{"POST", "/apis/example.com/v1/namespaces/ns1/widgets", want{true, "create", "apis", "example.com", "v1", "ns1", "widgets", "", "", []string{"widgets"}}},
		{"PUT", "/apis/example.com/v1/namespaces/ns1/widgets/w", want{true, "update", "apis", "example.com", "v1", "ns1", "widgets", "", "w", []string{"widgets", "w"}}},
		{"PATCH", "/apis/example.com/v1/namespaces/ns1/widgets/w", want{true, "patch", "apis", "example.com", "v1", "ns1", "widgets", "", "w", []string{"widgets", "w"}}},
		{"DELETE", "/apis/example.com/v1/namespaces/ns1/widgets/w", want{true, "delete", "apis", "example.com", "v1", "ns1", "widgets", "", "w", []string{"widgets", "w"}}},
		{"DELETE", "/apis/example.com/v1/namespaces/ns1/widgets", want{true, "deletecollection", "apis", "example.com", "v1", "ns1", "widgets", "", "", []string{"widgets"}}},
		{"DELETE", "/apis/example.com/v1/widgets", want{true, "deletecollection", "apis", "example.com", "v1", "", "widgets", "", "", []string{"widgets"}}},
		{"PUT", "/apis/example.com/v1/namespaces/ns1/widgets/w/status", want{true, "update", "apis", "example.com", "v1", "ns1", "widgets", "status", "w", []string{"widgets", "w", "status"}}},
		{"GET", "/apis/example.com/v1/namespaces/ns1/widgets/w/scale", want{true, "get", "apis", "example.com", "v1", "ns1", "widgets", "scale", "w", []string{"widgets", "w", "scale"}}},
		{"GET", "/apis/example.com/v1/namespaces/ns1/widgets/w/status/extra", want{true, "get", "apis", "example.com", "v1", "ns1", "widgets", "status", "w", []string{"widgets", "w", "status", "extra"}}},
		{"GET", "/apis/example.com/v1/clusterwidgets/c", want{true, "get", "apis", "example.com", "v1", "", "clusterwidgets", "", "c", []string{"clusterwidgets", "c"}}},
		{"OPTIONS", "/apis/example.com/v1/clusterwidgets/c", want{true, "", "apis", "example.com", "v1", "", "clusterwidgets", "", "c", []string{"clusterwidgets", "c"}}},
		{"GET", "/apis/example.com/v1/namespaces/ns1/status", want{true, "get", "apis", "example.com", "v1", "ns1", "namespaces", "status", "ns1", []string{"namespaces", "ns1", "status"}}},
		{"GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com", want{true, "get", "apis", "apiextensions.k8s.io", "v1", "", "customresourcedefinitions", "", "widgets.example.com", []string{"customresourcedefinitions", "widgets.example.com"}}},
		{"GET", "/apis//example.com/v1/widgets/", want{true, "get", "apis", "", "example.com", "", "v1", "", "widgets", []string{"v1", "widgets"}}},

		// watch as a query parameter
		{"GET", "/apis/example.com/v1/namespaces/ns1/widgets?watch=1", want{true, "watch", "apis", "example.com", "v1", "ns1", "widgets", "", "", []string{"widgets"}}},
		{"GET", "/apis/example.com/v1/widgets?watch=true", want{true, "watch", "apis", "example.com", "v1", "", "widgets", "", "", []string{"widgets"}}},
		{"GET", "/apis/example.com/v1/widgets?watch=yes", want{true, "watch", "apis", "example.com", "v1", "", "widgets", "", "", []string{"widgets"}}},
		{"GET", "/apis/example.com/v1/widgets?watch=false", want{true, "list", "apis", "example.com", "v1", "", "widgets", "", "", []string{"widgets"}}},
		{"GET", "/apis/example.com/v1/widgets?watch=0", want{true, "list", "apis", "example.com", "v1", "", "widgets", "", "", []string{"widgets"}}},
		{"GET", "/apis/example.com/v1/widgets?watch=FALSE", want{true, "list", "apis", "example.com", "v1", "", "widgets", "", "", []string{"widgets"}}},
		{"GET", "/apis/example.com/v1/widgets/w?watch=1", want{true, "get", "apis", "example.com", "v1", "", "widgets", "", "w", []string{"widgets", "w"}}},
		// fieldSelector metadata.name pins the name of a list or watch
		{"GET", "/apis/example.com/v1/namespaces/ns1/widgets?watch=1&fieldSelector=metadata.name%3Dw", want{true, "watch", "apis", "example.com", "v1", "ns1", "widgets", "", "w", []string{"widgets"}}},
		{"GET", "/apis/example.com/v1/namespaces/ns1/widgets?fieldSelector=metadata.name%3D%3Dw", want{true, "list", "apis", "example.com", "v1", "ns1", "widgets", "", "w", []string{"widgets"}}},
		{"GET", "/apis/example.com/v1/namespaces/ns1/widgets?fieldSelector=metadata.name%21%3Dw", want{true, "list", "apis", "example.com", "v1", "ns1", "widgets", "", "", []string{"widgets"}}},
		{"GET", "/apis/example.com/v1/namespaces/ns1/widgets?fieldSelector=metadata.name%3Da%2Fb", want{true, "list", "apis", "example.com", "v1", "ns1", "widgets", "", "", []string{"widgets"}}},
		{"GET", "/apis/example.com/v1/namespaces/ns1/widgets?fieldSelector=metadata.name%3D..", want{true, "list", "apis", "example.com", "v1", "ns1", "widgets", "", "", []string{"widgets"}}},
		// an undecodable option drops the name but keeps watch
		{"GET", "/apis/example.com/v1/widgets?watch=1&limit=x&fieldSelector=metadata.name%3Dw", want{true, "watch", "apis", "example.com", "v1", "", "widgets", "", "", []string{"widgets"}}},
		{"GET", "/apis/example.com/v1/widgets?limit=x&fieldSelector=metadata.name%3Dw", want{true, "list", "apis", "example.com", "v1", "", "widgets", "", "", []string{"widgets"}}},
		// a named deletecollection is not: DELETE does not read fieldSelector
		{"DELETE", "/apis/example.com/v1/widgets?fieldSelector=metadata.name%3Dw", want{true, "deletecollection", "apis", "example.com", "v1", "", "widgets", "", "", []string{"widgets"}}},

		// legacy watch paths
		{"GET", "/api/v1/watch/namespaces", want{true, "watch", "api", "", "v1", "", "namespaces", "", "", []string{"namespaces"}}},
		{"GET", "/api/v1/watch/namespaces/foo", want{true, "watch", "api", "", "v1", "foo", "namespaces", "", "foo", []string{"namespaces", "foo"}}},
		{"GET", "/api/v1/watch/namespaces/foo/configmaps", want{true, "watch", "api", "", "v1", "foo", "configmaps", "", "", []string{"configmaps"}}},
		{"GET", "/apis/example.com/v1/watch/widgets", want{true, "watch", "apis", "example.com", "v1", "", "widgets", "", "", []string{"widgets"}}},
		{"GET", "/apis/example.com/v1/watch/namespaces/ns1/widgets/w", want{true, "watch", "apis", "example.com", "v1", "ns1", "widgets", "", "w", []string{"widgets", "w"}}},
		{"GET", "/apis/example.com/v1/proxy/namespaces/ns1/widgets/w/a/b", want{true, "proxy", "apis", "example.com", "v1", "ns1", "widgets", "", "w", []string{"widgets", "w", "a", "b"}}},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.url, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(tc.method, u.Path, u.Query())
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			w := tc.want
			if got.Path != u.Path {
				t.Errorf("Path = %q, want %q", got.Path, u.Path)
			}
			gotW := want{got.IsResourceRequest, got.Verb, got.APIPrefix, got.APIGroup, got.APIVersion, got.Namespace, got.Resource, got.Subresource, got.Name, got.Parts}
			if !w.res {
				w.prefix, gotW.prefix = "", "" // a non-resource request may carry a partial prefix
			}
			if !reflect.DeepEqual(gotW, w) {
				t.Errorf("got  %+v\nwant %+v", gotW, w)
			}
		})
	}
}

func TestParseSelectors(t *testing.T) {
	q := url.Values{"fieldSelector": {"spec.x=1"}, "labelSelector": {"a=b"}}
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/apis/g/v1/widgets", true},
		{"DELETE", "/apis/g/v1/widgets", true},
		{"GET", "/apis/g/v1/widgets/w", false},
		{"GET", "/apis/g/v1/watch/widgets", false}, // verb in the path: upstream ignores selectors
	} {
		info, err := Parse(tc.method, tc.path, q)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.FieldSelector == "spec.x=1" && info.LabelSelector == "a=b"; got != tc.want {
			t.Errorf("%s %s: selectors kept = %v, want %v (%+v)", tc.method, tc.path, got, tc.want, info)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, p := range []string{"/api/v1/watch", "/apis/g/v1/watch/", "/api/v1/proxy"} {
		info, err := Parse("GET", p, nil)
		if !errors.Is(err, ErrNoResource) {
			t.Errorf("%s: err = %v, want ErrNoResource", p, err)
		}
		if info == nil || !info.IsResourceRequest {
			t.Errorf("%s: want partial resource info, got %+v", p, info)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	q := url.Values{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("GET", "/apis/example.com/v1/namespaces/ns1/widgets/w", q); err != nil {
			b.Fatal(err)
		}
	}
}
