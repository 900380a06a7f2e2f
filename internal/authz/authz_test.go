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
