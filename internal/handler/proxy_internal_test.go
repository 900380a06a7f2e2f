package handler

import (
	"testing"

	"github.com/crdserver/crdserver/internal/request"
)

func TestProxyPath(t *testing.T) {
	for _, tc := range []struct {
		line       int
		path, want string
	}{
		{line(), "/api/v1/namespaces/ns/services/web/proxy", ""},
		{line(), "/api/v1/namespaces/ns/services/web/proxy/", "/"},
		{line(), "/api/v1/namespaces/ns/services/web/proxy/a/b", "/a/b"},
		{line(), "/api/v1/namespaces/ns/services/web/proxy/a/b/", "/a/b/"},
		{line(), "/api/v1/namespaces/ns/services/web/proxy//a//b//", "/a/b/"},
		{line(), "/api/v1/namespaces/ns/services/web/proxy/a/../../b/./c", "/b/c"},
		{line(), "/api/v1/namespaces/ns/services/web/proxy/..", "/"},
		{line(), "/api/v1/namespaces/ns/services/web/proxy/a b", "/a b"},
		{line(), "/api/v1/nodes/n/proxy/metrics", "/metrics"},
	} {
		info, err := request.Parse("GET", tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := proxyPath(info); got != tc.want {
			t.Errorf("line %d: proxyPath(%s) = %q, want %q", tc.line, tc.path, got, tc.want)
		}
	}
}
