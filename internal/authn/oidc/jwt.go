package oidc

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authn/jws"
)

// leeway is how far the issuer's clock may be from ours.
const leeway = time.Minute

// refetchEvery bounds how often an unknown key id makes the authenticator
// fetch the issuer's keys again: a stream of forged tokens must not turn
// into a stream of requests to the issuer.
const refetchEvery = 10 * time.Second

// Authenticator verifies the tokens of one issuer.
type Authenticator struct {
	cfg    JWT
	client *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	claimRules []compiledRule
	userRules  []compiledRule
	username   cel.Program
	groups     cel.Program
	uid        cel.Program
	extra      []compiledExtra

	// mu guards keys and fetched.
	mu      sync.Mutex
	keys    map[string]crypto.PublicKey // by kid; "" for keys without one
	fetched time.Time
}

type compiledRule struct {
	prg     cel.Program
	message string
	expr    string
}

type compiledExtra struct {
	key string
	prg cel.Program
}

var _ authn.TokenAuthenticator = (*Authenticator)(nil)

// New builds the authenticators of a configuration, compiling every
// expression once. Keys are fetched on first use.
func New(c *Configuration) ([]*Authenticator, error) {
	var out []*Authenticator
	for i, j := range c.JWT {
		a, err := newAuthenticator(j)
		if err != nil {
			return nil, fmt.Errorf("jwt[%d] (%s): %w", i, j.Issuer.URL, err)
		}
		out = append(out, a)
	}
	return out, nil
}

func newAuthenticator(j JWT) (*Authenticator, error) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := j.Issuer.CertificateAuthority; ca != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(ca)) {
			return nil, errors.New("issuer.certificateAuthority: no PEM certificates")
		}
		tlsCfg.RootCAs = pool
	}
	a := &Authenticator{cfg: j, client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}}
	var err error
	compileIn := func(env *cel.Env, expr, where string) cel.Program {
		if expr == "" || err != nil {
			return nil
		}
		var prg cel.Program
		if prg, err = compile(env, expr); err != nil {
			err = fmt.Errorf("%s: %w", where, err)
		}
		return prg
	}
	m := j.ClaimMappings
	a.username = compileIn(claimsEnv, m.Username.Expression, "claimMappings.username.expression")
	a.groups = compileIn(claimsEnv, m.Groups.Expression, "claimMappings.groups.expression")
	a.uid = compileIn(claimsEnv, m.UID.Expression, "claimMappings.uid.expression")
	for i, e := range m.Extra {
		a.extra = append(a.extra, compiledExtra{key: e.Key, prg: compileIn(claimsEnv, e.ValueExpression, fmt.Sprintf("claimMappings.extra[%d].valueExpression", i))})
	}
	for i, r := range j.ClaimValidationRules {
		if r.Expression != "" {
			a.claimRules = append(a.claimRules, compiledRule{prg: compileIn(claimsEnv, r.Expression, fmt.Sprintf("claimValidationRules[%d].expression", i)), message: r.Message, expr: r.Expression})
		}
	}
	for i, r := range j.UserValidationRules {
		a.userRules = append(a.userRules, compiledRule{prg: compileIn(userEnv, r.Expression, fmt.Sprintf("userValidationRules[%d].expression", i)), message: r.Message, expr: r.Expression})
	}
	return a, err
}

func (a *Authenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// AuthenticateToken implements authn.TokenAuthenticator. A token that is
// not a JWT, or names another issuer, is not this authenticator's.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authn.User, bool, error) {
	t, err := jws.Parse(token)
	if err != nil {
		return nil, false, nil
	}
	var claims map[string]any
	if json.Unmarshal(t.Payload, &claims) != nil {
		return nil, false, nil
	}
	if iss, _ := claims["iss"].(string); iss != a.cfg.Issuer.URL {
		return nil, false, nil
	}
	if err := a.verify(ctx, t); err != nil {
		return nil, false, fmt.Errorf("oidc: verify token: %w", err)
	}
	if err := a.checkStandardClaims(claims); err != nil {
		return nil, false, fmt.Errorf("oidc: verify token: %w", err)
	}
	u, err := a.user(claims)
	if err != nil {
		return nil, false, err
	}
	return u, true, nil
}

// verify checks the signature with the issuer's key of the token's kid,
// fetching the keys when it has none or does not know the kid.
func (a *Authenticator) verify(ctx context.Context, t *jws.Token) error {
	if t.Header.Kid == "" {
		// Without a kid, any of the issuer's keys may have signed it.
		for _, k := range a.allKeys(ctx) {
			if t.Verify(k) == nil {
				return nil
			}
		}
		return errors.New("failed to verify signature: no key verifies it")
	}
	key, err := a.key(ctx, t.Header.Kid)
	if err != nil {
		return err
	}
	return t.Verify(key)
}

// Prefetch fetches the issuer's keys now, as upstream does when it
// starts, so that the first token is not kept waiting and a misconfigured
// issuer shows in the log at start rather than at the first login.
func (a *Authenticator) Prefetch(ctx context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.keys != nil {
		return
	}
	a.fetched = a.now()
	keys, err := a.fetchKeys(ctx)
	if err != nil {
		slog.Warn("oidc: fetching the issuer's keys", "issuer", a.cfg.Issuer.URL, "err", err)
		return
	}
	a.keys = keys
}

// allKeys returns the issuer's keys, fetching them if none are known yet.
func (a *Authenticator) allKeys(ctx context.Context) []crypto.PublicKey {
	a.key(ctx, "") // fetches unless fetched recently
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []crypto.PublicKey
	for _, k := range a.keys {
		out = append(out, k)
	}
	return out
}

func (a *Authenticator) key(ctx context.Context, kid string) (crypto.PublicKey, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if k, ok := a.keys[kid]; ok {
		return k, nil
	}
	if !a.fetched.IsZero() && a.now().Sub(a.fetched) < refetchEvery {
		return nil, fmt.Errorf("no key with kid %q", kid)
	}
	a.fetched = a.now()
	keys, err := a.fetchKeys(ctx)
	if err != nil {
		return nil, err
	}
	a.keys = keys
	if k, ok := a.keys[kid]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("no key with kid %q", kid)
}

// fetchKeys reads the discovery document, then its jwks_uri.
func (a *Authenticator) fetchKeys(ctx context.Context) (map[string]crypto.PublicKey, error) {
	disco := a.cfg.Issuer.DiscoveryURL
	if disco == "" {
		disco = strings.TrimSuffix(a.cfg.Issuer.URL, "/") + "/.well-known/openid-configuration"
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := a.getJSON(ctx, disco, &doc); err != nil {
		return nil, fmt.Errorf("fetching discovery document: %w", err)
	}
	if doc.Issuer != a.cfg.Issuer.URL {
		return nil, fmt.Errorf("issuer did not match the issuer returned by provider, expected %q got %q", a.cfg.Issuer.URL, doc.Issuer)
	}
	var set jws.JWKS
	if err := a.getJSON(ctx, doc.JWKSURI, &set); err != nil {
		return nil, fmt.Errorf("fetching keys: %w", err)
	}
	keys := map[string]crypto.PublicKey{}
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		pub, err := k.PublicKey()
		if err != nil {
			continue // a key we cannot use verifies nothing
		}
		keys[k.Kid] = pub
	}
	return keys, nil
}

// maxDocument bounds what the issuer's documents may weigh.
const maxDocument = 1 << 20

func (a *Authenticator) getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument))
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

// checkStandardClaims checks aud, exp and nbf.
func (a *Authenticator) checkStandardClaims(claims map[string]any) error {
	var auds []string
	switch aud := claims["aud"].(type) {
	case string:
		auds = []string{aud}
	case []any:
		for _, x := range aud {
			if s, ok := x.(string); ok {
				auds = append(auds, s)
			}
		}
	}
	if !slices.ContainsFunc(auds, func(s string) bool { return slices.Contains(a.cfg.Issuer.Audiences, s) }) {
		return fmt.Errorf("expected audience in %q got %q", a.cfg.Issuer.Audiences, auds)
	}
	now := a.now()
	exp, ok := claims["exp"].(float64)
	if !ok {
		return errors.New("token has no exp claim")
	}
	if now.After(time.Unix(int64(exp), 0).Add(leeway)) {
		return fmt.Errorf("token is expired (Token Expiry: %v)", time.Unix(int64(exp), 0).UTC())
	}
	if nbf, ok := claims["nbf"].(float64); ok && now.Add(leeway).Before(time.Unix(int64(nbf), 0)) {
		return fmt.Errorf("current time %v before the nbf (not before) time: %v", now.UTC(), time.Unix(int64(nbf), 0).UTC())
	}
	return nil
}

// user validates the claims and maps them to a user, then validates the
// user.
func (a *Authenticator) user(claims map[string]any) (*authn.User, error) {
	for _, r := range a.cfg.ClaimValidationRules {
		if r.Claim == "" {
			continue
		}
		if got, _ := claims[r.Claim].(string); got != r.RequiredValue {
			return nil, fmt.Errorf("oidc: required claim %s value does not match. Got = %v, want = %v", r.Claim, claims[r.Claim], r.RequiredValue)
		}
	}
	for _, r := range a.claimRules {
		if err := holds(r, "claims", claims); err != nil {
			return nil, err
		}
	}
	m := a.cfg.ClaimMappings
	u := &authn.User{}
	var err error
	if a.username != nil {
		u.Name, err = evalString(a.username, claims, "username")
	} else {
		u.Name, err = claimString(claims, m.Username.Claim)
		if err == nil && m.Username.Claim == "email" {
			if v, ok := claims["email_verified"]; ok && v != true {
				err = errors.New("oidc: email not verified")
			}
		}
		if err == nil && m.Username.Prefix != nil {
			u.Name = *m.Username.Prefix + u.Name
		}
	}
	if err != nil {
		return nil, err
	}
	if u.Name == "" {
		return nil, errors.New("oidc: username cannot be empty")
	}
	switch {
	case a.groups != nil:
		v, err := eval(a.groups, "claims", claims)
		if err != nil {
			return nil, fmt.Errorf("oidc: error evaluating group claim expression: %w", err)
		}
		if u.Groups, err = asStrings(v); err != nil {
			return nil, fmt.Errorf("oidc: error evaluating group claim expression: %w", err)
		}
	case m.Groups.Claim != "":
		switch g := claims[m.Groups.Claim].(type) {
		case nil:
		case string:
			u.Groups = []string{g}
		case []any:
			for _, x := range g {
				s, ok := x.(string)
				if !ok {
					return nil, fmt.Errorf("oidc: parse groups claim %q: want a string or a list of strings", m.Groups.Claim)
				}
				u.Groups = append(u.Groups, s)
			}
		default:
			return nil, fmt.Errorf("oidc: parse groups claim %q: want a string or a list of strings", m.Groups.Claim)
		}
		if p := m.Groups.Prefix; p != nil && *p != "" {
			for i := range u.Groups {
				u.Groups[i] = *p + u.Groups[i]
			}
		}
	}
	switch {
	case a.uid != nil:
		if u.UID, err = evalString(a.uid, claims, "uid"); err != nil {
			return nil, err
		}
	case m.UID.Claim != "":
		if u.UID, err = claimString(claims, m.UID.Claim); err != nil {
			return nil, err
		}
	}
	for _, e := range a.extra {
		v, err := eval(e.prg, "claims", claims)
		if err != nil {
			return nil, fmt.Errorf("oidc: error evaluating extra claim expression: %w", err)
		}
		vals, err := asStrings(v)
		if err != nil {
			return nil, fmt.Errorf("oidc: error evaluating extra claim expression: %w", err)
		}
		if len(vals) > 0 {
			if u.Extra == nil {
				u.Extra = map[string][]string{}
			}
			u.Extra[e.key] = vals
		}
	}
	if len(a.userRules) > 0 {
		extra := map[string]any{}
		for k, v := range u.Extra {
			extra[k] = v
		}
		view := map[string]any{"username": u.Name, "uid": u.UID, "groups": append([]string{}, u.Groups...), "extra": extra}
		for _, r := range a.userRules {
			if err := holds(r, "user", view); err != nil {
				return nil, err
			}
		}
	}
	return authn.WithAuthenticatedGroup(u), nil
}

// holds evaluates a validation rule; an error says why it failed.
func holds(r compiledRule, name string, value map[string]any) error {
	v, err := eval(r.prg, name, value)
	if err != nil {
		return fmt.Errorf("oidc: error evaluating validation rule %q: %w", r.expr, err)
	}
	ok, err := asBool(v)
	if err != nil {
		return fmt.Errorf("oidc: error evaluating validation rule %q: %w", r.expr, err)
	}
	if !ok {
		return fmt.Errorf("oidc: validation rule failed for %s: %s", name, r.message)
	}
	return nil
}

func evalString(prg cel.Program, claims map[string]any, what string) (string, error) {
	v, err := eval(prg, "claims", claims)
	if err != nil {
		return "", fmt.Errorf("oidc: error evaluating %s claim expression: %w", what, err)
	}
	s, err := asString(v)
	if err != nil {
		return "", fmt.Errorf("oidc: error evaluating %s claim expression: %w", what, err)
	}
	return s, nil
}

func claimString(claims map[string]any, name string) (string, error) {
	v, ok := claims[name]
	if !ok {
		return "", fmt.Errorf("oidc: claim %q not present", name)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("oidc: claim %q is not a string", name)
	}
	return s, nil
}
