// Package bootstrap holds upstream's default RBAC policy, the roles and
// bindings every kube-apiserver creates at start (those of components and
// controllers that do not run here included), and reconciles stored
// objects with it: what is missing is added, what users added is kept,
// and objects annotated rbac.authorization.kubernetes.io/autoupdate:
// "false" are left alone.
package bootstrap

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The groups the default rules name.
const (
	core               = ""
	admissionGroup     = "admissionregistration.k8s.io"
	apiextensionsGroup = "apiextensions.k8s.io"
	apps               = "apps"
	authnGroup         = "authentication.k8s.io"
	authzGroup         = "authorization.k8s.io"
	autoscaling        = "autoscaling"
	batch              = "batch"
	certificatesGroup  = "certificates.k8s.io"
	coordination       = "coordination.k8s.io"
	customMetrics      = "custom.metrics.k8s.io"
	discoveryK8s       = "discovery.k8s.io"
	events             = "events.k8s.io"
	extensions         = "extensions"
	externalMetrics    = "external.metrics.k8s.io"
	metricsGroup       = "metrics.k8s.io"
	networking         = "networking.k8s.io"
	nodeGroup          = "node.k8s.io"
	policy             = "policy"
	rbacGroup          = rbacv1.GroupName
	resourceGroup      = "resource.k8s.io"
	storageGroup       = "storage.k8s.io"
	storageMigration   = "storagemigration.k8s.io"
)

// Verb sets of the default roles.
var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
)

// The labels and annotation every default object carries.
const (
	bootstrappingLabel = "kubernetes.io/bootstrapping"
	// AutoUpdate is the annotation that, set to "false", keeps reconciling
	// from touching an object.
	AutoUpdate = rbacv1.AutoUpdateAnnotationKey

	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// rule is a resource rule; upstream's rule builder keeps every list sorted
// and each value once, and so does this.
func rule(verbs, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: set(verbs), APIGroups: set(groups), Resources: set(resources)}
}

// named is r restricted to the objects names.
func named(r rbacv1.PolicyRule, names ...string) rbacv1.PolicyRule {
	r.ResourceNames = set(names)
	return r
}

// recordEvents is the rule of every component that records events.
func recordEvents() rbacv1.PolicyRule {
	return rule(v("create", "update", "patch"), g(core, events), "events")
}

// urls is a non-resource rule.
func urls(verbs []string, paths ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: set(verbs), NonResourceURLs: set(paths)}
}

func set(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func g(groups ...string) []string { return groups }
func v(verbs ...string) []string  { return verbs }

// ClusterRoles returns the default ClusterRoles, as upstream defines them
// with its feature gates at their defaults (dynamic resource allocation
// on; workloads, pod groups and eviction requests off; /flagz and
// /statusz on): the users' roles, then those of the components
// (componentRoles) and of the controllers (controllerRoles).
func ClusterRoles() []rbacv1.ClusterRole {
	roles := append(append(userRoles(), componentRoles()...), controllerRoles()...)
	for i := range roles {
		defaultMetadata(&roles[i].ObjectMeta)
	}
	return roles
}

// userRoles are the roles for people and the discovery every client
// does: the aggregated admin, edit and view, cluster-admin, and the
// roles bound to every (authenticated) user.
func userRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"},
			Rules: []rbacv1.PolicyRule{
				rule(v("*"), g("*"), "*"),
				urls(v("*"), "*"),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:discovery"},
			Rules: []rbacv1.PolicyRule{urls(v("get"),
				"/livez", "/readyz", "/healthz", "/version", "/version/",
				"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*")},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:monitoring"},
			Rules: []rbacv1.PolicyRule{
				urls(v("get"), "/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz",
					"/livez/*", "/readyz/*", "/healthz/*", "/flagz", "/statusz"),
				rule(v("get"), g(core), "nodes/metrics"),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:basic-user"},
			Rules: []rbacv1.PolicyRule{
				rule(v("create"), g(authzGroup), "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
				rule(v("create"), g(authnGroup), "selfsubjectreviews"),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:public-info-viewer"},
			Rules:      []rbacv1.PolicyRule{urls(v("get"), "/livez", "/readyz", "/healthz", "/version", "/version/")},
		},
		{
			ObjectMeta:      metav1.ObjectMeta{Name: "admin"},
			AggregationRule: aggregating(aggregateToAdmin),
		},
		{
			ObjectMeta:      metav1.ObjectMeta{Name: "edit", Labels: map[string]string{aggregateToAdmin: "true"}},
			AggregationRule: aggregating(aggregateToEdit),
		},
		{
			ObjectMeta:      metav1.ObjectMeta{Name: "view", Labels: map[string]string{aggregateToEdit: "true"}},
			AggregationRule: aggregating(aggregateToView),
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-admin", Labels: map[string]string{aggregateToAdmin: "true"}},
			Rules: []rbacv1.PolicyRule{
				rule(v("create"), g(authzGroup), "localsubjectaccessreviews"),
				rule(readWrite, g(rbacGroup), "roles", "rolebindings"),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-edit", Labels: map[string]string{aggregateToEdit: "true"}},
			Rules:      editRules(),
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-view", Labels: map[string]string{aggregateToView: "true"}},
			Rules:      viewRules(),
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:auth-delegator"},
			Rules: []rbacv1.PolicyRule{
				rule(v("create"), g(authnGroup), "tokenreviews"),
				rule(v("create"), g(authzGroup), "subjectaccessreviews"),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:service-account-issuer-discovery"},
			Rules: []rbacv1.PolicyRule{urls(v("get"),
				"/.well-known/openid-configuration", "/.well-known/openid-configuration/",
				"/openid/v1/jwks", "/openid/v1/jwks/")},
		},
	}
}

func aggregating(label string) *rbacv1.AggregationRule {
	return &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}
}

// viewRules are what view grants: reading what a namespace holds, except
// what would reveal credentials (secrets) or run code.
func viewRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(read, g(core), "pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"),
		rule(read, g(core), "limitranges", "resourcequotas", "bindings",
			"pods/status", "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log"),
		rule(read, g(core), "namespaces"),
		rule(read, g(core, events), "events"),
		rule(read, g(discoveryK8s), "endpointslices"),
		rule(read, g(apps), "controllerrevisions",
			"statefulsets", "statefulsets/status", "statefulsets/scale",
			"daemonsets", "daemonsets/status",
			"deployments", "deployments/status", "deployments/scale",
			"replicasets", "replicasets/status", "replicasets/scale"),
		rule(read, g(autoscaling), "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
		rule(read, g(batch), "jobs", "cronjobs", "cronjobs/status", "jobs/status"),
		rule(read, g(extensions), "daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
			"ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status", "replicationcontrollers/scale",
			"networkpolicies"),
		rule(read, g(policy), "poddisruptionbudgets", "poddisruptionbudgets/status"),
		rule(read, g(networking), "networkpolicies", "ingresses", "ingresses/status"),
		rule(read, g(resourceGroup), "resourceclaims", "resourceclaims/status", "resourceclaimtemplates"),
	}
}

// editRules are what edit adds to view: writing what a namespace holds,
// and reading secrets.
func editRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(read, g(core), "pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"),
		rule(v("impersonate"), g(core), "serviceaccounts"),
		rule(write, g(core), "pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
		rule(v("create"), g(core), "pods/eviction"),
		rule(write, g(core), "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets"),
		rule(v("create"), g(core), "serviceaccounts/token"),
		rule(write, g(core, events), "events"),
		rule(write, g(apps), "statefulsets", "statefulsets/scale", "daemonsets",
			"deployments", "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale"),
		rule(write, g(autoscaling), "horizontalpodautoscalers"),
		rule(write, g(batch), "jobs", "cronjobs"),
		rule(write, g(extensions), "daemonsets", "deployments", "deployments/scale", "deployments/rollback", "ingresses",
			"replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies"),
		rule(write, g(policy), "poddisruptionbudgets"),
		rule(write, g(networking), "networkpolicies", "ingresses"),
		rule(readWrite, g(coordination), "leases"),
		rule(write, g(resourceGroup), "resourceclaims", "resourceclaimtemplates"),
	}
}

// ClusterRoleBindings returns the default ClusterRoleBindings: the admins
// (system:masters) are cluster-admin, every authenticated user may
// discover the API and review its own access, everyone may read the
// health and version endpoints, and service accounts the issuer's
// discovery documents; then the components' and the controllers'.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	bindings := append([]rbacv1.ClusterRoleBinding{
		groupBinding("cluster-admin", "system:masters"),
		groupBinding("system:monitoring", "system:monitoring"),
		groupBinding("system:discovery", "system:authenticated"),
		groupBinding("system:basic-user", "system:authenticated"),
		groupBinding("system:public-info-viewer", "system:authenticated", "system:unauthenticated"),
		groupBinding("system:service-account-issuer-discovery", "system:serviceaccounts"),
	}, componentBindings()...)
	bindings = append(bindings, controllerBindings()...)
	for i := range bindings {
		defaultMetadata(&bindings[i].ObjectMeta)
	}
	return bindings
}

// groupBinding binds the ClusterRole of the same name to groups.
func groupBinding(role string, groups ...string) rbacv1.ClusterRoleBinding {
	b := rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role}, RoleRef: clusterRoleRef(role)}
	for _, name := range groups {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacGroup, Name: name})
	}
	return b
}

// userBinding binds the ClusterRole role, and names the binding, for one
// user.
func userBinding(role, name string) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role}, RoleRef: clusterRoleRef(role), Subjects: []rbacv1.Subject{user(name)}}
}

// serviceAccountBinding binds the ClusterRole role, and names the
// binding, for one service account.
func serviceAccountBinding(role, namespace, name string) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    clusterRoleRef(role),
		Subjects:   []rbacv1.Subject{serviceAccount(namespace, name)},
	}
}

func clusterRoleRef(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "ClusterRole", Name: name}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacGroup, Name: name}
}

// serviceAccount is a service account subject, which names no apiGroup.
func serviceAccount(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

func defaultMetadata(m *metav1.ObjectMeta) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[bootstrappingLabel] = "rbac-defaults"
	m.Annotations = map[string]string{AutoUpdate: "true"}
}
