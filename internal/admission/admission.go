// Package admission is the request path's admission step: mutating then
// validating webhooks, registered by MutatingWebhookConfiguration and
// ValidatingWebhookConfiguration objects, MutatingAdmissionPolicies (CEL,
// in process, before the mutating webhooks; mutatingpolicy.go) and
// ValidatingAdmissionPolicies (CEL, in process, before the validating
// webhooks). Mutate calls the matching
// mutating webhooks one after another (configurations in name order,
// webhooks in their order), applies their JSON patches and reinvokes those
// with reinvocationPolicy IfNeeded once when a later one changed the
// object; Validate calls the matching validating webhooks in parallel.
// Calls go out through the webhook package's clients, one connection pool
// per clientConfig, under the request's context and each webhook's
// timeout.
//
// Webhooks never see requests for webhook configurations (or admission
// policies), so that a broken webhook cannot lock users out of fixing it.
package admission

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authz"
	"github.com/crdserver/crdserver/internal/cel"
	"github.com/crdserver/crdserver/internal/webhook"
)

// Operation is what a request does, as AdmissionReviews name it.
type Operation string

const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// Attributes describe one request to admit. The handler fills them; Mutate
// replaces Object with the mutated object.
type Attributes struct {
	Operation Operation
	// Kind and Resource are the request's, in its version (for the scale
	// subresource Kind is autoscaling/v1 Scale).
	Kind        schema.GroupVersionKind
	Resource    schema.GroupVersionResource
	Subresource string
	// Name is empty on a create whose name the server generates;
	// Namespace is the namespace's own name for namespace objects.
	Name, Namespace string
	// Object is the new object (nil on delete), OldObject the stored one
	// (nil on create), both in the request's version.
	Object, OldObject map[string]any
	// ObjectJSON, when not nil, returns Object's JSON as the caller can
	// make it cheaper than encoding the map (an update's storage
	// encoding with its resourceVersion spliced in), or nil when it
	// cannot after all. It is called only once a webhook is to receive
	// the object, at most once per call of Mutate or Validate: a request
	// that no webhook matches pays nothing for it. Mutate drops it when
	// it replaces Object.
	ObjectJSON func() []byte
	// OldObjectJSON is OldObject's JSON when the caller has it at hand
	// (the stored object's bytes), nil when not.
	//
	// Both are members and values exactly those of the maps, as
	// encoding/json writes them, since webhooks receive these bytes
	// instead of an encoding of the maps.
	OldObjectJSON []byte
	// Options are the request's CreateOptions, UpdateOptions or
	// DeleteOptions as JSON decodes them.
	Options map[string]any
	DryRun  bool
	User    *authn.User

	// Versions are the resource's served versions, and Convert converts
	// an object of the resource to one of them ("group/version"): with
	// both, webhooks of matchPolicy Equivalent match the request in
	// another version and receive it converted. Convert nil: only the
	// request's version matches.
	Versions []string
	Convert  func(ctx context.Context, obj map[string]any, apiVersion string) (map[string]any, error)

	// MergeApplyConfiguration merges what a MutatingAdmissionPolicy's
	// ApplyConfiguration built into obj, both of obj's apiVersion and
	// kind, with the resource's structured-merge-diff types. Nil: such
	// mutations fail.
	MergeApplyConfiguration func(obj, patch map[string]any) (map[string]any, error)

	// Warn receives the warnings webhooks return; it may be nil. Validate
	// calls it from one goroutine at a time.
	Warn func(text string)

	// Annotate adds key=value to the request's audit annotations (the
	// first value of a key wins); it may be nil. Validate calls it from
	// several goroutines at once. Keys that are not qualified names are
	// dropped before it is called, as upstream drops them.
	Annotate func(key, value string)
}

// setObject replaces the object with a mutated one, whose JSON nobody has.
func (at *Attributes) setObject(obj map[string]any) {
	at.Object, at.ObjectJSON = obj, nil
}

// annotate records an audit annotation on at's request.
func (at *Attributes) annotate(key, value string) {
	if at.Annotate == nil || len(content.IsLabelKey(key)) > 0 {
		return
	}
	at.Annotate(key, value)
}

// Stored is one stored webhook configuration, encoded as storage holds it
// (admissionregistration.k8s.io/v1).
type Stored struct {
	Name     string
	Revision int64
	JSON     []byte
}

// Source lists the stored webhook configurations of one kind. Admission
// compiles them again only when the list changes. A source's lists stay
// its own: admission reads them and changes nothing in them. A source
// hands a new list when anything in it changed; the same list again (the
// same array) says nothing did.
type Source interface {
	WebhookConfigurations(ctx context.Context, mutating bool) ([]Stored, error)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context, mutating bool) ([]Stored, error)

func (f SourceFunc) WebhookConfigurations(ctx context.Context, mutating bool) ([]Stored, error) {
	return f(ctx, mutating)
}

var _ Source = SourceFunc(nil)

// Namespaces reads a namespace's labels for namespaceSelectors; a missing
// namespace is an error apierrors.IsNotFound recognises.
type Namespaces interface {
	NamespaceLabels(ctx context.Context, name string) (map[string]string, error)
}

// NamespacesFunc adapts a function to Namespaces.
type NamespacesFunc func(ctx context.Context, name string) (map[string]string, error)

func (f NamespacesFunc) NamespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	return f(ctx, name)
}

var _ Namespaces = NamespacesFunc(nil)

// Config builds an Admission.
type Config struct {
	// Clients calls the webhooks.
	Clients *webhook.Manager
	// Source lists the registrations.
	Source Source
	// Namespaces reads namespace labels; nil matches every
	// namespaceSelector as if namespaces had no labels.
	Namespaces Namespaces
	// Policies lists ValidatingAdmissionPolicies and their bindings; nil
	// has none.
	Policies PolicySource
	// MutatingPolicies lists MutatingAdmissionPolicies and their
	// bindings; nil has none.
	MutatingPolicies MutatingPolicySource
	// Params reads policies' params; nil fails policies with a paramKind.
	Params Params
	// Authorizer answers the checks of the CEL authorizer variables in
	// policies and match conditions; nil leaves them unbound, so that
	// expressions using them fail to evaluate.
	Authorizer authz.Authorizer
	Logger     *slog.Logger
	// Metrics is told how long each webhook call took; nil is told
	// nothing.
	Metrics Metrics
}

// Metrics records webhook calls, as upstream's
// apiserver_admission_webhook_admission_duration_seconds: typ is "admit"
// for a mutating webhook and "validating" for a validating one; rejected
// says whether the call failed or refused the request.
type Metrics interface {
	AdmissionWebhook(name, typ, operation string, rejected bool, elapsed time.Duration)
}

// Admission runs the webhooks. It is safe for concurrent use.
type Admission struct {
	clients    *webhook.Manager
	metrics    Metrics
	source     Source
	namespaces Namespaces
	authorizer cel.Authorizer // nil without Config.Authorizer
	log        *slog.Logger

	mutating, validating compiledSet

	policySource     PolicySource
	params           Params
	compiledPolicies compiledPolicies

	mutatingSource   MutatingPolicySource
	compiledMutating compiledMutatingPolicies
}

// New returns an Admission.
func New(c Config) *Admission {
	a := &Admission{clients: c.Clients, metrics: c.Metrics, source: c.Source, namespaces: c.Namespaces, policySource: c.Policies, mutatingSource: c.MutatingPolicies, params: c.Params, log: c.Logger}
	if a.log == nil {
		a.log = slog.Default()
	}
	if c.Authorizer != nil {
		a.authorizer = celAuthorizer{c.Authorizer}
	}
	if a.clients == nil {
		a.clients = &webhook.Manager{}
	}
	a.mutating.mutating = true
	return a
}

// exempt reports whether a request is for an admission configuration
// object, which no webhook intercepts.
func exempt(at *Attributes) bool {
	if at.Kind.Group != "admissionregistration.k8s.io" {
		return false
	}
	switch at.Kind.Kind {
	case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
		"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding":
		return true
	}
	return false
}

// warner serialises a request's Warn calls.
type warner struct {
	mu   sync.Mutex
	warn func(string)
}

func (w *warner) add(texts []string) {
	if w.warn == nil || len(texts) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range texts {
		w.warn(t)
	}
}
