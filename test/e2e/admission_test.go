package e2e

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Admission webhooks on a Widget CRD (served at v1 and v2, one schema),
// each behaviour with its own registrations, registered by url.

const widgetGroup = "admission.example.com"

var widgetsV1 = schema.GroupVersionResource{Group: widgetGroup, Version: "v1", Resource: "widgets"}

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.` + widgetGroup + `
spec:
  group: ` + widgetGroup + `
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema: &schema
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
              size: {type: string}
              replicas: {type: integer}
          status:
            type: object
            properties:
              replicas: {type: integer}
  - name: v2
    served: true
    storage: false
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema: *schema
`

func widget(name string, labels ...string) string {
	md := "  name: " + name + "\n"
	if len(labels) > 0 {
		md += "  labels:\n"
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			md += "    " + k + ": \"" + v + "\"\n"
		}
	}
	return `apiVersion: ` + widgetGroup + `/v1
kind: Widget
metadata:
` + md + `spec:
  color: red
  replicas: 1
`
}

// webhookConfig is one configuration of kind with one webhook named name
// at url; extra is YAML added to the webhook (indented by four spaces).
func webhookConfig(kind, name, url string, caBundle []byte, extra string) string {
	return `apiVersion: admissionregistration.k8s.io/v1
kind: ` + kind + `
metadata:
  name: ` + name + `
webhooks:
- name: ` + name + `
  sideEffects: None
  admissionReviewVersions: [v1]
  clientConfig:
    url: ` + url + `
    caBundle: ` + base64.StdEncoding.EncodeToString(caBundle) + `
` + extra + "---\n"
}

const widgetRules = `  rules:
  - apiGroups: [` + widgetGroup + `]
    apiVersions: [v1]
    operations: [CREATE, UPDATE]
    resources: [widgets]
`

func TestAdmissionWebhooks(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	hook := startAdmissionWebhook(t)
	kubectl(t, srv, "apply", "-f", writeManifest(t, "widget-crd.yaml", widgetCRD))
	waitEstablished(t, srv, "widgets."+widgetGroup)
	kubectl(t, srv, "create", "namespace", "w")
	mutating, validating := "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"
	cfg := func(kind, name, path, extra string) string {
		return webhookConfig(kind, name, hook.URL+path, hook.CABundle, extra)
	}
	create := func(t *testing.T, name string, labels ...string) (string, error) {
		t.Helper()
		stdout, stderr, err := kubectlResult(srv, "create", "-n", "w", "-f", writeManifest(t, name+".yaml", widget(name, labels...)))
		if err != nil {
			return strings.TrimSpace(stderr), err
		}
		return strings.TrimSpace(stdout + stderr), nil
	}
	exists := func(t *testing.T, name string) bool {
		_, err := srv.Dynamic.Resource(widgetsV1).Namespace("w").Get(testContext(t, startTimeout), name, metav1.GetOptions{})
		return err == nil
	}

	t.Run("failurePolicy", func(t *testing.T) {
		// A webhook nobody listens at.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := "https://" + ln.Addr().String() + "/down"
		ln.Close()
		registerWebhooks(t, srv, webhookConfig(validating, "down-fail.example.com", down, hook.CABundle, widgetRules+"  failurePolicy: Fail\n"+
			"  objectSelector: {matchLabels: {policy: fail}}\n")+
			webhookConfig(validating, "down-ignore.example.com", down, hook.CABundle, widgetRules+"  failurePolicy: Ignore\n"+
				"  objectSelector: {matchLabels: {policy: ignore}}\n"))
		defer unregisterWebhooks(t, srv, "validatingwebhookconfiguration/down-fail.example.com", "validatingwebhookconfiguration/down-ignore.example.com")
		out, err := create(t, "fail", "policy=fail")
		if err == nil || !strings.Contains(out, `Internal error occurred: failed calling webhook "down-fail.example.com": failed to call webhook: Post "`+down+`?timeout=10s": dial tcp `) {
			t.Errorf("failurePolicy Fail: %v: %s", err, out)
		}
		if exists(t, "fail") {
			t.Error("a refused widget was stored")
		}
		if out, err := create(t, "ignore", "policy=ignore"); err != nil {
			t.Errorf("failurePolicy Ignore: %s", out)
		}
		// A broken webhook affects only what it matches.
		if out, err := create(t, "other"); err != nil {
			t.Errorf("a widget neither webhook matches: %s", out)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		hook.handle("/slow", func(r *http.Request, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return &admissionv1.AdmissionResponse{Allowed: true}
		})
		registerWebhooks(t, srv, cfg(validating, "slow.example.com", "/slow", widgetRules+"  timeoutSeconds: 1\n"))
		defer unregisterWebhooks(t, srv, "validatingwebhookconfiguration/slow.example.com")
		start := time.Now()
		out, err := create(t, "slow")
		took := time.Since(start)
		if err == nil || !strings.Contains(out, `failed calling webhook "slow.example.com": failed to call webhook: Post "`+hook.URL+`/slow?timeout=1s": context deadline exceeded`) {
			t.Errorf("a webhook past its timeout: %v: %s", err, out)
		}
		if took > 5*time.Second {
			t.Errorf("the request took %v with a webhook timeout of 1s", took)
		}
	})

	t.Run("denial", func(t *testing.T) {
		hook.handle("/deny", func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Warnings: []string{"widgets are watched"},
				Result: &metav1.Status{Code: http.StatusForbidden, Message: "no red widgets", Reason: metav1.StatusReasonForbidden}}
		})
		registerWebhooks(t, srv, cfg(validating, "deny.example.com", "/deny", widgetRules))
		defer unregisterWebhooks(t, srv, "validatingwebhookconfiguration/deny.example.com")
		out, err := create(t, "red")
		if err == nil || !strings.Contains(out, `Warning: widgets are watched`) ||
			!strings.Contains(out, `admission webhook "deny.example.com" denied the request: no red widgets`) {
			t.Errorf("denied: %v: %s", err, out)
		}
		_, err = srv.Dynamic.Resource(widgetsV1).Namespace("w").Create(testContext(t, startTimeout), mustUnstructured(t, widget("red")), metav1.CreateOptions{})
		if st, ok := err.(interface{ Status() metav1.Status }); !ok || st.Status().Code != http.StatusForbidden {
			t.Errorf("the denial's code: %v", err)
		}
	})

	t.Run("dryRun", func(t *testing.T) {
		hook.handle("/allow", allow)
		registerWebhooks(t, srv, cfg(validating, "none.example.com", "/allow", widgetRules))
		if _, stderr, err := kubectlResult(srv, "create", "-n", "w", "--dry-run=server", "-f", writeManifest(t, "dry.yaml", widget("dry"))); err != nil {
			t.Errorf("dry run with sideEffects None: %v: %s", err, stderr)
		}
		reqs := hook.received("/allow")
		if len(reqs) == 0 || reqs[len(reqs)-1].DryRun == nil || !*reqs[len(reqs)-1].DryRun {
			t.Errorf("the webhook was not told of the dry run")
		}
		unregisterWebhooks(t, srv, "validatingwebhookconfiguration/none.example.com")
		// sideEffects Unknown, which only v1beta1 accepts.
		registerWebhooks(t, srv, strings.Replace(strings.Replace(cfg(validating, "unknown.example.com", "/allow", widgetRules),
			"admissionregistration.k8s.io/v1\n", "admissionregistration.k8s.io/v1beta1\n", 1), "sideEffects: None", "sideEffects: Unknown", 1))
		defer unregisterWebhooks(t, srv, "validatingwebhookconfiguration/unknown.example.com")
		_, stderr, err := kubectlResult(srv, "create", "-n", "w", "--dry-run=server", "-f", writeManifest(t, "dry.yaml", widget("dry")))
		if err == nil || !strings.Contains(stderr, `admission webhook "unknown.example.com" does not support dry run`) {
			t.Errorf("dry run with sideEffects Unknown: %v: %s", err, stderr)
		}
		if out, err := create(t, "wet"); err != nil {
			t.Errorf("a write that is not a dry run: %s", out)
		}
		// v1 refuses sideEffects Unknown.
		_, stderr, err = kubectlResult(srv, "create", "-f", writeManifest(t, "v1-unknown.yaml",
			strings.Replace(cfg(validating, "v1-unknown.example.com", "/allow", widgetRules), "sideEffects: None", "sideEffects: Unknown", 1)))
		if err == nil || !strings.Contains(stderr, `webhooks[0].sideEffects: Unsupported value: "Unknown": supported values: "None", "NoneOnDryRun"`) {
			t.Errorf("v1 with sideEffects Unknown: %v: %s", err, stderr)
		}
	})

	t.Run("selectors", func(t *testing.T) {
		kubectl(t, srv, "create", "namespace", "guarded")
		kubectl(t, srv, "label", "namespace", "guarded", "guard=on")
		hook.handle("/guard", deny("guarded"))
		registerWebhooks(t, srv, cfg(validating, "ns.example.com", "/guard", widgetRules+"  namespaceSelector: {matchLabels: {guard: \"on\"}}\n")+
			cfg(validating, "obj.example.com", "/guard", widgetRules+"  objectSelector: {matchExpressions: [{key: guard, operator: In, values: [\"on\"]}]}\n"))
		defer unregisterWebhooks(t, srv, "validatingwebhookconfiguration/ns.example.com", "validatingwebhookconfiguration/obj.example.com")
		_, stderr, err := kubectlResult(srv, "create", "-n", "guarded", "-f", writeManifest(t, "g.yaml", widget("g")))
		if err == nil || !strings.Contains(stderr, `admission webhook "ns.example.com" denied the request: guarded`) {
			t.Errorf("in a selected namespace: %v: %s", err, stderr)
		}
		if out, err := create(t, "free"); err != nil {
			t.Errorf("in another namespace: %s", out)
		}
		if out, err := create(t, "labelled", "guard=on"); err == nil || !strings.Contains(out, `admission webhook "obj.example.com" denied the request: guarded`) {
			t.Errorf("a selected object: %v: %s", err, out)
		}
		// Labelling an object is judged by its old and new labels.
		if _, stderr, err := kubectlResult(srv, "label", "-n", "w", "widget", "free", "guard=on"); err == nil || !strings.Contains(stderr, "obj.example.com") {
			t.Errorf("labelling into the selector: %v: %s", err, stderr)
		}
	})

	t.Run("matchConditions", func(t *testing.T) {
		hook.handle("/conditions", deny("matched"))
		registerWebhooks(t, srv, cfg(validating, "conditions.example.com", "/conditions", widgetRules+`  matchConditions:
  - name: blue
    expression: 'object.spec.color == "blue"'
  - name: not-admin-op
    expression: 'request.operation == "CREATE"'
`))
		defer unregisterWebhooks(t, srv, "validatingwebhookconfiguration/conditions.example.com")
		if out, err := create(t, "red-one"); err != nil {
			t.Errorf("a red widget: %s", out)
		}
		blue := strings.Replace(widget("blue-one"), "color: red", "color: blue", 1)
		_, stderr, err := kubectlResult(srv, "create", "-n", "w", "-f", writeManifest(t, "blue.yaml", blue))
		if err == nil || !strings.Contains(stderr, `admission webhook "conditions.example.com" denied the request: matched`) {
			t.Errorf("a blue widget: %v: %s", err, stderr)
		}
		// A condition that does not compile is refused.
		_, stderr, err = kubectlResult(srv, "create", "-f", writeManifest(t, "bad.yaml", cfg(validating, "bad.example.com", "/conditions", widgetRules+`  matchConditions:
  - name: bad
    expression: 'object.spec.color =='
`)))
		if err == nil || !strings.Contains(stderr, "webhooks[0].matchConditions[0].expression: Invalid value") {
			t.Errorf("a condition that does not compile: %v: %s", err, stderr)
		}
	})

	t.Run("reinvocation", func(t *testing.T) {
		// a labels the widget with how many labels it has; b (after a)
		// adds one: a runs again.
		hook.handle("/a", func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			obj := objectOf(req.Object.Raw)
			md, _ := obj["metadata"].(map[string]any)
			if _, ok := md["labels"]; !ok {
				return jsonPatch(`[{"op":"add","path":"/metadata/labels","value":{"a":"1"}}]`)
			}
			n := len(md["labels"].(map[string]any))
			return jsonPatch(`[{"op":"add","path":"/metadata/labels/a","value":"` + strings.Repeat("x", n) + `"}]`)
		})
		hook.handle("/b", func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return jsonPatch(`[{"op":"add","path":"/metadata/labels/b","value":"1"}]`)
		})
		registerWebhooks(t, srv, cfg(mutating, "a.example.com", "/a", widgetRules+"  reinvocationPolicy: IfNeeded\n")+
			cfg(mutating, "b.example.com", "/b", widgetRules))
		defer unregisterWebhooks(t, srv, "mutatingwebhookconfiguration/a.example.com", "mutatingwebhookconfiguration/b.example.com")
		before := len(hook.received("/a"))
		if out, err := create(t, "reinvoked"); err != nil {
			t.Fatalf("create: %s", out)
		}
		if n := len(hook.received("/a")) - before; n != 2 {
			t.Errorf("webhook a was called %d times, want 2", n)
		}
		got := kubectlYAML(t, srv, "get", "-n", "w", "widget", "reinvoked", "-o", "yaml")
		checkFields(t, "reinvoked", got, []fieldCheck{{"metadata.labels", map[string]any{"a": "xx", "b": "1"}}})
	})

	t.Run("equivalent", func(t *testing.T) {
		// Registered for v2 only; a v1 request reaches it as v2.
		hook.handle("/v2", func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return jsonPatch(`[{"op":"add","path":"/spec/size","value":"` + req.Kind.Version + `"}]`)
		})
		registerWebhooks(t, srv, cfg(mutating, "v2.example.com", "/v2", strings.Replace(widgetRules, "[v1]", "[v2]", 1)))
		defer unregisterWebhooks(t, srv, "mutatingwebhookconfiguration/v2.example.com")
		if out, err := create(t, "equivalent"); err != nil {
			t.Fatalf("create: %s", out)
		}
		reqs := hook.received("/v2")
		last := reqs[len(reqs)-1]
		if last.Kind.Version != "v2" || last.RequestKind.Version != "v1" || last.Resource.Version != "v2" || last.RequestResource.Version != "v1" ||
			objectOf(last.Object.Raw)["apiVersion"] != widgetGroup+"/v2" {
			t.Errorf("an Equivalent match: kind %v requestKind %v", last.Kind, last.RequestKind)
		}
		got := kubectlYAML(t, srv, "get", "-n", "w", "widgets.v1."+widgetGroup, "equivalent", "-o", "yaml")
		checkFields(t, "equivalent", got, []fieldCheck{{"apiVersion", widgetGroup + "/v1"}, {"spec.size", "v2"}})
	})

	t.Run("an update's objects", func(t *testing.T) {
		// What webhooks receive of an update: the stored object as
		// oldObject, and as object the one about to be stored (with the
		// request's resourceVersion) for validating webhooks; both
		// converted for a webhook matching another version.
		for _, p := range []string{"/objs-m", "/objs-v", "/objs-v2"} {
			hook.handle(p, allow)
		}
		only := "  objectSelector: {matchLabels: {objs: \"yes\"}}\n"
		registerWebhooks(t, srv, cfg(mutating, "objs-m.example.com", "/objs-m", widgetRules+only)+cfg(validating, "objs-v.example.com", "/objs-v", widgetRules+only)+
			cfg(validating, "objs-v2.example.com", "/objs-v2", strings.Replace(widgetRules, "[v1]", "[v2]", 1)+only))
		defer unregisterWebhooks(t, srv, "mutatingwebhookconfiguration/objs-m.example.com", "validatingwebhookconfiguration/objs-v.example.com",
			"validatingwebhookconfiguration/objs-v2.example.com")
		if out, err := create(t, "objs", "objs=yes"); err != nil {
			t.Fatalf("create: %s", out)
		}
		ctx := testContext(t, startTimeout)
		widgets := srv.Dynamic.Resource(widgetsV1).Namespace("w")
		before, err := widgets.Get(ctx, "objs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		next := before.DeepCopy()
		if err := unstructured.SetNestedField(next.Object, "blue", "spec", "color"); err != nil {
			t.Fatal(err)
		}
		if _, err := widgets.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		after, err := widgets.Get(ctx, "objs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Validating webhooks see the request's resourceVersion.
		admitted := after.DeepCopy()
		admitted.SetResourceVersion(before.GetResourceVersion())
		inV2 := func(obj map[string]any) map[string]any {
			obj = runtime.DeepCopyJSON(obj)
			obj["apiVersion"] = widgetGroup + "/v2"
			return obj
		}
		for _, tc := range []struct {
			path        string
			object, old map[string]any // object nil: not checked
		}{
			{"/objs-m", nil, before.Object},
			{"/objs-v", admitted.Object, before.Object},
			{"/objs-v2", inV2(admitted.Object), inV2(before.Object)},
		} {
			var update *admissionv1.AdmissionRequest
			for _, r := range hook.received(tc.path) {
				if r.Operation == admissionv1.Update && r.Name == "objs" {
					update = r
				}
			}
			if update == nil {
				t.Errorf("%s: no update reviewed", tc.path)
				continue
			}
			if got := objectOf(update.OldObject.Raw); !reflect.DeepEqual(got, jsonRoundTrip(t, tc.old)) {
				t.Errorf("%s: oldObject\n%s\nwant\n%v", tc.path, update.OldObject.Raw, tc.old)
			}
			if got := objectOf(update.Object.Raw); tc.object != nil && !reflect.DeepEqual(got, jsonRoundTrip(t, tc.object)) {
				t.Errorf("%s: object\n%s\nwant\n%v", tc.path, update.Object.Raw, tc.object)
			}
		}
	})

	t.Run("an update's managedFields", func(t *testing.T) {
		// Webhooks see an update's managedFields as recorded for it, and
		// what is stored is the same whether a webhook patched the
		// object or not: the request's manager owns what it changed, the
		// creator keeps the rest, and a webhook's change is not
		// recorded (as upstream records fields before admission).
		hook.handle("/mf-pass", allow)
		hook.handle("/mf-patch", func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			if req.Operation != admissionv1.Update {
				return allow(nil, req)
			}
			return jsonPatch(`[{"op":"add","path":"/spec/size","value":"L"}]`)
		})
		registerWebhooks(t, srv, cfg(mutating, "mf-pass.example.com", "/mf-pass", widgetRules+"  objectSelector: {matchLabels: {mf: \"pass\"}}\n")+
			cfg(mutating, "mf-patch.example.com", "/mf-patch", widgetRules+"  objectSelector: {matchLabels: {mf: \"patch\"}}\n"))
		defer unregisterWebhooks(t, srv, "mutatingwebhookconfiguration/mf-pass.example.com", "mutatingwebhookconfiguration/mf-patch.example.com")
		ctx := testContext(t, startTimeout)
		widgets := srv.Dynamic.Resource(widgetsV1).Namespace("w")
		for _, kind := range []string{"pass", "patch"} {
			name := "mf-" + kind
			if out, err := create(t, name, "mf="+kind); err != nil {
				t.Fatalf("create: %s", out)
			}
			cur, err := widgets.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := unstructured.SetNestedField(cur.Object, "blue", "spec", "color"); err != nil {
				t.Fatal(err)
			}
			updated, err := widgets.Update(ctx, cur, metav1.UpdateOptions{FieldManager: "e2e-updater"})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if size, _, _ := unstructured.NestedString(updated.Object, "spec", "size"); (kind == "patch") != (size == "L") {
				t.Errorf("%s: spec.size %q after the update", name, size)
			}
			owners := map[string]string{}
			for _, e := range updated.GetManagedFields() {
				owners[e.Manager+"/"+string(e.Operation)] = string(e.FieldsV1.Raw)
			}
			want := map[string]string{
				"kubectl-create/Update": `{"f:metadata":{"f:labels":{".":{},"f:mf":{}}},"f:spec":{".":{},"f:replicas":{}}}`,
				"e2e-updater/Update":    `{"f:spec":{"f:color":{}}}`,
			}
			if !reflect.DeepEqual(owners, want) {
				t.Errorf("%s: managedFields %v, want %v", name, owners, want)
			}
			var seen []metav1.ManagedFieldsEntry
			for _, r := range hook.received("/" + name) {
				if r.Operation == admissionv1.Update && r.Name == name {
					var obj unstructured.Unstructured
					if err := obj.UnmarshalJSON(r.Object.Raw); err != nil {
						t.Fatal(err)
					}
					seen = obj.GetManagedFields()
				}
			}
			if !reflect.DeepEqual(seen, updated.GetManagedFields()) {
				t.Errorf("%s: the webhook saw managedFields %+v, then %+v were stored", name, seen, updated.GetManagedFields())
			}
		}
	})

	t.Run("subresources and delete", func(t *testing.T) {
		if out, err := create(t, "sub"); err != nil {
			t.Fatalf("create: %s", out)
		}
		hook.handle("/sub", deny("not now"))
		registerWebhooks(t, srv, cfg(validating, "sub.example.com", "/sub", `  rules:
  - apiGroups: [`+widgetGroup+`]
    apiVersions: ["*"]
    operations: [UPDATE, DELETE]
    resources: [widgets/scale, widgets/status, widgets]
`))
		defer unregisterWebhooks(t, srv, "validatingwebhookconfiguration/sub.example.com")
		for _, args := range [][]string{
			{"scale", "-n", "w", "widget", "sub", "--replicas", "3"},
			{"patch", "-n", "w", "widget", "sub", "--subresource", "status", "--type", "merge", "-p", `{"status":{"replicas":2}}`},
			{"delete", "-n", "w", "widget", "sub"},
		} {
			if _, stderr, err := kubectlResult(srv, args...); err == nil || !strings.Contains(stderr, `admission webhook "sub.example.com" denied the request: not now`) {
				t.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, stderr)
			}
		}
		if !exists(t, "sub") {
			t.Error("a refused delete deleted")
		}
		seen := map[string]bool{}
		for _, r := range hook.received("/sub") {
			seen[string(r.Operation)+" "+r.SubResource] = true
			if r.SubResource == "scale" && r.Kind.Kind != "Scale" {
				t.Errorf("a scale write was admitted as %v", r.Kind)
			}
			if r.Operation == admissionv1.Delete && (objectOf(r.OldObject.Raw)["metadata"] == nil || objectOf(r.Object.Raw) != nil) {
				t.Errorf("a delete's objects: object %s oldObject %s", r.Object.Raw, r.OldObject.Raw)
			}
		}
		for _, want := range []string{"UPDATE scale", "UPDATE status", "DELETE "} {
			if !seen[want] {
				t.Errorf("the webhook saw no %q request; saw %v", want, seen)
			}
		}
	})

	t.Run("three validating webhooks run in parallel", func(t *testing.T) {
		hook.handle("/100ms", func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			time.Sleep(100 * time.Millisecond)
			return &admissionv1.AdmissionResponse{Allowed: true}
		})
		ctx := testContext(t, time.Minute)
		timeCreate := func(name string) time.Duration {
			start := time.Now()
			if _, err := srv.Dynamic.Resource(widgetsV1).Namespace("w").Create(ctx, mustUnstructured(t, widget(name)), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			return time.Since(start)
		}
		base := min(timeCreate("p0"), timeCreate("p1"), timeCreate("p2"))
		registerWebhooks(t, srv, cfg(validating, "p1.example.com", "/100ms", widgetRules)+cfg(validating, "p2.example.com", "/100ms", widgetRules)+
			cfg(validating, "p3.example.com", "/100ms", widgetRules))
		defer unregisterWebhooks(t, srv, "validatingwebhookconfiguration/p1.example.com", "validatingwebhookconfiguration/p2.example.com", "validatingwebhookconfiguration/p3.example.com")
		with := min(timeCreate("p3"), timeCreate("p4"), timeCreate("p5"))
		if extra := with - base; extra < 50*time.Millisecond || extra > 250*time.Millisecond {
			t.Errorf("three 100ms validating webhooks added %v (%v → %v), want about 100ms", extra, base, with)
		} else {
			t.Logf("three 100ms validating webhooks added %v", extra)
		}
	})
}

// jsonRoundTrip is obj as objectOf decodes its JSON (numbers as float64).
func jsonRoundTrip(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return objectOf(b)
}
