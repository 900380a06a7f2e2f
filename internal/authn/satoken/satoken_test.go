package satoken

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authn/jws"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// accounts is a fake account store.
type accounts map[string]Account

func (a accounts) ServiceAccount(_ context.Context, ns, name string) (Account, bool, error) {
	acct, ok := a[ns+"/"+name]
	return acct, ok, nil
}

func TestIssueAndAuthenticate(t *testing.T) {
	now := epoch
	clock := func() time.Time { return now }
	key := newKey(t)
	accts := accounts{"ns1/bot": {UID: "uid-1"}, "ns1/gone": {UID: "uid-2", Deleting: epoch.Add(-time.Hour)}}
	secrets := accounts{"ns1/creds": {UID: "s-1"}, "ns1/going": {UID: "s-2", Deleting: epoch.Add(-time.Hour)}}
	iss := &Issuer{URL: DefaultIssuer, Key: key, Accounts: accts, Secrets: secrets, Now: clock}
	other := &Issuer{URL: DefaultIssuer, Key: newKey(t), Accounts: accts, Now: clock}
	foreign := &Issuer{URL: "https://elsewhere", Key: key, Accounts: accts, Now: clock}

	mint := func(i *Issuer, ns, name, uid string, auds []string) string {
		tok, _, err := i.Issue(ns, name, uid, auds, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := mint(iss, "ns1", "bot", "uid-1", nil)
	bound := func(secret, uid string) string {
		tok, _, err := iss.IssueBound("ns1", "bot", "uid-1", nil, time.Hour, secret, uid)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	cases := []struct {
		name  string
		token string
		at    time.Time
		ok    bool
		err   string
	}{
		{"valid", good, epoch, true, ""},
		{"valid again, from the cache", good, epoch.Add(time.Minute), true, ""},
		{"within the leeway after expiry", good, epoch.Add(time.Hour + 30*time.Second), true, ""},
		{"expired", good, epoch.Add(2 * time.Hour), false, "service account token has expired"},
		{"not yet valid", good, epoch.Add(-time.Hour), false, "service account token is not valid yet"},
		{"signed by another key", mint(other, "ns1", "bot", "uid-1", nil), epoch, false, "invalid signature"},
		{"another audience", mint(iss, "ns1", "bot", "uid-1", []string{"vault"}), epoch, false, `token audiences ["vault"] is invalid for the target audiences ["https://kubernetes.default.svc.cluster.local"]`},
		{"deleted account", mint(iss, "ns1", "deleted", "uid-9", nil), epoch, false, `serviceaccounts "deleted" not found`},
		{"recreated account", mint(iss, "ns1", "bot", "uid-old", nil), epoch, false, "service account UID (uid-1) does not match claim (uid-old)"},
		{"account being deleted", mint(iss, "ns1", "gone", "uid-2", nil), epoch, false, "service account ns1/gone has been deleted"},
		{"bound to a Secret", bound("creds", "s-1"), epoch, true, ""},
		{"bound to a deleted Secret", bound("nosuch", "s-9"), epoch, false, "service account token has been invalidated"},
		{"bound to a recreated Secret", bound("creds", "s-old"), epoch, false, "secret UID (s-1) does not match service account secret ref claim (s-old)"},
		{"bound to a Secret being deleted", bound("going", "s-2"), epoch, false, "service account token has been invalidated"},
		{"another issuer's token", mint(foreign, "ns1", "bot", "uid-1", nil), epoch, false, ""},
		{"not a JWT", "abc", epoch, false, ""},
	}
	for _, c := range cases {
		now = c.at
		u, ok, err := iss.AuthenticateToken(context.Background(), c.token)
		if ok != c.ok || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: ok=%v err=%v; want ok=%v err %q", c.name, ok, err, c.ok, c.err)
			continue
		}
		if ok {
			want := []string{AllGroup, GroupPrefix + "ns1", authn.Authenticated}
			if u.Name != "system:serviceaccount:ns1:bot" || u.UID != "uid-1" || !reflect.DeepEqual(u.Groups, want) ||
				!strings.HasPrefix(u.Extra[CredentialIDKey][0], "JTI=") {
				t.Errorf("%s: user %+v", c.name, u)
			}
		}
	}
}

func TestTokenClaimsAreUpstreams(t *testing.T) {
	iss := &Issuer{URL: DefaultIssuer, Key: newKey(t), Now: func() time.Time { return epoch }}
	tok, exp, err := iss.Issue("ns1", "bot", "uid-1", []string{"a", "b"}, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !exp.Equal(epoch.Add(10 * time.Minute)) {
		t.Errorf("expiry %v", exp)
	}
	parsed, err := jws.Parse(tok)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal(parsed.Payload, &got)
	delete(got, "jti")
	want := map[string]any{
		"iss": DefaultIssuer, "sub": "system:serviceaccount:ns1:bot", "aud": []any{"a", "b"},
		"exp": float64(epoch.Add(10 * time.Minute).Unix()), "iat": float64(epoch.Unix()), "nbf": float64(epoch.Unix()),
		"kubernetes.io": map[string]any{"namespace": "ns1", "serviceaccount": map[string]any{"name": "bot", "uid": "uid-1"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("claims\n got %v\nwant %v", got, want)
	}
	// A token bound to a Secret names it, as upstream's.
	tok, _, err = iss.IssueBound("ns1", "bot", "uid-1", []string{"a", "b"}, 10*time.Minute, "creds", "s-1")
	if err != nil {
		t.Fatal(err)
	}
	parsed, _ = jws.Parse(tok)
	got = nil
	json.Unmarshal(parsed.Payload, &got)
	if k := got["kubernetes.io"].(map[string]any); !reflect.DeepEqual(k["secret"], map[string]any{"name": "creds", "uid": "s-1"}) {
		t.Errorf("bound claims %v", k)
	}
	if kid, _ := jws.KeyID(iss.Key.Public()); parsed.Header.Kid != kid || parsed.Header.Alg != "ES256" {
		t.Errorf("header %+v", parsed.Header)
	}
}

func TestDiscovery(t *testing.T) {
	iss := &Issuer{URL: DefaultIssuer, Key: newKey(t)}
	h, err := iss.DiscoveryHandler()
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", DiscoveryPath, nil))
	var doc map[string]any
	json.Unmarshal(rec.Body.Bytes(), &doc)
	if doc["issuer"] != DefaultIssuer || doc["jwks_uri"] != DefaultIssuer+JWKSPath || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("discovery: %s %v", rec.Body, rec.Header())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", JWKSPath, nil))
	var set jws.JWKS
	if err := json.Unmarshal(rec.Body.Bytes(), &set); err != nil || len(set.Keys) != 1 || rec.Header().Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("jwks: %s %v", rec.Body, err)
	}
	pub, err := set.Keys[0].PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	tok, _, _ := iss.Issue("ns", "sa", "u", nil, time.Hour)
	parsed, _ := jws.Parse(tok)
	if err := parsed.Verify(pub); err != nil {
		t.Errorf("a token does not verify with the published key: %v", err)
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pki", "sa.key")
	k1, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !k1.Public().(*ecdsa.PublicKey).Equal(k2.Public()) {
		t.Error("a restart made a new key: old tokens would stop working")
	}
}

func TestSplitUsername(t *testing.T) {
	for in, want := range map[string][2]string{
		"system:serviceaccount:ns:sa": {"ns", "sa"},
		"system:serviceaccount:ns":    {},
		"system:serviceaccount::sa":   {},
		"system:serviceaccount:a:b:c": {},
		"alice":                       {},
	} {
		ns, name, ok := SplitUsername(in)
		if ok != (want[0] != "") || ns != want[0] || name != want[1] {
			t.Errorf("SplitUsername(%q) = %q, %q, %v", in, ns, name, ok)
		}
	}
}

// FuzzAuthenticateToken signs arbitrary claims with the server's own key,
// so that they pass the signature check and reach claim handling: no
// panics, and nothing but a well-formed claim set for an existing account
// authenticates.
func FuzzAuthenticateToken(f *testing.F) {
	f.Add(`{"iss":"https://kubernetes.default.svc.cluster.local","aud":"https://kubernetes.default.svc.cluster.local","sub":"system:serviceaccount:ns1:bot","exp":1e12,"kubernetes.io":{"namespace":"ns1","serviceaccount":{"name":"bot","uid":"uid-1"}}}`)
	f.Add(`{"iss":"https://kubernetes.default.svc.cluster.local","aud":[1,2],"kubernetes.io":"x"}`)
	f.Add(`{"iss":"https://kubernetes.default.svc.cluster.local","exp":-1e300,"nbf":1e300}`)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	iss := &Issuer{URL: DefaultIssuer, Key: key, Accounts: accounts{"ns1/bot": {UID: "uid-1"}}, Now: func() time.Time { return epoch }}
	f.Fuzz(func(t *testing.T, payload string) {
		if !json.Valid([]byte(payload)) {
			return
		}
		tok, err := jws.Sign(key, "", json.RawMessage(payload))
		if err != nil {
			return
		}
		u, ok, _ := iss.AuthenticateToken(context.Background(), tok)
		if ok && u.Name != "system:serviceaccount:ns1:bot" {
			t.Errorf("claims %s authenticated as %q", payload, u.Name)
		}
	})
}
