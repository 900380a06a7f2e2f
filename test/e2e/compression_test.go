package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestResponseCompression lists more than 128 KiB of ConfigMaps as users
// do: kubectl and client-go, whose transports ask for gzip and read the
// answer decompressed, get every object; a client asking for gzip itself
// gets a gzipped list, one that does not gets it plain, and a watch is
// never compressed. With --feature-gates=APIResponseCompression=false
// nothing is.
func TestResponseCompression(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t, t.TempDir())
	value := strings.Repeat("x", 40000)
	for i := range 4 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%d", i)}, Data: map[string]string{"x": value}}
		if _, err := srv.Client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	if out := kubectl(t, srv, "get", "configmaps", "-o", "name"); strings.Count(out, "configmap/big-") != 4 {
		t.Errorf("kubectl get configmaps -o name:\n%s\nwant the 4 big ones", out)
	}
	l, err := srv.Client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	big := 0
	for _, cm := range l.Items {
		if strings.HasPrefix(cm.Name, "big-") && cm.Data["x"] == value {
			big++
		}
	}
	if big != 4 {
		t.Errorf("client-go listed %d of the 4 big ConfigMaps whole", big)
	}

	rt, err := rest.TransportFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: rt}
	for _, tc := range []struct {
		name, path, encoding string
		gzipped              bool
	}{
		{name: "a list, gzip asked", path: "/api/v1/namespaces/default/configmaps", encoding: "gzip", gzipped: true},
		{name: "a list, gzip not asked", path: "/api/v1/namespaces/default/configmaps", encoding: "identity"},
		{name: "an object under 128 KiB", path: "/api/v1/namespaces/default/configmaps/big-0", encoding: "gzip"},
		{name: "a watch", path: "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&timeoutSeconds=1", encoding: "gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc, body := getEncoded(t, hc, srv.URL+tc.path, tc.encoding)
			if got := enc == "gzip"; got != tc.gzipped {
				t.Fatalf("Content-Encoding %q, want gzip %v", enc, tc.gzipped)
			}
			if strings.Contains(tc.path, "watch=1") {
				if !strings.Contains(string(body), `"type":"ADDED"`) {
					t.Errorf("watch events %.200s", body)
				}
				return
			}
			var obj struct {
				Kind  string
				Items []json.RawMessage
			}
			if err := json.Unmarshal(body, &obj); err != nil {
				t.Fatalf("answer %.200s: %v", body, err)
			}
			if strings.HasSuffix(tc.path, "configmaps") && len(obj.Items) < 4 {
				t.Errorf("%s of %d items, want the 4 big ones at least", obj.Kind, len(obj.Items))
			}
		})
	}

	off := startServerArgs(t, t.TempDir(), "--feature-gates=APIResponseCompression=false")
	for i := range 4 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%d", i)}, Data: map[string]string{"x": value}}
		if _, err := off.Client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rt, err = rest.TransportFor(off.Config)
	if err != nil {
		t.Fatal(err)
	}
	if enc, _ := getEncoded(t, &http.Client{Transport: rt}, off.URL+"/api/v1/namespaces/default/configmaps", "gzip"); enc != "" {
		t.Errorf("with APIResponseCompression=false: Content-Encoding %q, want none", enc)
	}
}

// getEncoded GETs url asking for the encoding (so that the transport
// leaves the answer as sent) and returns its Content-Encoding and its
// body, decompressed.
func getEncoded(t *testing.T, hc *http.Client, url, encoding string) (string, []byte) {
	t.Helper()
	resp, body := getWith(t, hc, url, map[string]string{"Accept-Encoding": encoding})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	enc := resp.Header.Get("Content-Encoding")
	if enc == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return enc, body
}
