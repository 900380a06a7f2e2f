// Package authn establishes who is calling: an Authenticator turns a request
// into a User. Authorization (may they?) is package authz.
package authn

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Well-known users and groups, as upstream names them.
const (
	Anonymous       = "system:anonymous"
	Authenticated   = "system:authenticated"
	Unauthenticated = "system:unauthenticated"
	Masters         = "system:masters"
)

// User is an authenticated identity.
type User struct {
	Name   string
	UID    string
	Groups []string
	// Extra is upstream's user.Info extra: more attributes an
	// authenticator vouches for (a service account token's pod and
	// credential id, OIDC claim mappings, Impersonate-Extra-*), which
	// authorizers and access reviews see.
	Extra map[string][]string
}

// Authenticator identifies the caller of a request. It returns ok=false
// when the request carries no credentials it understands, and an error when
// it carries credentials that are invalid; either way the request is
// unauthenticated.
type Authenticator interface {
	Authenticate(r *http.Request) (u *User, ok bool, err error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (*User, bool, error)

// Authenticate calls f(r).
func (f AuthenticatorFunc) Authenticate(r *http.Request) (*User, bool, error) { return f(r) }

var (
	_ Authenticator = AuthenticatorFunc(nil)
	_ Authenticator = (*X509)(nil)
	_ Authenticator = Union(nil)
)

// X509 authenticates TLS client certificates issued by Roots: the user is
// the leaf's Subject CommonName and the groups its Organizations, as
// kube-apiserver maps them. A certificate without a CommonName identifies
// no one.
type X509 struct {
	Roots *x509.CertPool
	// Now is the verification time; nil means time.Now.
	Now func() time.Time

	// verified remembers chains already verified (**x509.Certificate, the
	// chain's first element → *User); cached counts entries since the last
	// clear.
	verified sync.Map
	cached   atomic.Int64
}

// Authenticate verifies the peer's certificate chain for client auth.
func (a *X509) Authenticate(r *http.Request) (*User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	now := time.Now()
	if a.Now != nil {
		now = a.Now()
	}
	// A connection presents the same certificate on every request: verify
	// it once per connection (ECDSA verification was the costliest step of
	// a GET), until it expires.
	// The key is the connection's chain (its backing array), not the leaf
	// alone: the same leaf may arrive with other intermediates.
	key := &r.TLS.PeerCertificates[0]
	if u, ok := a.verified.Load(key); ok && now.Before(leaf.NotAfter) {
		return u.(*User), true, nil
	}
	opts := x509.VerifyOptions{
		Roots:         a.Roots,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		CurrentTime:   now,
	}
	for _, c := range r.TLS.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(opts); err != nil {
		return nil, false, fmt.Errorf("verifying client certificate SN=%s, CN=%q: %w", leaf.SerialNumber, leaf.Subject.CommonName, err)
	}
	if leaf.Subject.CommonName == "" {
		return nil, false, nil
	}
	u := WithAuthenticatedGroup(&User{
		Name:   leaf.Subject.CommonName,
		Groups: slices.Clone(leaf.Subject.Organization),
	})
	if a.cached.Add(1) > maxVerifiedCache {
		// Bound the cache: forget everything now and then rather than
		// track connection lifetimes.
		a.verified.Clear()
		a.cached.Store(0)
	}
	a.verified.Store(key, u)
	return u, true, nil
}

// maxVerifiedCache bounds how many verified certificates X509 remembers.
const maxVerifiedCache = 4096

// WithAuthenticatedGroup adds system:authenticated to u's groups unless it
// is there already (upstream adds it to every authenticated user).
func WithAuthenticatedGroup(u *User) *User {
	if !slices.Contains(u.Groups, Authenticated) {
		u.Groups = append(u.Groups, Authenticated)
	}
	return u
}

// Union tries each authenticator in order; the first that identifies the
// caller wins. When none does, the errors of those that failed are joined.
type Union []Authenticator

// Authenticate implements Authenticator.
func (u Union) Authenticate(r *http.Request) (*User, bool, error) {
	var errs []error
	for _, a := range u {
		user, ok, err := a.Authenticate(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return user, true, nil
		}
	}
	return nil, false, errors.Join(errs...)
}

type ctxKey struct{}

// WithUser returns a context carrying u.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, ctxKey{}, u)
}

// UserFrom returns the user stored by WithUser, if any.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(ctxKey{}).(*User)
	return u, ok && u != nil
}

type audiencesKey struct{}

// WithAudiences returns a context asking token authenticators to accept
// tokens for auds instead of the server's own audiences (a TokenReview's
// spec.audiences).
func WithAudiences(ctx context.Context, auds []string) context.Context {
	return context.WithValue(ctx, audiencesKey{}, auds)
}

// AudiencesFrom returns the audiences set by WithAudiences, if any.
func AudiencesFrom(ctx context.Context) ([]string, bool) {
	auds, ok := ctx.Value(audiencesKey{}).([]string)
	return auds, ok && len(auds) > 0
}

// SetFields writes u into m as upstream's UserInfo encodes it (username,
// uid, groups, extra; empty ones left out), in the unstructured form:
// admission reviews and CertificateSigningRequests carry it.
func (u *User) SetFields(m map[string]any) {
	if u.Name != "" {
		m["username"] = u.Name
	}
	if u.UID != "" {
		m["uid"] = u.UID
	}
	if len(u.Groups) > 0 {
		groups := make([]any, len(u.Groups))
		for i, g := range u.Groups {
			groups[i] = g
		}
		m["groups"] = groups
	}
	if len(u.Extra) > 0 {
		extra := make(map[string]any, len(u.Extra))
		for k, vs := range u.Extra {
			values := make([]any, len(vs))
			for i, v := range vs {
				values[i] = v
			}
			extra[k] = values
		}
		m["extra"] = extra
	}
}
