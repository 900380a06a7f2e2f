package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// componentRoles are the ClusterRoles upstream defines for the parts of a
// cluster that run beside the API server: kubelets and node bootstrap,
// kube-proxy, kube-scheduler, kube-controller-manager, DNS, metrics and
// volume provisioners, and the approvers of certificate signing requests.
// None of those runs here, but their roles are what a user of
// kube-apiserver finds and binds (a scheduler run against crdserver, a
// user given system:node-proxier), so they are stored alike.
func componentRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:nodeclient",
			rule(v("create"), g(certificatesGroup), "certificatesigningrequests/nodeclient"),
		),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
			rule(v("create"), g(certificatesGroup), "certificatesigningrequests/selfnodeclient"),
		),
		approver("kube-apiserver-client"),
		approver("kube-apiserver-client-kubelet"),
		approver("kubelet-serving"),
		approver("legacy-unknown"),
		clusterRole("system:cluster-trust-bundle-discovery",
			rule(read, g(certificatesGroup), "clustertrustbundles"),
		),
		clusterRole("system:heapster",
			rule(read, g(core), "events", "namespaces", "nodes", "pods"),
			rule(read, g(extensions), "deployments"),
		),
		clusterRole("system:kube-aggregator",
			rule(read, g(core), "endpoints", "services"),
		),
		clusterRole("system:kube-controller-manager",
			recordEvents(),
			rule(v("create"), g(coordination), "leases"),
			named(rule(v("get", "update"), g(coordination), "leases"), "kube-controller-manager"),
			rule(v("create"), g(core), "secrets", "serviceaccounts"),
			rule(v("delete"), g(core), "secrets"),
			rule(v("get"), g(core), "configmaps", "namespaces", "secrets", "serviceaccounts"),
			rule(v("update"), g(core), "secrets", "serviceaccounts"),
			rule(v("create"), g(authnGroup), "tokenreviews"),
			rule(v("create"), g(authzGroup), "subjectaccessreviews"),
			rule(v("list", "watch"), g("*"), "*"),
			rule(v("create"), g(core), "serviceaccounts/token"),
		),
		clusterRole("system:kube-dns",
			rule(v("list", "watch"), g(core), "endpoints", "services"),
		),
		clusterRole("system:kube-scheduler",
			recordEvents(),
			rule(v("create"), g(coordination), "leases"),
			named(rule(v("get", "list", "update", "watch"), g(coordination), "leases"), "kube-scheduler"),
			rule(readWrite, g(coordination), "leasecandidates"),
			rule(read, g(core), "nodes"),
			rule(v("delete", "get", "list", "watch"), g(core), "pods"),
			rule(v("create"), g(core), "bindings", "pods/binding"),
			rule(v("patch", "update"), g(core), "pods/status"),
			rule(read, g(core), "replicationcontrollers", "services"),
			rule(read, g(apps, extensions), "replicasets"),
			rule(read, g(apps), "statefulsets"),
			rule(read, g(policy), "poddisruptionbudgets"),
			rule(read, g(core), "persistentvolumeclaims", "persistentvolumes"),
			rule(v("create"), g(authnGroup), "tokenreviews"),
			rule(v("create"), g(authzGroup), "subjectaccessreviews"),
			rule(read, g(storageGroup), "csinodes"),
			rule(read, g(storageGroup), "volumeattachments"),
			rule(read, g(core), "namespaces"),
			rule(read, g(storageGroup), "csidrivers"),
			rule(read, g(storageGroup), "csistoragecapacities"),
			rule(read, g(resourceGroup), "deviceclasses"),
			rule(v("get", "list", "patch", "update", "watch"), g(resourceGroup), "resourceclaims"),
			rule(v("get", "list", "patch", "update", "watch"), g(resourceGroup), "resourceclaims/status"),
			rule(v("update"), g(core), "pods/finalizers"),
			rule(read, g(resourceGroup), "resourceslices"),
			rule(v("create", "delete"), g(resourceGroup), "resourceclaims"),
			rule(read, g(resourceGroup), "devicetaintrules"),
			rule(v("patch", "update"), g(resourceGroup), "resourceclaims/binding"),
		),
		clusterRole("system:kubelet-api-admin",
			rule(read, g(core), "nodes"),
			rule(v("proxy"), g(core), "nodes"),
			rule(v("*"), g(core), "nodes/log", "nodes/metrics", "nodes/proxy", "nodes/stats"),
			rule(v("*"), g(core), "nodes/configz", "nodes/healthz", "nodes/pods"),
		),
		clusterRole("system:node",
			rule(v("create"), g(authnGroup), "tokenreviews"),
			rule(v("create"), g(authzGroup), "localsubjectaccessreviews", "subjectaccessreviews"),
			rule(read, g(core), "services"),
			rule(v("create", "get", "list", "watch"), g(core), "nodes"),
			rule(v("patch", "update"), g(core), "nodes/status"),
			rule(v("patch", "update"), g(core), "nodes"),
			recordEvents(),
			rule(read, g(core), "pods"),
			rule(v("create", "delete"), g(core), "pods"),
			rule(v("patch", "update"), g(core), "pods/status"),
			rule(v("create"), g(core), "pods/eviction"),
			rule(read, g(core), "configmaps", "secrets"),
			rule(v("get"), g(core), "persistentvolumeclaims", "persistentvolumes"),
			rule(v("get"), g(core), "endpoints"),
			rule(v("create", "get", "list", "watch"), g(certificatesGroup), "certificatesigningrequests"),
			rule(v("create", "delete", "get", "patch", "update"), g(coordination), "leases"),
			rule(v("get"), g(storageGroup), "volumeattachments"),
			rule(v("create"), g(core), "serviceaccounts/token"),
			rule(v("get", "patch", "update"), g(core), "persistentvolumeclaims/status"),
			rule(read, g(storageGroup), "csidrivers"),
			rule(v("create", "delete", "get", "patch", "update"), g(storageGroup), "csinodes"),
			rule(read, g(nodeGroup), "runtimeclasses"),
			rule(v("get"), g(resourceGroup), "resourceclaims"),
			rule(v("deletecollection"), g(resourceGroup), "resourceslices"),
			rule(read, g(certificatesGroup), "clustertrustbundles"),
			rule(v("get"), g(core), "serviceaccounts"),
			rule(v("create", "get", "list", "watch"), g(certificatesGroup), "podcertificaterequests"),
		),
		clusterRole("system:node-bootstrapper",
			rule(v("create", "get", "list", "watch"), g(certificatesGroup), "certificatesigningrequests"),
		),
		clusterRole("system:node-problem-detector",
			rule(v("get"), g(core), "nodes"),
			rule(v("patch"), g(core), "nodes/status"),
			recordEvents(),
		),
		clusterRole("system:node-proxier",
			rule(v("list", "watch"), g(core), "endpoints", "services"),
			rule(read, g(core), "nodes"),
			recordEvents(),
			rule(v("list", "watch"), g(networking), "servicecidrs"),
			rule(v("list", "watch"), g(discoveryK8s), "endpointslices"),
		),
		clusterRole("system:persistent-volume-provisioner",
			rule(v("create", "delete", "get", "list", "watch"), g(core), "persistentvolumes"),
			rule(v("get", "list", "update", "watch"), g(core), "persistentvolumeclaims"),
			rule(read, g(storageGroup), "storageclasses"),
			rule(v("watch"), g(core), "events"),
			recordEvents(),
		),
		clusterRole("system:volume-scheduler",
			rule(v("get", "list", "patch", "update", "watch"), g(core), "persistentvolumes"),
			rule(read, g(storageGroup), "storageclasses"),
			rule(v("get", "list", "patch", "update", "watch"), g(core), "persistentvolumeclaims"),
		),
	}
}

// clusterRole is the ClusterRole name, with rules.
func clusterRole(name string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

// approver is the role that may approve certificate signing requests for
// the signer kubernetes.io/signer.
func approver(signer string) rbacv1.ClusterRole {
	return clusterRole("system:certificates.k8s.io:"+signer+"-approver",
		named(rule(v("approve"), g(certificatesGroup), "signers"), "kubernetes.io/"+signer))
}

// componentBindings bind the component roles to the users, groups and
// service accounts upstream's components authenticate as; system:node is
// bound to no one, as upstream's Node authorizer grants nodes instead.
func componentBindings() []rbacv1.ClusterRoleBinding {
	return []rbacv1.ClusterRoleBinding{
		groupBinding("system:cluster-trust-bundle-discovery", "system:serviceaccounts"),
		userBinding("system:kube-controller-manager", "system:kube-controller-manager"),
		userBinding("system:kube-scheduler", "system:kube-scheduler"),
		userBinding("system:volume-scheduler", "system:kube-scheduler"),
		userBinding("system:node-proxier", "system:kube-proxy"),
		serviceAccountBinding("system:kube-dns", metav1.NamespaceSystem, "kube-dns"),
		{ObjectMeta: metav1.ObjectMeta{Name: "system:node"}, RoleRef: clusterRoleRef("system:node")},
	}
}
