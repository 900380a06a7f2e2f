package builtin

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/registry"
)

// fakeIssuer records what it was asked to sign.
type fakeIssuer struct {
	ns, name, uid         string
	auds                  []string
	ttl                   time.Duration
	secretName, secretUID string
}

func (f *fakeIssuer) IssueBound(ns, name, uid string, auds []string, ttl time.Duration, secretName, secretUID string) (string, time.Time, error) {
	f.ns, f.name, f.uid, f.auds, f.ttl, f.secretName, f.secretUID = ns, name, uid, auds, ttl, secretName, secretUID
	return "signed-token", time.Time{}, nil
}

func (f *fakeIssuer) APIAudiences() []string {
	return []string{"https://kubernetes.default.svc.cluster.local"}
}

func TestTokenRequest(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sa := map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "bot", "namespace": "ns1", "uid": "uid-1"}}
	cases := []struct {
		name    string
		body    map[string]any
		auds    []string
		ttl     time.Duration
		secret  string // the uid of the Secret the token is bound to
		code    int32
		message string
	}{
		{name: "defaults", body: map[string]any{}, auds: []string{"https://kubernetes.default.svc.cluster.local"}, ttl: time.Hour},
		{name: "audience and duration", body: map[string]any{"spec": map[string]any{"audiences": []any{"vault"}, "expirationSeconds": int64(1200)}},
			auds: []string{"vault"}, ttl: 20 * time.Minute},
		{name: "too short", body: map[string]any{"spec": map[string]any{"expirationSeconds": int64(60)}},
			code: 422, message: `TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes`},
		{name: "too long", body: map[string]any{"spec": map[string]any{"expirationSeconds": int64(1<<32 + 1)}},
			code: 422, message: "may not specify a duration larger than 2^32 seconds"},
		{name: "another name", body: map[string]any{"metadata": map[string]any{"name": "other"}},
			code: 422, message: `metadata.name: Invalid value: "other": must match the service account name if specified`},
		{name: "another uid", body: map[string]any{"metadata": map[string]any{"uid": "uid-0"}},
			code: 409, message: "the UID in the token request (uid-0) does not match the UID of the service account (uid-1)"},
		// No pod or node exists here: upstream's answer when the one
		// named does not.
		{name: "bound to a pod", body: map[string]any{"spec": map[string]any{"boundObjectRef": map[string]any{"apiVersion": "v1", "kind": "Pod", "name": "p"}}},
			code: 404, message: `pods "p" not found`},
		{name: "bound to a node", body: map[string]any{"spec": map[string]any{"boundObjectRef": map[string]any{"apiVersion": "v1", "kind": "Node", "name": "n"}}},
			code: 404, message: `nodes "n" not found`},
		{name: "bound to a deployment", body: map[string]any{"spec": map[string]any{"boundObjectRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}},
			code: 400, message: "cannot bind token to object of type apps/v1, Kind=Deployment"},
		// A Secret of the account's namespace, as upstream binds it.
		{name: "bound to a secret", body: map[string]any{"spec": map[string]any{"boundObjectRef": map[string]any{"apiVersion": "v1", "kind": "Secret", "name": "creds"}}},
			auds: []string{"https://kubernetes.default.svc.cluster.local"}, ttl: time.Hour, secret: "s-1"},
		{name: "bound to a secret by uid", body: map[string]any{"spec": map[string]any{"boundObjectRef": map[string]any{"kind": "Secret", "name": "creds", "uid": "s-1"}}},
			auds: []string{"https://kubernetes.default.svc.cluster.local"}, ttl: time.Hour, secret: "s-1"},
		{name: "bound to a missing secret", body: map[string]any{"spec": map[string]any{"boundObjectRef": map[string]any{"kind": "Secret", "name": "nosuch"}}},
			code: 404, message: `secrets "nosuch" not found`},
		{name: "bound to a recreated secret", body: map[string]any{"spec": map[string]any{"boundObjectRef": map[string]any{"kind": "Secret", "name": "creds", "uid": "s-0"}}},
			code: 409, message: `Operation cannot be fulfilled on Secret "creds": the UID in the bound object reference (s-0) does not match the UID in record. The object might have been deleted and then recreated`},
		{name: "bound to another group's secret", body: map[string]any{"spec": map[string]any{"boundObjectRef": map[string]any{"apiVersion": "example.com/v1", "kind": "Secret", "name": "creds"}}},
			code: 400, message: "cannot bind token to object of type example.com/v1, Kind=Secret"},
	}
	secrets := BoundSecretsFunc(func(_ context.Context, ns, name string) (string, bool, error) {
		if ns == "ns1" && name == "creds" {
			return "s-1", true, nil
		}
		return "", false, nil
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			iss := &fakeIssuer{}
			d := WithTokenRequest(ServiceAccounts(), iss, secrets, nil)
			h := d.Hooks.(tokenRequestHooks)
			h.now = func() time.Time { return epoch }
			out, err := h.CreateSubresource(context.Background(), "token", sa, c.body)
			if c.code != 0 {
				var se *apierrors.StatusError
				if !errors.As(err, &se) || se.ErrStatus.Code != c.code || !strings.Contains(se.ErrStatus.Message, c.message) {
					t.Fatalf("err = %v, want %d %q", err, c.code, c.message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if iss.ns != "ns1" || iss.name != "bot" || iss.uid != "uid-1" || !reflect.DeepEqual(iss.auds, c.auds) || iss.ttl != c.ttl ||
				iss.secretUID != c.secret || (c.secret != "") != (iss.secretName == "creds") {
				t.Errorf("signed %+v", iss)
			}
			st := out["status"].(map[string]any)
			md := out["metadata"].(map[string]any)
			if out["kind"] != "TokenRequest" || out["apiVersion"] != "authentication.k8s.io/v1" || st["token"] != "signed-token" ||
				st["expirationTimestamp"] != epoch.Add(c.ttl).Format(time.RFC3339) || md["name"] != "bot" || md["uid"] != "uid-1" {
				t.Errorf("answer %v", out)
			}
		})
	}
	// Discovery and OpenAPI learn of the subresource and its kind.
	d := WithTokenRequest(ServiceAccounts(), &fakeIssuer{}, nil, nil)
	other := d.Versions[0].Subresources.Other
	if len(other) != 1 || other[0].Name != "token" || other[0].Kind.Kind != "TokenRequest" || len(ServiceAccounts().Versions[0].Subresources.Other) != 0 {
		t.Errorf("subresources %+v", other)
	}
	var _ registry.SubresourceCreator = d.Hooks.(registry.SubresourceCreator)
}

func TestSelfSubjectReview(t *testing.T) {
	h := SelfSubjectReviews().Hooks.(selfSubjectReviewHooks)
	if _, err := h.Create(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "no user present on request") {
		t.Errorf("no user: %v", err)
	}
	u := &authn.User{Name: "alice", UID: "u1", Groups: []string{"dev", authn.Authenticated}, Extra: map[string][]string{"scopes": {"a"}}}
	out, err := h.Create(authn.WithUser(context.Background(), u), map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	info := out["status"].(map[string]any)["userInfo"].(map[string]any)
	want := map[string]any{"username": "alice", "uid": "u1", "groups": []any{"dev", authn.Authenticated}, "extra": map[string]any{"scopes": []any{"a"}}}
	if !reflect.DeepEqual(info, want) || out["kind"] != "SelfSubjectReview" {
		t.Errorf("review %v", out)
	}
}

func TestTokenReview(t *testing.T) {
	tokens := authn.TokenAuthenticatorFunc(func(ctx context.Context, token string) (*authn.User, bool, error) {
		auds, _ := authn.AudiencesFrom(ctx)
		switch {
		case token == "good" && auds[0] == "api":
			return &authn.User{Name: "bob", Groups: []string{authn.Authenticated}}, true, nil
		case token == "expired":
			return nil, false, errors.New("service account token has expired")
		}
		return nil, false, nil
	})
	h := TokenReviews(tokens, []string{"api"}).Hooks.(tokenReviewHooks)
	cases := []struct {
		name   string
		spec   map[string]any
		status map[string]any
		err    string
	}{
		{name: "valid", spec: map[string]any{"token": "good"},
			status: map[string]any{"authenticated": true, "audiences": []any{"api"}, "user": map[string]any{"username": "bob", "groups": []any{authn.Authenticated}}}},
		{name: "another audience", spec: map[string]any{"token": "good", "audiences": []any{"vault"}},
			status: map[string]any{"error": "invalid bearer token", "user": map[string]any{}}},
		{name: "expired", spec: map[string]any{"token": "expired"},
			status: map[string]any{"error": "service account token has expired", "user": map[string]any{}}},
		{name: "no token", spec: map[string]any{}, err: "token is required for TokenReview in authentication"},
	}
	for _, c := range cases {
		out, err := h.Create(context.Background(), map[string]any{"spec": c.spec})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out["status"], c.status) {
			t.Errorf("%s: status %v, want %v", c.name, out["status"], c.status)
		}
	}
}
