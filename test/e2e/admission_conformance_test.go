package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// The [Conformance] specs of upstream's test/e2e/apimachinery/webhook.go
// that need no pods, with the webhook (agnhost's, re-implemented below)
// in the test process instead of a deployed pod, reached by url. Each
// subtest keeps its spec's assertions. Upstream's marker webhook, which
// tells when a registration is in effect, is syncWebhooks here. Not
// ported: the pod specs (deny pod creation, attaching, mutate pod).

const (
	conformanceLabel = "webhook-conformance" // upstream's f.UniqueName label
	skipNSLabel      = "skip-webhook-admission"
	failNSLabel      = "fail-closed-webhook"
)

// agnhostWebhook serves what agnhost's webhook serves on the paths the
// specs use.
func agnhostWebhook(t *testing.T) *admissionWebhook {
	hook := startAdmissionWebhook(t)
	disallowed := func(req *admissionv1.AdmissionRequest, what string) *admissionv1.AdmissionResponse {
		raw := req.Object.Raw
		if req.Operation == admissionv1.Delete {
			raw = req.OldObject.Raw
		}
		var obj struct{ Data map[string]string }
		json.Unmarshal(raw, &obj)
		resp := &admissionv1.AdmissionResponse{Allowed: true}
		switch v := obj.Data["webhook-e2e-test"]; {
		case v == "webhook-disallow" && (req.Operation == admissionv1.Create || req.Operation == admissionv1.Update):
			resp = &admissionv1.AdmissionResponse{Result: &metav1.Status{Reason: metav1.StatusReason("the " + what + " contains unwanted " + map[string]string{"configmap": "key and value", "custom resource": "data"}[what])}}
		case v == "webhook-nondeletable" && req.Operation == admissionv1.Delete:
			resp = &admissionv1.AdmissionResponse{Result: &metav1.Status{Reason: metav1.StatusReason("the " + what + " cannot be deleted because it contains unwanted key and value")}}
		}
		return resp
	}
	stages := func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var obj struct{ Data map[string]string }
		json.Unmarshal(req.Object.Raw, &obj)
		switch {
		case obj.Data["mutation-stage-1"] == "yes":
			return jsonPatch(`[{"op":"add","path":"/data/mutation-stage-2","value":"yes"}]`)
		case obj.Data["mutation-start"] == "yes":
			return jsonPatch(`[{"op":"add","path":"/data/mutation-stage-1","value":"yes"}]`)
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	hook.handle("/configmaps", func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return disallowed(req, "configmap")
	})
	hook.handle("/custom-resource", func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return disallowed(req, "custom resource")
	})
	hook.handle("/mutating-configmaps", stages)
	hook.handle("/mutating-custom-resource", stages)
	hook.handle("/crd", func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var crd metav1.PartialObjectMetadata
		json.Unmarshal(req.Object.Raw, &crd)
		if crd.Labels["webhook-e2e-test"] == "webhook-disallow" {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "the crd contains unwanted label"}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	hook.handle("/always-deny", deny("this webhook denies all requests"))
	hook.handle("/add-label", func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return jsonPatch(`[{"op":"add","path":"/metadata/labels","value":{"added-label":"yes"}}]`)
	})
	hook.handle("/always-allow-delay-5s", func(r *http.Request, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	return hook
}

// conformanceRule is a rule of operations on resources of group in
// versions.
func conformanceRule(group string, versions, resources []string, ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{Operations: ops,
		Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: versions, Resources: resources}}}
}

// conformanceWebhook is a validating webhook at path of hook, in the
// namespaces labelled for the specs.
func conformanceWebhook(hook *admissionWebhook, name, path string, rules []admissionregistrationv1.RuleWithOperations) admissionregistrationv1.ValidatingWebhook {
	url := hook.URL + path
	return admissionregistrationv1.ValidatingWebhook{
		Name: name, Rules: rules,
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: hook.CABundle},
		SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1", "v1beta1"},
		NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{conformanceLabel: "true"}},
	}
}

// mutatingOf is the mutating webhook of the same registration.
func mutatingOf(w admissionregistrationv1.ValidatingWebhook) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{Name: w.Name, Rules: w.Rules, ClientConfig: w.ClientConfig, SideEffects: w.SideEffects,
		AdmissionReviewVersions: w.AdmissionReviewVersions, NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector,
		FailurePolicy: w.FailurePolicy, TimeoutSeconds: w.TimeoutSeconds, MatchConditions: w.MatchConditions}
}

func denyConfigMapWebhook(hook *admissionWebhook) admissionregistrationv1.ValidatingWebhook {
	w := conformanceWebhook(hook, "deny-unwanted-configmap-data.k8s.io", "/configmaps",
		conformanceRule("", []string{"v1"}, []string{"configmaps"}, admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete))
	w.NamespaceSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: skipNSLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"yes"}}}
	return w
}

func mutateConfigMapWebhook(hook *admissionWebhook, stage int) admissionregistrationv1.MutatingWebhook {
	return mutatingOf(conformanceWebhook(hook, fmt.Sprintf("adding-configmap-data-stage-%d.k8s.io", stage), "/mutating-configmaps",
		conformanceRule("", []string{"v1"}, []string{"configmaps"}, admissionregistrationv1.Create)))
}

func webhookConfigMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
}

var (
	nonCompliantData = map[string]string{"webhook-e2e-test": "webhook-disallow"}
	toBeMutatedData  = map[string]string{"mutation-start": "yes"}
)

func TestWebhookConformance(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	hook := agnhostWebhook(t)
	ctx := testContext(t, 5*time.Minute)
	client := srv.Client
	adm := client.AdmissionregistrationV1()
	const ns = "webhook-e2e"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{conformanceLabel: "true"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := client.CoreV1().ConfigMaps(ns)
	validating := func(t *testing.T, name string, hooks ...admissionregistrationv1.ValidatingWebhook) {
		t.Helper()
		if _, err := adm.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		syncWebhooks(t, srv)
		t.Cleanup(func() {
			adm.ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
			syncWebhooks(t, srv)
		})
	}
	mutating := func(t *testing.T, name string, hooks ...admissionregistrationv1.MutatingWebhook) {
		t.Helper()
		if _, err := adm.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		syncWebhooks(t, srv)
		t.Cleanup(func() {
			adm.MutatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
			syncWebhooks(t, srv)
		})
	}
	errContains := func(t *testing.T, what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", what, err, want)
		}
	}

	t.Run("should include webhook resources in discovery documents", func(t *testing.T) {
		groups, err := client.Discovery().ServerGroups()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, g := range groups.Groups {
			if g.Name == "admissionregistration.k8s.io" {
				for _, v := range g.Versions {
					found = found || v.Version == "v1"
				}
			}
		}
		if !found {
			t.Error("admissionregistration.k8s.io/v1 is not in /apis")
		}
		var group metav1.APIGroup
		if err := client.Discovery().RESTClient().Get().AbsPath("/apis/admissionregistration.k8s.io").Do(ctx).Into(&group); err != nil || group.Name != "admissionregistration.k8s.io" {
			t.Errorf("/apis/admissionregistration.k8s.io: %v %+v", err, group)
		}
		resources, err := client.Discovery().ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
		if err != nil || resources.GroupVersion != "admissionregistration.k8s.io/v1" {
			t.Fatalf("/apis/admissionregistration.k8s.io/v1: %v", err)
		}
		seen := map[string]bool{}
		for _, r := range resources.APIResources {
			seen[r.Name] = true
		}
		if !seen["mutatingwebhookconfigurations"] || !seen["validatingwebhookconfigurations"] {
			t.Errorf("webhook configurations missing from discovery: %v", seen)
		}
	})

	t.Run("should be able to deny pod and configmap creation", func(t *testing.T) {
		validating(t, "deny-configmaps", denyConfigMapWebhook(hook))
		_, err := cms.Create(ctx, webhookConfigMap("disallowed-configmap", nonCompliantData), metav1.CreateOptions{})
		errContains(t, "a non-compliant configmap", err, "the configmap contains unwanted key and value")
		if _, err := cms.Create(ctx, webhookConfigMap("allowed-configmap", map[string]string{"admit": "this"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cm, err := cms.Get(ctx, "allowed-configmap", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["webhook-e2e-test"] = "webhook-disallow"
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		errContains(t, "update (PUT) to a non-compliant configmap", err, "the configmap contains unwanted key and value")
		_, err = cms.Patch(ctx, "allowed-configmap", types.StrategicMergePatchType, []byte(`{"data":{"webhook-e2e-test":"webhook-disallow"}}`), metav1.PatchOptions{})
		errContains(t, "update (PATCH) to a non-compliant configmap", err, "the configmap contains unwanted key and value")
		// A namespace the webhook's selector leaves out.
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "exempted-namespace",
			Labels: map[string]string{skipNSLabel: "yes", conformanceLabel: "true"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().ConfigMaps("exempted-namespace").Create(ctx, webhookConfigMap("disallowed-configmap", nonCompliantData), metav1.CreateOptions{}); err != nil {
			t.Errorf("a non-compliant configmap in a skipped namespace: %v", err)
		}
	})

	t.Run("should unconditionally reject operations on fail closed webhook", func(t *testing.T) {
		// No CA bundle: the call always fails.
		w := conformanceWebhook(hook, "fail-closed.k8s.io", "/configmaps", conformanceRule("", []string{"v1"}, []string{"configmaps"}, admissionregistrationv1.Create))
		w.ClientConfig.CABundle = nil
		w.FailurePolicy = ptr(admissionregistrationv1.Fail)
		w.NamespaceSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: failNSLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"yes"}}}
		validating(t, "fail-closed", w)
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fail-closed-namespace",
			Labels: map[string]string{failNSLabel: "yes", conformanceLabel: "true"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := client.CoreV1().ConfigMaps("fail-closed-namespace").Create(ctx, webhookConfigMap("foo", nil), metav1.CreateOptions{})
		if !apierrors.IsInternalError(err) {
			t.Errorf("expect an internal error, got %#v", err)
		}
	})

	t.Run("should mutate configmap", func(t *testing.T) {
		mutating(t, "mutate-configmaps", mutateConfigMapWebhook(hook, 1), mutateConfigMapWebhook(hook, 2))
		got, err := cms.Create(ctx, webhookConfigMap("to-be-mutated", toBeMutatedData), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"mutation-start": "yes", "mutation-stage-1": "yes", "mutation-stage-2": "yes"}
		if !reflect.DeepEqual(got.Data, want) {
			t.Errorf("expected %#v, got %#v", want, got.Data)
		}
	})

	t.Run("should not be able to mutate or prevent deletion of webhook configuration objects", func(t *testing.T) {
		configs := []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}
		denyDelete := conformanceWebhook(hook, "deny-webhook-configuration-deletions.k8s.io", "/always-deny",
			conformanceRule("admissionregistration.k8s.io", []string{"*"}, configs, admissionregistrationv1.Delete))
		denyDelete.FailurePolicy = ptr(admissionregistrationv1.Fail)
		validating(t, "blocking", denyDelete)
		addLabel := mutatingOf(conformanceWebhook(hook, "add-label-to-webhook-configurations.k8s.io", "/add-label",
			conformanceRule("admissionregistration.k8s.io", []string{"*"}, configs, admissionregistrationv1.Create)))
		addLabel.FailurePolicy = ptr(admissionregistrationv1.Fail)
		mutating(t, "blocking", addLabel)

		dummy := conformanceWebhook(hook, "dummy-validating-webhook.k8s.io", "", conformanceRule("", []string{"v1"}, []string{"invalid"}, admissionregistrationv1.Create))
		dummy.ClientConfig.CABundle = nil
		dummy.FailurePolicy = ptr(admissionregistrationv1.Ignore)
		vc, err := adm.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "dummy"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{dummy}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if vc.Labels["added-label"] == "yes" {
			t.Error("a validating webhook configuration was mutated by a mutating webhook")
		}
		if err := adm.ValidatingWebhookConfigurations().Delete(ctx, "dummy", metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting the validating webhook configuration: %v", err)
		}
		dummy.Name = "dummy-mutating-webhook.k8s.io"
		mc, err := adm.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "dummy"}, Webhooks: []admissionregistrationv1.MutatingWebhook{mutatingOf(dummy)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if mc.Labels["added-label"] == "yes" {
			t.Error("a mutating webhook configuration was mutated by a mutating webhook")
		}
		if err := adm.MutatingWebhookConfigurations().Delete(ctx, "dummy", metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting the mutating webhook configuration: %v", err)
		}
	})

	ext := apiextensionsclient.NewForConfigOrDie(srv.Config)
	// testCRD creates a CRD of v1 (storage) and v2, both preserving
	// unknown fields unless edit changes them, and returns its clients
	// by version.
	testCRD := func(t *testing.T, plural string, edit func(*apiextensionsv1.CustomResourceDefinition)) (*apiextensionsv1.CustomResourceDefinition, map[string]dynamic.ResourceInterface) {
		t.Helper()
		const group = "webhook.example.com"
		kind := strings.ToUpper(plural[:1]) + plural[1:len(plural)-1]
		schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}}
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: plural[:len(plural)-1], Kind: kind, ListKind: kind + "List"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
					{Name: "v1", Served: true, Storage: true, Schema: schema},
					{Name: "v2", Served: true, Schema: schema},
				}},
		}
		if edit != nil {
			edit(crd)
		}
		return createCRD(ctx, t, srv, crd, ns)
	}
	customResource := func(crd *apiextensionsv1.CustomResourceDefinition, name string, data map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"kind": crd.Spec.Names.Kind, "apiVersion": crd.Spec.Group + "/v1",
			"metadata": map[string]any{"name": name, "namespace": ns}, "data": data}}
	}
	mutateCustomResource := func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
		stage1 := mutatingOf(conformanceWebhook(hook, "mutate-custom-resource-data-stage-1.k8s.io", "/mutating-custom-resource",
			conformanceRule(crd.Spec.Group, []string{"*"}, []string{crd.Spec.Names.Plural}, admissionregistrationv1.Create, admissionregistrationv1.Update)))
		stage2 := mutatingOf(conformanceWebhook(hook, "mutate-custom-resource-data-stage-2.k8s.io", "/mutating-custom-resource",
			conformanceRule(crd.Spec.Group, []string{"*"}, []string{crd.Spec.Names.Plural}, admissionregistrationv1.Create)))
		mutating(t, "mutate-"+crd.Spec.Names.Plural, stage1, stage2)
	}

	t.Run("should be able to deny custom resource creation, update and deletion", func(t *testing.T) {
		crd, clients := testCRD(t, "deniedthings", nil)
		validating(t, "deny-custom-resources", conformanceWebhook(hook, "deny-unwanted-custom-resource-data.k8s.io", "/custom-resource",
			conformanceRule(crd.Spec.Group, []string{"v1", "v2"}, []string{crd.Spec.Names.Plural}, admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete)))
		c := clients["v1"]
		_, err := c.Create(ctx, customResource(crd, "cr-instance-1", map[string]any{"webhook-e2e-test": "webhook-disallow"}), metav1.CreateOptions{})
		errContains(t, "a custom resource with unwanted data", err, "the custom resource contains unwanted data")
		if _, err := c.Create(ctx, customResource(crd, "cr-instance-2", map[string]any{"webhook-e2e-test": "webhook-nondeletable"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		update := func(value string) error {
			cr, err := c.Get(ctx, "cr-instance-2", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cr.Object["data"].(map[string]any)["webhook-e2e-test"] = value
			_, err = c.Update(ctx, cr, metav1.UpdateOptions{})
			return err
		}
		errContains(t, "an update to unwanted data", update("webhook-disallow"), "the custom resource contains unwanted data")
		errContains(t, "deleting", c.Delete(ctx, "cr-instance-2", metav1.DeleteOptions{}), "the custom resource cannot be deleted because it contains unwanted key and value")
		if err := update("webhook-allow"); err != nil {
			t.Fatalf("removing the offending value: %v", err)
		}
		if err := c.Delete(ctx, "cr-instance-2", metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting the updated custom resource: %v", err)
		}
	})

	t.Run("should mutate custom resource", func(t *testing.T) {
		crd, clients := testCRD(t, "mutatedthings", nil)
		mutateCustomResource(t, crd)
		got, err := clients["v1"].Create(ctx, customResource(crd, "cr-instance-1", map[string]any{"mutation-start": "yes"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"mutation-start": "yes", "mutation-stage-1": "yes", "mutation-stage-2": "yes"}
		if !reflect.DeepEqual(got.Object["data"], want) {
			t.Errorf("expected %#v, got %#v", want, got.Object["data"])
		}
	})

	t.Run("should mutate custom resource with pruning", func(t *testing.T) {
		crd, clients := testCRD(t, "prunedthings", func(crd *apiextensionsv1.CustomResourceDefinition) {
			for i := range crd.Spec.Versions {
				crd.Spec.Versions[i].Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"data": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"mutation-start": {Type: "string"}, "mutation-stage-1": {Type: "string"},
						// mutation-stage-2 is left out, to be pruned.
					}}},
				}}
			}
		})
		mutateCustomResource(t, crd)
		got, err := clients["v1"].Create(ctx, customResource(crd, "cr-instance-1", map[string]any{"mutation-start": "yes"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"mutation-start": "yes", "mutation-stage-1": "yes"}
		if !reflect.DeepEqual(got.Object["data"], want) {
			t.Errorf("expected %#v, got %#v", want, got.Object["data"])
		}
	})

	t.Run("should mutate custom resource with different stored version", func(t *testing.T) {
		crd, clients := testCRD(t, "restoredthings", nil)
		mutateCustomResource(t, crd)
		if _, err := clients["v1"].Create(ctx, customResource(crd, "cr-instance-1", map[string]any{"mutation-start": "yes"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		v2Storage := `{"spec":{"versions":[
			{"name":"v1","storage":false,"served":true,"schema":{"openAPIV3Schema":{"x-kubernetes-preserve-unknown-fields":true,"type":"object"}}},
			{"name":"v2","storage":true,"served":true,"schema":{"openAPIV3Schema":{"x-kubernetes-preserve-unknown-fields":true,"type":"object"}}}]}}`
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, crd.Name, types.MergePatchType, []byte(v2Storage), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		var got *unstructured.Unstructured
		waitFor(t, 30*time.Second, "v2 as the storage version", func() (bool, error) {
			var err error
			got, err = clients["v2"].Patch(ctx, "cr-instance-1", types.JSONPatchType, []byte(`[{"op":"add","path":"/dummy","value":"test"}]`), metav1.PatchOptions{})
			return err == nil, err
		})
		want := map[string]any{"mutation-start": "yes", "mutation-stage-1": "yes", "mutation-stage-2": "yes"}
		if !reflect.DeepEqual(got.Object["data"], want) || got.Object["dummy"] != "test" {
			t.Errorf("expected data %#v and dummy \"test\", got %#v", want, got.Object)
		}
	})

	t.Run("should deny crd creation", func(t *testing.T) {
		w := conformanceWebhook(hook, "deny-crd-with-unwanted-label.k8s.io", "/crd",
			conformanceRule("apiextensions.k8s.io", []string{"*"}, []string{"customresourcedefinitions"}, admissionregistrationv1.Create))
		w.NamespaceSelector = nil
		w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{conformanceLabel: "true"}}
		validating(t, "deny-crds", w)
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-test-webhook-deny-crds.webhook.example.com",
				Labels: map[string]string{conformanceLabel: "true", "webhook-e2e-test": "webhook-disallow"}},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "webhook.example.com", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "e2e-test-webhook-deny-crds", Singular: "e2e-test-webhook-deny-crd",
					Kind: "E2e-test-webhook-deny-crd", ListKind: "E2e-test-webhook-deny-crdList"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}}}}},
		}
		_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		errContains(t, "a CRD with an unwanted label", err, "the crd contains unwanted label")
	})

	t.Run("should honor timeout", func(t *testing.T) {
		slow := func(t *testing.T, policy admissionregistrationv1.FailurePolicyType, timeout *int32) {
			w := conformanceWebhook(hook, "allow-configmap-with-delay-webhook.k8s.io", "/always-allow-delay-5s",
				conformanceRule("", []string{"v1"}, []string{"configmaps"}, admissionregistrationv1.Create))
			w.FailurePolicy, w.TimeoutSeconds = &policy, timeout
			validating(t, "slow", w)
		}
		const name = "e2e-test-slow-webhook-configmap"
		noError := func(t *testing.T) {
			if _, err := cms.Create(ctx, webhookConfigMap(name, nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		t.Run("timeout (1s) shorter than webhook latency (5s)", func(t *testing.T) {
			slow(t, admissionregistrationv1.Fail, ptr(int32(1)))
			_, err := cms.Create(ctx, webhookConfigMap(name, nil), metav1.CreateOptions{})
			if err == nil || !strings.Contains(err.Error(), "/always-allow-delay-5s?timeout=1s") ||
				!strings.Contains(err.Error(), "context deadline exceeded") && !strings.Contains(err.Error(), "timeout") {
				t.Errorf("expect an HTTP/dial timeout error querying the slow webhook, got: %v", err)
			}
		})
		t.Run("timeout shorter than webhook latency with failure policy Ignore", func(t *testing.T) {
			slow(t, admissionregistrationv1.Ignore, ptr(int32(1)))
			noError(t)
		})
		t.Run("timeout longer than webhook latency", func(t *testing.T) {
			slow(t, admissionregistrationv1.Fail, ptr(int32(10)))
			noError(t)
		})
		t.Run("timeout empty (defaulted to 10s in v1)", func(t *testing.T) {
			slow(t, admissionregistrationv1.Fail, nil)
			noError(t)
		})
	})

	// denied tries creating a non-compliant configmap until the wanted
	// outcome, as upstream polls for registrations to take effect.
	denied := func(t *testing.T, want bool) {
		t.Helper()
		n := 0
		waitFor(t, 30*time.Second, fmt.Sprintf("a non-compliant configmap denied=%v", want), func() (bool, error) {
			n++
			name := fmt.Sprintf("non-compliant-%d-%d", time.Now().UnixNano(), n)
			_, err := cms.Create(ctx, webhookConfigMap(name, nonCompliantData), metav1.CreateOptions{})
			if err == nil {
				cms.Delete(ctx, name, metav1.DeleteOptions{})
				return !want, nil
			}
			if !strings.Contains(err.Error(), "denied") {
				return false, err
			}
			return want, nil
		})
	}
	// mutated creates a configmap to be mutated until the wanted outcome.
	mutated := func(t *testing.T, want bool) {
		t.Helper()
		n := 0
		waitFor(t, 30*time.Second, fmt.Sprintf("a configmap mutated=%v", want), func() (bool, error) {
			n++
			name := fmt.Sprintf("to-be-mutated-%d-%d", time.Now().UnixNano(), n)
			created, err := cms.Create(ctx, webhookConfigMap(name, toBeMutatedData), metav1.CreateOptions{})
			if err != nil {
				return false, err
			}
			cms.Delete(ctx, name, metav1.DeleteOptions{})
			_, ok := created.Data["mutation-stage-1"]
			return ok == want, nil
		})
	}
	resourceVersionGrew := func(t *testing.T, old, cur string) {
		t.Helper()
		var o, c int64
		fmt.Sscan(old, &o)
		fmt.Sscan(cur, &c)
		if c <= o {
			t.Errorf("patched object should have a larger resource version: %s then %s", old, cur)
		}
	}

	t.Run("patching/updating a validating webhook should work", func(t *testing.T) {
		validating(t, "patched-validating", denyConfigMapWebhook(hook))
		denied(t, true)
		cfg, err := adm.ValidatingWebhookConfigurations().Get(ctx, "patched-validating", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Webhooks[0].Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
		if cfg, err = adm.ValidatingWebhookConfigurations().Update(ctx, cfg, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		denied(t, false)
		patched, err := adm.ValidatingWebhookConfigurations().Patch(ctx, "patched-validating", types.JSONPatchType,
			[]byte(`[{"op": "replace", "path": "/webhooks/0/rules/0/operations", "value": ["CREATE"]}]`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		resourceVersionGrew(t, cfg.ResourceVersion, patched.ResourceVersion)
		denied(t, true)
	})

	t.Run("patching/updating a mutating webhook should work", func(t *testing.T) {
		mutating(t, "patched-mutating", mutateConfigMapWebhook(hook, 1))
		cfg, err := adm.MutatingWebhookConfigurations().Get(ctx, "patched-mutating", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Webhooks[0].Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
		if cfg, err = adm.MutatingWebhookConfigurations().Update(ctx, cfg, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		mutated(t, false)
		patched, err := adm.MutatingWebhookConfigurations().Patch(ctx, "patched-mutating", types.JSONPatchType,
			[]byte(`[{"op": "replace", "path": "/webhooks/0/rules/0/operations", "value": ["CREATE"]}]`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		resourceVersionGrew(t, cfg.ResourceVersion, patched.ResourceVersion)
		mutated(t, true)
	})

	const listSize = 10
	listOpts := metav1.ListOptions{LabelSelector: "e2e-list-test-uuid=conformance"}
	listed := map[string]string{"e2e-list-test-uuid": "conformance"}

	t.Run("listing validating webhooks should work", func(t *testing.T) {
		for i := range listSize {
			if _, err := adm.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("listed-%d", i), Labels: listed},
				Webhooks:   []admissionregistrationv1.ValidatingWebhook{denyConfigMapWebhook(hook)}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		list, err := adm.ValidatingWebhookConfigurations().List(ctx, listOpts)
		if err != nil || len(list.Items) != listSize {
			t.Fatalf("listing: %v, %d items, want %d", err, len(list.Items), listSize)
		}
		denied(t, true)
		if err := adm.ValidatingWebhookConfigurations().DeleteCollection(ctx, metav1.DeleteOptions{}, listOpts); err != nil {
			t.Fatal(err)
		}
		denied(t, false)
	})

	t.Run("listing mutating webhooks should work", func(t *testing.T) {
		for i := range listSize {
			if _, err := adm.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("listed-%d", i), Labels: listed},
				Webhooks:   []admissionregistrationv1.MutatingWebhook{mutateConfigMapWebhook(hook, 1)}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		list, err := adm.MutatingWebhookConfigurations().List(ctx, listOpts)
		if err != nil || len(list.Items) != listSize {
			t.Fatalf("listing: %v, %d items, want %d", err, len(list.Items), listSize)
		}
		mutated(t, true)
		if err := adm.MutatingWebhookConfigurations().DeleteCollection(ctx, metav1.DeleteOptions{}, listOpts); err != nil {
			t.Fatal(err)
		}
		mutated(t, false)
	})

	initial := []admissionregistrationv1.MatchCondition{{Name: "expression-1", Expression: "object.metadata.namespace == 'production'"}}
	updated := append(initial[:1:1], admissionregistrationv1.MatchCondition{Name: "expression-2", Expression: "object.metadata.namespace == 'staging'"})
	withConditions := func(conds []admissionregistrationv1.MatchCondition) admissionregistrationv1.ValidatingWebhook {
		w := conformanceWebhook(hook, "validating-with-match-conditions.k8s.io", "/always-deny",
			conformanceRule("", []string{"v1"}, []string{"configmaps"}, admissionregistrationv1.Create))
		w.MatchConditions = conds
		return w
	}

	t.Run("should be able to create and update validating webhook configurations with match conditions", func(t *testing.T) {
		validating(t, "match-conditions", withConditions(initial))
		got, err := adm.ValidatingWebhookConfigurations().Get(ctx, "match-conditions", metav1.GetOptions{})
		if err != nil || !reflect.DeepEqual(got.Webhooks[0].MatchConditions, initial) {
			t.Fatalf("created: %v %+v", err, got)
		}
		got.Webhooks[0].MatchConditions = updated
		if _, err := adm.ValidatingWebhookConfigurations().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err = adm.ValidatingWebhookConfigurations().Get(ctx, "match-conditions", metav1.GetOptions{})
		if err != nil || !reflect.DeepEqual(got.Webhooks[0].MatchConditions, updated) {
			t.Errorf("updated: %v %+v", err, got)
		}
	})

	t.Run("should be able to create and update mutating webhook configurations with match conditions", func(t *testing.T) {
		mutating(t, "match-conditions", mutatingOf(withConditions(initial)))
		got, err := adm.MutatingWebhookConfigurations().Get(ctx, "match-conditions", metav1.GetOptions{})
		if err != nil || !reflect.DeepEqual(got.Webhooks[0].MatchConditions, initial) {
			t.Fatalf("created: %v %+v", err, got)
		}
		got.Webhooks[0].MatchConditions = updated
		if _, err := adm.MutatingWebhookConfigurations().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err = adm.MutatingWebhookConfigurations().Get(ctx, "match-conditions", metav1.GetOptions{})
		if err != nil || !reflect.DeepEqual(got.Webhooks[0].MatchConditions, updated) {
			t.Errorf("updated: %v %+v", err, got)
		}
	})

	invalid := []admissionregistrationv1.MatchCondition{{Name: "invalid-expression-1", Expression: "... [] bad expression"}}
	t.Run("should reject validating webhook configurations with invalid match conditions", func(t *testing.T) {
		_, err := adm.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "invalid"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{withConditions(invalid)}}, metav1.CreateOptions{})
		errContains(t, "an invalid match condition", err, "compilation failed")
	})
	t.Run("should reject mutating webhook configurations with invalid match conditions", func(t *testing.T) {
		_, err := adm.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "invalid"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{mutatingOf(withConditions(invalid))}}, metav1.CreateOptions{})
		errContains(t, "an invalid match condition", err, "compilation failed")
	})

	t.Run("should mutate everything except 'skip-me' configmaps", func(t *testing.T) {
		w := mutateConfigMapWebhook(hook, 1)
		w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "skip-me", Expression: "object.metadata.name != 'skip-me'"}}
		mutating(t, "skip-me", w)
		got, err := cms.Create(ctx, webhookConfigMap("random-name-to-mutate", toBeMutatedData), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"mutation-start": "yes", "mutation-stage-1": "yes"}; !reflect.DeepEqual(got.Data, want) {
			t.Errorf("a configmap with a random name: %#v, want %#v", got.Data, want)
		}
		got, err = cms.Create(ctx, webhookConfigMap("skip-me", toBeMutatedData), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := toBeMutatedData; !reflect.DeepEqual(got.Data, want) {
			t.Errorf("skip-me: %#v, want %#v", got.Data, want)
		}
	})
}
