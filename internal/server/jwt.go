package server

import (
	"context"
	"net/http"
	"slices"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authn/oidc"
)

// loadAuthenticationConfig reads --authentication-config: its JWT issuers
// become token authenticators, and its anonymous section, when present,
// decides anonymous access (optionally only for some paths).
func loadAuthenticationConfig(path string) (tokens []authn.TokenAuthenticator, anonymous authn.Authenticator, err error) {
	cfg, err := oidc.Load(path)
	if err != nil {
		return nil, nil, err
	}
	jwts, err := oidc.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	for _, j := range jwts {
		go j.Prefetch(context.Background())
		tokens = append(tokens, j)
	}
	if a := cfg.Anonymous; a != nil && a.Enabled {
		anonymous = authn.AllowAnonymous
		if len(a.Conditions) > 0 {
			var paths []string
			for _, c := range a.Conditions {
				paths = append(paths, c.Path)
			}
			anonymous = authn.AuthenticatorFunc(func(r *http.Request) (*authn.User, bool, error) {
				if slices.Contains(paths, r.URL.Path) {
					return authn.AnonymousUser(), true, nil
				}
				return nil, false, nil
			})
		}
	}
	return tokens, anonymous, nil
}
