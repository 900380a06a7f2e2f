package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/crdserver/crdserver/internal/webhook/webhooktest"
)

// admitFunc answers one AdmissionRequest (the response's uid is filled
// in).
type admitFunc func(r *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

// admissionWebhook is the test's HTTPS admission webhook server: one
// admitFunc per path, answering in the AdmissionReview version asked.
type admissionWebhook struct {
	*webhooktest.Server
	mu       sync.Mutex
	handlers map[string]admitFunc
	requests map[string][]*admissionv1.AdmissionRequest
	// also serves other paths (a conversion webhook).
	mux *http.ServeMux
}

func startAdmissionWebhook(t *testing.T, dnsNames ...string) *admissionWebhook {
	w := &admissionWebhook{handlers: map[string]admitFunc{}, requests: map[string][]*admissionv1.AdmissionRequest{}, mux: http.NewServeMux()}
	w.mux.HandleFunc("/", w.serve)
	w.Server = webhooktest.Start(t, w.mux, dnsNames...)
	return w
}

// handle sets what path answers.
func (w *admissionWebhook) handle(path string, f admitFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handlers[path] = f
}

// received returns the requests path received so far.
func (w *admissionWebhook) received(path string) []*admissionv1.AdmissionRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*admissionv1.AdmissionRequest(nil), w.requests[path]...)
}

func (w *admissionWebhook) serve(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(rw, "bad review", http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	f := w.handlers[r.URL.Path]
	w.requests[r.URL.Path] = append(w.requests[r.URL.Path], review.Request)
	w.mu.Unlock()
	if f == nil {
		http.NotFound(rw, r)
		return
	}
	resp := f(r, review.Request)
	if resp == nil {
		return // the handler answered itself
	}
	resp.UID = review.Request.UID
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	rw.Header().Set("Content-Type", "application/json")
	json.NewEncoder(rw).Encode(out)
}

func allow(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
}

func deny(msg string) admitFunc {
	return func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: msg}}
	}
}

// jsonPatch answers with a JSON patch.
func jsonPatch(patch string) *admissionv1.AdmissionResponse {
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(patch), PatchType: &pt}
}

// objectOf decodes a request's object (nil when there is none).
func objectOf(raw []byte) map[string]any {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var m map[string]any
	json.Unmarshal(raw, &m)
	return m
}

// registerWebhooks creates webhook configurations from a manifest and
// waits until admission sees them.
func registerWebhooks(t *testing.T, srv *server, manifest string) {
	t.Helper()
	kubectl(t, srv, "create", "-f", writeManifest(t, "webhooks.yaml", manifest))
	syncWebhooks(t, srv)
}

// unregisterWebhooks deletes webhook configurations (kind/name) and waits
// until admission no longer sees them.
func unregisterWebhooks(t *testing.T, srv *server, objects ...string) {
	t.Helper()
	for _, o := range objects {
		kubectl(t, srv, "delete", o)
	}
	syncWebhooks(t, srv)
}

// syncWebhooks waits until the server's caches of webhook configurations,
// which admission reads, are as new as storage: a list at least as new
// as a consistent one.
func syncWebhooks(t *testing.T, srv *server) {
	t.Helper()
	for _, res := range []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"} {
		gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: res}
		l, err := srv.Dynamic.Resource(gvr).List(testContext(t, startTimeout), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Dynamic.Resource(gvr).List(testContext(t, startTimeout), metav1.ListOptions{ResourceVersion: l.GetResourceVersion(), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}); err != nil {
			t.Fatal(err)
		}
	}
}

// mustUnstructured decodes a YAML manifest into an object for client-go.
func mustUnstructured(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}
