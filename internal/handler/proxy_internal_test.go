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

func TestOptionsQuery(t *testing.T) {
	opts := map[string]any{
		"kind": "PodExecOptions", "apiVersion": "v1",
		"command": []any{"sh", "-c", "echo hi"}, "container": "app", "stdin": true, "tty": false,
		"ports": []any{int64(80), float64(443)}, "path": nil,
	}
	got := optionsQuery(opts).Encode()
	if want := "command=sh&command=-c&command=echo+hi&container=app&ports=80&ports=443&stdin=true&tty=false"; got != want {
		t.Errorf("optionsQuery = %s, want %s", got, want)
	}
}
