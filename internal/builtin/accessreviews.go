package builtin

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authz"
	"github.com/crdserver/crdserver/internal/registry"
)

// The authorization.k8s.io/v1 access reviews ask the server's authorizer
// about a request without making it: SubjectAccessReview for any user,
// LocalSubjectAccessReview for any user in one namespace,
// SelfSubjectAccessReview for the caller, SelfSubjectRulesReview for the
// rules the caller holds in a namespace (kubectl auth can-i [--list]).
// They are created, answered and never stored.

// AuthorizationGroup is the group of the access reviews.
const AuthorizationGroup = authorizationv1.GroupName

// AccessReviewer answers access reviews: the server's authorizer chain,
// and what it grants a user.
type AccessReviewer interface {
	authz.Authorizer
	// RulesFor returns the rules u holds in namespace; incomplete says
	// the authorizer may allow more than they list; err, the rules that
	// could not be resolved.
	RulesFor(u *authn.User, namespace string) (rules []rbacv1.PolicyRule, incomplete bool, err error)
}

// SubjectAccessReviews is the subjectaccessreviews resource.
func SubjectAccessReviews(r AccessReviewer) *registry.Definition {
	return reviewDefinition(AuthorizationGroup, "subjectaccessreviews", "SubjectAccessReview", registry.Cluster, subjectAccessReviewHooks{r})
}

// LocalSubjectAccessReviews is the localsubjectaccessreviews resource.
func LocalSubjectAccessReviews(r AccessReviewer) *registry.Definition {
	return reviewDefinition(AuthorizationGroup, "localsubjectaccessreviews", "LocalSubjectAccessReview", registry.Namespaced, localSubjectAccessReviewHooks{r})
}

// SelfSubjectAccessReviews is the selfsubjectaccessreviews resource.
func SelfSubjectAccessReviews(r AccessReviewer) *registry.Definition {
	return reviewDefinition(AuthorizationGroup, "selfsubjectaccessreviews", "SelfSubjectAccessReview", registry.Cluster, selfSubjectAccessReviewHooks{r})
}

// SelfSubjectRulesReviews is the selfsubjectrulesreviews resource.
func SelfSubjectRulesReviews(r AccessReviewer) *registry.Definition {
	return reviewDefinition(AuthorizationGroup, "selfsubjectrulesreviews", "SelfSubjectRulesReview", registry.Cluster, selfSubjectRulesReviewHooks{r})
}

type subjectAccessReviewHooks struct{ r AccessReviewer }
type localSubjectAccessReviewHooks struct{ r AccessReviewer }
type selfSubjectAccessReviewHooks struct{ r AccessReviewer }
type selfSubjectRulesReviewHooks struct{ r AccessReviewer }

var (
	_ registry.Protobuf = subjectAccessReviewHooks{}
	_ registry.Creator  = subjectAccessReviewHooks{}
	_ registry.Creator  = localSubjectAccessReviewHooks{}
	_ registry.Creator  = selfSubjectAccessReviewHooks{}
	_ registry.Creator  = selfSubjectRulesReviewHooks{}
	_ registry.Zeroer   = subjectAccessReviewHooks{}
)

// The reviews' zero objects, from which the field manager works out what
// a review's create owns, as upstream's does from a new typed review: its
// spec, never omitted, is there before the create (no "." in f:spec).

func (subjectAccessReviewHooks) ZeroObject() map[string]any {
	return Typed[authorizationv1.SubjectAccessReview]{}.ZeroObject()
}

func (localSubjectAccessReviewHooks) ZeroObject() map[string]any {
	return Typed[authorizationv1.LocalSubjectAccessReview]{}.ZeroObject()
}

func (selfSubjectAccessReviewHooks) ZeroObject() map[string]any {
	return Typed[authorizationv1.SelfSubjectAccessReview]{}.ZeroObject()
}

func (selfSubjectRulesReviewHooks) ZeroObject() map[string]any {
	return Typed[authorizationv1.SelfSubjectRulesReview]{}.ZeroObject()
}

var (
	sarTyped  = Typed[authorizationv1.SubjectAccessReview]{Kind: "SubjectAccessReview", Version: "v1"}
	lsarTyped = Typed[authorizationv1.LocalSubjectAccessReview]{Kind: "LocalSubjectAccessReview", Version: "v1"}
	ssarTyped = Typed[authorizationv1.SelfSubjectAccessReview]{Kind: "SelfSubjectAccessReview", Version: "v1"}
	ssrrTyped = Typed[authorizationv1.SelfSubjectRulesReview]{Kind: "SelfSubjectRulesReview", Version: "v1"}
)

// kubectl and client-go send reviews as protobuf.

func (subjectAccessReviewHooks) NewProtobuf() registry.ProtoMessage {
	return new(authorizationv1.SubjectAccessReview)
}

func (localSubjectAccessReviewHooks) NewProtobuf() registry.ProtoMessage {
	return new(authorizationv1.LocalSubjectAccessReview)
}

func (selfSubjectAccessReviewHooks) NewProtobuf() registry.ProtoMessage {
	return new(authorizationv1.SelfSubjectAccessReview)
}

func (selfSubjectRulesReviewHooks) NewProtobuf() registry.ProtoMessage {
	return new(authorizationv1.SelfSubjectRulesReview)
}

// The Typed checks refuse bodies of the wrong shape before Create, as
// upstream's decoding does.

func (subjectAccessReviewHooks) CheckType(obj map[string]any) error { return sarTyped.CheckType(obj) }
func (localSubjectAccessReviewHooks) CheckType(obj map[string]any) error {
	return lsarTyped.CheckType(obj)
}
func (selfSubjectAccessReviewHooks) CheckType(obj map[string]any) error {
	return ssarTyped.CheckType(obj)
}
func (selfSubjectRulesReviewHooks) CheckType(obj map[string]any) error {
	return ssrrTyped.CheckType(obj)
}

func (h subjectAccessReviewHooks) Create(ctx context.Context, obj map[string]any) (map[string]any, error) {
	sar, _, err := sarTyped.Decode(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	errs := validateAccessReviewSpec(sar.Spec, true)
	errs = append(errs, metadataEmpty(sar.ObjectMeta, false)...)
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview").GroupKind(), "", errs)
	}
	sar.Status = review(ctx, h.r, specAttributes(sar.Spec))
	return reviewAnswer(sar, "SubjectAccessReview")
}

func (h localSubjectAccessReviewHooks) Create(ctx context.Context, obj map[string]any) (map[string]any, error) {
	sar, _, err := lsarTyped.Decode(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	errs := validateAccessReviewSpec(sar.Spec, true)
	errs = append(errs, metadataEmpty(sar.ObjectMeta, true)...)
	if ra := sar.Spec.ResourceAttributes; ra != nil && ra.Namespace != sar.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("spec.resourceAttributes.namespace"), ra.Namespace, `must match metadata.namespace`))
	}
	if sar.Spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec.nonResourceAttributes"), sar.Spec.NonResourceAttributes, `disallowed on this kind of request`))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview").GroupKind(), "", errs)
	}
	sar.Status = review(ctx, h.r, specAttributes(sar.Spec))
	return reviewAnswer(sar, "LocalSubjectAccessReview")
}

func (h selfSubjectAccessReviewHooks) Create(ctx context.Context, obj map[string]any) (map[string]any, error) {
	sar, _, err := ssarTyped.Decode(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	spec := authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: sar.Spec.ResourceAttributes, NonResourceAttributes: sar.Spec.NonResourceAttributes}
	errs := validateAccessReviewSpec(spec, false)
	errs = append(errs, metadataEmpty(sar.ObjectMeta, false)...)
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview").GroupKind(), "", errs)
	}
	u, ok := authn.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	a := specAttributes(spec)
	a.User = u
	sar.Status = review(ctx, h.r, a)
	return reviewAnswer(sar, "SelfSubjectAccessReview")
}

func (h selfSubjectRulesReviewHooks) Create(ctx context.Context, obj map[string]any) (map[string]any, error) {
	srr, _, err := ssrrTyped.Decode(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	u, ok := authn.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if srr.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	rules, incomplete, err := h.r.RulesFor(u, srr.Spec.Namespace)
	// Upstream answers with a new object: the request's metadata and
	// spec are not repeated.
	out := &authorizationv1.SelfSubjectRulesReview{Status: authorizationv1.SubjectRulesReviewStatus{
		ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}, Incomplete: incomplete,
	}}
	for _, r := range rules {
		if len(r.Resources) > 0 {
			out.Status.ResourceRules = append(out.Status.ResourceRules, authorizationv1.ResourceRule{
				Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
		}
		if len(r.NonResourceURLs) > 0 {
			out.Status.NonResourceRules = append(out.Status.NonResourceRules, authorizationv1.NonResourceRule{
				Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
		}
	}
	if err != nil {
		out.Status.EvaluationError = err.Error()
	}
	return reviewAnswer(out, "SelfSubjectRulesReview")
}

// specAttributes are the attributes a review's spec asks about; an
// unset version is any version.
func specAttributes(spec authorizationv1.SubjectAccessReviewSpec) authz.Attributes {
	u := &authn.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	if ra := spec.ResourceAttributes; ra != nil {
		version := ra.Version
		if version == "" {
			version = "*"
		}
		return authz.Attributes{User: u, Verb: ra.Verb, Namespace: ra.Namespace, APIGroup: ra.Group, APIVersion: version,
			Resource: ra.Resource, Subresource: ra.Subresource, Name: ra.Name, ResourceRequest: true}
	}
	nra := spec.NonResourceAttributes
	return authz.Attributes{User: u, Verb: nra.Verb, Path: nra.Path}
}

// review asks the authorizer; its error is the review's evaluationError.
func review(ctx context.Context, r AccessReviewer, a authz.Attributes) authorizationv1.SubjectAccessReviewStatus {
	d, reason, err := r.Authorize(ctx, a)
	st := authorizationv1.SubjectAccessReviewStatus{Allowed: d == authz.Allow, Denied: d == authz.Deny, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

const exactlyOne = `exactly one of nonResourceAttributes or resourceAttributes must be specified`

// validateAccessReviewSpec checks a review's spec as upstream does;
// subject says the spec names a user (not a self review).
func validateAccessReviewSpec(spec authorizationv1.SubjectAccessReviewSpec, subject bool) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec")
	if (spec.ResourceAttributes == nil) == (spec.NonResourceAttributes == nil) {
		errs = append(errs, field.Invalid(p, spec.NonResourceAttributes, exactlyOne))
	}
	if subject && spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(p.Child("user"), spec.User, `at least one of user or group must be specified`))
	}
	if ra := spec.ResourceAttributes; ra != nil {
		rp := field.NewPath("spec.resourceAttributes")
		if fs := ra.FieldSelector; fs != nil {
			errs = append(errs, validateSelectorAttributes(fs.RawSelector, len(fs.Requirements), rp.Child("fieldSelector"))...)
		}
		if ls := ra.LabelSelector; ls != nil {
			errs = append(errs, validateSelectorAttributes(ls.RawSelector, len(ls.Requirements), rp.Child("labelSelector"))...)
		}
	}
	return errs
}

func validateSelectorAttributes(raw string, requirements int, p *field.Path) field.ErrorList {
	switch {
	case raw != "" && requirements > 0:
		return field.ErrorList{field.Invalid(p.Child("rawSelector"), raw, "may not specified at the same time as requirements")}
	case raw == "" && requirements == 0:
		return field.ErrorList{field.Required(p.Child("requirements"), "when "+p.String()+" is specified, requirements or rawSelector is required")}
	}
	return nil
}

// metadataEmpty refuses metadata on a review (a namespace on a local
// one is its scope).
func metadataEmpty(m metav1.ObjectMeta, namespaced bool) field.ErrorList {
	c := m
	c.ManagedFields = nil
	msg := `must be empty`
	if namespaced {
		c.Namespace = ""
		msg = `must be empty except for namespace`
	}
	if equality.Semantic.DeepEqual(metav1.ObjectMeta{}, c) {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata"), m, msg)}
}

// reviewAnswer encodes an authorization review for the client.
func reviewAnswer(obj any, kind string) (map[string]any, error) {
	return encodeReview(obj, AuthorizationGroup, kind)
}
