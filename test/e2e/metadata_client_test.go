package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// TestMetadataClient drives client-go's metadata client, as garbage
// collectors and controller-runtime's metadata informers use it, against a
// custom resource and a built-in. The client asks for protobuf first, which
// upstream answers for every resource; as upstream's e2e spec (API
// Streaming, "metadata client's List") does, a list's items must equal what
// a get of each object returns, and a watch must deliver each change.
func TestMetadataClient(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	applyCRD(t, srv, "crontab-crd.yaml", "crontabs.stable.example.com", "created")
	ctx := testContext(t, 60*time.Second)

	// What the server answered in, seen by the client.
	cfg := rest.CopyConfig(srv.Config)
	var seen []string
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil {
				seen = append(seen, resp.Header.Get("Content-Type"))
			}
			return resp, err
		})
	})
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	crontabs := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	for _, res := range []schema.GroupVersionResource{crontabs, secrets} {
		t.Run(res.Resource, func(t *testing.T) {
			create := func(name string) {
				t.Helper()
				var err error
				if res == secrets {
					_, err = srv.Client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
						ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"metadata-client": "yes"}},
						StringData: map[string]string{"k": "v"},
					}, metav1.CreateOptions{})
				} else {
					_, err = srv.Dynamic.Resource(res).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
						"apiVersion": "stable.example.com/v1", "kind": "CronTab",
						"metadata": map[string]any{"name": name, "labels": map[string]any{"metadata-client": "yes"}},
						"spec":     map[string]any{"cronSpec": "* * * * */5"},
					}}, metav1.CreateOptions{})
				}
				if err != nil {
					t.Fatalf("create %s: %v", name, err)
				}
			}
			client := mc.Resource(res).Namespace("default")
			var want []metav1.PartialObjectMetadata
			for i := range 3 {
				name := fmt.Sprintf("meta-%d", i)
				create(name)
				got, err := client.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatalf("get %s: %v", name, err)
				}
				if got.Name != name || got.UID == "" || len(got.ManagedFields) == 0 {
					t.Fatalf("get %s: metadata %+v", name, got.ObjectMeta)
				}
				want = append(want, *got)
			}
			seen = nil
			list, err := client.List(ctx, metav1.ListOptions{LabelSelector: "metadata-client=yes"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, list.Items); diff != "" {
				t.Errorf("list items differ from what get returned (-get +list):\n%s", diff)
			}
			if len(seen) != 1 || seen[0] != "application/vnd.kubernetes.protobuf" {
				t.Errorf("list answered as %q, want protobuf", seen)
			}

			w, err := client.Watch(ctx, metav1.ListOptions{LabelSelector: "metadata-client=yes", ResourceVersion: list.ResourceVersion})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			create("meta-late")
			select {
			case ev := <-w.ResultChan():
				pm, ok := ev.Object.(*metav1.PartialObjectMetadata)
				if ev.Type != watch.Added || !ok || pm.Name != "meta-late" || pm.Namespace != "default" {
					t.Fatalf("watch event %s %#v, want meta-late added", ev.Type, ev.Object)
				}
			case <-ctx.Done():
				t.Fatal("no watch event")
			}

			if _, err := client.Get(ctx, "nosuch", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get of a missing object: %v, want NotFound", err)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
