package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/webhook/webhooktest"
)

// testHook is a webhook server for the tests: one answer function per
// path, every review it received.
type testHook struct {
	*webhooktest.Server
	mu       sync.Mutex
	answer   map[string]func(review *admissionv1.AdmissionReview) *admissionv1.AdmissionResponse
	received map[string][]*admissionv1.AdmissionReview
}

func startHook(t *testing.T) *testHook {
	h := &testHook{answer: map[string]func(*admissionv1.AdmissionReview) *admissionv1.AdmissionResponse{}, received: map[string][]*admissionv1.AdmissionReview{}}
	h.Server = webhooktest.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rev := &admissionv1.AdmissionReview{}
		if err := json.Unmarshal(body, rev); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		f := h.answer[r.URL.Path]
		h.received[r.URL.Path] = append(h.received[r.URL.Path], rev)
		h.mu.Unlock()
		resp := f(rev)
		if resp.UID == "" {
			resp.UID = rev.Request.UID
		}
		json.NewEncoder(w).Encode(admissionv1.AdmissionReview{TypeMeta: rev.TypeMeta, Response: resp})
	}))
	return h
}

func (h *testHook) on(path string, f func(*admissionv1.AdmissionReview) *admissionv1.AdmissionResponse) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answer[path] = f
	return h.URL + path
}

func (h *testHook) reviews(path string) []*admissionv1.AdmissionReview {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.received[path]
}

// source serves configurations built in the test.
type source struct {
	mutating, validating []Stored
}

func (s *source) WebhookConfigurations(_ context.Context, mutating bool) ([]Stored, error) {
	if mutating {
		return s.mutating, nil
	}
	return s.validating, nil
}

var rev int64

// stored encodes a configuration of webhooks (mutating ones; for a
// validating configuration their reinvocationPolicy is dropped).
func stored(name string, mutating bool, hooks ...admissionregistrationv1.MutatingWebhook) Stored {
	var v any
	if mutating {
		v = admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
	} else {
		var vs []admissionregistrationv1.ValidatingWebhook
		for _, h := range hooks {
			vs = append(vs, admissionregistrationv1.ValidatingWebhook{Name: h.Name, ClientConfig: h.ClientConfig, Rules: h.Rules,
				FailurePolicy: h.FailurePolicy, MatchPolicy: h.MatchPolicy, NamespaceSelector: h.NamespaceSelector, ObjectSelector: h.ObjectSelector,
				SideEffects: h.SideEffects, TimeoutSeconds: h.TimeoutSeconds, AdmissionReviewVersions: h.AdmissionReviewVersions, MatchConditions: h.MatchConditions})
		}
		v = admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: vs}
	}
	b, _ := json.Marshal(v)
	rev++
	return Stored{Name: name, Revision: rev, JSON: b}
}

func ptr[T any](v T) *T { return &v }

// webhookAt is a webhook of every widget write at url, of the given
// failure policy.
func webhookAt(name, url string, caBundle []byte, policy admissionregistrationv1.FailurePolicyType) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name:         name,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"*"}, Resources: []string{"widgets", "widgets/status"}},
		}},
		FailurePolicy:           &policy,
		SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
		TimeoutSeconds:          ptr(int32(5)),
	}
}

func widgetAttributes(op Operation) *Attributes {
	return &Attributes{
		Operation: op,
		Kind:      schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
		Resource:  schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"},
		Name:      "w1", Namespace: "default",
		Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w1", "namespace": "default", "labels": map[string]any{"app": "a"}},
			"spec":     map[string]any{"size": int64(1)}},
		Options: map[string]any{"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
		User:    &authn.User{Name: "alice", UID: "u-1", Groups: []string{"devs", authn.Authenticated}},
	}
}

func allowed(*admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
}

func patch(p string) func(*admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
	return func(*admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(p), PatchType: &pt}
	}
}

func TestReviewRequest(t *testing.T) {
	hook := startHook(t)
	src := &source{validating: []Stored{stored("c", false, webhookAt("w.example.com", hook.on("/v", allowed), hook.CABundle, admissionregistrationv1.Fail))}}
	a := New(Config{Source: src})
	at := widgetAttributes(Update)
	at.Subresource = "status"
	at.OldObject = map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w1"}}
	at.DryRun = true
	if err := a.Validate(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	revs := hook.reviews("/v")
	if len(revs) != 1 {
		t.Fatalf("%d reviews", len(revs))
	}
	r := revs[0]
	if r.APIVersion != "admission.k8s.io/v1" || r.Kind != "AdmissionReview" {
		t.Errorf("review %s %s", r.APIVersion, r.Kind)
	}
	req := r.Request
	want := admissionv1.AdmissionRequest{
		UID:                req.UID,
		Kind:               metav1.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
		Resource:           metav1.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"},
		SubResource:        "status",
		RequestKind:        &metav1.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
		RequestResource:    &metav1.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"},
		RequestSubResource: "status",
		Name:               "w1",
		Namespace:          "default",
		Operation:          admissionv1.Update,
		DryRun:             ptr(true),
	}
	want.UserInfo.Username, want.UserInfo.UID, want.UserInfo.Groups = "alice", "u-1", []string{"devs", authn.Authenticated}
	got := *req
	got.Object, got.OldObject, got.Options = want.Object, want.OldObject, want.Options
	if req.UID == "" || !reflect.DeepEqual(got, want) {
		t.Errorf("request\n got %+v\nwant %+v", got, want)
	}
	for what, raw := range map[string][]byte{"object": req.Object.Raw, "oldObject": req.OldObject.Raw, "options": req.Options.Raw} {
		if !json.Valid(raw) || len(raw) < 3 {
			t.Errorf("%s: %s", what, raw)
		}
	}
}

func TestReviewVersionV1beta1(t *testing.T) {
	hook := startHook(t)
	wh := webhookAt("w.example.com", hook.on("/m", func(*admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
		// A v1beta1 answer: no patchType, uid and kind unchecked.
		return &admissionv1.AdmissionResponse{UID: "whatever", Allowed: true, Patch: []byte(`[{"op":"replace","path":"/spec/size","value":2}]`)}
	}), hook.CABundle, admissionregistrationv1.Fail)
	wh.AdmissionReviewVersions = []string{"v1beta2", "v1beta1", "v1"}
	a := New(Config{Source: &source{mutating: []Stored{stored("c", true, wh)}}})
	at := widgetAttributes(Create)
	if err := a.Mutate(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	if got := hook.reviews("/m")[0].APIVersion; got != "admission.k8s.io/v1beta1" {
		t.Errorf("sent %s", got)
	}
	if got := at.Object["spec"].(map[string]any)["size"]; got != int64(2) {
		t.Errorf("size %v (%T)", got, got)
	}
}

func TestMutateOrderAndReinvocation(t *testing.T) {
	hook := startHook(t)
	var order []string
	var mu sync.Mutex
	record := func(name string, f func(*admissionv1.AdmissionReview) *admissionv1.AdmissionResponse) func(*admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
		return func(r *admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return f(r)
		}
	}
	// In configuration name order: a/first (IfNeeded, changes nothing),
	// a/second (changes the object), b/only (IfNeeded, changes nothing).
	first := webhookAt("first.example.com", hook.on("/first", record("first", allowed)), hook.CABundle, admissionregistrationv1.Fail)
	first.ReinvocationPolicy = ptr(admissionregistrationv1.IfNeededReinvocationPolicy)
	second := webhookAt("second.example.com", hook.on("/second", record("second", patch(`[{"op":"add","path":"/spec/color","value":"red"}]`))), hook.CABundle, admissionregistrationv1.Fail)
	only := webhookAt("only.example.com", hook.on("/only", record("only", allowed)), hook.CABundle, admissionregistrationv1.Fail)
	only.ReinvocationPolicy = ptr(admissionregistrationv1.IfNeededReinvocationPolicy)
	a := New(Config{Source: &source{mutating: []Stored{stored("b", true, only), stored("a", true, first, second)}}})
	at := widgetAttributes(Create)
	if err := a.Mutate(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	if want := []string{"first", "second", "only", "first"}; !reflect.DeepEqual(order, want) {
		t.Errorf("calls %v, want %v", order, want)
	}
	if at.Object["spec"].(map[string]any)["color"] != "red" {
		t.Errorf("object %v", at.Object)
	}
}

func TestFailures(t *testing.T) {
	hook := startHook(t)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	down := "https://" + ln.Addr().String() + "/"
	ln.Close()
	badUID := hook.on("/bad-uid", func(*admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{UID: "other", Allowed: true}
	})
	validatingPatch := hook.on("/patch", patch(`[]`))
	denyStatus := hook.on("/deny", func(*admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: 403, Message: "no"}}
	})
	denyBare := hook.on("/deny-bare", func(*admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{}
	})
	for _, tc := range []struct {
		name     string
		url      string
		policy   admissionregistrationv1.FailurePolicyType
		wantCode int32
		wantMsg  string
	}{
		{"down, Fail", down, admissionregistrationv1.Fail, 500, `Internal error occurred: failed calling webhook "w.example.com": failed to call webhook: Post "` + down + `?timeout=5s": dial tcp`},
		{"down, Ignore", down, admissionregistrationv1.Ignore, 0, ""},
		{"wrong uid, Fail", badUID, admissionregistrationv1.Fail, 500, `failed calling webhook "w.example.com": received invalid webhook response: expected response.uid=`},
		{"wrong uid, Ignore", badUID, admissionregistrationv1.Ignore, 0, ""},
		{"validating patch", validatingPatch, admissionregistrationv1.Fail, 500, "received invalid webhook response: validating webhook may not return response.patch"},
		{"denied with a status", denyStatus, admissionregistrationv1.Ignore, 403, `admission webhook "w.example.com" denied the request: no`},
		{"denied without one", denyBare, admissionregistrationv1.Ignore, 400, `admission webhook "w.example.com" denied the request without explanation`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := New(Config{Source: &source{validating: []Stored{stored("c", false, webhookAt("w.example.com", tc.url, hook.CABundle, tc.policy))}}})
			err := a.Validate(context.Background(), widgetAttributes(Create))
			if tc.wantCode == 0 {
				if err != nil {
					t.Fatalf("got %v", err)
				}
				return
			}
			st, ok := err.(apierrors.APIStatus)
			if !ok || st.Status().Code != tc.wantCode || !strings.Contains(st.Status().Message, tc.wantMsg) {
				t.Errorf("got %v (%#v), want %d %q", err, err, tc.wantCode, tc.wantMsg)
			}
		})
	}
}

func TestDryRunSideEffects(t *testing.T) {
	hook := startHook(t)
	for _, tc := range []struct {
		effects admissionregistrationv1.SideEffectClass
		refused bool
	}{{"None", false}, {"NoneOnDryRun", false}, {"Some", true}, {"Unknown", true}} {
		wh := webhookAt("w.example.com", hook.on("/dry", allowed), hook.CABundle, admissionregistrationv1.Ignore)
		wh.SideEffects = &tc.effects
		a := New(Config{Source: &source{validating: []Stored{stored("c", false, wh)}}})
		at := widgetAttributes(Create)
		at.DryRun = true
		err := a.Validate(context.Background(), at)
		if tc.refused != (err != nil) || (err != nil && err.Error() != `admission webhook "w.example.com" does not support dry run`) {
			t.Errorf("sideEffects %s: %v", tc.effects, err)
		}
	}
}

func TestExemptConfigurations(t *testing.T) {
	hook := startHook(t)
	wh := webhookAt("w.example.com", hook.on("/deny", func(*admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{}
	}), hook.CABundle, admissionregistrationv1.Fail)
	wh.Rules[0].APIGroups, wh.Rules[0].Resources = []string{"*"}, []string{"*"}
	a := New(Config{Source: &source{validating: []Stored{stored("c", false, wh)}}})
	at := widgetAttributes(Create)
	at.Kind = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"}
	at.Resource = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	if err := a.Validate(context.Background(), at); err != nil {
		t.Errorf("a webhook configuration was intercepted: %v", err)
	}
	if err := a.Validate(context.Background(), widgetAttributes(Create)); err == nil {
		t.Error("the webhook denies widgets")
	}
}

func TestMatching(t *testing.T) {
	ns := func(labels map[string]string) Namespaces {
		return NamespacesFunc(func(_ context.Context, name string) (map[string]string, error) {
			if name == "missing" {
				return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, name)
			}
			return labels, nil
		})
	}
	for _, tc := range []struct {
		name  string
		edit  func(*admissionregistrationv1.MutatingWebhook, *Attributes)
		match bool
		err   string
	}{
		{"everything", func(*admissionregistrationv1.MutatingWebhook, *Attributes) {}, true, ""},
		{"other operation", func(w *admissionregistrationv1.MutatingWebhook, _ *Attributes) {
			w.Rules[0].Operations = []admissionregistrationv1.OperationType{"DELETE"}
		}, false, ""},
		{"other group", func(w *admissionregistrationv1.MutatingWebhook, _ *Attributes) {
			w.Rules[0].APIGroups = []string{"other.com"}
		}, false, ""},
		{"other version", func(w *admissionregistrationv1.MutatingWebhook, _ *Attributes) {
			w.Rules[0].APIVersions = []string{"v2"}
		}, false, ""},
		{"subresource not listed", func(_ *admissionregistrationv1.MutatingWebhook, at *Attributes) { at.Subresource = "scale" }, false, ""},
		{"any subresource", func(w *admissionregistrationv1.MutatingWebhook, at *Attributes) {
			at.Subresource = "scale"
			w.Rules[0].Resources = []string{"widgets/*"}
		}, true, ""},
		{"all subresources of anything", func(w *admissionregistrationv1.MutatingWebhook, at *Attributes) {
			at.Subresource = "status"
			w.Rules[0].Resources = []string{"*/status"}
		}, true, ""},
		{"cluster scope", func(w *admissionregistrationv1.MutatingWebhook, _ *Attributes) {
			w.Rules[0].Scope = ptr(admissionregistrationv1.ClusterScope)
		}, false, ""},
		{"namespaced scope", func(w *admissionregistrationv1.MutatingWebhook, _ *Attributes) {
			w.Rules[0].Scope = ptr(admissionregistrationv1.NamespacedScope)
		}, true, ""},
		{"namespace selector", func(w *admissionregistrationv1.MutatingWebhook, _ *Attributes) {
			w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
		}, true, ""},
		{"namespace selector, no match", func(w *admissionregistrationv1.MutatingWebhook, _ *Attributes) {
			w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}
		}, false, ""},
		{"namespace missing", func(w *admissionregistrationv1.MutatingWebhook, at *Attributes) {
			w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}
			at.Namespace = "missing"
		}, false, `namespaces "missing" not found`},
		{"object selector on the old object", func(w *admissionregistrationv1.MutatingWebhook, at *Attributes) {
			w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "old"}}
			at.OldObject = map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "old"}}}
		}, true, ""},
		{"object selector, no match", func(w *admissionregistrationv1.MutatingWebhook, _ *Attributes) {
			w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "b"}}
		}, false, ""},
		{"object selector, expressions", func(w *admissionregistrationv1.MutatingWebhook, _ *Attributes) {
			w.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}},
				{Key: "tier", Operator: metav1.LabelSelectorOpDoesNotExist},
			}}
		}, true, ""},
		{"object selector, a label it must not have", func(w *admissionregistrationv1.MutatingWebhook, _ *Attributes) {
			w.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"a"}},
			}}
		}, false, ""},
		{"object selector, an object without labels", func(w *admissionregistrationv1.MutatingWebhook, at *Attributes) {
			w.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpDoesNotExist},
			}}
			delete(at.Object["metadata"].(map[string]any), "labels")
		}, true, ""},
		{"match condition false", func(w *admissionregistrationv1.MutatingWebhook, _ *Attributes) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "true"}, {Name: "b", Expression: "object.spec.size > 1"}}
		}, false, ""},
		{"match condition on the request", func(w *admissionregistrationv1.MutatingWebhook, _ *Attributes) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "a", Expression: `request.userInfo.username == "alice" && oldObject == null`}}
		}, true, ""},
		{"match condition error, Fail", func(w *admissionregistrationv1.MutatingWebhook, _ *Attributes) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "object.spec.missing == 1"}}
		}, false, `widgets.example.com "w1" is forbidden: expression evaluation failed: no such key: missing`},
		{"match condition error, Ignore", func(w *admissionregistrationv1.MutatingWebhook, _ *Attributes) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "object.spec.missing == 1"}}
			w.FailurePolicy = ptr(admissionregistrationv1.Ignore)
		}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := webhookAt("w.example.com", "https://127.0.0.1:1/", nil, admissionregistrationv1.Fail)
			at := widgetAttributes(Create)
			tc.edit(&w, at)
			a := New(Config{Namespaces: ns(map[string]string{"env": "prod"})})
			inv, err := a.match(context.Background(), compileHook("c", 0, w), at, newVersions(at))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (inv != nil) != tc.match {
				t.Errorf("matched %v, want %v", inv != nil, tc.match)
			}
		})
	}
}

func TestEquivalentMatch(t *testing.T) {
	w := webhookAt("w.example.com", "https://127.0.0.1:1/", nil, admissionregistrationv1.Fail)
	w.Rules[0].APIVersions = []string{"v2"}
	at := widgetAttributes(Create)
	at.Versions = []string{"v1", "v2"}
	at.Convert = func(_ context.Context, obj map[string]any, av string) (map[string]any, error) {
		obj["apiVersion"] = av
		return obj, nil
	}
	a := New(Config{})
	for _, policy := range []admissionregistrationv1.MatchPolicyType{admissionregistrationv1.Exact, admissionregistrationv1.Equivalent} {
		w.MatchPolicy = &policy
		inv, err := a.match(context.Background(), compileHook("c", 0, w), at, newVersions(at))
		if err != nil {
			t.Fatal(err)
		}
		if policy == admissionregistrationv1.Exact && inv != nil {
			t.Errorf("Exact matched another version")
		}
		if policy == admissionregistrationv1.Equivalent && (inv == nil || inv.kind.Version != "v2" || inv.resource.Version != "v2") {
			t.Errorf("Equivalent: %+v", inv)
		}
	}
}

func TestApplyPatch(t *testing.T) {
	hook := startHook(t)
	for _, tc := range []struct {
		patch string
		want  string
		err   string
	}{
		{`[{"op":"add","path":"/spec/color","value":"red"}]`, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"labels":{"app":"a"},"name":"w1","namespace":"default"},"spec":{"color":"red","size":1}}`, ""},
		{`[]`, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"labels":{"app":"a"},"name":"w1","namespace":"default"},"spec":{"size":1}}`, ""},
		{`[{"op":"remove","path":"/nope"}]`, "", "Internal error occurred"},
		{`{"op":"add"}`, "", `failed calling webhook "w.example.com": received undecodable patch in webhook response`},
	} {
		url := hook.on(fmt.Sprintf("/p%d", len(tc.patch)), patch(tc.patch))
		a := New(Config{Source: &source{mutating: []Stored{stored("c", true, webhookAt("w.example.com", url, hook.CABundle, admissionregistrationv1.Fail))}}})
		at := widgetAttributes(Create)
		err := a.Mutate(context.Background(), at)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("patch %s: error %v, want %q", tc.patch, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("patch %s: %v", tc.patch, err)
		}
		if got, _ := json.Marshal(at.Object); string(got) != tc.want {
			t.Errorf("patch %s:\n got %s\nwant %s", tc.patch, got, tc.want)
		}
	}
}

// recorder keeps what Admission reports of its webhook calls.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) AdmissionWebhook(name, typ, operation string, rejected bool, elapsed time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf("%s %s %s rejected=%v", name, typ, operation, rejected))
}

func TestWebhookMetrics(t *testing.T) {
	hook := startHook(t)
	m := webhookAt("m.example.com", hook.on("/m", allowed), hook.CABundle, admissionregistrationv1.Fail)
	v := webhookAt("v.example.com", hook.on("/v", func(*admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: false}
	}), hook.CABundle, admissionregistrationv1.Fail)
	rec := &recorder{}
	a := New(Config{Source: &source{mutating: []Stored{stored("c", true, m)}, validating: []Stored{stored("d", false, v)}}, Metrics: rec})
	at := widgetAttributes(Create)
	if err := a.Mutate(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	if err := a.Validate(context.Background(), at); err == nil {
		t.Fatal("the validating webhook's refusal did not refuse")
	}
	want := []string{"m.example.com admit CREATE rejected=false", "v.example.com validating CREATE rejected=true"}
	if !reflect.DeepEqual(rec.calls, want) {
		t.Errorf("recorded %q, want %q", rec.calls, want)
	}
}

func TestWebhookAuditAnnotations(t *testing.T) {
	hook := startHook(t)
	annotated := func(*admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true, AuditAnnotations: map[string]string{"decision": "ok", "not a/qualified/key": "x"}}
	}
	src := &source{
		mutating:   []Stored{stored("m", true, webhookAt("m.example.com", hook.on("/m", annotated), hook.CABundle, admissionregistrationv1.Fail))},
		validating: []Stored{stored("v", false, webhookAt("v.example.com", hook.on("/v", annotated), hook.CABundle, admissionregistrationv1.Fail))},
	}
	a := New(Config{Source: src})
	at := widgetAttributes(Create)
	var mu sync.Mutex
	got := map[string]string{}
	at.Annotate = func(k, v string) { mu.Lock(); got[k] = v; mu.Unlock() }
	if err := a.Mutate(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	if err := a.Validate(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"m.example.com/decision": "ok", "v.example.com/decision": "ok"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("annotations %q, want %q", got, want)
	}
}

func TestReviewBody(t *testing.T) {
	at := widgetAttributes(Update)
	at.OldObject = at.Object
	inv := &invocation{kind: at.Kind, resource: at.Resource}
	parts, err := reviewParts("v1", newRequest("u-1", inv, at), &versioned{object: at.Object, old: at.OldObject})
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Join(parts, nil)
	if n := strings.Count(string(body), `"object":`); n != 1 {
		t.Errorf("%d objects in %s", n, body)
	}
	var got admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if got.Kind != "AdmissionReview" || got.APIVersion != "admission.k8s.io/v1" || got.Request.UID != "u-1" || got.Request.Name != "w1" ||
		objectName(got.Request.Object.Raw) != "w1" || objectName(got.Request.OldObject.Raw) != "w1" || got.Request.UserInfo.Username != "alice" {
		t.Errorf("review %s", body)
	}
}

// TestAppendRequest holds appendRequest to encoding/json's encoding of
// the request without its objects.
func TestAppendRequest(t *testing.T) {
	odd := "<a&b>\"q\"\\ é\u2028\x01"
	full := admissionv1.AdmissionRequest{
		UID:                "u-" + types.UID(odd),
		Kind:               metav1.GroupVersionKind{Group: "g" + odd, Version: "v1", Kind: "K"},
		Resource:           metav1.GroupVersionResource{Group: "g", Version: "v" + odd, Resource: "ks"},
		SubResource:        "status",
		RequestKind:        &metav1.GroupVersionKind{Group: "g", Version: "v2", Kind: "K" + odd},
		RequestResource:    &metav1.GroupVersionResource{Group: "g", Version: "v2", Resource: "ks" + odd},
		RequestSubResource: "scale",
		Name:               "n" + odd,
		Namespace:          "ns",
		Operation:          admissionv1.Update,
		UserInfo: authenticationv1.UserInfo{Username: "alice" + odd, UID: "u", Groups: []string{"a", odd},
			Extra: map[string]authenticationv1.ExtraValue{"z": {"1", odd}, "a" + odd: nil, "m": {}}},
		DryRun:  ptr(true),
		Options: runtime.RawExtension{Raw: []byte(`{"apiVersion":"meta.k8s.io/v1","kind":"UpdateOptions","fieldManager":"\u003cm\u003e"}`)},
	}
	for name, req := range map[string]admissionv1.AdmissionRequest{
		"full":    full,
		"minimal": {UID: "u", Operation: admissionv1.Create},
		"user without name": {UID: "u", Operation: admissionv1.Delete, DryRun: ptr(false),
			UserInfo: authenticationv1.UserInfo{UID: "x", Groups: []string{}, Extra: map[string]authenticationv1.ExtraValue{}}},
		"groups only": {UserInfo: authenticationv1.UserInfo{Groups: []string{"g"}}},
		"extra only":  {UserInfo: authenticationv1.UserInfo{Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}},
	} {
		want, err := json.Marshal(struct {
			*admissionv1.AdmissionRequest
			Object    *struct{} `json:"object,omitempty"`
			OldObject *struct{} `json:"oldObject,omitempty"`
		}{AdmissionRequest: &req})
		if err != nil {
			t.Fatal(err)
		}
		want = want[:len(want)-1] // appendRequest leaves the object open
		if got := appendRequest([]byte("x"), &req); string(got) != "x"+string(want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got[1:], want)
		}
	}
}

func objectName(raw []byte) string {
	var o struct{ Metadata struct{ Name string } }
	json.Unmarshal(raw, &o)
	return o.Metadata.Name
}

// TestPresetJSON: the objects' JSON the caller has at hand reaches
// webhooks as it is (here in an order of its own, so that it shows), but
// only in the request's version and only while the object is the one it
// encodes: a webhook after a mutation, and one matching another version,
// receive an encoding of the objects they see.
func TestPresetJSON(t *testing.T) {
	hook := startHook(t)
	mutator := webhookAt("m1.example.com", hook.on("/m1", patch(`[{"op":"replace","path":"/spec/size","value":2}]`)), hook.CABundle, admissionregistrationv1.Fail)
	after := webhookAt("m2.example.com", hook.on("/m2", allowed), hook.CABundle, admissionregistrationv1.Fail)
	validator := webhookAt("v.example.com", hook.on("/v", allowed), hook.CABundle, admissionregistrationv1.Fail)
	other := webhookAt("v2.example.com", hook.on("/v2", allowed), hook.CABundle, admissionregistrationv1.Fail)
	other.Rules[0].APIVersions = []string{"v2"}
	other.MatchPolicy = ptr(admissionregistrationv1.Equivalent)
	a := New(Config{Source: &source{
		mutating:   []Stored{stored("a", true, mutator, after)},
		validating: []Stored{stored("c", false, validator, other)},
	}})
	at := widgetAttributes(Update)
	at.Versions = []string{"v1", "v2"}
	at.Convert = func(_ context.Context, obj map[string]any, av string) (map[string]any, error) {
		obj["apiVersion"] = av
		return obj, nil
	}
	at.OldObject = map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w1", "labels": map[string]any{"app": "a"}}}
	oldJSON := `{"metadata":{"name":"w1","labels":{"app":"a"}},"kind":"Widget","apiVersion":"example.com/v1"}`
	objJSON := `{"spec":{"size":1},"metadata":{"name":"w1","namespace":"default","labels":{"app":"a"}},"kind":"Widget","apiVersion":"example.com/v1"}`
	at.ObjectJSON, at.OldObjectJSON = func() []byte { return []byte(objJSON) }, []byte(oldJSON)
	if err := a.Mutate(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	if at.ObjectJSON != nil {
		t.Errorf("ObjectJSON kept after a mutation: %s", at.ObjectJSON())
	}
	// The validating webhooks see the mutated object, encoded by the
	// handler again.
	mutated, err := codec.Marshal(at.Object)
	if err != nil {
		t.Fatal(err)
	}
	mutatedJSON := `{"spec":{"size":2},"metadata":{"name":"w1","namespace":"default","labels":{"app":"a"}},"kind":"Widget","apiVersion":"example.com/v1"}`
	at.ObjectJSON = func() []byte { return []byte(mutatedJSON) }
	if err := a.Validate(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	encoded := func(obj map[string]any, av string) string {
		obj = deepCopy(obj)
		obj["apiVersion"] = av
		b, err := codec.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		path, object, old string
	}{
		{"/m1", objJSON, oldJSON},
		{"/m2", string(mutated), oldJSON},
		{"/v", mutatedJSON, oldJSON},
		{"/v2", encoded(at.Object, "example.com/v2"), encoded(at.OldObject, "example.com/v2")},
	} {
		revs := hook.reviews(tc.path)
		if len(revs) != 1 {
			t.Fatalf("%s: %d reviews", tc.path, len(revs))
		}
		req := revs[0].Request
		if string(req.Object.Raw) != tc.object || string(req.OldObject.Raw) != tc.old {
			t.Errorf("%s: object %s, oldObject %s; want %s, %s", tc.path, req.Object.Raw, req.OldObject.Raw, tc.object, tc.old)
		}
	}
}

// TestObjectJSONOnDemand: the caller's ObjectJSON is asked for only when
// a webhook is to receive the object, and once for all the webhooks of a
// call; mutating webhooks that leave the object as it is share it and its
// conversions.
func TestObjectJSONOnDemand(t *testing.T) {
	hook := startHook(t)
	objJSON := `{"spec":{"size":1},"metadata":{"name":"w1","namespace":"default","labels":{"app":"a"}},"kind":"Widget","apiVersion":"example.com/v1"}`
	var asked int
	attributes := func() *Attributes {
		at := widgetAttributes(Update)
		at.OldObject = at.Object
		at.ObjectJSON = func() []byte { asked++; return []byte(objJSON) }
		return at
	}
	unmatched := webhookAt("none.example.com", hook.on("/none", allowed), hook.CABundle, admissionregistrationv1.Fail)
	unmatched.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	v1 := webhookAt("v1.example.com", hook.on("/v1", allowed), hook.CABundle, admissionregistrationv1.Fail)
	v2 := webhookAt("v2.example.com", hook.on("/v2", allowed), hook.CABundle, admissionregistrationv1.Fail)

	a := New(Config{Source: &source{validating: []Stored{stored("c", false, unmatched)}}})
	if err := a.Validate(context.Background(), attributes()); err != nil {
		t.Fatal(err)
	}
	if asked != 0 {
		t.Errorf("no webhook matched, yet ObjectJSON was asked for %d times", asked)
	}

	a = New(Config{Source: &source{validating: []Stored{stored("c", false, unmatched, v1, v2)}}})
	if err := a.Validate(context.Background(), attributes()); err != nil {
		t.Fatal(err)
	}
	if asked != 1 {
		t.Errorf("two validating webhooks asked for ObjectJSON %d times, want once", asked)
	}
	asked = 0
	m1 := webhookAt("m1.example.com", hook.on("/m1", allowed), hook.CABundle, admissionregistrationv1.Fail)
	m2 := webhookAt("m2.example.com", hook.on("/m2", allowed), hook.CABundle, admissionregistrationv1.Fail)
	// Two more of version v2 only, which receive the objects converted.
	e1 := webhookAt("e1.example.com", hook.on("/e1", allowed), hook.CABundle, admissionregistrationv1.Fail)
	e2 := webhookAt("e2.example.com", hook.on("/e2", allowed), hook.CABundle, admissionregistrationv1.Fail)
	for _, e := range []*admissionregistrationv1.MutatingWebhook{&e1, &e2} {
		e.Rules[0].APIVersions = []string{"v2"}
		e.MatchPolicy = ptr(admissionregistrationv1.Equivalent)
	}
	a = New(Config{Source: &source{mutating: []Stored{stored("m", true, m1, e1, m2, e2)}}})
	at := attributes()
	at.Versions = []string{"v1", "v2"}
	var converted int
	at.Convert = func(_ context.Context, obj map[string]any, av string) (map[string]any, error) {
		converted++
		obj["apiVersion"] = av
		return obj, nil
	}
	if err := a.Mutate(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	if asked != 1 {
		t.Errorf("two mutating webhooks asked for ObjectJSON %d times, want once", asked)
	}
	if converted != 2 {
		t.Errorf("two mutating webhooks of another version converted %d objects, want 2 (object and oldObject, once)", converted)
	}
	for _, path := range []string{"/v1", "/v2", "/m1", "/m2"} {
		revs := hook.reviews(path)
		if len(revs) != 1 || string(revs[0].Request.Object.Raw) != objJSON {
			t.Errorf("%s: reviews %d, want one of the caller's JSON", path, len(revs))
		}
	}
	for _, path := range []string{"/e1", "/e2"} {
		if revs := hook.reviews(path); len(revs) != 1 || objectName(revs[0].Request.Object.Raw) != "w1" {
			t.Errorf("%s: reviews %d, want one of w1", path, len(revs))
		}
	}
}
