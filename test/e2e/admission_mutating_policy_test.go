package e2e

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// MutatingAdmissionPolicies on the seed's CronTabs through client-go: one
// sets a label with an ApplyConfiguration, one adds an annotation from a
// param (a Limit) with a JSONPatch, one fails under failurePolicy Fail
// only when its matchCondition holds; and one labels Namespaces.

const cronTabMutatingPolicies = `
- metadata: {name: team-label}
  spec:
    reinvocationPolicy: Never
    matchConstraints:
      resourceRules:
      - {apiGroups: [stable.example.com], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [crontabs]}
    matchConditions:
    - {name: not-exempt, expression: "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}
    mutations:
    - patchType: ApplyConfiguration
      applyConfiguration:
        expression: "Object{metadata: Object.metadata{labels: {'team': 'blue'}}}"
- metadata: {name: limit-annotation}
  spec:
    reinvocationPolicy: Never
    paramKind: {apiVersion: stable.example.com/v1, kind: Limit}
    matchConstraints:
      resourceRules:
      - {apiGroups: [stable.example.com], apiVersions: [v1], operations: [CREATE], resources: [crontabs]}
    mutations:
    - patchType: JSONPatch
      jsonPatch:
        expression: >-
          (has(object.metadata.annotations) ? [] : [JSONPatch{op: 'add', path: '/metadata/annotations', value: {}}]) +
          [JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('example.com/max-replicas'), value: string(params.spec.maxReplicas)}]
- metadata: {name: broken}
  spec:
    reinvocationPolicy: Never
    failurePolicy: Fail
    matchConstraints:
      resourceRules:
      - {apiGroups: [stable.example.com], apiVersions: [v1], operations: [CREATE], resources: [crontabs]}
    matchConditions:
    - {name: broken-only, expression: "object.metadata.name == 'broken'"}
    mutations:
    - patchType: JSONPatch
      jsonPatch:
        expression: "[JSONPatch{op: 'remove', path: '/spec/nothing'}]"
- metadata: {name: namespace-label}
  spec:
    reinvocationPolicy: Never
    matchConstraints:
      resourceRules:
      - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [namespaces]}
    mutations:
    - patchType: ApplyConfiguration
      applyConfiguration:
        expression: "Object{metadata: Object.metadata{labels: {'policy': 'mutated'}}}"
`

func TestMutatingAdmissionPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := startServer(t, t.TempDir())
	applyCRD(t, srv, "crontab-crd.yaml", "crontabs.stable.example.com", "created")
	kubectl(t, srv, "apply", "-f", writeManifest(t, "limits-crd.yaml", limitCRD))
	waitEstablished(t, srv, "limits.stable.example.com")
	kubectl(t, srv, "create", "-n", "default", "-f", writeManifest(t, "limit.yaml", "apiVersion: stable.example.com/v1\nkind: Limit\nmetadata: {name: crontabs}\nspec: {maxReplicas: 4}\n"))

	var policies []admissionregistrationv1.MutatingAdmissionPolicy
	if err := yaml.Unmarshal([]byte(cronTabMutatingPolicies), &policies); err != nil {
		t.Fatal(err)
	}
	arc := srv.Client.AdmissionregistrationV1()
	for _, p := range policies {
		if _, err := arc.MutatingAdmissionPolicies().Create(ctx, &p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("policy %s: %v", p.Name, err)
		}
		b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: p.Name}, Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: p.Name}}
		if p.Spec.ParamKind != nil {
			deny := admissionregistrationv1.DenyAction
			b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "crontabs", Namespace: "default", ParameterNotFoundAction: &deny}
		}
		if _, err := arc.MutatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatalf("binding %s: %v", b.Name, err)
		}
	}
	for _, res := range []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"} {
		syncList(t, srv, "/apis/admissionregistration.k8s.io/v1/"+res)
	}

	crontabs := srv.Dynamic.Resource(schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}).Namespace("default")
	create := func(name string, labels map[string]any) (*unstructured.Unstructured, error) {
		meta := map[string]any{"name": name}
		if labels != nil {
			meta["labels"] = labels
		}
		return crontabs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": meta,
			"spec": map[string]any{"cronSpec": "* * * * */5", "image": "cron", "replicas": int64(1)},
		}}, metav1.CreateOptions{})
	}

	got, err := create("c1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := got.GetLabels()["team"]; l != "blue" {
		t.Errorf("label team = %q, want blue (ApplyConfiguration)", l)
	}
	if a := got.GetAnnotations()["example.com/max-replicas"]; a != "4" {
		t.Errorf("annotation = %q, want 4 (JSONPatch from the param)", a)
	}

	// matchConditions: an exempt CronTab keeps its labels.
	got, err = create("c2", map[string]any{"exempt": "yes"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.GetLabels()["team"]; ok {
		t.Errorf("an exempt CronTab was labelled: %v", got.GetLabels())
	}

	// failurePolicy Fail: the broken mutation refuses the request.
	_, err = create("broken", nil)
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !asStatus(err, &status) || status.Status().Code != 403 ||
		!strings.Contains(err.Error(), "policy 'broken' with binding 'broken' denied request: JSON Patch: ") {
		t.Errorf("a failing mutation: %v", err)
	}
	if _, err := crontabs.Get(ctx, "broken", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused CronTab was stored: %v", err)
	}

	// failurePolicy Ignore: the same mutation is skipped.
	p, err := arc.MutatingAdmissionPolicies().Get(ctx, "broken", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ignore := admissionregistrationv1.Ignore
	p.Spec.FailurePolicy = &ignore
	if _, err := arc.MutatingAdmissionPolicies().Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	syncList(t, srv, "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies")
	if _, err := create("broken", nil); err != nil {
		t.Errorf("a failing mutation under Ignore: %v", err)
	}

	// Upstream's Deployment specs on a CronTab: an ApplyConfiguration that
	// sets spec.replicas and one that adds an annotation, bound to one
	// labelled namespace, polled with a marker until admission sees them.
	kubectl(t, srv, "create", "namespace", "marked")
	kubectl(t, srv, "label", "namespace", "marked", "e2e-map=marked")
	for name, expr := range map[string]string{
		"replicas":   "Object{spec: Object.spec{replicas: 1337}}",
		"mutated-by": `Object{metadata: Object.metadata{annotations: {"mutated-by": "admission-policy"}}}`,
	} {
		p := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"stable.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"crontabs"}},
			}}}},
			Mutations:          []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expr}}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		}}
		if _, err := arc.MutatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName:     name,
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-map": "marked"}}},
		}}
		if _, err := arc.MutatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	marked := srv.Dynamic.Resource(schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}).Namespace("marked")
	waitFor(t, startTimeout, "the marker mutated", func() (bool, error) {
		created, err := marked.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": map[string]any{"name": "marker"},
			"spec": map[string]any{"cronSpec": "* * * * */5", "image": "cron", "replicas": int64(1)},
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		defer marked.Delete(ctx, "marker", metav1.DeleteOptions{})
		replicas, _, _ := unstructured.NestedInt64(created.Object, "spec", "replicas")
		return replicas == 1337 && created.GetAnnotations()["mutated-by"] == "admission-policy", nil
	})

	// A built-in: Namespaces.
	ns, err := srv.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "labelled"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels["policy"] != "mutated" || ns.Labels["kubernetes.io/metadata.name"] != "labelled" {
		t.Errorf("namespace labels %v", ns.Labels)
	}

	// Served like the other built-ins, server-side apply included.
	kubectl(t, srv, "apply", "--server-side", "-f", writeManifest(t, "binding.yaml", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: applied}
spec: {policyName: team-label}
`))

	// A policy whose mutation names no patch field is refused.
	bad := policies[0].DeepCopy()
	bad.Name, bad.ResourceVersion = "bad", ""
	bad.Spec.Mutations[0].ApplyConfiguration = nil
	_, err = arc.MutatingAdmissionPolicies().Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.mutations[0].applyConfiguration: Required value: must be specified when patchType is ApplyConfiguration") {
		t.Errorf("an invalid policy: %v", err)
	}
}

func asStatus(err error, s *apierrors.APIStatus) bool {
	st, ok := err.(apierrors.APIStatus)
	*s = st
	return ok
}

// syncList waits until admission's caches have what a list at path holds.
func syncList(t *testing.T, srv *server, path string) {
	t.Helper()
	var l struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := decodeJSON([]byte(kubectl(t, srv, "get", "--raw", path)), &l); err != nil {
		t.Fatal(err)
	}
	kubectl(t, srv, "get", "--raw", path+"?resourceVersion="+l.Metadata.ResourceVersion+"&resourceVersionMatch=NotOlderThan")
}
