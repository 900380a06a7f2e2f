package builtin

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/registry"
)

// authenticationGroup is the group of the identity reviews.
const authenticationGroup = "authentication.k8s.io"

// TokenReviews is authentication.k8s.io/v1 tokenreviews: a client (a
// webhook, an aggregated server) asks whether a bearer token is valid and
// whose it is. tokens are the server's bearer token authenticators;
// apiAudiences the audiences a review without spec.audiences checks for.
func TokenReviews(tokens authn.TokenAuthenticator, apiAudiences []string) *registry.Definition {
	return reviewDefinition(authenticationGroup, "tokenreviews", "TokenReview", registry.Cluster, tokenReviewHooks{
		stored: newStored[authenticationv1.TokenReview]("TokenReview", "v1"), tokens: tokens, audiences: apiAudiences,
	})
}

type tokenReviewHooks struct {
	stored[authenticationv1.TokenReview]
	noGeneration
	tokens    authn.TokenAuthenticator
	audiences []string
}

var (
	_ registry.Creator = tokenReviewHooks{}
	_ registry.Zeroer  = tokenReviewHooks{}
)

// ZeroObject implements registry.Zeroer: a review's spec is there before
// its create, as in upstream's new typed TokenReview.
func (tokenReviewHooks) ZeroObject() map[string]any {
	return Typed[authenticationv1.TokenReview]{}.ZeroObject()
}

// Create answers the review as upstream does: the token is authenticated
// as if a request presented it; status.error says why it was not.
func (h tokenReviewHooks) Create(ctx context.Context, obj map[string]any) (map[string]any, error) {
	var tr authenticationv1.TokenReview
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &tr); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if tr.Namespace != "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("namespace is not allowed on this type: %v", tr.Namespace))
	}
	if tr.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	auds := tr.Spec.Audiences
	if len(auds) == 0 {
		auds = h.audiences
	}
	// A request that carries nothing but the token.
	r, err := http.NewRequestWithContext(authn.WithAudiences(ctx, auds), http.MethodPost, "/", nil)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	r.Header.Set("Authorization", "Bearer "+tr.Spec.Token)
	u, ok, err := authn.Bearer{Tokens: h.tokens}.Authenticate(r)
	tr.Status = authenticationv1.TokenReviewStatus{Authenticated: ok}
	if err != nil {
		tr.Status.Error = err.Error()
	}
	if ok {
		tr.Status.User = userInfo(u)
		tr.Status.Audiences = auds
	}
	return encodeReview(&tr, authenticationGroup, "TokenReview")
}

// SelfSubjectReviews is authentication.k8s.io/v1 selfsubjectreviews, behind
// `kubectl auth whoami`: it tells the caller who the server thinks they
// are, after impersonation.
func SelfSubjectReviews() *registry.Definition {
	return reviewDefinition(authenticationGroup, "selfsubjectreviews", "SelfSubjectReview", registry.Cluster, selfSubjectReviewHooks{
		stored: newStored[authenticationv1.SelfSubjectReview]("SelfSubjectReview", "v1"),
	})
}

type selfSubjectReviewHooks struct {
	stored[authenticationv1.SelfSubjectReview]
	noGeneration
	// now is the clock; nil means time.Now.
	now func() time.Time
}

var _ registry.Creator = selfSubjectReviewHooks{}

func (h selfSubjectReviewHooks) Create(ctx context.Context, _ map[string]any) (map[string]any, error) {
	u, ok := authn.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	now := time.Now()
	if h.now != nil {
		now = h.now()
	}
	ssr := authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now)},
		Status:     authenticationv1.SelfSubjectReviewStatus{UserInfo: userInfo(u)},
	}
	return encodeReview(&ssr, authenticationGroup, "SelfSubjectReview")
}

// userInfo is u as the reviews show it.
func userInfo(u *authn.User) authenticationv1.UserInfo {
	info := authenticationv1.UserInfo{
		Username: u.Name, UID: u.UID, Groups: slices.Clone(u.Groups),
		Extra: make(map[string]authenticationv1.ExtraValue, len(u.Extra)),
	}
	for k, v := range u.Extra {
		info.Extra[k] = slices.Clone(v)
	}
	return info
}
