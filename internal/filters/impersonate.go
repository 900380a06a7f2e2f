package filters

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/audit"
	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authn/satoken"
	"github.com/crdserver/crdserver/internal/authz"
	"github.com/crdserver/crdserver/internal/codec"
)

// Impersonate acts on the Impersonate-User, -Group, -Uid and -Extra-*
// headers as upstream does: each thing asked for is authorized with the
// impersonate verb (on users, groups, serviceaccounts, uids or
// userextras/KEY) for the authenticated user, and the request then runs as
// the impersonated user. Anything refused is upstream's 403; groups, extra
// or uid without a user is a 400. It needs Authenticate before it.
func Impersonate(z authz.Authorizer) Filter {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			asks, err := impersonationRequests(r.Header)
			if err != nil {
				codec.WriteStatus(w, r, err)
				return
			}
			if len(asks) == 0 {
				next.ServeHTTP(w, r)
				return
			}
			requestor, ok := authn.UserFrom(r.Context())
			if !ok {
				codec.WriteStatus(w, r, errors.New("no user found for request"))
				return
			}
			u, attrs, reason, err := impersonate(r, z, requestor, asks)
			if err != nil {
				codec.WriteStatus(w, r, err)
				return
			}
			if u == nil {
				slog.Debug("impersonation forbidden", "user", requestor.Name, "reason", reason)
				w.Header().Set("X-Content-Type-Options", "nosniff")
				codec.WriteStatus(w, r, Forbidden(attrs, reason))
				return
			}
			r.Header.Del(authenticationv1.ImpersonateUserHeader)
			r.Header.Del(authenticationv1.ImpersonateGroupHeader)
			r.Header.Del(authenticationv1.ImpersonateUIDHeader)
			for h := range r.Header {
				if strings.HasPrefix(h, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
					r.Header.Del(h)
				}
			}
			audit.SetImpersonatedUser(r.Context(), userInfo(u.Name, u.UID, u.Groups, u.Extra))
			next.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), u)))
		})
	}
}

// impersonate authorizes each ask in turn and builds the user they make.
// On a refusal the user is nil and attrs, reason say what was refused.
func impersonate(r *http.Request, z authz.Authorizer, requestor *authn.User, asks []corev1.ObjectReference) (*authn.User, authz.Attributes, string, error) {
	groupsGiven := len(r.Header[authenticationv1.ImpersonateGroupHeader]) > 0
	u := &authn.User{Groups: []string{}, Extra: map[string][]string{}}
	for _, ask := range asks {
		attrs := authz.Attributes{
			User: requestor, Verb: "impersonate", ResourceRequest: true,
			Namespace: ask.Namespace, Name: ask.Name, Path: r.URL.Path,
		}
		if ask.APIVersion != "" {
			attrs.APIGroup, attrs.APIVersion = authenticationv1.GroupName, "v1"
		}
		switch ask.Kind {
		case "ServiceAccount":
			attrs.Resource = "serviceaccounts"
			u.Name = satoken.UserPrefix + ask.Namespace + ":" + ask.Name
			if !groupsGiven {
				u.Groups = []string{satoken.AllGroup, satoken.GroupPrefix + ask.Namespace}
			}
		case "User":
			attrs.Resource = "users"
			u.Name = ask.Name
		case "Group":
			attrs.Resource = "groups"
			u.Groups = append(u.Groups, ask.Name)
		case "UserExtra":
			attrs.Resource, attrs.Subresource = "userextras", ask.FieldPath
			u.Extra[ask.FieldPath] = append(u.Extra[ask.FieldPath], ask.Name)
		case "UID":
			attrs.Resource = "uids"
			u.UID = ask.Name
		}
		d, reason, err := z.Authorize(r.Context(), attrs)
		if d != authz.Allow {
			if err != nil {
				slog.Debug("impersonation authorizer error", "err", err)
			}
			return nil, attrs, reason, nil
		}
	}
	// Upstream adds system:authenticated unless the impersonated groups
	// already say who is (un)authenticated; system:anonymous gets
	// system:unauthenticated.
	if u.Name != authn.Anonymous {
		if !slices.Contains(u.Groups, authn.Authenticated) && !slices.Contains(u.Groups, authn.Unauthenticated) {
			u.Groups = append(u.Groups, authn.Authenticated)
		}
	} else if !slices.Contains(u.Groups, authn.Unauthenticated) {
		u.Groups = append(u.Groups, authn.Unauthenticated)
	}
	if len(u.Extra) == 0 {
		u.Extra = nil
	}
	return u, authz.Attributes{}, "", nil
}

// impersonationRequests reads the impersonation headers into the things
// asked for, in upstream's order: the user (or service account), groups,
// extra values, uid. Extra keys are lower-cased and %-decoded.
func impersonationRequests(h http.Header) ([]corev1.ObjectReference, error) {
	var asks []corev1.ObjectReference
	user := h.Get(authenticationv1.ImpersonateUserHeader)
	if user != "" {
		if ns, name, ok := satoken.SplitUsername(user); ok {
			asks = append(asks, corev1.ObjectReference{Kind: "ServiceAccount", Namespace: ns, Name: name})
		} else {
			asks = append(asks, corev1.ObjectReference{Kind: "User", Name: user})
		}
	}
	others := false
	for _, g := range h[authenticationv1.ImpersonateGroupHeader] {
		others = true
		asks = append(asks, corev1.ObjectReference{Kind: "Group", Name: g})
	}
	// Header order is a map's: sorted, so that the order of checks (and
	// so which refusal a client reads) is stable.
	var extras []string
	for name := range h {
		if strings.HasPrefix(name, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
			extras = append(extras, name)
		}
	}
	slices.Sort(extras)
	for _, name := range extras {
		others = true
		key := strings.ToLower(name[len(authenticationv1.ImpersonateUserExtraHeaderPrefix):])
		if k, err := url.PathUnescape(key); err == nil {
			key = k
		}
		for _, v := range h[name] {
			asks = append(asks, corev1.ObjectReference{Kind: "UserExtra", APIVersion: "authentication.k8s.io/v1", Name: v, FieldPath: key})
		}
	}
	if uid := h.Get(authenticationv1.ImpersonateUIDHeader); uid != "" {
		others = true
		asks = append(asks, corev1.ObjectReference{Kind: "UID", APIVersion: "authentication.k8s.io/v1", Name: uid})
	}
	if others && user == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("requested %v without impersonating a user", asks))
	}
	return asks, nil
}
