package e2e

import (
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRBACBootstrapAfterRestart: a fresh server has upstream's bootstrap
// objects (controller roles, kube-system's Roles and RoleBindings, the
// system PriorityClasses), and a restart reconciles them as upstream's
// does: what a default role lost is added back beside what a user added,
// deleted defaults come back, and objects annotated autoupdate=false keep
// the user's edits. The server keeps an identity Lease in kube-system.
func TestRBACBootstrapAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := startServer(t, dir)
	ctx := testContext(t, 90*time.Second)
	rbac := srv.Client.RbacV1()
	sched := srv.Client.SchedulingV1()

	for _, name := range []string{"system:controller:namespace-controller", "system:node", "system:kube-scheduler", "admin"} {
		if _, err := rbac.ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("clusterrole %s: %v", name, err)
		}
	}
	if _, err := rbac.ClusterRoleBindings().Get(ctx, "system:controller:namespace-controller", metav1.GetOptions{}); err != nil {
		t.Errorf("clusterrolebinding system:controller:namespace-controller: %v", err)
	}
	reader, err := rbac.Roles("kube-system").Get(ctx, "extension-apiserver-authentication-reader", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("role kube-system/extension-apiserver-authentication-reader: %v", err)
	}
	if _, err := rbac.RoleBindings("kube-public").Get(ctx, "system:controller:bootstrap-signer", metav1.GetOptions{}); err != nil {
		t.Errorf("rolebinding kube-public/system:controller:bootstrap-signer: %v", err)
	}
	for name, value := range map[string]int32{"system-node-critical": 2000001000, "system-cluster-critical": 2000000000} {
		pc, err := sched.PriorityClasses().Get(ctx, name, metav1.GetOptions{})
		if err != nil || pc.Value != value || pc.GlobalDefault || pc.Description == "" {
			t.Errorf("priorityclass %s: %+v %v", name, pc, err)
		}
	}

	// The replica's identity Lease.
	leases, err := srv.Client.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "apiserver.kubernetes.io/identity=kube-apiserver"})
	if err != nil || len(leases.Items) != 1 || leases.Items[0].Spec.RenewTime == nil || *leases.Items[0].Spec.LeaseDurationSeconds != 3600 {
		t.Errorf("identity leases: %+v %v, want one, renewed, for an hour", leases, err)
	}

	// A default role that lost rules and gained a label: the rules come
	// back, the label stays.
	heapster, err := rbac.ClusterRoles().Get(ctx, "system:heapster", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantHeapster := heapster.Rules
	heapster.Rules = heapster.Rules[:1]
	heapster.Labels["mine"] = "yes"
	if _, err := rbac.ClusterRoles().Update(ctx, heapster, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Protected ones keep their edits.
	dns, err := rbac.ClusterRoles().Get(ctx, "system:kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dns.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	dns.Rules = []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"services"}}}
	if _, err := rbac.ClusterRoles().Update(ctx, dns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	locking, err := rbac.RoleBindings("kube-system").Get(ctx, "system::leader-locking-kube-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	locking.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	locking.Subjects = locking.Subjects[:1]
	if _, err := rbac.RoleBindings("kube-system").Update(ctx, locking, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Deleted defaults are created again.
	if err := rbac.Roles("kube-system").Delete(ctx, reader.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := sched.PriorityClasses().Delete(ctx, "system-node-critical", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	srv.stop(t)
	srv = startServer(t, dir)
	rbac = srv.Client.RbacV1()

	heapster, err = rbac.ClusterRoles().Get(ctx, "system:heapster", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What was missing comes back a verb at a time, as upstream adds it.
	restored := heapster.Labels["mine"] == "yes" && heapster.Rules[0].String() == wantHeapster[0].String()
	for _, verb := range []string{"get", "list", "watch"} {
		restored = restored && slices.ContainsFunc(heapster.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.Verbs, verb) && slices.Equal(r.APIGroups, []string{"extensions"}) && slices.Equal(r.Resources, []string{"deployments"})
		})
	}
	if !restored {
		t.Errorf("system:heapster after the restart: labels %v rules %v, want its rules back (%v) and the label kept", heapster.Labels, heapster.Rules, wantHeapster)
	}
	dns, err = rbac.ClusterRoles().Get(ctx, "system:kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(dns.Rules) != 1 || dns.Rules[0].Verbs[0] != "get" {
		t.Errorf("system:kube-dns, annotated autoupdate=false, was reconciled: %v", dns.Rules)
	}
	locking, err = rbac.RoleBindings("kube-system").Get(ctx, "system::leader-locking-kube-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(locking.Subjects) != 1 {
		t.Errorf("kube-system/system::leader-locking-kube-scheduler, annotated autoupdate=false, was reconciled: %v", locking.Subjects)
	}
	again, err := rbac.Roles("kube-system").Get(ctx, reader.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("deleted default role not created again: %v", err)
	}
	if again.UID == reader.UID || !slices.EqualFunc(again.Rules, reader.Rules, func(a, b rbacv1.PolicyRule) bool { return a.String() == b.String() }) {
		t.Errorf("role %s created again as %+v", reader.Name, again)
	}
	if _, err := srv.Client.SchedulingV1().PriorityClasses().Get(ctx, "system-node-critical", metav1.GetOptions{}); apierrors.IsNotFound(err) || err != nil {
		t.Errorf("deleted system-node-critical not created again: %v", err)
	}
}
