package e2e

import (
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// The authorizer variable: a ValidatingAdmissionPolicy lets only users
// whom RBAC lets update CronTabs create them, and a webhook whose match
// condition asks RBAC is called only for users who may not delete them.

const authorizerManifests = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: crontab-creator, namespace: team}
rules:
- {apiGroups: [stable.example.com], resources: [crontabs], verbs: [create, get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: crontab-creators, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: crontab-creator}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: dave}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: crontab-updater, namespace: team}
rules:
- {apiGroups: [stable.example.com], resources: [crontabs], verbs: [update]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: crontab-updaters, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: crontab-updater}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: dave}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: updaters-create.example.com}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [stable.example.com], apiVersions: [v1], operations: [CREATE], resources: [crontabs]}
  validations:
  - expression: "authorizer.group('stable.example.com').resource('crontabs').namespace(object.metadata.namespace).check('update').allowed()"
    message: only users who may update crontabs may create them
    reason: Forbidden
  - expression: "authorizer.requestResource.check('create').allowed() && authorizer.requestResource.check('create').reason() != 'x'"
  - expression: "!authorizer.group('').resource('secrets').check('list').errored()"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: updaters-create}
spec:
  policyName: updaters-create.example.com
  validationActions: [Deny]
`

func TestAdmissionAuthorizer(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	applyCRD(t, srv, "crontab-crd.yaml", "crontabs.stable.example.com", "created")
	kubectl(t, srv, "create", "namespace", "team")
	kubectl(t, srv, "create", "-f", writeManifest(t, "authorizer.yaml", authorizerManifests))
	syncPolicies(t, srv)

	hook := startAdmissionWebhook(t)
	hook.handle("/guard", func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return deny("only those who may delete crontabs may create guarded ones")(nil, nil)
	})
	registerWebhooks(t, srv, webhookConfig("ValidatingWebhookConfiguration", "guard.example.com", hook.URL+"/guard", hook.CABundle, `  rules: [{apiGroups: [stable.example.com], apiVersions: [v1], operations: [CREATE], resources: [crontabs]}]
  objectSelector: {matchLabels: {guarded: "yes"}}
  matchConditions:
  - name: may-not-delete
    expression: "!authorizer.requestResource.check('delete').allowed()"
`))

	// carol may create but not update: the policy refuses her.
	plain := writeManifest(t, "plain.yaml", cronTab("plain", "cron", 1))
	got := kubectlFails(t, srv, "create", "-n", "team", "-f", plain, "--as", "carol")
	want := `crontabs.stable.example.com "plain" is forbidden: ValidatingAdmissionPolicy 'updaters-create.example.com' with binding 'updaters-create' denied request: only users who may update crontabs may create them`
	if !strings.Contains(got, want) {
		t.Errorf("carol:\n got %s\nwant %s", got, want)
	}
	// dave may update too.
	if got := kubectlLine(t, srv, "create", "-n", "team", "-f", plain, "--as", "dave"); got != "crontab.stable.example.com/plain created" {
		t.Errorf("dave: %q", got)
	}

	// The webhook's match condition: called for dave, who may not delete,
	// and not for the admin, who may.
	guarded := writeManifest(t, "guarded.yaml", strings.Replace(cronTab("guarded", "cron", 1), "metadata:\n", "metadata:\n  labels: {guarded: \"yes\"}\n", 1))
	got = kubectlFails(t, srv, "create", "-n", "team", "-f", guarded, "--as", "dave")
	if want := `admission webhook "guard.example.com" denied the request: only those who may delete crontabs may create guarded ones`; !strings.Contains(got, want) {
		t.Errorf("dave, guarded:\n got %s\nwant %s", got, want)
	}
	if got := kubectlLine(t, srv, "create", "-n", "team", "-f", guarded); got != "crontab.stable.example.com/guarded created" {
		t.Errorf("admin, guarded: %q", got)
	}
	if n := len(hook.received("/guard")); n != 1 {
		t.Errorf("the webhook was called %d times, want once (for dave)", n)
	}
}
