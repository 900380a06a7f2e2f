package authz

import (
	"context"
	"testing"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/request"
)

func TestAttributesFrom(t *testing.T) {
	info, err := request.Parse("PUT", "/apis/example.com/v1/namespaces/ns/widgets/w/status", nil)
	if err != nil {
		t.Fatal(err)
	}
	u := &authn.User{Name: "bob"}
	got := AttributesFrom(u, info)
	want := Attributes{User: u, Verb: "update", APIGroup: "example.com", APIVersion: "v1", Resource: "widgets",
		Subresource: "status", Namespace: "ns", Name: "w", Path: "/apis/example.com/v1/namespaces/ns/widgets/w/status", ResourceRequest: true}
	if got != want {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestAllowAll(t *testing.T) {
	d, reason, err := AllowAll.Authorize(context.Background(), Attributes{Verb: "delete"})
	if d != Allow || reason != "" || err != nil {
		t.Fatalf("got %v %q %v", d, reason, err)
	}
	for d, s := range map[Decision]string{Allow: "Allow", Deny: "Deny", NoOpinion: "NoOpinion"} {
		if d.String() != s {
			t.Errorf("%d.String() = %q", d, d.String())
		}
	}
}

func TestPrivileged(t *testing.T) {
	admin := &authn.User{Name: "admin", Groups: []string{authn.Masters}}
	prometheus := &authn.User{Name: "prometheus", Groups: []string{"system:monitoring"}}
	alice := &authn.User{Name: "alice", Groups: []string{"dev"}}
	anonymous := &authn.User{Name: authn.Anonymous, Groups: []string{authn.Unauthenticated}}
	tests := []struct {
		user *authn.User
		path string
		want Decision
	}{
		{admin, "/metrics", Allow},
		{admin, "/debug/pprof/", Allow},
		{admin, "/debug/pprof/heap", Allow},
		{prometheus, "/metrics", Allow},
		{prometheus, "/debug/pprof/profile", Deny},
		{alice, "/metrics", Deny},
		{alice, "/debug/pprof/", Deny},
		{anonymous, "/metrics", Deny},
		{nil, "/debug/pprof", Deny},
		{admin, "/flagz", Allow},
		{prometheus, "/flagz", Allow},
		{prometheus, "/statusz", Allow},
		{alice, "/flagz", Deny},
		{alice, "/statusz", Deny},
		// Everything else is the next authorizer's (AllowAll here).
		{alice, "/healthz", Allow},
		{alice, "/metricsx", Allow},
		{alice, "/api/v1/namespaces", Allow},
	}
	z := Privileged(AllowAll)
	for _, tt := range tests {
		info, err := request.Parse("GET", tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, _, err := z.Authorize(context.Background(), AttributesFrom(tt.user, info))
		if d != tt.want || err != nil {
			t.Errorf("%v GET %s = %v, %v; want %v", tt.user, tt.path, d, err, tt.want)
		}
	}
}

// Named prefixes the reasons of decisions that do not allow with the
// authorizer's name, as upstream's chain words a denial
// ("rbac: RBAC: role ... not found"), and passes an Allow's as it is.
func TestNamed(t *testing.T) {
	for _, tc := range []struct {
		d            Decision
		reason, want string
	}{
		{NoOpinion, `RBAC: role.rbac.authorization.k8s.io "r" not found`, `rbac: RBAC: role.rbac.authorization.k8s.io "r" not found`},
		{Deny, "no", "rbac: no"},
		{NoOpinion, "", ""},
		{Allow, `RBAC: allowed by ClusterRoleBinding "b"`, `RBAC: allowed by ClusterRoleBinding "b"`},
	} {
		z := Named("rbac", AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) { return tc.d, tc.reason, nil }))
		d, reason, err := z.Authorize(context.Background(), Attributes{})
		if d != tc.d || reason != tc.want || err != nil {
			t.Errorf("Named(%v, %q) = %v, %q, %v; want %q", tc.d, tc.reason, d, reason, err, tc.want)
		}
	}
}
