package builtin

import (
	"testing"

	"github.com/crdserver/crdserver/internal/registry"
)

func TestRoleValidation(t *testing.T) {
	checkValidation(t, Roles(nil), []validateCase{
		{name: line(), obj: "rules: [{verbs: [get], apiGroups: [''], resources: [pods]}]"},
		// kube-apiserver 1.37.2 answers with its declarative validation's words.
		{name: line(), obj: "rules: [{apiGroups: [''], resources: [pods]}]", want: []string{
			`rules[0].verbs: Required value`}},
		{name: line(), obj: "rules: [{verbs: [get]}]", want: []string{
			`rules[0].apiGroups: Required value: resource rules must supply at least one api group`,
			`rules[0].resources: Required value: resource rules must supply at least one resource`}},
		{name: line(), obj: "rules: [{verbs: [get], nonResourceURLs: [/x], resources: [pods]}]", want: []string{
			`rules[0].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs`,
			`rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs`}},
	})
}

func TestClusterRoleValidation(t *testing.T) {
	checkValidation(t, ClusterRoles(nil), []validateCase{
		{name: line(), obj: "rules: [{verbs: [get], nonResourceURLs: ['/healthz/*']}]"},
		{name: line(), obj: "aggregationRule: {clusterRoleSelectors: [{matchLabels: {a: b}}]}"},
		{name: line(), obj: "aggregationRule: {clusterRoleSelectors: []}", want: []string{
			`aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil`}},
		{name: line(), obj: "aggregationRule: {clusterRoleSelectors: [{matchExpressions: [{key: a, operator: In}]}]}", want: []string{
			`aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values: Required value: must be specified when ` + "`operator`" + ` is 'In' or 'NotIn'`,
			`aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector.`}},
	})
}

func TestRoleBindingValidation(t *testing.T) {
	checkValidation(t, RoleBindings(nil), []validateCase{
		// apiGroups are defaulted.
		{name: line(), obj: "roleRef: {kind: Role, name: r}\nsubjects: [{kind: User, name: u}, {kind: Group, name: g}, {kind: ServiceAccount, name: s}]"},
		{name: line(), obj: "roleRef: {kind: Other, name: ''}", want: []string{
			`roleRef.kind: Unsupported value: "Other": supported values: "Role", "ClusterRole"`,
			`roleRef.name: Required value`}},
		{name: line(), obj: "roleRef: {kind: Role, name: a/b, apiGroup: x}", want: []string{
			`roleRef.apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io"`,
			`roleRef.name: Invalid value: "a/b": may not contain '/'`}},
		{name: line(), obj: "roleRef: {kind: Role, name: r}\nsubjects: [{kind: Robot, name: u}, {kind: ServiceAccount, name: 'A', apiGroup: x}]", want: []string{
			`subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`,
			`subjects[1].name: Invalid value: "A": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`subjects[1].apiGroup: Unsupported value: "x": supported values: ""`}},
		{name: line(), old: "roleRef: {kind: Role, name: r}", obj: "roleRef: {kind: Role, name: other}", want: []string{
			`roleRef: Invalid value: {"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"other"}: field is immutable`}},
	})
}

func TestClusterRoleBindingValidation(t *testing.T) {
	checkValidation(t, ClusterRoleBindings(nil), []validateCase{
		{name: line(), obj: "roleRef: {kind: ClusterRole, name: r}\nsubjects: [{kind: ServiceAccount, name: s, namespace: ns1}]"},
		{name: line(), obj: "roleRef: {kind: Role, name: r}\nsubjects: [{kind: ServiceAccount, name: s}]", want: []string{
			`roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`,
			`subjects[0].namespace: Required value`}},
	})
}

func TestRBACTables(t *testing.T) {
	obj := decodeYAML(t, `{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: b, namespace: ns, creationTimestamp: "2020-01-01T00:00:00Z"},
roleRef: {kind: ClusterRole, name: view, apiGroup: rbac.authorization.k8s.io},
subjects: [{kind: User, name: u1}, {kind: User, name: u2}, {kind: Group, name: g}, {kind: ServiceAccount, name: s, namespace: ns}]}`)
	tp := RoleBindings(nil).Hooks.(registry.TablePrinter)
	row := tp.TableRow(obj)
	if row[1] != "ClusterRole/view" || row[3] != "u1, u2" || row[4] != "g" || row[5] != "ns/s" || len(tp.TableColumns()) != len(row) {
		t.Errorf("row %v", row)
	}
	role := decodeYAML(t, `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: r, creationTimestamp: "2020-01-01T00:00:00Z"}}`)
	if row := ClusterRoles(nil).Hooks.(registry.TablePrinter).TableRow(role); row[0] != "r" || row[1] != "2020-01-01T00:00:00Z" {
		t.Errorf("clusterrole row %v", row)
	}
}
