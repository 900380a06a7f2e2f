package builtin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// TokenIssuer signs service account tokens (satoken.Issuer).
type TokenIssuer interface {
	// IssueBound signs a token for the account, for audiences (nil: the
	// server's), valid for ttl, bound to the account's Secret secretName
	// with secretUID (none when secretName is empty); it returns the
	// token and its expiry.
	IssueBound(namespace, name, uid string, audiences []string, ttl time.Duration, secretName, secretUID string) (string, time.Time, error)
	// APIAudiences are the server's audiences, a request's default.
	APIAudiences() []string
}

// BoundSecrets finds the Secret a token is bound to: its uid,
// found=false when there is none.
type BoundSecrets interface {
	SecretUID(ctx context.Context, namespace, name string) (uid string, found bool, err error)
}

// BoundSecretsFunc adapts a function to BoundSecrets.
type BoundSecretsFunc func(ctx context.Context, namespace, name string) (string, bool, error)

// SecretUID calls f.
func (f BoundSecretsFunc) SecretUID(ctx context.Context, namespace, name string) (string, bool, error) {
	return f(ctx, namespace, name)
}

var _ BoundSecrets = BoundSecretsFunc(nil)

// tokenRequestKind is what serviceaccounts/token takes and answers.
var tokenRequestKind = schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}

// Bounds of a token's lifetime and its default, as upstream's.
const (
	minTokenSeconds     = 600
	maxTokenSeconds     = 1 << 32
	defaultTokenSeconds = 3600
)

// WithTokenRequest adds the TokenRequest subresource (serviceaccounts/token,
// behind `kubectl create token`) to the ServiceAccounts definition d; tokens
// are signed by issuer, and may be bound to a Secret secrets finds (nil:
// none). now is the clock of the answer's times (nil: time.Now), the
// issuer's.
func WithTokenRequest(d *registry.Definition, issuer TokenIssuer, secrets BoundSecrets, now func() time.Time) *registry.Definition {
	cp := *d
	cp.Versions = append([]registry.Version(nil), d.Versions...)
	for i := range cp.Versions {
		v := &cp.Versions[i]
		v.Subresources.Other = append(append([]registry.OtherSubresource(nil), v.Subresources.Other...),
			registry.OtherSubresource{Name: "token", Verbs: []string{"create"}, Kind: &tokenRequestKind})
	}
	cp.Hooks = tokenRequestHooks{serviceAccountHooks: d.Hooks.(serviceAccountHooks), issuer: issuer, secrets: secrets, now: now}
	return &cp
}

type tokenRequestHooks struct {
	serviceAccountHooks
	issuer  TokenIssuer
	secrets BoundSecrets // nil: no token is bound to a Secret
	// now is the clock; nil means time.Now.
	now func() time.Time
}

var _ registry.SubresourceCreator = tokenRequestHooks{}

func (tokenRequestHooks) NewSubresourceProtobuf(string) registry.ProtoMessage {
	return &authenticationv1.TokenRequest{}
}

// CreateSubresource answers a TokenRequest for the ServiceAccount sa, as
// upstream's: the body's name, namespace and uid, when given, must be the
// account's; audiences default to the server's and the lifetime to an hour.
func (h tokenRequestHooks) CreateSubresource(ctx context.Context, _ string, sa, body map[string]any) (map[string]any, error) {
	var acct metav1.PartialObjectMetadata
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sa, &acct); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("reading service account: %w", err))
	}
	var req authenticationv1.TokenRequest
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(body, &req); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	gk, name := tokenRequestKind.GroupKind(), acct.Name
	if req.Name != "" && req.Name != name {
		return nil, apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified")})
	}
	if req.Namespace != "" && req.Namespace != acct.Namespace {
		return nil, apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified")})
	}
	if req.UID != "" && req.UID != acct.UID {
		return nil, apierrors.NewConflict(schema.GroupResource{Group: gk.Group, Resource: gk.Kind}, name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", req.UID, acct.UID))
	}
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = h.issuer.APIAudiences()
	}
	if req.Spec.ExpirationSeconds == nil {
		req.Spec.ExpirationSeconds = new(int64(defaultTokenSeconds))
	}
	req.Name, req.Namespace, req.UID = name, acct.Namespace, acct.UID
	now := time.Now()
	if h.now != nil {
		now = h.now()
	}
	req.CreationTimestamp = metav1.NewTime(now)
	req.Status = authenticationv1.TokenRequestStatus{}
	if errs := validateTokenRequest(&req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(gk, "", errs)
	}
	var secretName, secretUID string
	if ref := req.Spec.BoundObjectRef; ref != nil {
		gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		if gvk.Group == "" && (gvk.Kind == "Pod" || gvk.Kind == "Node") {
			// No pod or node exists here: upstream's answer when the
			// one named does not.
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(gvk.Kind) + "s"}, ref.Name)
		}
		if gvk.Group != "" || gvk.Kind != "Secret" || h.secrets == nil {
			// Webhook configurations are not bound to here; upstream
			// refuses kinds it cannot bind with the same words.
			return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk))
		}
		uid, found, err := h.secrets.SecretUID(ctx, acct.Namespace, ref.Name)
		switch {
		case err != nil:
			return nil, apierrors.NewInternalError(err)
		case !found:
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, ref.Name)
		case ref.UID != "" && string(ref.UID) != uid:
			return nil, apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
				fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
		}
		secretName, secretUID = ref.Name, uid
	}
	ttl := time.Duration(*req.Spec.ExpirationSeconds) * time.Second
	tok, _, err := h.issuer.IssueBound(acct.Namespace, name, string(acct.UID), req.Spec.Audiences, ttl, secretName, secretUID)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	// The answer's expiry is from the time read before signing, so it is
	// never later than the token's exp.
	req.Status = authenticationv1.TokenRequestStatus{Token: tok, ExpirationTimestamp: metav1.NewTime(now.Add(ttl))}
	req.APIVersion, req.Kind = tokenRequestKind.GroupVersion().String(), tokenRequestKind.Kind
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&req)
	if err != nil {
		return nil, apierrors.NewInternalError(errors.New("encoding token request"))
	}
	return out, nil
}

func validateTokenRequest(req *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if s := *req.Spec.ExpirationSeconds; s < minTokenSeconds {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), s, "may not specify a duration less than 10 minutes"))
	} else if s > maxTokenSeconds {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), s, "may not specify a duration larger than 2^32 seconds"))
	}
	if len(req.Spec.Attestations) != 0 {
		return field.ErrorList{field.Invalid(spec.Child("attestations"), req.Spec.Attestations, "attestations may only be specified with a webhook bound object reference")}
	}
	return errs
}
