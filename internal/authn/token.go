package authn

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
)

// TokenAuthenticator identifies the holder of a bearer token. Like
// Authenticator, ok=false means the token is not one it knows and an
// error that the token is one of its kind but invalid.
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string) (u *User, ok bool, err error)
}

// TokenAuthenticatorFunc adapts a function to TokenAuthenticator.
type TokenAuthenticatorFunc func(ctx context.Context, token string) (*User, bool, error)

// AuthenticateToken calls f(ctx, token).
func (f TokenAuthenticatorFunc) AuthenticateToken(ctx context.Context, token string) (*User, bool, error) {
	return f(ctx, token)
}

var (
	_ TokenAuthenticator = TokenAuthenticatorFunc(nil)
	_ TokenAuthenticator = TokenUnion(nil)
	_ TokenAuthenticator = (*TokenFile)(nil)
	_ Authenticator      = Bearer{}
)

// ErrInvalidToken is what a bearer token nobody recognises fails with, as
// upstream words it.
var ErrInvalidToken = errors.New("invalid bearer token")

// Bearer authenticates the token of an "Authorization: Bearer <token>"
// header. A request without such a header (or with an empty token) is not
// Bearer's; a token no TokenAuthenticator knows is ErrInvalidToken, so that
// an anonymous fallback never hides a bad credential.
type Bearer struct{ Tokens TokenAuthenticator }

// Authenticate implements Authenticator.
func (b Bearer) Authenticate(r *http.Request) (*User, bool, error) {
	token, ok := BearerToken(r.Header.Get("Authorization"))
	if !ok {
		return nil, false, nil
	}
	u, ok, err := b.Tokens.AuthenticateToken(r.Context(), token)
	if !ok && err == nil {
		err = ErrInvalidToken
	}
	return u, ok, err
}

// BearerToken returns the token of an Authorization header value, read as
// upstream reads it: the scheme is case-insensitive, the token is the
// second space-separated field and must not be empty.
func BearerToken(header string) (string, bool) {
	parts := strings.SplitN(strings.TrimSpace(header), " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}

// TokenUnion asks each token authenticator in turn; the first that knows
// the token decides. When none does, the errors of those that failed are
// joined.
type TokenUnion []TokenAuthenticator

// AuthenticateToken implements TokenAuthenticator.
func (tu TokenUnion) AuthenticateToken(ctx context.Context, token string) (*User, bool, error) {
	var errs []error
	for _, a := range tu {
		u, ok, err := a.AuthenticateToken(ctx, token)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return u, true, nil
		}
	}
	return nil, false, errors.Join(errs...)
}

// TokenFile is upstream's --token-auth-file: a CSV file of
// token,user,uid[,"group1,group2"] records, read once at start.
type TokenFile struct {
	tokens map[string]*User
}

// LoadTokenFile reads a token file. A record with fewer than three columns
// is an error; one with an empty token is skipped, and of two records with
// the same token the later wins, as upstream has it (both are logged).
func LoadTokenFile(path string) (*TokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	return parseTokenFile(f, path)
}

func parseTokenFile(in io.Reader, path string) (*TokenFile, error) {
	tf := &TokenFile{tokens: map[string]*User{}}
	r := csv.NewReader(in)
	r.FieldsPerRecord = -1
	for n := 1; ; n++ {
		rec, err := r.Read()
		if err == io.EOF {
			return tf, nil
		}
		if err != nil {
			return nil, fmt.Errorf("token file %s: %w", path, err)
		}
		if len(rec) < 3 {
			return nil, fmt.Errorf("token file '%s' must have at least 3 columns (token, user name, user uid), found %d", path, len(rec))
		}
		if rec[0] == "" {
			slog.Warn("empty token in token file", "path", path, "record", n)
			continue
		}
		if _, dup := tf.tokens[rec[0]]; dup {
			slog.Warn("duplicate token in token file", "path", path, "record", n)
		}
		u := &User{Name: rec[1], UID: rec[2]}
		if len(rec) >= 4 {
			u.Groups = strings.Split(rec[3], ",")
		}
		tf.tokens[rec[0]] = u
	}
}

// AuthenticateToken implements TokenAuthenticator. Each call returns a
// fresh User, which the caller may extend.
func (tf *TokenFile) AuthenticateToken(_ context.Context, token string) (*User, bool, error) {
	u, ok := tf.tokens[token]
	if !ok {
		return nil, false, nil
	}
	return WithAuthenticatedGroup(u.Clone()), true, nil
}

// Clone returns a deep copy of u.
func (u *User) Clone() *User {
	c := *u
	c.Groups = append([]string(nil), u.Groups...)
	if u.Extra != nil {
		c.Extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			c.Extra[k] = append([]string(nil), v...)
		}
	}
	return &c
}

// FailOnError is upstream's anonymous fallback: it asks first, and only
// when first neither identifies the caller nor fails does it ask then (the
// anonymous authenticator). A bad credential stays a 401.
func FailOnError(first, then Authenticator) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (*User, bool, error) {
		u, ok, err := first.Authenticate(r)
		if ok || err != nil {
			return u, ok, err
		}
		return then.Authenticate(r)
	})
}

// AnonymousUser is who an unauthenticated request is, when anonymous
// requests are allowed.
func AnonymousUser() *User {
	return &User{Name: Anonymous, Groups: []string{Unauthenticated}}
}

// AllowAnonymous identifies every request as AnonymousUser: upstream's
// --anonymous-auth, last in the chain (see FailOnError).
var AllowAnonymous Authenticator = AuthenticatorFunc(func(*http.Request) (*User, bool, error) {
	return AnonymousUser(), true, nil
})

// AudienceAgnostic wraps a token authenticator whose tokens name no
// audience of this server (static tokens, OIDC tokens for the issuer's
// client): they are good for the server's own audiences, implicit, and a
// TokenReview asking for other audiences (WithAudiences) does not
// authenticate them, as upstream's audience-agnostic wrapper has it.
func AudienceAgnostic(implicit []string, t TokenAuthenticator) TokenAuthenticator {
	return TokenAuthenticatorFunc(func(ctx context.Context, token string) (*User, bool, error) {
		if want, ok := AudiencesFrom(ctx); ok && !slices.ContainsFunc(want, func(a string) bool { return slices.Contains(implicit, a) }) {
			return nil, false, nil
		}
		return t.AuthenticateToken(ctx, token)
	})
}
