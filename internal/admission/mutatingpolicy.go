package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/crdserver/crdserver/internal/cel"
)

// MutatingAdmissionPolicies: CEL mutations run in process before the
// mutating webhooks, as upstream orders its admission plugins. For each
// policy (in name order) that matches the request, each of its bindings
// (in name order) that matches, and each param the binding finds: the
// matchConditions, the variables, then each mutation in order: a JSONPatch
// applied to the object, or an ApplyConfiguration merged into it with the
// resource's structured-merge-diff types (Attributes.MergeApplyConfiguration).
// Errors under failurePolicy Fail are collected and the first refuses the
// request once every policy ran, as upstream's dispatcher does.

// MutatingPolicySource lists the stored mutating policies and bindings
// (lists admission only reads, as Source's).
type MutatingPolicySource interface {
	MutatingAdmissionPolicies(ctx context.Context) ([]Stored, error)
	MutatingAdmissionPolicyBindings(ctx context.Context) ([]Stored, error)
}

// mutatingPolicy is a compiled MutatingAdmissionPolicy: the matching,
// conditions and variables of a validating one, and mutations.
type mutatingPolicy struct {
	*policy
	mutations []compiledMutation
	reinvoke  bool
	bindings  []*binding
}

type compiledMutation struct {
	apply bool // ApplyConfiguration, else JSONPatch
	expr  *cel.Expression
	// err is an expression that does not compile: upstream reports it
	// when the mutation runs, as its binding's failure.
	err error
}

type compiledMutatingPolicies struct {
	mu       sync.Mutex
	from     []revision
	lists    [][]Stored        // what from was read from (see sameLists)
	policies []*mutatingPolicy // in name order, each with its bindings
}

func (a *Admission) mutatingPolicies(ctx context.Context) ([]*mutatingPolicy, error) {
	if a.mutatingSource == nil {
		return nil, nil
	}
	ps, err := a.mutatingSource.MutatingAdmissionPolicies(ctx)
	if err != nil {
		return nil, err
	}
	bs, err := a.mutatingSource.MutatingAdmissionPolicyBindings(ctx)
	if err != nil {
		return nil, err
	}
	c := &a.compiledMutating
	c.mu.Lock()
	defer c.mu.Unlock()
	if sameLists(c.lists, [][]Stored{ps, bs}) {
		return c.policies, nil
	}
	revs := []revision{}
	for _, s := range ps {
		revs = append(revs, revision{"p/" + s.Name, s.Revision})
	}
	for _, s := range bs {
		revs = append(revs, revision{"b/" + s.Name, s.Revision})
	}
	c.lists = [][]Stored{ps, bs}
	if c.from != nil && slices.Equal(c.from, revs) {
		return c.policies, nil
	}
	byName := map[string]*mutatingPolicy{}
	c.policies = nil
	for _, s := range ps {
		var p admissionregistrationv1.MutatingAdmissionPolicy
		if err := json.Unmarshal(s.JSON, &p); err != nil {
			a.log.Error("admission: skipping a mutating policy that does not decode", "name", s.Name, "err", err)
			continue
		}
		mp := compileMutatingPolicy(&p)
		byName[p.Name] = mp
		c.policies = append(c.policies, mp)
	}
	for _, s := range bs {
		var b admissionregistrationv1.MutatingAdmissionPolicyBinding
		if err := json.Unmarshal(s.JSON, &b); err != nil {
			a.log.Error("admission: skipping a mutating policy binding that does not decode", "name", s.Name, "err", err)
			continue
		}
		mp, ok := byName[b.Spec.PolicyName]
		if !ok {
			continue
		}
		cb := &binding{name: b.Name, policy: b.Spec.PolicyName, paramRef: b.Spec.ParamRef}
		if mr := b.Spec.MatchResources; mr != nil {
			cb.match, cb.exclude = resourcesHook(b.Name, mr)
		}
		mp.bindings = append(mp.bindings, cb)
	}
	slices.SortFunc(c.policies, func(x, y *mutatingPolicy) int { return strings.Compare(x.name, y.name) })
	for _, p := range c.policies {
		slices.SortFunc(p.bindings, func(x, y *binding) int { return strings.Compare(x.name, y.name) })
	}
	c.from = revs
	return c.policies, nil
}

func compileMutatingPolicy(p *admissionregistrationv1.MutatingAdmissionPolicy) *mutatingPolicy {
	// The matching, conditions and variables compile as a validating
	// policy's would.
	mp := &mutatingPolicy{policy: compilePolicy(&admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: p.ObjectMeta,
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind: p.Spec.ParamKind, MatchConstraints: p.Spec.MatchConstraints, FailurePolicy: p.Spec.FailurePolicy,
			MatchConditions: p.Spec.MatchConditions, Variables: p.Spec.Variables,
		},
	})}
	mp.reinvoke = p.Spec.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy
	for _, m := range p.Spec.Mutations {
		var expr string
		cm := compiledMutation{apply: m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration}
		switch {
		case cm.apply && m.ApplyConfiguration != nil:
			expr = m.ApplyConfiguration.Expression
		case !cm.apply && m.JSONPatch != nil:
			expr = m.JSONPatch.Expression
		default:
			continue
		}
		cm.expr, cm.err = cel.CompileMutation(expr, cm.apply)
		mp.mutations = append(mp.mutations, cm)
	}
	return mp
}

// policyError is one failure of a policy, reported unless the policy
// ignores failures.
type policyError struct {
	policy, binding string
	err             error
}

// mutatePolicies runs one round of the mutating policies on at. On the
// second round only the invocations r marked run.
func (a *Admission) mutatePolicies(ctx context.Context, at *Attributes, r *reinvocation, second bool) error {
	policies, err := a.mutatingPolicies(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	var failures []policyError
	fail := func(p *mutatingPolicy, b string, err error) {
		if !p.failOpen {
			failures = append(failures, policyError{p.name, b, err})
		}
	}
	for _, p := range policies {
		objects := newVersions(at)
		inv, err := a.matchResources(ctx, p.constraints, p.exclude, at, objects)
		if err != nil {
			return err
		}
		if inv == nil {
			continue
		}
		if p.err != nil {
			fail(p, "", fmt.Errorf("failed to configure policy: %w", p.err))
			continue
		}
		for _, b := range p.bindings {
			if b.match != nil {
				m, err := a.matchResources(ctx, b.match, b.exclude, at, objects)
				if err != nil {
					return err
				}
				if m == nil {
					continue
				}
			}
			params, err := a.bindingParams(ctx, p.policy, b, at)
			if err != nil {
				fail(p, b.name, fmt.Errorf("failed to configure binding: %w", err))
				continue
			}
			for _, param := range params {
				key := invocationKey(p.name, b.name, param)
				if second && !r.reinvoke[key] {
					continue
				}
				changed, err := a.mutateWithPolicy(ctx, p, inv, at, param)
				if err != nil {
					var status apierrors.APIStatus
					if errors.As(err, &status) {
						return err
					}
					fail(p, b.name, err)
				}
				if changed {
					for _, k := range r.invoked {
						r.reinvoke[k] = true
					}
					r.invoked = r.invoked[:0]
					r.again = true
				}
				if p.reinvoke {
					r.invoked = append(r.invoked, key)
				}
				// The object changed: later invocations match and read it anew.
				objects = newVersions(at)
			}
		}
	}
	if len(failures) == 0 {
		return nil
	}
	e := apierrors.NewForbidden(at.Resource.GroupResource(), at.Name, errors.New("admission request denied by policy"))
	e.ErrStatus.Message = ""
	for _, f := range failures {
		msg := fmt.Sprintf("policy %q denied request: %s", f.policy, f.err)
		if f.binding != "" {
			msg = fmt.Sprintf("policy '%s' with binding '%s' denied request: %s", f.policy, f.binding, f.err)
		}
		if e.ErrStatus.Message == "" {
			e.ErrStatus.Message = msg
			e.ErrStatus.Reason = metav1.StatusReasonInvalid
		}
		e.ErrStatus.Details.Causes = append(e.ErrStatus.Details.Causes, metav1.StatusCause{Message: msg})
	}
	return e
}

// invocationKey names one evaluation of a policy for reinvocation.
func invocationKey(policy, binding string, param map[string]any) string {
	key := policy + "/" + binding
	if meta, ok := param["metadata"].(map[string]any); ok {
		key += fmt.Sprintf("/%v/%v", meta["namespace"], meta["name"])
	}
	return key
}

// mutateWithPolicy evaluates one policy with one param on at and sets
// at.Object to the mutated object; changed says whether it differs.
func (a *Admission) mutateWithPolicy(ctx context.Context, p *mutatingPolicy, inv *invocation, at *Attributes, param map[string]any) (bool, error) {
	objects := newVersions(at)
	vars, err := a.policyVars(ctx, inv, at, objects, param)
	if err != nil {
		return false, err
	}
	if vars.Object == nil {
		return false, nil // a delete: nothing to mutate
	}
	eval := func(e *cel.Expression) (any, error) {
		v, _, err := e.Eval(ctx, vars)
		return v, err
	}
	if match, err := prepare(p.policy, &vars, eval); !match || err != nil {
		return false, err
	}
	original, obj := vars.Object, vars.Object
	for i, m := range p.mutations {
		if m.err != nil {
			return false, m.err
		}
		vars.Object = obj
		if i > 0 {
			// Upstream evaluates each mutation afresh: its variables
			// read the object the mutations before it made.
			bindVariables(p.policy, &vars, eval)
		}
		out, cost, err := m.expr.Eval(ctx, vars)
		if err == nil && cost > celconfig.RuntimeCELCostBudget {
			err = errors.New("validation failed due to running out of cost budget, no further validation rules will be run")
		}
		if err != nil {
			return false, err
		}
		if m.apply {
			obj, err = a.applyConfiguration(at, obj, out)
		} else {
			obj, err = jsonPatchObject(obj, out)
		}
		if err != nil {
			return false, err
		}
	}
	if jsonEqual(obj, original) {
		return false, nil
	}
	if inv.kind != at.Kind {
		if obj, err = at.Convert(ctx, obj, at.Kind.GroupVersion().String()); err != nil {
			return false, apierrors.NewInternalError(err)
		}
		if jsonEqual(obj, at.Object) {
			return false, nil
		}
	}
	at.setObject(obj)
	return true, nil
}

func (a *Admission) applyConfiguration(at *Attributes, obj map[string]any, out any) (map[string]any, error) {
	patch, err := cel.ApplyConfiguration(out)
	if err != nil {
		return nil, err
	}
	if at.MergeApplyConfiguration == nil {
		return nil, errors.New("error applying patch: ApplyConfiguration is not supported for this resource")
	}
	patch["apiVersion"], patch["kind"] = obj["apiVersion"], obj["kind"]
	merged, err := at.MergeApplyConfiguration(obj, patch)
	if err != nil {
		return nil, fmt.Errorf("error applying patch: %w", err)
	}
	return merged, nil
}

// jsonPatchObject applies the JSON patch out to obj; a failed test
// operation leaves obj as it was, as upstream does.
func jsonPatchObject(obj map[string]any, out any) (map[string]any, error) {
	ops, err := cel.JSONPatchOps(out)
	if err != nil {
		return nil, err
	}
	doc, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatch.DecodePatch(doc)
	if err != nil {
		return nil, fmt.Errorf("JSON Patch: %w", err)
	}
	patched, err := applyPatch(obj, patch)
	if errors.Is(err, jsonpatch.ErrTestFailed) {
		return obj, nil
	}
	if err != nil {
		return nil, fmt.Errorf("JSON Patch: %w", err)
	}
	return patched, nil
}

func jsonEqual(a, b map[string]any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
