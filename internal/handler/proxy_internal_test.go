package handler

import (
	"testing"

	"github.com/crdserver/crdserver/internal/request"
)

func TestProxyPath(t *testing.T) {
	for _, tc := range []struct {
		line                 int
		path, named, backend string
	}{
		{line(), "/api/v1/namespaces/ns/services/web/proxy", "", ""},
		{line(), "/api/v1/namespaces/ns/services/web/proxy/", "/", "/"},
		{line(), "/api/v1/namespaces/ns/services/web/proxy/a/b", "/a/b", "/a/b"},
		{line(), "/api/v1/namespaces/ns/services/web/proxy/a/b/", "/a/b/", "/a/b/"},
		{line(), "/api/v1/namespaces/ns/services/web/proxy//a//b//", "/a//b/", "/a/b/"},
		{line(), "/api/v1/namespaces/ns/services/web/proxy/a/../../b/./c", "/a/../../b/./c", "/b/c"},
		{line(), "/api/v1/namespaces/ns/services/web/proxy/..", "/..", "/"},
		{line(), "/api/v1/namespaces/ns/services/web/proxy/a b", "/a b", "/a b"},
		{line(), "/api/v1/nodes/n/proxy/metrics", "/metrics", "/metrics"},
	} {
		info, err := request.Parse("GET", tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		named := proxyPath(info)
		if backend := cleanPath(named); named != tc.named || backend != tc.backend {
			t.Errorf("line %d: %s names %q, for the backend %q; want %q, %q", tc.line, tc.path, named, backend, tc.named, tc.backend)
		}
	}
}
