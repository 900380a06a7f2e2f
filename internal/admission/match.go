package admission

import (
	"context"
	"errors"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/crdserver/crdserver/internal/cel"
)

// invocation is a webhook that matched a request, with the version it
// matched in: the request's, or (matchPolicy Equivalent) another served
// version of the resource.
type invocation struct {
	hook     *hook
	resource schema.GroupVersionResource
	kind     schema.GroupVersionKind
}

// match decides whether h is called for at, as upstream's ShouldCallHook:
// selectors first (their errors count only for webhooks whose rules
// match), then rules in the request's version, then in an equivalent
// version, then matchConditions. A nil invocation and nil error mean the
// webhook is not called. objects gives the request in a version.
func (a *Admission) match(ctx context.Context, h *hook, at *Attributes, objects *versions) (*invocation, error) {
	nsMatch, nsErr := a.matchNamespace(ctx, h, at)
	if !nsMatch && nsErr == nil {
		return nil, nil
	}
	objMatch, objErr := matchObject(h, at)
	if !objMatch && objErr == nil {
		return nil, nil
	}
	var inv *invocation
	for i := range h.Rules {
		if h.ruleMatches(i, at, at.Resource) {
			inv = &invocation{hook: h, resource: at.Resource, kind: at.Kind}
			break
		}
	}
	if inv == nil && h.MatchPolicy != nil && *h.MatchPolicy == admissionregistrationv1.Equivalent && at.Convert != nil {
	rules:
		for i := range h.Rules {
			for _, v := range at.Versions {
				if v == at.Resource.Version {
					continue
				}
				res := at.Resource
				res.Version = v
				if h.ruleMatches(i, at, res) {
					kind := at.Kind
					if at.Subresource != "scale" {
						kind.Version = v
					}
					inv = &invocation{hook: h, resource: res, kind: kind}
					break rules
				}
			}
		}
	}
	if inv == nil {
		return nil, nil
	}
	if nsErr != nil {
		return nil, nsErr
	}
	if objErr != nil {
		return nil, objErr
	}
	if h.condErr != nil || len(h.conds) > 0 {
		ok, err := a.matchConditions(ctx, inv, at, objects)
		if err != nil || !ok {
			return nil, err
		}
	}
	return inv, nil
}

// ruleMatches matches rule i of h, and its resource names (a policy's
// rules have them) when it lists any.
func (h *hook) ruleMatches(i int, at *Attributes, res schema.GroupVersionResource) bool {
	if names := h.resourceNames[i]; len(names) > 0 && !slices.Contains(names, at.Name) {
		return false
	}
	return ruleMatches(&h.Rules[i], at, res)
}

// ruleMatches is upstream's rule matcher for the request in resource res.
func ruleMatches(r *admissionregistrationv1.RuleWithOperations, at *Attributes, res schema.GroupVersionResource) bool {
	return scopeMatches(r.Scope, at, res) &&
		operationMatches(r.Operations, at.Operation) &&
		exactOrWildcard(r.APIGroups, res.Group) &&
		exactOrWildcard(r.APIVersions, res.Version) &&
		resourceMatches(r.Resources, res.Resource, at.Subresource)
}

func isNamespaceResource(res schema.GroupVersionResource) bool {
	return res.Group == "" && res.Resource == "namespaces"
}

func scopeMatches(scope *admissionregistrationv1.ScopeType, at *Attributes, res schema.GroupVersionResource) bool {
	if scope == nil || *scope == admissionregistrationv1.AllScopes {
		return true
	}
	switch *scope {
	case admissionregistrationv1.NamespacedScope:
		return !isNamespaceResource(res) && at.Namespace != ""
	case admissionregistrationv1.ClusterScope:
		return isNamespaceResource(res) || at.Namespace == ""
	}
	return false
}

func operationMatches(ops []admissionregistrationv1.OperationType, op Operation) bool {
	for _, o := range ops {
		if o == admissionregistrationv1.OperationAll || string(o) == string(op) {
			return true
		}
	}
	return false
}

func exactOrWildcard(items []string, want string) bool {
	for _, it := range items {
		if it == "*" || it == want {
			return true
		}
	}
	return false
}

func resourceMatches(patterns []string, res, sub string) bool {
	for _, p := range patterns {
		r, s, _ := strings.Cut(p, "/")
		if (r == "*" || r == res) && (s == "*" || s == sub) {
			return true
		}
	}
	return false
}

// matchNamespace evaluates the namespaceSelector: cluster-scoped objects
// other than namespaces always match; a namespace being created or updated
// is matched by its new labels, anything else by its namespace's.
func (a *Admission) matchNamespace(ctx context.Context, h *hook, at *Attributes) (bool, error) {
	if at.Namespace == "" && !isNamespaceResource(at.Resource) {
		return true, nil
	}
	if h.selErr != nil {
		return false, apierrors.NewInternalError(h.selErr)
	}
	if h.nsSel.Empty() {
		return true, nil
	}
	var nsLabels map[string]string
	if isNamespaceResource(at.Resource) && at.Subresource == "" && (at.Operation == Create || at.Operation == Update) {
		nsLabels = objectLabels(at.Object)
	} else if a.namespaces != nil {
		var err error
		nsLabels, err = a.namespaces.NamespaceLabels(ctx, at.Namespace)
		if err != nil {
			var st apierrors.APIStatus
			if apierrors.IsNotFound(err) && errors.As(err, &st) {
				return false, &apierrors.StatusError{ErrStatus: st.Status()}
			}
			return false, apierrors.NewInternalError(err)
		}
	}
	return h.nsSel.Matches(labels.Set(nsLabels)), nil
}

// matchObject evaluates the objectSelector against the new and the old
// object: either matching is enough.
func matchObject(h *hook, at *Attributes) (bool, error) {
	if h.selErr != nil {
		return false, apierrors.NewInternalError(h.selErr)
	}
	if h.objSel.Empty() {
		return true, nil
	}
	matches := func(obj map[string]any) bool {
		return obj != nil && h.objSel.Matches(labelsOf(obj))
	}
	return matches(at.Object) || matches(at.OldObject), nil
}

// labelsOf is obj's labels as a selector reads them, without copying
// them: every write is matched against every webhook's and binding's
// object selector.
func labelsOf(obj map[string]any) labels.Labels {
	md, _ := obj["metadata"].(map[string]any)
	ls, _ := md["labels"].(map[string]any)
	return objectLabelSet(ls)
}

// objectLabelSet is a decoded object's labels; a value that is not a
// string (the schema allows none) is no label.
type objectLabelSet map[string]any

func (l objectLabelSet) Has(k string) bool {
	_, ok := l.Lookup(k)
	return ok
}

func (l objectLabelSet) Get(k string) string {
	v, _ := l.Lookup(k)
	return v
}

func (l objectLabelSet) Lookup(k string) (string, bool) {
	v, ok := l[k].(string)
	return v, ok
}

func objectLabels(obj map[string]any) map[string]string {
	md, _ := obj["metadata"].(map[string]any)
	ls, _ := md["labels"].(map[string]any)
	out := make(map[string]string, len(ls))
	for k, v := range ls {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// matchConditions evaluates the webhook's conditions on the request as
// the webhook would receive it. Any false condition skips the webhook;
// errors (with no false condition) fail the request under failurePolicy
// Fail and skip the webhook under Ignore.
func (a *Admission) matchConditions(ctx context.Context, inv *invocation, at *Attributes, objects *versions) (bool, error) {
	h := inv.hook
	fail := func(err error) (bool, error) {
		if h.failOpen() {
			return false, nil
		}
		return false, apierrors.NewForbidden(at.Resource.GroupResource(), at.Name, err)
	}
	if h.condErr != nil {
		return fail(h.condErr)
	}
	vo, err := objects.get(ctx, inv.kind)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	req := celRequest(inv, at)
	var errs []error
	var spent uint64
	authz := a.requestAuthz(at)
	for _, c := range h.conds {
		ok, cost, err := c.c.Eval(ctx, vo.object, vo.old, req, authz)
		spent += cost
		switch {
		case err != nil:
			errs = append(errs, err)
		case !ok:
			return false, nil
		}
		if spent > cel.ConditionCostBudget {
			errs = append(errs, errors.New("validation failed due to running out of cost budget, no further validation rules will be run"))
			break
		}
	}
	if len(errs) > 0 {
		return fail(utilerrors.NewAggregate(errs))
	}
	return true, nil
}
