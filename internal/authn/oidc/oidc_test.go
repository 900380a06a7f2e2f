package oidc

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authn/jws"
)

// testIssuer is an OIDC provider on loopback: discovery and JWKS over TLS.
type testIssuer struct {
	srv   *httptest.Server
	key   *ecdsa.PrivateKey
	kid   string
	jwks  int // times the JWKS was fetched
	caPEM string
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ti := &testIssuer{key: key, kid: "k1"}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": ti.srv.URL, "jwks_uri": ti.srv.URL + "/keys"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, r *http.Request) {
		ti.jwks++
		jwk, _ := jws.PublicJWK(key.Public(), ti.kid)
		json.NewEncoder(w).Encode(jws.JWKS{Keys: []jws.JWK{jwk}})
	})
	ti.srv = httptest.NewTLSServer(mux)
	t.Cleanup(ti.srv.Close)
	ti.caPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ti.srv.Certificate().Raw}))
	return ti
}

func (ti *testIssuer) sign(t *testing.T, claims map[string]any) string {
	t.Helper()
	tok, err := jws.Sign(ti.key, ti.kid, claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func config(ti *testIssuer, mappings string) string {
	return `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: ` + ti.srv.URL + `
    audiences: [crdserver]
    certificateAuthority: |
` + indent(ti.caPEM, "      ") + mappings
}

func indent(s, by string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return by + strings.Join(lines, "\n"+by) + "\n"
}

func authenticator(t *testing.T, cfg string) *Authenticator {
	t.Helper()
	c, err := Parse([]byte(cfg))
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, cfg)
	}
	as, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	as[0].Now = func() time.Time { return epoch }
	return as[0]
}

func TestAuthenticate(t *testing.T) {
	ti := newTestIssuer(t)
	claimMappings := `  claimMappings:
    username: {claim: sub, prefix: "oidc:"}
    groups: {claim: groups, prefix: "oidc:"}
    uid: {claim: uid}
  claimValidationRules:
  - {claim: hd, requiredValue: example.com}
  - {expression: "claims.exp - claims.iat <= 86400", message: "token lives too long"}
  userValidationRules:
  - {expression: "!user.username.startsWith('oidc:system:')", message: "username cannot use the reserved system: prefix"}
`
	exprMappings := `  claimMappings:
    username: {expression: "claims.email.split('@')[0] + ':external'"}
    groups: {expression: "claims.roles.map(r, 'role:' + r)"}
    uid: {expression: "claims.sub"}
    extra:
    - {key: example.com/tenant, valueExpression: "claims.tenant"}
`
	emailMappings := `  claimMappings:
    username: {claim: email, prefix: ""}
`
	base := func(over map[string]any) map[string]any {
		c := map[string]any{"iss": ti.srv.URL, "aud": "crdserver", "sub": "alice", "iat": epoch.Unix(), "exp": epoch.Add(time.Hour).Unix(),
			"hd": "example.com", "groups": []any{"dev", "ops"}, "uid": "u-1", "email": "alice@example.com", "roles": []any{"admin"}, "tenant": "blue"}
		for k, v := range over {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	cases := []struct {
		name     string
		mappings string
		claims   map[string]any
		user     *authn.User
		notMine  bool
		err      string
	}{
		{name: "claims with prefixes", mappings: claimMappings, claims: base(nil),
			user: &authn.User{Name: "oidc:alice", UID: "u-1", Groups: []string{"oidc:dev", "oidc:ops", authn.Authenticated}}},
		{name: "groups as one string", mappings: claimMappings, claims: base(map[string]any{"groups": "dev"}),
			user: &authn.User{Name: "oidc:alice", UID: "u-1", Groups: []string{"oidc:dev", authn.Authenticated}}},
		{name: "expressions", mappings: exprMappings, claims: base(nil),
			user: &authn.User{Name: "alice:external", UID: "alice", Groups: []string{"role:admin", authn.Authenticated}, Extra: map[string][]string{"example.com/tenant": {"blue"}}}},
		{name: "email needs email_verified", mappings: emailMappings, claims: base(map[string]any{"email_verified": false}), err: "oidc: email not verified"},
		{name: "verified email", mappings: emailMappings, claims: base(map[string]any{"email_verified": true}),
			user: &authn.User{Name: "alice@example.com", Groups: []string{authn.Authenticated}}},
		{name: "required claim value", mappings: claimMappings, claims: base(map[string]any{"hd": "evil.com"}), err: "oidc: required claim hd value does not match. Got = evil.com, want = example.com"},
		{name: "claim validation expression", mappings: claimMappings, claims: base(map[string]any{"iat": epoch.Add(-48 * time.Hour).Unix()}), err: "oidc: validation rule failed for claims: token lives too long"},
		{name: "user validation expression", mappings: claimMappings, claims: base(map[string]any{"sub": "system:admin"}), err: "username cannot use the reserved system: prefix"},
		{name: "missing username claim", mappings: claimMappings, claims: base(map[string]any{"sub": nil}), err: `oidc: claim "sub" not present`},
		{name: "expired", mappings: claimMappings, claims: base(map[string]any{"exp": epoch.Add(-time.Hour).Unix()}), err: "token is expired"},
		{name: "another audience", mappings: claimMappings, claims: base(map[string]any{"aud": []any{"other"}}), err: `expected audience in ["crdserver"] got ["other"]`},
		{name: "no exp", mappings: claimMappings, claims: base(map[string]any{"exp": nil}), err: "token has no exp claim"},
		{name: "another issuer", mappings: claimMappings, claims: base(map[string]any{"iss": "https://elsewhere"}), notMine: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := authenticator(t, config(ti, c.mappings))
			u, ok, err := a.AuthenticateToken(context.Background(), ti.sign(t, c.claims))
			switch {
			case c.notMine:
				if ok || err != nil {
					t.Errorf("another issuer's token: %v %v", ok, err)
				}
			case c.err != "":
				if ok || err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("ok=%v err=%v, want error %q", ok, err, c.err)
				}
			case !ok || err != nil || !reflect.DeepEqual(u, c.user):
				t.Errorf("%+v %v %v, want %+v", u, ok, err, c.user)
			}
		})
	}
}

func TestForeignKeysAndRefetch(t *testing.T) {
	ti := newTestIssuer(t)
	a := authenticator(t, config(ti, "  claimMappings:\n    username: {claim: sub, prefix: \"\"}\n"))
	claims := map[string]any{"iss": ti.srv.URL, "aud": "crdserver", "sub": "alice", "exp": epoch.Add(time.Hour).Unix()}
	if _, ok, err := a.AuthenticateToken(context.Background(), ti.sign(t, claims)); !ok {
		t.Fatalf("a good token: %v", err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	forged, _ := jws.Sign(other, "k1", claims)
	if _, ok, err := a.AuthenticateToken(context.Background(), forged); ok || err == nil {
		t.Errorf("a token signed by another key with the issuer's kid: %v %v", ok, err)
	}
	unknown, _ := jws.Sign(other, "k9", claims)
	for range 5 {
		if _, ok, err := a.AuthenticateToken(context.Background(), unknown); ok || err == nil || !strings.Contains(err.Error(), `no key with kid "k9"`) {
			t.Errorf("an unknown kid: %v %v", ok, err)
		}
	}
	if ti.jwks != 1 {
		t.Errorf("the JWKS was fetched %d times within %v, want once: forged kids must not flood the issuer", ti.jwks, refetchEvery)
	}
	// Later, an unknown kid fetches the keys again: the issuer may have
	// rotated them.
	a.Now = func() time.Time { return epoch.Add(refetchEvery + time.Second) }
	a.AuthenticateToken(context.Background(), unknown)
	if ti.jwks != 2 {
		t.Errorf("the JWKS was fetched %d times, want a second time after %v", ti.jwks, refetchEvery)
	}
}

func TestParseErrors(t *testing.T) {
	head := "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n"
	for cfg, want := range map[string]string{
		"apiVersion: v1\nkind: AuthenticationConfiguration\n":                                                                             `unknown apiVersion "v1"`,
		head + "jwt:\n- issuer: {url: http://x, audiences: [a]}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n":                 "jwt[0].issuer.url: Invalid value: \"http://x\": URL scheme must be https",
		head + "jwt:\n- issuer: {url: https://x}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n":                                "jwt[0].issuer.audiences: Required value",
		head + "jwt:\n- issuer: {url: https://x, audiences: [a]}\n  claimMappings: {username: {claim: sub}}\n":                            "jwt[0].claimMappings.username.prefix: Required value",
		head + "jwt:\n- issuer: {url: https://x, audiences: [a]}\n  claimMappings: {username: {}}\n":                                      "jwt[0].claimMappings.username: Required value",
		head + "jwt:\n- issuer: {url: https://x, audiences: [a]}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n  surprise: 1\n": `unknown field "surprise"`,
	} {
		if _, err := Parse([]byte(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s\nerr = %v, want %q", cfg, err, want)
		}
	}
	c, err := Parse([]byte(head + "jwt:\n- issuer: {url: https://x, audiences: [a]}\n  claimMappings: {username: {expression: 'claims.sub +'}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "claimMappings.username.expression: compilation failed") {
		t.Errorf("a bad expression: %v", err)
	}
}

// FuzzClaims maps arbitrary claims: errors, never panics.
func FuzzClaims(f *testing.F) {
	f.Add(`{"sub":"a","groups":["x"],"email":"a@b","roles":["r"],"tenant":"t"}`)
	f.Add(`{"sub":1,"groups":{"a":1},"roles":"x"}`)
	cfgs := []JWT{
		{ClaimMappings: ClaimMappings{Username: PrefixedClaimOrExpression{Claim: "sub", Prefix: new("p:")}, Groups: PrefixedClaimOrExpression{Claim: "groups", Prefix: new("")}}},
		{ClaimMappings: ClaimMappings{Username: PrefixedClaimOrExpression{Expression: "claims.email.split('@')[0]"}, Groups: PrefixedClaimOrExpression{Expression: "claims.roles"},
			Extra: []ExtraMapping{{Key: "k", ValueExpression: "claims.tenant"}}}},
	}
	var as []*Authenticator
	for _, c := range cfgs {
		a, err := newAuthenticator(c)
		if err != nil {
			f.Fatal(err)
		}
		as = append(as, a)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var claims map[string]any
		if json.Unmarshal([]byte(in), &claims) != nil {
			return
		}
		for _, a := range as {
			if u, err := a.user(claims); err == nil && u.Name == "" {
				t.Errorf("an empty username from %s", in)
			}
		}
	})
}

func TestPrefetch(t *testing.T) {
	ti := newTestIssuer(t)
	a := authenticator(t, config(ti, "  claimMappings:\n    username: {claim: sub, prefix: \"\"}\n"))
	a.Prefetch(context.Background())
	a.Prefetch(context.Background())
	if ti.jwks != 1 {
		t.Fatalf("JWKS fetched %d times, want once", ti.jwks)
	}
	claims := map[string]any{"iss": ti.srv.URL, "aud": "crdserver", "sub": "alice", "exp": epoch.Add(time.Hour).Unix()}
	if _, ok, err := a.AuthenticateToken(context.Background(), ti.sign(t, claims)); !ok || ti.jwks != 1 {
		t.Errorf("after a prefetch: ok=%v err=%v, fetches %d", ok, err, ti.jwks)
	}
}
