package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A ValidatingAdmissionPolicy on the seed's CronTabs: at most five
// replicas and an image from the registry, bound with Deny in one
// namespace and with Warn in another.

const cronTabPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: crontab-limits.example.com
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [stable.example.com]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [crontabs]
  variables:
  - name: image
    expression: "has(object.spec.image) ? object.spec.image : ''"
  validations:
  - expression: "!has(object.spec.replicas) || object.spec.replicas <= 5"
    messageExpression: "'replicas must be no greater than 5, got ' + string(object.spec.replicas)"
  - expression: "variables.image.startsWith('registry.example.com/')"
    message: "images come from registry.example.com"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: crontab-limits-deny
spec:
  policyName: crontab-limits.example.com
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {limits: deny}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: crontab-limits-warn
spec:
  policyName: crontab-limits.example.com
  validationActions: [Warn]
  matchResources:
    namespaceSelector:
      matchLabels: {limits: warn}
`

func cronTab(name, image string, replicas int) string {
	return `apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: ` + name + `
spec:
  cronSpec: "* * * * */5"
  image: ` + image + `
  replicas: ` + strconv.Itoa(replicas) + `
`
}

func TestValidatingAdmissionPolicy(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	applyCRD(t, srv, "crontab-crd.yaml", "crontabs.stable.example.com", "created")
	for _, ns := range []string{"deny", "warn", "free"} {
		kubectl(t, srv, "create", "namespace", ns)
		if ns != "free" {
			kubectl(t, srv, "label", "namespace", ns, "limits="+ns)
		}
	}
	kubectl(t, srv, "create", "-f", writeManifest(t, "policy.yaml", cronTabPolicy))
	syncPolicies(t, srv)

	good := writeManifest(t, "good.yaml", cronTab("good", "registry.example.com/cron", 3))
	many := writeManifest(t, "many.yaml", cronTab("many", "registry.example.com/cron", 7))
	elsewhere := writeManifest(t, "elsewhere.yaml", cronTab("elsewhere", "docker.io/cron", 1))

	// Deny.
	if got := kubectlLine(t, srv, "create", "-n", "deny", "-f", good); got != "crontab.stable.example.com/good created" {
		t.Errorf("a CronTab within the limits: %q", got)
	}
	got := kubectlFails(t, srv, "create", "-n", "deny", "-f", many)
	want := `The crontabs "many" is invalid: : ValidatingAdmissionPolicy 'crontab-limits.example.com' with binding 'crontab-limits-deny' denied request: replicas must be no greater than 5, got 7`
	if !strings.Contains(got, want) {
		t.Errorf("too many replicas:\n got %s\nwant %s", got, want)
	}
	got = kubectlFails(t, srv, "create", "-n", "deny", "-f", elsewhere)
	want = `crontabs.stable.example.com "elsewhere" is forbidden: ValidatingAdmissionPolicy 'crontab-limits.example.com' with binding 'crontab-limits-deny' denied request: images come from registry.example.com`
	if !strings.Contains(got, want) {
		t.Errorf("an image from elsewhere:\n got %s\nwant %s", got, want)
	}

	// Warn: created, with the failures as warnings.
	stdout, stderr, err := kubectlResult(srv, "create", "-n", "warn", "-f", many)
	if err != nil || !strings.Contains(stdout, "crontab.stable.example.com/many created") ||
		!strings.Contains(stderr, `Warning: Validation failed for ValidatingAdmissionPolicy 'crontab-limits.example.com' with binding 'crontab-limits-warn': replicas must be no greater than 5, got 7`) {
		t.Errorf("Warn: %v\n%s\n%s", err, stdout, stderr)
	}

	// Unbound namespaces are not checked.
	if got := kubectlLine(t, srv, "create", "-n", "free", "-f", many); got != "crontab.stable.example.com/many created" {
		t.Errorf("an unbound namespace: %q", got)
	}

	// Params: the limit comes from a custom resource, per namespace.
	kubectl(t, srv, "apply", "-f", writeManifest(t, "limits-crd.yaml", limitCRD))
	waitEstablished(t, srv, "limits.stable.example.com")
	kubectl(t, srv, "create", "namespace", "params")
	kubectl(t, srv, "create", "-f", writeManifest(t, "params-policy.yaml", paramsPolicy))
	syncPolicies(t, srv)
	two := writeManifest(t, "two.yaml", cronTab("two", "any", 2))
	got = kubectlFails(t, srv, "create", "-n", "params", "-f", two)
	if want := "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"; !strings.Contains(got, want) {
		t.Errorf("without its param:\n got %s\nwant %s", got, want)
	}
	kubectl(t, srv, "create", "-n", "params", "-f", writeManifest(t, "limit.yaml", `apiVersion: stable.example.com/v1
kind: Limit
metadata: {name: crontabs}
spec: {maxReplicas: 1}
`))
	got = kubectlFails(t, srv, "create", "-n", "params", "-f", two)
	if want := "ValidatingAdmissionPolicy 'crontab-params.example.com' with binding 'crontab-params' denied request: at most 1 replicas in params"; !strings.Contains(got, want) {
		t.Errorf("over its param's limit:\n got %s\nwant %s", got, want)
	}
	kubectl(t, srv, "patch", "-n", "params", "limit", "crontabs", "--type", "merge", "-p", `{"spec":{"maxReplicas":2}}`)
	waitFor(t, startTimeout, "the raised limit", func() (bool, error) {
		_, _, err := kubectlResult(srv, "create", "-n", "params", "-f", two)
		return err == nil, nil
	})

	// A policy that does not compile is refused.
	_, stderr, err = kubectlResult(srv, "create", "-f", writeManifest(t, "bad.yaml", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: bad.example.com
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: ["*"], apiVersions: ["*"], operations: ["*"], resources: ["*"]}
  validations:
  - expression: "object.spec.replicas <"
`))
	if err == nil || !strings.Contains(stderr, "spec.validations[0].expression: Invalid value") {
		t.Errorf("a policy that does not compile: %v: %s", err, stderr)
	}
}

// syncPolicies waits until admission sees the stored policies and bindings.
func syncPolicies(t *testing.T, srv *server) {
	t.Helper()
	for _, res := range []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"} {
		out := kubectl(t, srv, "get", "--raw", "/apis/admissionregistration.k8s.io/v1/"+res)
		var l struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if err := decodeJSON([]byte(out), &l); err != nil {
			t.Fatal(err)
		}
		kubectl(t, srv, "get", "--raw", "/apis/admissionregistration.k8s.io/v1/"+res+"?resourceVersion="+l.Metadata.ResourceVersion+"&resourceVersionMatch=NotOlderThan")
	}
}

const limitCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: limits.stable.example.com
spec:
  group: stable.example.com
  names: {kind: Limit, listKind: LimitList, plural: limits, singular: limit}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              maxReplicas: {type: integer}
`

const paramsPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: crontab-params.example.com
spec:
  paramKind: {apiVersion: stable.example.com/v1, kind: Limit}
  matchConstraints:
    resourceRules:
    - {apiGroups: [stable.example.com], apiVersions: [v1], operations: [CREATE], resources: [crontabs]}
  validations:
  - expression: "object.spec.replicas <= params.spec.maxReplicas"
    messageExpression: "'at most ' + string(params.spec.maxReplicas) + ' replicas in ' + params.metadata.namespace"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: crontab-params
spec:
  policyName: crontab-params.example.com
  validationActions: [Deny]
  paramRef: {name: crontabs, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector:
      matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [params]}]
`

// TestValidatingAdmissionPolicyTypeChecking: the status of a policy warns
// about expressions that cannot work against the schemas of what it
// matches, as upstream's policy status controller does, and a policy
// whose expressions are sound gets an empty report.
func TestValidatingAdmissionPolicyTypeChecking(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	applyCRD(t, srv, "crontab-crd.yaml", "crontabs.stable.example.com", "created")
	policy := func(name string, exprs ...string) string {
		var b strings.Builder
		fmt.Fprintf(&b, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: %s}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [stable.example.com], apiVersions: [v1], operations: [CREATE], resources: [crontabs]}
  validations:
`, name)
		for _, e := range exprs {
			fmt.Fprintf(&b, "  - expression: %q\n", e)
		}
		return writeManifest(t, name+".yaml", b.String())
	}
	kubectl(t, srv, "create", "-f", policy("sound", "object.spec.replicas > 1"))
	kubectl(t, srv, "create", "-f", policy("confused", "object.spec.replicas > '1'", "object.spec.maxRetries < 10"))
	status := func(name string) string {
		return kubectl(t, srv, "get", "validatingadmissionpolicies", name, "-o", "jsonpath={.status}")
	}
	waitFor(t, 10*time.Second, "type checking of both policies", func() (bool, error) {
		return strings.Contains(status("sound"), "typeChecking") && strings.Contains(status("confused"), "typeChecking"), nil
	})
	if got := status("sound"); got != `{"observedGeneration":1,"typeChecking":{}}` {
		t.Errorf("a sound policy's status: %s", got)
	}
	// The status is applied as upstream's controller applies it.
	for name, want := range map[string]string{
		"sound":    `validatingadmissionpolicy-status Apply status {"f:status":{"f:observedGeneration":{},"f:typeChecking":{}}}`,
		"confused": `validatingadmissionpolicy-status Apply status {"f:status":{"f:observedGeneration":{},"f:typeChecking":{"f:expressionWarnings":{}}}}`,
	} {
		got := kubectl(t, srv, "get", "validatingadmissionpolicies", name, "--show-managed-fields", "-o",
			`jsonpath={range .metadata.managedFields[?(@.subresource=="status")]}{.manager} {.operation} {.subresource} {.fieldsV1}{end}`)
		if got != want {
			t.Errorf("policy %s: status managed as\n%s\nwant\n%s", name, got, want)
		}
	}
	got := status("confused")
	for _, want := range []string{
		`"fieldRef":"spec.validations[0].expression"`,
		`stable.example.com/v1, Kind=CronTab: compilation failed: ERROR: \u003cinput\u003e:1:22: found no matching overload for '_\u003e_' applied to '(int, string)'`,
		`"fieldRef":"spec.validations[1].expression"`,
		`undefined field 'maxRetries'`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("a confused policy's status lacks %s:\n%s", want, got)
		}
	}
}

// managersPolicy refuses updates of CronTabs that an "intruder" field
// manager makes, or that change what a "keeper" manages: both read
// managedFields, which the server keeps encoded through admission.
const managersPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: crontab-managers.example.com
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [stable.example.com]
      apiVersions: [v1]
      operations: [UPDATE]
      resources: [crontabs]
  validations:
  - expression: "!object.metadata.managedFields.exists(e, e.manager == 'intruder')"
    message: "no intruders"
  - expression: "!oldObject.metadata.managedFields.exists(e, e.manager == 'keeper' && 'f:image' in e.fieldsV1['f:spec']) || object.spec.image == oldObject.spec.image"
    message: "the keeper's image stays"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: crontab-managers
spec:
  policyName: crontab-managers.example.com
  validationActions: [Deny]
`

// TestValidatingAdmissionPolicyReadsManagedFields: a policy sees the
// objects' managedFields as stored and as recorded for the update.
func TestValidatingAdmissionPolicyReadsManagedFields(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	applyCRD(t, srv, "crontab-crd.yaml", "crontabs.stable.example.com", "created")
	kubectl(t, srv, "create", "-f", writeManifest(t, "policy.yaml", managersPolicy))
	syncPolicies(t, srv)
	kubectl(t, srv, "create", "--field-manager=keeper", "-f", writeManifest(t, "ct.yaml", cronTab("ct", "registry.example.com/cron", 1)))

	if got := kubectlLine(t, srv, "patch", "crontab", "ct", "--field-manager=friend", "--type=merge", "-p", `{"spec":{"replicas":2}}`); got != "crontab.stable.example.com/ct patched" {
		t.Errorf("a friend's patch: %q", got)
	}
	got := kubectlFails(t, srv, "patch", "crontab", "ct", "--field-manager=intruder", "--type=merge", "-p", `{"spec":{"replicas":3}}`)
	if want := "denied request: no intruders"; !strings.Contains(got, want) {
		t.Errorf("an intruder's patch:\n got %s\nwant %s", got, want)
	}
	got = kubectlFails(t, srv, "patch", "crontab", "ct", "--field-manager=friend", "--type=merge", "-p", `{"spec":{"image":"registry.example.com/other"}}`)
	if want := "denied request: the keeper's image stays"; !strings.Contains(got, want) {
		t.Errorf("changing the keeper's image:\n got %s\nwant %s", got, want)
	}
	// Entries of the same second are in managers' order.
	if got := kubectlLine(t, srv, "get", "crontab", "ct", "-o", "jsonpath={.spec.replicas} {.spec.image} {.metadata.managedFields[*].manager}"); got != "2 registry.example.com/cron friend keeper" && got != "2 registry.example.com/cron keeper friend" {
		t.Errorf("after the refusals: %q, want the friend's change alone", got)
	}
}
