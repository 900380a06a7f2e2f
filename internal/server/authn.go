package server

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authn/satoken"
	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// authentication is how the server knows its callers, built from Config:
// bearer token authenticators (token file, service account tokens, JWT
// issuers), the service account token issuer and the anonymous fallback.
type authentication struct {
	issuer *satoken.Issuer
	tokens authn.TokenUnion
	// anonymous identifies requests without credentials; nil refuses them.
	anonymous authn.Authenticator
	// discovery serves the issuer's OpenID documents.
	discovery http.Handler
}

// saKeyFile is the service account signing key, under the data dir.
const saKeyFile = "pki/service-account.key"

func (s *Server) newAuthentication() (*authentication, error) {
	key, err := satoken.LoadOrCreateKey(filepath.Join(s.cfg.DataDir, saKeyFile))
	if err != nil {
		return nil, err
	}
	url := s.cfg.ServiceAccountIssuer
	if url == "" {
		url = satoken.DefaultIssuer
	}
	a := &authentication{
		issuer: &satoken.Issuer{URL: url, Key: key, Accounts: satoken.AccountsFunc(s.serviceAccount), Secrets: satoken.AccountsFunc(s.boundSecret)},
	}
	if s.cfg.Clock != nil {
		a.issuer.Now = s.cfg.Clock.Now
	}
	if s.cfg.AnonymousAuth {
		a.anonymous = authn.AllowAnonymous
	}
	if s.cfg.TokenAuthFile != "" {
		tf, err := authn.LoadTokenFile(s.cfg.TokenAuthFile)
		if err != nil {
			return nil, err
		}
		a.tokens = append(a.tokens, authn.AudienceAgnostic(a.issuer.APIAudiences(), tf))
	}
	a.tokens = append(a.tokens, a.issuer)
	if s.cfg.AuthenticationConfigFile != "" {
		jwts, anonymous, err := loadAuthenticationConfig(s.cfg.AuthenticationConfigFile)
		if err != nil {
			return nil, err
		}
		for _, j := range jwts {
			a.tokens = append(a.tokens, authn.AudienceAgnostic(a.issuer.APIAudiences(), j))
		}
		if anonymous != nil {
			if s.cfg.AnonymousAuth {
				return nil, errors.New("--anonymous-auth flag cannot be set when anonymous field is configured in authentication configuration file")
			}
			a.anonymous = anonymous
		}
	}
	if a.discovery, err = a.issuer.DiscoveryHandler(); err != nil {
		return nil, fmt.Errorf("service account issuer: %w", err)
	}
	return a, nil
}

// authenticator identifies a request's caller: a client certificate or a
// bearer token, else (when allowed) system:anonymous.
func (a *authentication) authenticator(clientCAs *x509.CertPool) authn.Authenticator {
	var au authn.Authenticator = authn.Union{&authn.X509{Roots: clientCAs}, authn.Bearer{Tokens: a.tokens}}
	if a.anonymous != nil {
		au = authn.FailOnError(au, a.anonymous)
	}
	return au
}

// definitions are the authentication.k8s.io reviews.
func (a *authentication) definitions() []*registry.Definition {
	return []*registry.Definition{builtin.TokenReviews(a.tokens, a.issuer.APIAudiences()), builtin.SelfSubjectReviews()}
}

// serviceAccount reads a ServiceAccount from the watch cache, for token
// verification: every request with a service account token asks.
func (s *Server) serviceAccount(ctx context.Context, ns, name string) (satoken.Account, bool, error) {
	return s.cachedLife(ctx, builtin.ServiceAccounts().GroupResource(), ns, name)
}

// boundSecret reads the Secret a service account token is bound to from
// the watch cache, as serviceAccount reads the account: its uid and
// deletion.
func (s *Server) boundSecret(ctx context.Context, ns, name string) (satoken.Account, bool, error) {
	return s.cachedLife(ctx, builtin.Secrets().GroupResource(), ns, name)
}

// secretUID is the uid of a Secret, which a token request binds a token
// to.
func (s *Server) secretUID(ctx context.Context, ns, name string) (string, bool, error) {
	obj, found, err := s.boundSecret(ctx, ns, name)
	return obj.UID, found, err
}

// cachedLife reads the uid and deletionTimestamp of gr's ns/name from
// the watch cache.
func (s *Server) cachedLife(ctx context.Context, gr schema.GroupResource, ns, name string) (satoken.Account, bool, error) {
	st, ok := s.stores.Store(gr)
	if !ok {
		return satoken.Account{}, false, fmt.Errorf("no %s store", gr.Resource)
	}
	it, err := st.Cache.Get(ctx, st.Key(ns, name), watchcache.GetOptions{ResourceVersion: "0"})
	if errors.Is(err, storage.ErrNotFound) {
		return satoken.Account{}, false, nil
	}
	if err != nil {
		return satoken.Account{}, false, err
	}
	// Decoded once per revision of the object, however many requests
	// its tokens make.
	v := it.View(accountView{}, func(it *watchcache.Item) any {
		var obj struct {
			Metadata struct {
				UID               string     `json:"uid"`
				DeletionTimestamp *time.Time `json:"deletionTimestamp"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(it.JSON(), &obj); err != nil {
			return fmt.Errorf("decoding %s %s/%s: %w", gr.Resource, ns, name, err)
		}
		acct := satoken.Account{UID: obj.Metadata.UID}
		if obj.Metadata.DeletionTimestamp != nil {
			acct.Deleting = *obj.Metadata.DeletionTimestamp
		}
		return acct
	})
	if err, ok := v.(error); ok {
		return satoken.Account{}, false, err
	}
	return v.(satoken.Account), true, nil
}

// accountView keys the decoded account among a cache item's views.
type accountView struct{}
