package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/authn/jws"
)

// oidcIssuer is an OpenID provider the test runs on loopback, over TLS:
// discovery document and JWKS, as real providers serve them.
type oidcIssuer struct {
	srv *httptest.Server
	key *ecdsa.PrivateKey
}

func startOIDCIssuer(t *testing.T) *oidcIssuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	o := &oidcIssuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": o.srv.URL, "jwks_uri": o.srv.URL + "/jwks", "id_token_signing_alg_values_supported": []string{"ES256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		jwk, _ := jws.PublicJWK(key.Public(), "key-1")
		json.NewEncoder(w).Encode(jws.JWKS{Keys: []jws.JWK{jwk}})
	})
	o.srv = httptest.NewTLSServer(mux)
	t.Cleanup(o.srv.Close)
	return o
}

// token signs an ID token for sub with the given extra claims.
func (o *oidcIssuer) token(t *testing.T, key *ecdsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	c := map[string]any{"iss": o.srv.URL, "aud": "crdserver", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		c[k] = v
	}
	tok, err := jws.Sign(key, "key-1", c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestOIDCKubeconfig(t *testing.T) {
	o := startOIDCIssuer(t)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: o.srv.Certificate().Raw})
	config := `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: ` + o.srv.URL + `
    audiences: [crdserver]
    certificateAuthority: |
      ` + strings.ReplaceAll(strings.TrimSpace(string(caPEM)), "\n", "\n      ") + `
  claimValidationRules:
  - claim: hd
    requiredValue: example.com
  claimMappings:
    username:
      claim: email
      prefix: "oidc:"
    groups:
      expression: "claims.roles.map(r, 'oidc:' + r)"
    uid:
      claim: sub
    extra:
    - key: example.com/tenant
      valueExpression: claims.tenant
  userValidationRules:
  - expression: "!user.username.startsWith('oidc:system:')"
    message: username cannot use the system prefix
`
	path := filepath.Join(t.TempDir(), "authn.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServerArgs(t, t.TempDir(), "--authentication-config", path)

	good := map[string]any{"sub": "12345", "email": "dana@example.com", "email_verified": true, "hd": "example.com", "roles": []string{"dev", "oncall"}, "tenant": "blue"}
	dana := srv.tokenUser(t, "dana", o.token(t, o.key, good))
	got := whoami(t, dana)
	wantUser(t, "OIDC user", got, "oidc:dana@example.com", "oidc:dev", "oidc:oncall", "system:authenticated")
	if got.UID != "12345" || len(got.Extra["example.com/tenant"]) != 1 || got.Extra["example.com/tenant"][0] != "blue" {
		t.Errorf("OIDC uid and extra: %+v", got)
	}
	if out := kubectl(t, dana, "version", "-o", "json"); !strings.Contains(out, "serverVersion") {
		t.Errorf("kubectl version as an OIDC user:\n%s", out)
	}

	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	with := func(k string, v any) map[string]any {
		c := map[string]any{}
		for kk, vv := range good {
			c[kk] = vv
		}
		c[k] = v
		return c
	}
	for what, token := range map[string]string{
		"another domain (claim validation rule)":      o.token(t, o.key, with("hd", "evil.com")),
		"a system: username (user validation rule)":   o.token(t, o.key, with("email", "system:admin")),
		"an unverified email":                         o.token(t, o.key, with("email_verified", false)),
		"another audience":                            o.token(t, o.key, with("aud", "someone-else")),
		"expired":                                     o.token(t, o.key, with("exp", time.Now().Add(-time.Hour).Unix())),
		"signed by another key with the issuer's kid": o.token(t, other, good),
	} {
		_, stderr, err := kubectlResult(srv.tokenUser(t, "bad", token), "auth", "whoami")
		if err == nil || !strings.Contains(stderr, "Unauthorized") {
			t.Errorf("%s: err %v, stderr %s", what, err, stderr)
		}
		code, body := rawRequest(t, srv, "GET", "/apis", "Bearer "+token, nil)
		wantUnauthorized(t, what, code, body)
	}
}
