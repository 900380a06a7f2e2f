package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Roles returns the default Roles of kube-system and kube-public: who may
// read the authentication ConfigMap extension API servers read, the
// leader election locks of kube-controller-manager and kube-scheduler,
// and the namespaced parts of three controllers' roles.
func Roles() []rbacv1.Role {
	roles := []rbacv1.Role{
		role("kube-public", "system:controller:bootstrap-signer",
			rule(read, g(core), "configmaps"),
			named(rule(v("update"), g(core), "configmaps"), "cluster-info"),
			recordEvents(),
		),
		role("kube-system", "extension-apiserver-authentication-reader",
			named(rule(read, g(core), "configmaps"), "extension-apiserver-authentication"),
		),
		role("kube-system", "system::leader-locking-kube-controller-manager",
			rule(v("create", "get", "list", "update", "watch"), g(coordination), "leases"),
			rule(v("create", "get", "list", "update", "watch"), g(coordination), "leasecandidates"),
		),
		role("kube-system", "system::leader-locking-kube-scheduler",
			rule(v("create", "get", "list", "update", "watch"), g(coordination), "leases"),
			rule(v("create", "get", "list", "update", "watch"), g(coordination), "leasecandidates"),
		),
		role("kube-system", "system:controller:bootstrap-signer",
			rule(read, g(core), "secrets"),
		),
		role("kube-system", "system:controller:cloud-provider",
			rule(v("create", "get", "list", "watch"), g(core), "configmaps"),
		),
		role("kube-system", "system:controller:token-cleaner",
			rule(v("delete", "get", "list", "watch"), g(core), "secrets"),
			recordEvents(),
		),
	}
	for i := range roles {
		defaultMetadata(&roles[i].ObjectMeta)
	}
	return roles
}

func role(namespace, name string, rules ...rbacv1.PolicyRule) rbacv1.Role {
	return rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Rules: rules}
}

// RoleBindings returns the default RoleBindings, beside the Roles they
// bind.
func RoleBindings() []rbacv1.RoleBinding {
	const system, public = metav1.NamespaceSystem, metav1.NamespacePublic
	bindings := []rbacv1.RoleBinding{
		roleBinding(public, "system:controller:bootstrap-signer", "system:controller:bootstrap-signer",
			serviceAccount(system, "bootstrap-signer")),
		roleBinding(system, "system::extension-apiserver-authentication-reader", "extension-apiserver-authentication-reader",
			user("system:kube-controller-manager"), user("system:kube-scheduler")),
		roleBinding(system, "system::leader-locking-kube-controller-manager", "system::leader-locking-kube-controller-manager",
			user("system:kube-controller-manager"), serviceAccount(system, "kube-controller-manager"), serviceAccount(system, "leader-election-controller")),
		roleBinding(system, "system::leader-locking-kube-scheduler", "system::leader-locking-kube-scheduler",
			user("system:kube-scheduler"), serviceAccount(system, "kube-scheduler")),
		roleBinding(system, "system:controller:bootstrap-signer", "system:controller:bootstrap-signer",
			serviceAccount(system, "bootstrap-signer")),
		roleBinding(system, "system:controller:cloud-provider", "system:controller:cloud-provider",
			serviceAccount(system, "cloud-provider")),
		roleBinding(system, "system:controller:token-cleaner", "system:controller:token-cleaner",
			serviceAccount(system, "token-cleaner")),
	}
	for i := range bindings {
		defaultMetadata(&bindings[i].ObjectMeta)
	}
	return bindings
}

// roleBinding binds the Role role of namespace to subjects.
func roleBinding(namespace, name, role string, subjects ...rbacv1.Subject) rbacv1.RoleBinding {
	return rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "Role", Name: role},
		Subjects:   subjects,
	}
}
