package crdtest_test

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/crdserver/crdserver/crdtest"
)

// With a fake clock a test steps over the server's expiries: an event's
// hour of TTL and a ServiceAccount token's lifetime pass at once.
func TestFakeClock(t *testing.T) {
	t.Parallel()
	clock := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := crdtest.Start(t, crdtest.Options{Clock: clock})
	admin := kubernetes.NewForConfigOrDie(s.Config)
	ctx := t.Context()

	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "started", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "c"},
		Reason:         "Started",
		Message:        "it started",
	}
	if _, err := admin.CoreV1().Events("default").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clock.Step(59 * time.Minute)
	// Expiry runs in its own goroutine: give it a moment to (wrongly) act.
	time.Sleep(50 * time.Millisecond)
	if _, err := admin.CoreV1().Events("default").Get(ctx, "started", metav1.GetOptions{}); err != nil {
		t.Fatalf("event gone before its hour: %v", err)
	}
	clock.Step(2 * time.Minute)
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := admin.CoreV1().Events("default").Get(ctx, "started", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("event still there an hour and a minute later by the clock: %v", err)
	}

	expiry := int64(600)
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := clock.Now().Add(10 * time.Minute); !tr.Status.ExpirationTimestamp.Time.Equal(want) {
		t.Errorf("token expires at %v, want %v (the clock's time plus 10m)", tr.Status.ExpirationTimestamp, want)
	}
	cfg := rest.AnonymousClientConfig(s.Config)
	cfg.BearerToken = tr.Status.Token
	sa := kubernetes.NewForConfigOrDie(cfg)
	who, err := sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a fresh token: %v", err)
	}
	if got, want := who.Status.UserInfo.Username, "system:serviceaccount:default:default"; got != want {
		t.Errorf("token is %q, want %q", got, want)
	}
	// Past its 10 minutes and the minute of leeway tokens get.
	clock.Step(12 * time.Minute)
	_, err = sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Fatalf("a token 12 minutes into its 10: %v, want 401", err)
	}
}

func TestFakeClockNeedsMemoryStorage(t *testing.T) {
	_, err := crdtest.StartServer(t.Context(), crdtest.Options{Storage: crdtest.StorageEtcd, Clock: clocktesting.NewFakeClock(time.Now())})
	if err == nil {
		t.Fatal("a fake clock with etcd storage started")
	}
}
