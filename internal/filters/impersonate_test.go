package filters

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authz"
)

// grants is a fake authorizer: it allows the "verb resource/subresource
// name@namespace" strings it holds and records what it was asked.
type grants struct {
	allowed []string
	asked   []string
}

func (g *grants) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	key := a.Verb + " " + res + " " + a.Name
	if a.Namespace != "" {
		key += "@" + a.Namespace
	}
	g.asked = append(g.asked, key)
	if slices.Contains(g.allowed, key) || slices.Contains(g.allowed, "*") {
		return authz.Allow, "", nil
	}
	return authz.NoOpinion, "", nil
}

func TestImpersonate(t *testing.T) {
	quiet(t)
	bob := &authn.User{Name: "bob", Groups: []string{"dev", authn.Authenticated}}
	cases := []struct {
		name    string
		headers map[string][]string
		allowed []string
		code    int
		message string
		user    *authn.User
	}{
		{name: "no headers: the caller", code: 204, user: bob},
		{
			name: "user", headers: map[string][]string{"Impersonate-User": {"alice"}},
			allowed: []string{"impersonate users alice"}, code: 204,
			user: &authn.User{Name: "alice", Groups: []string{authn.Authenticated}},
		},
		{
			name: "user refused", headers: map[string][]string{"Impersonate-User": {"alice"}},
			code:    403,
			message: `users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope`,
		},
		{
			name: "service account gets its groups", headers: map[string][]string{"Impersonate-User": {"system:serviceaccount:ns1:bot"}},
			allowed: []string{"impersonate serviceaccounts bot@ns1"}, code: 204,
			user: &authn.User{Name: "system:serviceaccount:ns1:bot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", authn.Authenticated}},
		},
		{
			name: "service account refused", headers: map[string][]string{"Impersonate-User": {"system:serviceaccount:ns1:bot"}},
			code:    403,
			message: `serviceaccounts "bot" is forbidden: User "bob" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns1"`,
		},
		{
			name: "user, groups, uid and extra",
			headers: map[string][]string{
				"Impersonate-User": {"alice"}, "Impersonate-Group": {"g1", "g2"}, "Impersonate-Uid": {"u-1"},
				"Impersonate-Extra-Scopes": {"view", "edit"}, "Impersonate-Extra-Example.com%2fteam": {"blue"},
			},
			allowed: []string{"*"}, code: 204,
			user: &authn.User{Name: "alice", UID: "u-1", Groups: []string{"g1", "g2", authn.Authenticated},
				Extra: map[string][]string{"scopes": {"view", "edit"}, "example.com/team": {"blue"}}},
		},
		{
			name:    "a group refused",
			headers: map[string][]string{"Impersonate-User": {"alice"}, "Impersonate-Group": {"g1", "system:masters"}},
			allowed: []string{"impersonate users alice", "impersonate groups g1"}, code: 403,
			message: `groups "system:masters" is forbidden: User "bob" cannot impersonate resource "groups" in API group "" at the cluster scope`,
		},
		{
			name:    "extra refused",
			headers: map[string][]string{"Impersonate-User": {"alice"}, "Impersonate-Extra-Scopes": {"view"}},
			allowed: []string{"impersonate users alice"}, code: 403,
			message: `userextras.authentication.k8s.io "view" is forbidden: User "bob" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope`,
		},
		{
			name:    "uid refused",
			headers: map[string][]string{"Impersonate-User": {"alice"}, "Impersonate-Uid": {"u-1"}},
			allowed: []string{"impersonate users alice"}, code: 403,
			message: `uids.authentication.k8s.io "u-1" is forbidden: User "bob" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope`,
		},
		{
			name: "groups without a user", headers: map[string][]string{"Impersonate-Group": {"g1"}},
			code: 400, message: `requested [{Group  g1    }] without impersonating a user`,
		},
		{
			name: "anonymous", headers: map[string][]string{"Impersonate-User": {authn.Anonymous}},
			allowed: []string{"*"}, code: 204,
			user: &authn.User{Name: authn.Anonymous, Groups: []string{authn.Unauthenticated}},
		},
		{
			name:    "impersonated groups say unauthenticated",
			headers: map[string][]string{"Impersonate-User": {"x"}, "Impersonate-Group": {authn.Unauthenticated}},
			allowed: []string{"*"}, code: 204,
			user: &authn.User{Name: "x", Groups: []string{authn.Unauthenticated}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got *authn.User
			h := Impersonate(&grants{allowed: c.allowed})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got, _ = authn.UserFrom(r.Context())
				for name := range r.Header {
					if len(name) > 11 && name[:11] == "Impersonate" {
						t.Errorf("header %s reached the handler", name)
					}
				}
				w.WriteHeader(http.StatusNoContent)
			}))
			r := httptest.NewRequest("GET", "/api/v1/namespaces", nil)
			for k, v := range c.headers {
				r.Header[http.CanonicalHeaderKey(k)] = v
			}
			r = r.WithContext(authn.WithUser(r.Context(), bob))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.code {
				t.Fatalf("code %d, want %d: %s", w.Code, c.code, w.Body)
			}
			if c.code != 204 {
				if st := status(t, w); st.Message != c.message {
					t.Errorf("message\n got %s\nwant %s", st.Message, c.message)
				}
				return
			}
			if !reflect.DeepEqual(got, c.user) {
				t.Errorf("user %+v, want %+v", got, c.user)
			}
		})
	}
}

// FuzzImpersonationHeaders: no header set makes the filter panic, and a
// refused impersonation never reaches the handler.
func FuzzImpersonationHeaders(f *testing.F) {
	f.Add("alice", "g1", "scopes", "view", "u1")
	f.Add("system:serviceaccount:ns:sa", "", "%zz", "", "")
	f.Add("", "g", "", "", "")
	f.Fuzz(func(t *testing.T, user, group, extraKey, extraValue, uid string) {
		h := Impersonate(&grants{allowed: []string{"impersonate users alice"}})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, _ := authn.UserFrom(r.Context())
			if u.Name != "bob" && u.Name != "alice" {
				t.Errorf("impersonated %q without the right", u.Name)
			}
		}))
		r := httptest.NewRequest("GET", "/api", nil)
		set := func(k, v string) {
			if v != "" {
				r.Header[k] = []string{v}
			}
		}
		set("Impersonate-User", user)
		set("Impersonate-Group", group)
		set("Impersonate-Uid", uid)
		if extraKey != "" {
			set("Impersonate-Extra-"+extraKey, extraValue)
		}
		r = r.WithContext(authn.WithUser(r.Context(), &authn.User{Name: "bob"}))
		h.ServeHTTP(httptest.NewRecorder(), r)
	})
}
