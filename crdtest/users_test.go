package crdtest_test

import (
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crdserver/crdserver/crdtest"
)

// A test can act as users of its choosing: they are who the server says,
// get upstream's 403 without a binding, and what a binding gives them.
func TestConfigFor(t *testing.T) {
	t.Parallel()
	s := crdtest.Start(t)
	cfg, err := s.ConfigFor("alice", "devs")
	if err != nil {
		t.Fatal(err)
	}
	alice := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()

	who, err := alice.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("whoami: %v", err)
	}
	if u := who.Status.UserInfo; u.Username != "alice" || !slices.Equal(u.Groups, []string{"devs", "system:authenticated"}) {
		t.Errorf("alice is %+v", u)
	}

	_, err = alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	const want = `configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default"`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("alice listing configmaps without a binding: %v, want %q", err, want)
	}

	admin := kubernetes.NewForConfigOrDie(s.Config)
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "devs-view", Namespace: "default"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: "devs"}},
	}
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer's index follows the watch cache: poll briefly.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err = alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Errorf("alice listing configmaps with view: %v", err)
	}
	if _, err := alice.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("alice listing configmaps in kube-system: %v, want 403", err)
	}
}
