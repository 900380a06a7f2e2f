package server

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crdserver/crdserver/internal/authn"
)

func TestAnonymousFromAuthenticationConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "authn.yaml")
	os.WriteFile(path, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
anonymous:
  enabled: true
  conditions:
  - path: /livez
  - path: /readyz
`), 0o600)
	s := &Server{cfg: Config{DataDir: t.TempDir(), AuthnConfig: AuthnConfig{AuthenticationConfigFile: path}}}
	a, err := s.newAuthentication()
	if err != nil {
		t.Fatal(err)
	}
	au := a.authenticator(nil)
	for p, anonymous := range map[string]bool{"/livez": true, "/readyz": true, "/apis": false, "/livez/ping": false} {
		u, ok, err := au.Authenticate(httptest.NewRequest("GET", p, nil))
		if ok != anonymous || err != nil || (ok && u.Name != authn.Anonymous) {
			t.Errorf("%s: %+v %v %v, want anonymous=%v", p, u, ok, err, anonymous)
		}
	}
	// A bad token is refused even where anonymous requests are allowed.
	r := httptest.NewRequest("GET", "/livez", nil)
	r.Header.Set("Authorization", "Bearer nope")
	if _, ok, err := au.Authenticate(r); ok || err == nil {
		t.Errorf("a bad token on an anonymous path: %v %v", ok, err)
	}

	s.cfg.AnonymousAuth = true
	if _, err := s.newAuthentication(); err == nil || !strings.Contains(err.Error(), "--anonymous-auth flag cannot be set when anonymous field is configured") {
		t.Errorf("both the flag and the section: %v", err)
	}
}
