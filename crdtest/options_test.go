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
	"k8s.io/apimachinery/pkg/runtime"
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
	// Both are created before either's names are accepted: whichever the
	// naming controller takes first keeps the kind, as upstream's does.
	if err == nil || !strings.Contains(err.Error(), "Options.CRDs[") || !strings.Contains(err.Error(), "KindConflict") {
		t.Errorf("StartServer with conflicting kinds: err = %v, want Options.CRDs[i] and KindConflict", err)
	}
}

// A conversion webhook served by the test process converts between the
// versions of a CRD named in ConversionCRDs.
func TestConversionWebhook(t *testing.T) {
	t.Parallel()
	// v1 calls it spec.size, v2 spec.count.
	convert := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review apiextensionsv1.ConversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, raw := range review.Request.Objects {
			var obj map[string]any
			if err := json.Unmarshal(raw.Raw, &obj); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			spec, _ := obj["spec"].(map[string]any)
			from, to := "size", "count"
			if review.Request.DesiredAPIVersion == "bench.example.com/v1" {
				from, to = to, from
			}
			if v, ok := spec[from]; ok {
				spec[to] = v
				delete(spec, from)
			}
			obj["apiVersion"] = review.Request.DesiredAPIVersion
			b, _ := json.Marshal(obj)
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: b})
		}
		review.Request, review.Response = nil, resp
		json.NewEncoder(w).Encode(review)
	})
	crd := widgetCRD()
	v2 := crd.Spec.Versions[0].DeepCopy()
	v2.Name, v2.Storage = "v2", false
	v2.Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"count": {Type: "integer"},
	}}
	crd.Spec.Versions = append(crd.Spec.Versions, *v2)
	s := crdtest.Start(t, crdtest.Options{
		CRDs:     []*apiextensionsv1.CustomResourceDefinition{crd},
		Webhooks: []crdtest.Webhook{{Handler: convert, ConversionCRDs: []string{crd.Name}}},
	})
	client := dynamic.NewForConfigOrDie(s.Config)
	if err := createWidget(t.Context(), client, "w"); err != nil {
		t.Fatal(err)
	}
	got, err := client.Resource(schema.GroupVersionResource{Group: "bench.example.com", Version: "v2", Resource: "widgets"}).
		Namespace("default").Get(t.Context(), "w", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "spec", "count"); n != 1 || got.GetAPIVersion() != "bench.example.com/v2" {
		t.Errorf("widget read at v2 = %v, want spec.count 1 from the webhook", got.Object)
	}

	_, err = crdtest.StartServer(t.Context(), crdtest.Options{DataDir: t.TempDir(),
		Webhooks: []crdtest.Webhook{{Handler: convert, ConversionCRDs: []string{"missing.example.com"}}}})
	if err == nil || !strings.Contains(err.Error(), `no CRD "missing.example.com"`) {
		t.Errorf("ConversionCRDs naming no CRD: err = %v", err)
	}
}

// Start with no options runs on memory storage: its data directory, in
// the test's temporary directory, holds certificates and a kubeconfig
// but no etcd.
func TestStartDefaults(t *testing.T) {
	t.Parallel()
	s := crdtest.Start(t)
	ns, err := dynamic.NewForConfigOrDie(s.Config).Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).
		Get(t.Context(), "kube-system", metav1.GetOptions{})
	if err != nil || ns.GetName() != "kube-system" {
		t.Fatalf("reading namespace kube-system: %v", err)
	}
	dir := filepath.Dir(s.Kubeconfig)
	if !strings.HasPrefix(dir, os.TempDir()) {
		t.Errorf("data directory %s is outside the temporary directory", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd")); !os.IsNotExist(err) {
		t.Errorf("an etcd directory exists with memory storage (stat: %v)", err)
	}
}
