// Package satoken issues and verifies ServiceAccount tokens: JWTs signed by
// the server's key, with audiences and an expiry, bound to the
// ServiceAccount's UID so that a deleted (or deleted and recreated) account's
// tokens stop working. It also serves the issuer's OpenID discovery
// documents, as upstream's /.well-known/openid-configuration and
// /openid/v1/jwks.
package satoken

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authn/jws"
)

// Groups and the user prefix upstream gives service accounts.
const (
	UserPrefix  = "system:serviceaccount:"
	AllGroup    = "system:serviceaccounts"
	GroupPrefix = "system:serviceaccounts:"
	// CredentialIDKey is the user extra naming the token (its jti).
	CredentialIDKey = "authentication.kubernetes.io/credential-id"
)

// DefaultIssuer is the issuer a server names when told none, the one most
// clusters use.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// leeway is how far clocks may disagree: exp, nbf and iat are checked
// with it, and an account deleted less than this ago still counts, as
// upstream's validator allows.
const leeway = time.Minute

// Accounts finds ServiceAccounts. found=false means there is no such
// account now; deleting is set when it is being deleted, since when.
type Accounts interface {
	ServiceAccount(ctx context.Context, namespace, name string) (acct Account, found bool, err error)
}

// Account is what verification needs of a ServiceAccount.
type Account struct {
	UID string
	// Deleting is its deletionTimestamp; zero when not being deleted.
	Deleting time.Time
}

// AccountsFunc adapts a function to Accounts.
type AccountsFunc func(ctx context.Context, namespace, name string) (Account, bool, error)

// ServiceAccount calls f.
func (f AccountsFunc) ServiceAccount(ctx context.Context, namespace, name string) (Account, bool, error) {
	return f(ctx, namespace, name)
}

var (
	_ Accounts                 = AccountsFunc(nil)
	_ authn.TokenAuthenticator = (*Issuer)(nil)
)

// Issuer signs and verifies one server's service account tokens. Its
// exported fields must not change once it is used.
type Issuer struct {
	// URL is the iss claim of the tokens it signs and accepts.
	URL string
	// Audiences are the server's own: the default audience of a token
	// request, and a token is accepted only when it names one of them.
	// Empty means [URL].
	Audiences []string
	// Key signs tokens; its public half verifies them.
	Key crypto.Signer
	// Accounts checks that a token's ServiceAccount still exists.
	Accounts Accounts
	// Secrets checks that the Secret a token is bound to still exists
	// (an Account's UID and Deleting are the Secret's); nil: such a
	// token is refused.
	Secrets Accounts
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	once sync.Once
	kid  string
	err  error

	// verified caches tokens whose signature and claims were checked
	// (token → *claims): verifying an ECDSA signature costs more than the
	// rest of a GET. The account is still looked up on every request.
	verified sync.Map
	cached   atomic.Int64
}

// maxVerified bounds the verification cache; when full it is emptied.
const maxVerified = 4096

func (i *Issuer) init() error {
	i.once.Do(func() {
		if i.Key == nil {
			i.err = errors.New("satoken: no signing key")
			return
		}
		i.kid, i.err = jws.KeyID(i.Key.Public())
	})
	return i.err
}

func (i *Issuer) now() time.Time {
	if i.Now != nil {
		return i.Now()
	}
	return time.Now()
}

// APIAudiences returns the audiences the server accepts.
func (i *Issuer) APIAudiences() []string {
	if len(i.Audiences) == 0 {
		return []string{i.URL}
	}
	return i.Audiences
}

// claims are a service account token's, as upstream writes them.
type claims struct {
	Issuer    string    `json:"iss"`
	Subject   string    `json:"sub"`
	Audience  audiences `json:"aud"`
	Expiry    int64     `json:"exp"`
	IssuedAt  int64     `json:"iat"`
	NotBefore int64     `json:"nbf"`
	ID        string    `json:"jti,omitempty"`
	Kube      *kube     `json:"kubernetes.io,omitempty"`
}

type kube struct {
	Namespace      string `json:"namespace"`
	ServiceAccount ref    `json:"serviceaccount"`
	// Secret is the Secret the token is bound to: it works while that
	// Secret exists.
	Secret *ref `json:"secret,omitempty"`
}

type ref struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

// audiences is the aud claim: one string or a list of them.
type audiences []string

func (a *audiences) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*a = audiences{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("aud: want a string or a list of strings")
	}
	*a = many
	return nil
}

// Issue signs a token for the account namespace/name with the given UID,
// for audiences (nil: the server's), valid for ttl from now. It returns
// the token and when it expires.
func (i *Issuer) Issue(namespace, name, uid string, auds []string, ttl time.Duration) (string, time.Time, error) {
	return i.IssueBound(namespace, name, uid, auds, ttl, "", "")
}

// IssueBound is Issue of a token bound to the account's Secret secretName
// with secretUID (none when secretName is empty): it works while that
// Secret exists.
func (i *Issuer) IssueBound(namespace, name, uid string, auds []string, ttl time.Duration, secretName, secretUID string) (string, time.Time, error) {
	if err := i.init(); err != nil {
		return "", time.Time{}, err
	}
	if len(auds) == 0 {
		auds = i.APIAudiences()
	}
	now := i.now()
	exp := now.Add(ttl)
	c := claims{
		Issuer: i.URL, Subject: UserPrefix + namespace + ":" + name, Audience: auds,
		Expiry: exp.Unix(), IssuedAt: now.Unix(), NotBefore: now.Unix(), ID: string(uuid.NewUUID()),
		Kube: &kube{Namespace: namespace, ServiceAccount: ref{Name: name, UID: uid}},
	}
	if secretName != "" {
		c.Kube.Secret = &ref{Name: secretName, UID: secretUID}
	}
	tok, err := jws.Sign(i.Key, i.kid, c)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("failed to generate token: %w", err)
	}
	return tok, exp, nil
}

// AuthenticateToken implements authn.TokenAuthenticator. A token that is
// not a JWT, or is another issuer's, is not the Issuer's (ok=false, no
// error): the next authenticator may know it.
func (i *Issuer) AuthenticateToken(ctx context.Context, token string) (*authn.User, bool, error) {
	if err := i.init(); err != nil {
		return nil, false, err
	}
	now := i.now()
	var c *claims
	if v, ok := i.verified.Load(token); ok {
		c = v.(*claims)
	} else {
		t, err := jws.Parse(token)
		if err != nil {
			return nil, false, nil
		}
		c = new(claims)
		if json.Unmarshal(t.Payload, c) != nil || c.Issuer != i.URL {
			return nil, false, nil
		}
		if err := t.Verify(i.Key.Public()); err != nil {
			return nil, false, fmt.Errorf("service account token: %w", err)
		}
		if c.Kube == nil || c.Kube.Namespace == "" || c.Kube.ServiceAccount.Name == "" ||
			c.Subject != UserPrefix+c.Kube.Namespace+":"+c.Kube.ServiceAccount.Name {
			return nil, false, errors.New("service account token claims could not be validated: token does not name its service account")
		}
		if i.cached.Add(1) > maxVerified {
			i.verified.Clear()
			i.cached.Store(0)
		}
		i.verified.Store(token, c)
	}
	// Audiences and times are checked on every use: a TokenReview may ask
	// for other audiences, and a cached token expires too.
	want, ok := authn.AudiencesFrom(ctx)
	if !ok {
		want = i.APIAudiences()
	}
	if !slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(want, a) }) {
		return nil, false, fmt.Errorf("token audiences %q is invalid for the target audiences %q", []string(c.Audience), want)
	}
	switch {
	case c.Expiry != 0 && now.After(time.Unix(c.Expiry, 0).Add(leeway)):
		return nil, false, errors.New("service account token has expired")
	case c.NotBefore != 0 && now.Add(leeway).Before(time.Unix(c.NotBefore, 0)):
		return nil, false, errors.New("service account token is not valid yet")
	case c.IssuedAt != 0 && now.Add(leeway).Before(time.Unix(c.IssuedAt, 0)):
		return nil, false, errors.New("service account token is issued in the future")
	}
	ns, name := c.Kube.Namespace, c.Kube.ServiceAccount.Name
	acct, found, err := i.Accounts.ServiceAccount(ctx, ns, name)
	switch {
	case err != nil:
		return nil, false, fmt.Errorf("looking up service account %s/%s: %w", ns, name, err)
	case !found:
		return nil, false, fmt.Errorf("serviceaccounts %q not found", name)
	case acct.UID != c.Kube.ServiceAccount.UID:
		return nil, false, fmt.Errorf("service account UID (%s) does not match claim (%s)", acct.UID, c.Kube.ServiceAccount.UID)
	case !acct.Deleting.IsZero() && acct.Deleting.Before(now.Add(-leeway)):
		return nil, false, fmt.Errorf("service account %s/%s has been deleted", ns, name)
	}
	if sec := c.Kube.Secret; sec != nil {
		// Upstream's words: a token whose Secret is gone, or is being
		// deleted, is invalidated.
		var obj Account
		found := false
		err := errors.New("no secrets")
		if i.Secrets != nil {
			obj, found, err = i.Secrets.ServiceAccount(ctx, ns, sec.Name)
		}
		switch {
		case err != nil || !found:
			return nil, false, errors.New("service account token has been invalidated")
		case obj.UID != sec.UID:
			return nil, false, fmt.Errorf("secret UID (%s) does not match service account secret ref claim (%s)", obj.UID, sec.UID)
		case !obj.Deleting.IsZero() && obj.Deleting.Before(now.Add(-leeway)):
			return nil, false, errors.New("service account token has been invalidated")
		}
	}
	u := &authn.User{
		Name:   c.Subject,
		UID:    acct.UID,
		Groups: []string{AllGroup, GroupPrefix + ns, authn.Authenticated},
	}
	if c.ID != "" {
		u.Extra = map[string][]string{CredentialIDKey: {"JTI=" + c.ID}}
	}
	return u, true, nil
}

// SplitUsername returns the namespace and name of a service account's user
// name, system:serviceaccount:NS:NAME.
func SplitUsername(user string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, UserPrefix)
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || namespace == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return namespace, name, true
}
