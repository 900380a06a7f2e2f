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
