package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestPrettyPrint reads answers as curl and browsers do: kube-apiserver
// indents JSON for a User-Agent starting with curl, Wget or Mozilla/5.0,
// or for ?pretty=true whoever asks, unless ?pretty=false; the indented
// answer is the plain one as encoding/json.Indent lays it out, without
// the plain answer's final newline. /version is indented for everyone.
func TestPrettyPrint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, t.TempDir())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pretty", Labels: map[string]string{"pretty": "yes"}},
		Data: map[string]string{"html": "<b> & </b>", "quoted": `"{[,:]}" \ é`, "empty": ""}}
	if _, err := srv.Client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: rt}
	get := func(path, userAgent string) (int, []byte) {
		t.Helper()
		resp, body := getWith(t, hc, srv.URL+path, map[string]string{"User-Agent": userAgent})
		return resp.StatusCode, body
	}
	indent := func(plain []byte) []byte {
		t.Helper()
		var buf bytes.Buffer
		if err := json.Indent(&buf, bytes.TrimSuffix(plain, []byte("\n")), "", "  "); err != nil {
			t.Fatalf("%s: %v", plain, err)
		}
		return buf.Bytes()
	}

	for _, path := range []string{
		"/api/v1/namespaces/default/configmaps/pretty",
		"/api/v1/namespaces/default/configmaps?labelSelector=pretty%3Dyes",
		"/api/v1/namespaces/default/configmaps/missing",
		"/apis/apps/v1",
	} {
		code, plain := get(path, "Go-http-client/2.0")
		if !bytes.HasSuffix(plain, []byte("}\n")) || bytes.Count(plain, []byte("\n")) != 1 {
			t.Errorf("GET %s: %d %q, want one line", path, code, plain)
			continue
		}
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		for _, tc := range []struct {
			query, userAgent string
			pretty           bool
		}{
			{"", "curl/8.5.0", true},
			{"", "Wget/1.21.4", true},
			{"", "Mozilla/5.0 (X11; Linux x86_64)", true},
			{"pretty=true", "Go-http-client/2.0", true},
			{"pretty=1", "kubectl/v1.37.2", true},
			{"pretty=false", "curl/8.5.0", false},
			{"pretty=", "curl/8.5.0", true},
		} {
			p := path
			if tc.query != "" {
				p += sep + tc.query
			}
			gotCode, got := get(p, tc.userAgent)
			want := plain
			if tc.pretty {
				want = indent(plain)
			}
			if gotCode != code || !bytes.Equal(got, want) {
				t.Errorf("GET %s as %s: %d\n%s\nwant %d\n%s", p, tc.userAgent, gotCode, got, code, want)
			}
		}
	}

	_, v := get("/version", "Go-http-client/2.0")
	var compact bytes.Buffer
	if err := json.Compact(&compact, v); err != nil {
		t.Fatal(err)
	}
	if want := indent(compact.Bytes()); !bytes.Equal(v, want) {
		t.Errorf("GET /version: %q, want it indented", v)
	}
}
