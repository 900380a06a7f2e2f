package crdtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/crdserver/crdserver/crdtest"
)

// crdYAML is a minimal CRD manifest for kind in group example.com.
func crdYAML(plural, kind string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[1]s.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: %[1]s, singular: %[3]s, kind: %[2]s}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, plural, kind, strings.ToLower(kind))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mustServe creates one object of each plural: right after Start, with
// no retry, as a test would.
func mustServe(t *testing.T, s *crdtest.Server, kinds map[string]string) {
	t.Helper()
	client := dynamic.NewForConfigOrDie(s.Config)
	for plural, kind := range kinds {
		gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: plural}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": kind, "metadata": map[string]any{"name": "x"},
		}}
		if _, err := client.Resource(gvr).Namespace("default").Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Errorf("creating a %s right after Start: %v", kind, err)
		}
	}
}

// CRDs come from a directory (several documents per file, other kinds
// skipped, other extensions ignored), a glob and an fs.FS.
func TestCRDSources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "crds", "multi.yaml"), crdYAML("apples", "Apple")+"---\n"+
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: skipped}\n---\n"+crdYAML("pears", "Pear"))
	writeFile(t, filepath.Join(dir, "crds", "notes.txt"), "not a manifest")
	writeFile(t, filepath.Join(dir, "crds", "nested", "ignored.yaml"), crdYAML("figs", "Fig"))
	writeFile(t, filepath.Join(dir, "more", "plums.yml"), crdYAML("plums", "Plum"))
	s := crdtest.Start(t, crdtest.Options{
		CRDDirectoryPaths: []string{filepath.Join(dir, "crds"), filepath.Join(dir, "more", "*.yml")},
		CRDFS: fstest.MapFS{
			"config/crd/bases/limes.yaml": {Data: []byte(crdYAML("limes", "Lime"))},
			"config/crd/README.md":        {Data: []byte("# not a manifest")},
		},
		CRDs: []*apiextensionsv1.CustomResourceDefinition{widgetCRD()},
	})
	mustServe(t, s, map[string]string{"apples": "Apple", "pears": "Pear", "plums": "Plum", "limes": "Lime"})
	if err := createWidget(t.Context(), dynamic.NewForConfigOrDie(s.Config), "w"); err != nil {
		t.Errorf("creating a Widget of Options.CRDs: %v", err)
	}
	crds, err := dynamic.NewForConfigOrDie(s.Config).Resource(crdGVR).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(crds.Items) != 5 {
		t.Errorf("%d CRDs created, want 5 (a nested directory is not read)", len(crds.Items))
	}
}

// A CRD path that does not exist fails Start unless told to be ignored;
// a bad file fails it with the file's name and the server's message.
func TestCRDPathErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	invalid := filepath.Join(dir, "invalid.yaml")
	writeFile(t, invalid, strings.Replace(crdYAML("bolts", "Bolt"), "scope: Namespaced", "scope: Galactic", 1))
	malformed := filepath.Join(dir, "malformed.yaml")
	writeFile(t, malformed, crdYAML("nuts", "Nut")+"---\nkind: [unclosed\n")
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name string
		opts crdtest.Options
		want []string // substrings of the error; none: Start succeeds
	}{
		{"missing path", crdtest.Options{CRDDirectoryPaths: []string{missing}}, []string{missing, "no such file"}},
		{"glob matching nothing", crdtest.Options{CRDDirectoryPaths: []string{missing + "/*.yaml"}}, []string{missing + "/*.yaml", "matches nothing"}},
		{"missing path ignored", crdtest.Options{CRDDirectoryPaths: []string{missing, missing + "/*.yaml"}, IgnoreMissingCRDPaths: true}, nil},
		{"invalid CRD", crdtest.Options{CRDDirectoryPaths: []string{invalid}}, []string{invalid, "spec.scope", `Unsupported value: "Galactic"`}},
		{"malformed YAML", crdtest.Options{CRDDirectoryPaths: []string{malformed}}, []string{malformed, "document 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.DataDir = t.TempDir()
			s, err := crdtest.StartServer(t.Context(), tc.opts)
			if err == nil {
				s.Stop()
			}
			switch {
			case len(tc.want) == 0 && err != nil:
				t.Fatalf("StartServer: %v", err)
			case len(tc.want) > 0 && err == nil:
				t.Fatalf("StartServer succeeded, want an error mentioning %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// A validating webhook served by the test process is called over TLS
// from the moment Start returns.
func TestWebhooks(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	limit := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var obj struct {
			Spec struct{ Size int } `json:"spec"`
		}
		_ = json.Unmarshal(review.Request.Object.Raw, &obj)
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: obj.Spec.Size <= 10}
		if !resp.Allowed {
			resp.Result = &metav1.Status{Message: fmt.Sprintf("size %d is over 10", obj.Spec.Size)}
		}
		review.Response, review.Request = resp, nil
		json.NewEncoder(w).Encode(review)
	})
	mux := http.NewServeMux()
	mux.Handle("/validate-widgets", limit)
	path := "/validate-widgets"
	none := admissionregistrationv1.SideEffectClassNone
	s := crdtest.Start(t, crdtest.Options{
		CRDs: []*apiextensionsv1.CustomResourceDefinition{widgetCRD()},
		Webhooks: []crdtest.Webhook{{
			Handler: mux,
			Validating: []*admissionregistrationv1.ValidatingWebhookConfiguration{{
				ObjectMeta: metav1.ObjectMeta{Name: "widget-limits"},
				Webhooks: []admissionregistrationv1.ValidatingWebhook{{
					Name:                    "limits.bench.example.com",
					ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "webhook", Namespace: "system", Path: &path}},
					Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"bench.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}},
					SideEffects:             &none,
					AdmissionReviewVersions: []string{"v1"},
				}},
			}},
		}},
	})
	widgets := dynamic.NewForConfigOrDie(s.Config).Resource(widgetGVR).Namespace("default")
	big := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "big"}, "spec": map[string]any{"size": int64(11)},
	}}
	_, err := widgets.Create(t.Context(), big, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "size 11 is over 10") {
		t.Errorf("creating an oversized widget: err = %v, want the webhook's denial", err)
	}
	if err := createWidget(t.Context(), dynamic.NewForConfigOrDie(s.Config), "small"); err != nil {
		t.Errorf("creating a small widget: %v", err)
	}
	if calls.Load() != 2 {
		t.Errorf("webhook called %d times, want 2", calls.Load())
	}
}

// CRDs in Go objects that conflict fail Start with the server's reason.
func TestCRDNamesConflict(t *testing.T) {
	t.Parallel()
	a, b := widgetCRD(), widgetCRD()
	b.Name = "gadgets.bench.example.com"
	b.Spec.Names.Plural, b.Spec.Names.Singular = "gadgets", "gadget"
	b.Spec.Names.Kind = "Widget" // the kind is taken
	_, err := crdtest.StartServer(context.Background(), crdtest.Options{DataDir: t.TempDir(), CRDs: []*apiextensionsv1.CustomResourceDefinition{a, b}})
	if err == nil || !strings.Contains(err.Error(), "Options.CRDs[1]") || !strings.Contains(err.Error(), "KindConflict") {
		t.Errorf("StartServer with conflicting kinds: err = %v, want Options.CRDs[1] and KindConflict", err)
	}
}
