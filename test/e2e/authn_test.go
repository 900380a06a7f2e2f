package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/crdserver/crdserver/internal/authn/jws"
	"github.com/crdserver/crdserver/internal/authn/satoken"
)

// as returns srv as seen through another kubeconfig: kubectl runs with it.
func (s *server) as(t *testing.T, name string, auth *clientcmdapi.AuthInfo) *server {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{name: auth}
	cfg.Contexts = map[string]*clientcmdapi.Context{name: {Cluster: ctx.Cluster, AuthInfo: name}}
	cfg.CurrentContext = name
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	cp := *s
	cp.Kubeconfig = path
	return &cp
}

// tokenUser is srv through a kubeconfig holding a bearer token.
func (s *server) tokenUser(t *testing.T, name, token string) *server {
	return s.as(t, name, &clientcmdapi.AuthInfo{Token: token})
}

// whoami runs `kubectl auth whoami` and returns what the server said.
func whoami(t *testing.T, srv *server, args ...string) authenticationv1.UserInfo {
	t.Helper()
	out := kubectl(t, srv, append([]string{"auth", "whoami", "-o", "json"}, args...)...)
	var ssr authenticationv1.SelfSubjectReview
	if err := json.Unmarshal([]byte(out), &ssr); err != nil {
		t.Fatalf("whoami output %q: %v", out, err)
	}
	return ssr.Status.UserInfo
}

func wantUser(t *testing.T, what string, got authenticationv1.UserInfo, name string, groups ...string) {
	t.Helper()
	if got.Username != name || !slices.Equal(got.Groups, groups) {
		t.Errorf("%s: whoami says %q %v, want %q %v", what, got.Username, got.Groups, name, groups)
	}
}

// clientCert issues a client certificate from the server's generated CA.
func clientCert(t *testing.T, dir, cn string, orgs ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	ca, err := tls.LoadX509KeyPair(filepath.Join(dir, "pki", "ca.crt"), filepath.Join(dir, "pki", "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), ca.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// rawRequest sends one request with the given Authorization header (none
// when empty) and no client certificate, and returns the code and body.
func rawRequest(t *testing.T, srv *server, method, path, authorization string, body []byte) (int, []byte) {
	t.Helper()
	return rawRequestHeaders(t, srv, method, path, authorization, body, nil)
}

func rawRequestHeaders(t *testing.T, srv *server, method, path, authorization string, body []byte, headers map[string]string) (int, []byte) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: srv.caPool(t)}}}
	req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// wantUnauthorized checks upstream's 401 Status.
func wantUnauthorized(t *testing.T, what string, code int, body []byte) {
	t.Helper()
	var st metav1.Status
	if code != 401 || json.Unmarshal(body, &st) != nil || st.Reason != metav1.StatusReasonUnauthorized || st.Message != "Unauthorized" {
		t.Errorf("%s: %d %s, want upstream's 401 Unauthorized Status", what, code, body)
	}
}

func TestAuthenticationKubeconfigs(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	os.WriteFile(tokens, []byte("alice-token,alice,uid-alice,\"dev,ops\"\nbob-token,bob,uid-bob\n"), 0o600)
	srv := startServerArgs(t, dir, "--token-auth-file", tokens, "--anonymous-auth")

	t.Run("certificate", func(t *testing.T) {
		wantUser(t, "admin", whoami(t, srv), "admin", "system:masters", "system:authenticated")
		cert, key := clientCert(t, dir, "carol", "qa")
		carol := srv.as(t, "carol", &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key})
		wantUser(t, "carol", whoami(t, carol), "carol", "qa", "system:authenticated")
	})
	t.Run("static token", func(t *testing.T) {
		alice := srv.tokenUser(t, "alice", "alice-token")
		got := whoami(t, alice)
		wantUser(t, "alice", got, "alice", "dev", "ops", "system:authenticated")
		if got.UID != "uid-alice" {
			t.Errorf("alice's uid %q", got.UID)
		}
		// Discovery works for a user who is not an admin.
		if out := kubectl(t, alice, "api-resources", "--api-group=authentication.k8s.io", "-o", "name"); !strings.Contains(out, "selfsubjectreviews.authentication.k8s.io") {
			t.Errorf("api-resources as alice:\n%s", out)
		}
		_, stderr, err := kubectlResult(srv.tokenUser(t, "mallory", "wrong-token"), "auth", "whoami")
		if err == nil || !strings.Contains(stderr, "Unauthorized") {
			t.Errorf("a wrong static token: err %v, stderr %s", err, stderr)
		}
	})
	t.Run("service account token", func(t *testing.T) {
		kubectl(t, srv, "create", "serviceaccount", "bot", "-n", "default")
		token := strings.TrimSpace(kubectl(t, srv, "create", "token", "bot", "-n", "default"))
		bot := srv.tokenUser(t, "bot", token)
		got := whoami(t, bot)
		wantUser(t, "bot", got, "system:serviceaccount:default:bot", "system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated")
		if id := got.Extra[satoken.CredentialIDKey]; len(id) != 1 || !strings.HasPrefix(id[0], "JTI=") {
			t.Errorf("bot's credential id: %v", got.Extra)
		}
		// The issuer's discovery documents, for a service account.
		code, body := rawRequest(t, srv, "GET", "/.well-known/openid-configuration", "Bearer "+token, nil)
		var doc map[string]any
		if code != 200 || json.Unmarshal(body, &doc) != nil || doc["issuer"] != satoken.DefaultIssuer {
			t.Errorf("openid-configuration: %d %s", code, body)
		}
		code, body = rawRequest(t, srv, "GET", "/openid/v1/jwks", "Bearer "+token, nil)
		var set jws.JWKS
		if code != 200 || json.Unmarshal(body, &set) != nil || len(set.Keys) != 1 || set.Keys[0].Kty != "EC" {
			t.Errorf("jwks: %d %s", code, body)
		}

		// A recreated account with the same name has another UID: the
		// old token stops working, and so does a deleted one's.
		kubectl(t, srv, "delete", "serviceaccount", "bot", "-n", "default")
		waitFor(t, 30*time.Second, "the deleted account's token to be refused", func() (bool, error) {
			_, stderr, err := kubectlResult(bot, "auth", "whoami")
			return err != nil && strings.Contains(stderr, "You must be logged in to the server (Unauthorized)"), nil
		})
		code, body = rawRequest(t, srv, "GET", "/apis", "Bearer "+token, nil)
		wantUnauthorized(t, "deleted account's token", code, body)
		kubectl(t, srv, "create", "serviceaccount", "bot", "-n", "default")
		time.Sleep(time.Second) // the watch cache sees the new account
		code, body = rawRequest(t, srv, "GET", "/apis", "Bearer "+token, nil)
		wantUnauthorized(t, "recreated account, old token", code, body)
		fresh := strings.TrimSpace(kubectl(t, srv, "create", "token", "bot", "-n", "default"))
		wantUser(t, "recreated bot", whoami(t, srv.tokenUser(t, "bot2", fresh)), "system:serviceaccount:default:bot",
			"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated")
	})
	t.Run("create token audience and duration", func(t *testing.T) {
		kubectl(t, srv, "create", "serviceaccount", "vault-client", "-n", "default")
		before := time.Now()
		token := strings.TrimSpace(kubectl(t, srv, "create", "token", "vault-client", "-n", "default", "--audience", "vault", "--duration", "20m"))
		parsed, err := jws.Parse(token)
		if err != nil {
			t.Fatal(err)
		}
		var claims struct {
			Aud []string `json:"aud"`
			Exp int64    `json:"exp"`
			Sub string   `json:"sub"`
		}
		json.Unmarshal(parsed.Payload, &claims)
		exp := time.Unix(claims.Exp, 0)
		if !slices.Equal(claims.Aud, []string{"vault"}) || exp.Before(before.Add(19*time.Minute)) || exp.After(before.Add(21*time.Minute)) ||
			claims.Sub != "system:serviceaccount:default:vault-client" {
			t.Errorf("token claims %s", parsed.Payload)
		}
		// Not for this server: its audience is vault's.
		code, body := rawRequest(t, srv, "GET", "/apis", "Bearer "+token, nil)
		wantUnauthorized(t, "a token for another audience", code, body)
		// But a TokenReview for audience vault accepts it.
		tr, err := srv.Client.AuthenticationV1().TokenReviews().Create(context.Background(), &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{"vault"}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !tr.Status.Authenticated || tr.Status.User.Username != "system:serviceaccount:default:vault-client" || !slices.Equal(tr.Status.Audiences, []string{"vault"}) {
			t.Errorf("TokenReview status %+v", tr.Status)
		}
		_, stderr, err := kubectlResult(srv, "create", "token", "vault-client", "-n", "default", "--duration", "1m")
		if err == nil || !strings.Contains(stderr, "may not specify a duration less than 10 minutes") {
			t.Errorf("a 1m token: %v %s", err, stderr)
		}
		_, stderr, err = kubectlResult(srv, "create", "token", "nobody", "-n", "default")
		if err == nil || !strings.Contains(stderr, `serviceaccounts "nobody" not found`) {
			t.Errorf("token for a missing account: %v %s", err, stderr)
		}
	})
	t.Run("token bound to a secret", func(t *testing.T) {
		kubectl(t, srv, "create", "serviceaccount", "binder", "-n", "default")
		kubectl(t, srv, "create", "secret", "generic", "binding", "-n", "default", "--from-literal=a=b")
		token := strings.TrimSpace(kubectl(t, srv, "create", "token", "binder", "-n", "default", "--bound-object-kind=Secret", "--bound-object-name=binding"))
		wantUser(t, "binder", whoami(t, srv.tokenUser(t, "binder", token)), "system:serviceaccount:default:binder",
			"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated")
		_, stderr, err := kubectlResult(srv, "create", "token", "binder", "-n", "default", "--bound-object-kind=Secret", "--bound-object-name=nosuch")
		if err == nil || !strings.Contains(stderr, `secrets "nosuch" not found`) {
			t.Errorf("a token bound to a missing secret: %v %s", err, stderr)
		}
		// The token works while its Secret exists.
		kubectl(t, srv, "delete", "secret", "binding", "-n", "default")
		waitFor(t, 30*time.Second, "the token of a deleted secret to be refused", func() (bool, error) {
			code, _ := rawRequest(t, srv, "GET", "/apis", "Bearer "+token, nil)
			return code == 401, nil
		})
	})
	t.Run("admission of token requests", func(t *testing.T) {
		policy := filepath.Join(t.TempDir(), "policy.yaml")
		os.WriteFile(policy, []byte(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: token-audiences}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["serviceaccounts/token"]
  validations:
  - expression: "!has(object.spec.audiences) || !object.spec.audiences.exists(a, a == 'forbidden')"
    message: audience forbidden is not for service accounts
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: token-audiences}
spec:
  policyName: token-audiences
  validationActions: [Deny]
`), 0o600)
		kubectl(t, srv, "apply", "-f", policy)
		kubectl(t, srv, "create", "serviceaccount", "limited", "-n", "default")
		waitFor(t, 30*time.Second, "the policy to refuse a token request", func() (bool, error) {
			_, stderr, err := kubectlResult(srv, "create", "token", "limited", "-n", "default", "--audience", "forbidden")
			return err != nil && strings.Contains(stderr, "audience forbidden is not for service accounts"), nil
		})
		kubectl(t, srv, "create", "token", "limited", "-n", "default", "--audience", "allowed")
		kubectl(t, srv, "delete", "-f", policy)
	})
	t.Run("bad tokens", func(t *testing.T) {
		key, err := satoken.LoadOrCreateKey(filepath.Join(dir, "pki", "service-account.key"))
		if err != nil {
			t.Fatal(err)
		}
		kubectl(t, srv, "create", "serviceaccount", "old", "-n", "default")
		uid := strings.TrimSpace(kubectl(t, srv, "get", "serviceaccount", "old", "-n", "default", "-o", "jsonpath={.metadata.uid}"))
		expired := &satoken.Issuer{URL: satoken.DefaultIssuer, Key: key, Now: func() time.Time { return time.Now().Add(-2 * time.Hour) }}
		expiredToken, _, err := expired.Issue("default", "old", uid, nil, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		forger := &satoken.Issuer{URL: satoken.DefaultIssuer, Key: otherKey}
		forged, _, err := forger.Issue("default", "old", uid, nil, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for what, auth := range map[string]string{
			"malformed JWT":         "Bearer eyJhbGciOiJFUzI1NiJ9.bm90IGpzb24.AAAA",
			"garbage":               "Bearer !!!",
			"expired":               "Bearer " + expiredToken,
			"signed by another key": "Bearer " + forged,
			"oversized token":       "Bearer " + strings.Repeat("a", 200<<10),
			"unknown static token":  "Bearer nope",
		} {
			code, body := rawRequest(t, srv, "GET", "/api/v1/namespaces", auth, nil)
			wantUnauthorized(t, what, code, body)
		}
		select {
		case <-srv.exited:
			t.Fatal("the server died on bad tokens")
		default:
		}
	})
	t.Run("discovery and OpenAPI", func(t *testing.T) {
		out := kubectl(t, srv, "api-resources", "--api-group=authentication.k8s.io", "-o", "wide")
		for _, want := range []string{"selfsubjectreviews", "tokenreviews", "SelfSubjectReview   create", "TokenReview         create"} {
			if !strings.Contains(out, want) {
				t.Errorf("api-resources lacks %q:\n%s", want, out)
			}
		}
		var v1 metav1.APIResourceList
		json.Unmarshal([]byte(kubectl(t, srv, "get", "--raw", "/api/v1")), &v1)
		i := slices.IndexFunc(v1.APIResources, func(r metav1.APIResource) bool { return r.Name == "serviceaccounts/token" })
		if i < 0 || v1.APIResources[i].Kind != "TokenRequest" || v1.APIResources[i].Group != "authentication.k8s.io" || !slices.Equal(v1.APIResources[i].Verbs, []string{"create"}) {
			t.Errorf("serviceaccounts/token in /api/v1: %+v", v1.APIResources)
		}
		doc := kubectl(t, srv, "get", "--raw", "/openapi/v3/apis/authentication.k8s.io/v1")
		for _, want := range []string{`"io.k8s.api.authentication.v1.TokenReview"`, `"io.k8s.api.authentication.v1.SelfSubjectReview"`, `"/apis/authentication.k8s.io/v1/selfsubjectreviews"`} {
			if !strings.Contains(doc, want) {
				t.Errorf("OpenAPI v3 of authentication.k8s.io/v1 lacks %s", want)
			}
		}
		core := kubectl(t, srv, "get", "--raw", "/openapi/v3/api/v1")
		if !strings.Contains(core, `"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"`) || !strings.Contains(core, `"io.k8s.api.authentication.v1.TokenRequest"`) {
			t.Errorf("OpenAPI v3 of v1 lacks the TokenRequest subresource")
		}
		if out := kubectl(t, srv, "explain", "selfsubjectreviews.status.userInfo"); !strings.Contains(out, "username") {
			t.Errorf("kubectl explain:\n%s", out)
		}
	})
	t.Run("anonymous", func(t *testing.T) {
		// Upstream's bootstrap policy gives system:unauthenticated only the
		// public info (/version, health): whoami is refused, and the refusal
		// names the anonymous user.
		code, body := rawRequest(t, srv, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", "",
			[]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
		var st metav1.Status
		if json.Unmarshal(body, &st); code != 403 || st.Message != `selfsubjectreviews.authentication.k8s.io is forbidden: User "system:anonymous" cannot create resource "selfsubjectreviews" in API group "authentication.k8s.io" at the cluster scope` {
			t.Errorf("anonymous whoami: %d %s", code, body)
		}
		if code, body := rawRequest(t, srv, "GET", "/version", "", nil); code != 200 {
			t.Errorf("anonymous /version: %d %s", code, body)
		}
	})
	t.Run("impersonation", func(t *testing.T) {
		wantUser(t, "--as alice", whoami(t, srv, "--as", "alice", "--as-group", "g1"), "alice", "g1", "system:authenticated")
		wantUser(t, "--as a service account", whoami(t, srv, "--as", "system:serviceaccount:ns1:robot"), "system:serviceaccount:ns1:robot",
			"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated")
		got := whoami(t, srv, "--as", "alice", "--as-uid", "u-9")
		if got.UID != "u-9" {
			t.Errorf("--as-uid: %+v", got)
		}
		code, body := rawRequestHeaders(t, srv, "GET", "/api/v1/namespaces", "Bearer alice-token", nil, map[string]string{"Impersonate-Group": "g1"})
		var st metav1.Status
		if json.Unmarshal(body, &st); code != 400 || st.Message != "requested [{Group  g1    }] without impersonating a user" {
			t.Errorf("a group without a user: %d %s", code, body)
		}

		// A user who may not impersonate gets upstream's 403, until RBAC
		// grants the impersonate verb on that one user.
		alice := srv.tokenUser(t, "alice", "alice-token")
		_, stderr, err := kubectlResult(alice, "get", "--raw", "/apis", "--as", "bob")
		if want := `users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`; err == nil || !strings.Contains(stderr, want) {
			t.Errorf("alice --as bob without the right: %v\n%s", err, stderr)
		}
		kubectl(t, srv, "create", "clusterrole", "impersonate-bob", "--verb=impersonate", "--resource=users", "--resource-name=bob")
		kubectl(t, srv, "create", "clusterrolebinding", "alice-impersonates-bob", "--clusterrole=impersonate-bob", "--user=alice")
		waitFor(t, 30*time.Second, "alice to impersonate bob", func() (bool, error) {
			_, _, err := kubectlResult(alice, "auth", "whoami", "--as", "bob")
			return err == nil, nil
		})
		wantUser(t, "alice --as bob", whoami(t, alice, "--as", "bob"), "bob", "system:authenticated")
		_, stderr, err = kubectlResult(alice, "get", "--raw", "/apis", "--as", "bob", "--as-group", "system:masters")
		if want := `groups "system:masters" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope`; err == nil || !strings.Contains(stderr, want) {
			t.Errorf("alice --as bob --as-group system:masters: %v\n%s", err, stderr)
		}
	})
}

func TestAnonymousOffByDefault(t *testing.T) {
	srv := startServer(t, t.TempDir())
	code, body := rawRequest(t, srv, "GET", "/apis", "", nil)
	wantUnauthorized(t, "no credentials", code, body)
	code, body = rawRequest(t, srv, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", "",
		[]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
	wantUnauthorized(t, "anonymous whoami", code, body)
}
