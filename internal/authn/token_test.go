package authn

import (
	"context"
	"errors"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestBearerToken(t *testing.T) {
	cases := []struct {
		header string
		token  string
		ok     bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"BEARER abc", "abc", true},
		{"  Bearer abc  ", "abc", true},
		{"Bearer abc def", "abc", true},
		{"Bearer", "", false},
		{"Bearer  abc", "", false}, // the space before the token: upstream refuses it
		{"Basic YWxpY2U6cHc=", "", false},
		{"", "", false},
		{"abc", "", false},
	}
	for _, c := range cases {
		token, ok := BearerToken(c.header)
		if token != c.token || ok != c.ok {
			t.Errorf("BearerToken(%q) = %q, %v; want %q, %v", c.header, token, ok, c.token, c.ok)
		}
	}
}

const tokenCSV = `t1,alice,u1,"dev,ops"
t2,bob,u2
,nobody,u3
t3,carol,u4,ops
t3,carol2,u5,
`

func TestTokenFile(t *testing.T) {
	tf, err := parseTokenFile(strings.NewReader(tokenCSV), "tokens.csv")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		token string
		user  *User
	}{
		{"t1", &User{Name: "alice", UID: "u1", Groups: []string{"dev", "ops", Authenticated}}},
		{"t2", &User{Name: "bob", UID: "u2", Groups: []string{Authenticated}}},
		// The later of two records with one token wins; an empty
		// fourth column is one empty group, as upstream splits it.
		{"t3", &User{Name: "carol2", UID: "u5", Groups: []string{"", Authenticated}}},
		{"", nil},
		{"nope", nil},
	}
	for _, c := range cases {
		u, ok, err := tf.AuthenticateToken(context.Background(), c.token)
		if err != nil || ok != (c.user != nil) || !reflect.DeepEqual(u, c.user) {
			t.Errorf("token %q: %+v, %v, %v; want %+v", c.token, u, ok, err, c.user)
		}
	}
	// Users are copies: a caller extending one changes no other.
	u, _, _ := tf.AuthenticateToken(context.Background(), "t1")
	u.Groups[0] = "changed"
	if again, _, _ := tf.AuthenticateToken(context.Background(), "t1"); again.Groups[0] != "dev" {
		t.Errorf("a returned user shares its groups with the file's")
	}
}

func TestTokenFileErrors(t *testing.T) {
	for in, want := range map[string]string{
		"t1,alice\n":        "token file 'f.csv' must have at least 3 columns (token, user name, user uid), found 2",
		"t1,\"alice,u1\n":   "token file f.csv: ",
		"t1,alice,u1\nt2\n": "found 1",
	} {
		_, err := parseTokenFile(strings.NewReader(in), "f.csv")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want it to contain %q", in, err, want)
		}
	}
}

func TestBearerAndAnonymous(t *testing.T) {
	tf, err := parseTokenFile(strings.NewReader(tokenCSV), "tokens.csv")
	if err != nil {
		t.Fatal(err)
	}
	withAnon := FailOnError(Bearer{Tokens: tf}, AllowAnonymous)
	cases := []struct {
		name   string
		header string
		a      Authenticator
		user   string
		ok     bool
		err    error
	}{
		{"known token", "Bearer t1", Bearer{tf}, "alice", true, nil},
		{"unknown token", "Bearer nope", Bearer{tf}, "", false, ErrInvalidToken},
		{"no header", "", Bearer{tf}, "", false, nil},
		{"basic auth", "Basic abc", Bearer{tf}, "", false, nil},
		{"anonymous: no credentials", "", withAnon, Anonymous, true, nil},
		{"anonymous: a bad token stays bad", "Bearer nope", withAnon, "", false, ErrInvalidToken},
		{"anonymous: a good token wins", "Bearer t2", withAnon, "bob", true, nil},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/api", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		u, ok, err := c.a.Authenticate(r)
		if ok != c.ok || !errors.Is(err, c.err) || (ok && u.Name != c.user) {
			t.Errorf("%s: %+v, %v, %v", c.name, u, ok, err)
		}
		if ok && c.user == Anonymous && !reflect.DeepEqual(u.Groups, []string{Unauthenticated}) {
			t.Errorf("%s: groups %v, want [%s]", c.name, u.Groups, Unauthenticated)
		}
	}
}

func FuzzBearerToken(f *testing.F) {
	f.Add("Bearer abc")
	f.Add(" bearer  x y ")
	f.Fuzz(func(t *testing.T, header string) {
		token, ok := BearerToken(header)
		if ok && (token == "" || strings.ContainsAny(token, " ")) {
			t.Errorf("BearerToken(%q) = %q", header, token)
		}
	})
}

func FuzzTokenFile(f *testing.F) {
	f.Add(tokenCSV)
	f.Add("\"a\"\"b\",c,d,\"e,f\"\n")
	f.Fuzz(func(t *testing.T, in string) {
		tf, err := parseTokenFile(strings.NewReader(in), "f")
		if err != nil {
			return
		}
		for token, u := range tf.tokens {
			got, ok, _ := tf.AuthenticateToken(context.Background(), token)
			if !ok || got.Name != u.Name {
				t.Errorf("token %q does not authenticate as %q", token, u.Name)
			}
		}
	})
}

func TestAudienceAgnostic(t *testing.T) {
	tf, err := parseTokenFile(strings.NewReader(tokenCSV), "tokens.csv")
	if err != nil {
		t.Fatal(err)
	}
	a := AudienceAgnostic([]string{"api"}, tf)
	for _, c := range []struct {
		auds []string
		ok   bool
	}{{nil, true}, {[]string{"api"}, true}, {[]string{"vault", "api"}, true}, {[]string{"vault"}, false}} {
		ctx := context.Background()
		if c.auds != nil {
			ctx = WithAudiences(ctx, c.auds)
		}
		if _, ok, _ := a.AuthenticateToken(ctx, "t1"); ok != c.ok {
			t.Errorf("audiences %v: ok=%v, want %v", c.auds, ok, c.ok)
		}
	}
}
