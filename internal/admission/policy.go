package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/crdserver/crdserver/internal/cel"
)

// ValidatingAdmissionPolicies: CEL validations run in process, before the
// validating webhooks, for each binding whose policy and match resources
// match the request, once per param the binding's paramRef finds.
// auditAnnotations and the Audit action annotate the request's audit
// events through Attributes.Annotate. Not done (yet): namespaceObject
// beyond name and labels.

// Params reads the objects a binding's paramRef names: by name, or all
// that the selector selects, of kind in apiVersion, in namespace when the
// kind is namespaced. None found is no error.
type Params interface {
	Params(ctx context.Context, apiVersion, kind, namespace, name string, selector labels.Selector) ([]map[string]any, error)
}

// PolicySource lists the stored policies and bindings (lists admission
// only reads, as Source's).
type PolicySource interface {
	ValidatingAdmissionPolicies(ctx context.Context) ([]Stored, error)
	ValidatingAdmissionPolicyBindings(ctx context.Context) ([]Stored, error)
}

// policy is a compiled ValidatingAdmissionPolicy.
type policy struct {
	name        string
	failOpen    bool
	paramKind   *admissionregistrationv1.ParamKind
	constraints *hook // matchConstraints as a webhook's matching
	exclude     *hook // excludeResourceRules, nil when none
	conds       []namedExpr
	variables   []namedExpr
	// variableNames are the variables' names, in order.
	variableNames []string
	validations   []validation
	annotations   []auditAnnotation
	// err is a policy that does not compile.
	err error
}

type namedExpr struct {
	name string
	expr *cel.Expression
	src  string // the expression as written
}

type validation struct {
	admissionregistrationv1.Validation
	expr, msg *cel.Expression
}

type auditAnnotation struct {
	admissionregistrationv1.AuditAnnotation
	expr *cel.Expression
}

type binding struct {
	name, policy string
	actions      []admissionregistrationv1.ValidationAction
	paramRef     *admissionregistrationv1.ParamRef
	match        *hook // nil matches everything the policy does
	exclude      *hook
}

// compiledPolicies caches the compiled policies and bindings with the
// revisions they came from.
type compiledPolicies struct {
	mu       sync.Mutex
	from     []revision
	lists    [][]Stored // what from was read from (see sameLists)
	policies map[string]*policy
	bindings []*binding
}

func (a *Admission) policies(ctx context.Context) (map[string]*policy, []*binding, error) {
	if a.policySource == nil {
		return nil, nil, nil
	}
	ps, err := a.policySource.ValidatingAdmissionPolicies(ctx)
	if err != nil {
		return nil, nil, err
	}
	bs, err := a.policySource.ValidatingAdmissionPolicyBindings(ctx)
	if err != nil {
		return nil, nil, err
	}
	c := &a.compiledPolicies
	c.mu.Lock()
	defer c.mu.Unlock()
	if sameLists(c.lists, [][]Stored{ps, bs}) {
		return c.policies, c.bindings, nil
	}
	var revs []revision
	for _, s := range ps {
		revs = append(revs, revision{"p/" + s.Name, s.Revision})
	}
	for _, s := range bs {
		revs = append(revs, revision{"b/" + s.Name, s.Revision})
	}
	if revs == nil {
		revs = []revision{}
	}
	c.lists = [][]Stored{ps, bs}
	if c.from != nil && slices.Equal(c.from, revs) {
		return c.policies, c.bindings, nil
	}
	c.policies = map[string]*policy{}
	for _, s := range ps {
		var p admissionregistrationv1.ValidatingAdmissionPolicy
		if err := json.Unmarshal(s.JSON, &p); err != nil {
			a.log.Error("admission: skipping a policy that does not decode", "name", s.Name, "err", err)
			continue
		}
		c.policies[p.Name] = compilePolicy(&p)
	}
	c.bindings = nil
	for _, s := range bs {
		var b admissionregistrationv1.ValidatingAdmissionPolicyBinding
		if err := json.Unmarshal(s.JSON, &b); err != nil {
			a.log.Error("admission: skipping a policy binding that does not decode", "name", s.Name, "err", err)
			continue
		}
		cb := &binding{name: b.Name, policy: b.Spec.PolicyName, actions: b.Spec.ValidationActions, paramRef: b.Spec.ParamRef}
		if mr := b.Spec.MatchResources; mr != nil {
			cb.match, cb.exclude = resourcesHook(b.Name, mr)
		}
		c.bindings = append(c.bindings, cb)
	}
	slices.SortFunc(c.bindings, func(x, y *binding) int { return strings.Compare(x.name, y.name) })
	c.from = revs
	return c.policies, c.bindings, nil
}

// resourcesHook expresses match resources as webhook matching: the
// resource rules (with their resource names), selectors and match
// policy, and the excluded rules apart.
func resourcesHook(name string, mr *admissionregistrationv1.MatchResources) (match, exclude *hook) {
	w := admissionregistrationv1.MutatingWebhook{Name: name, NamespaceSelector: mr.NamespaceSelector, ObjectSelector: mr.ObjectSelector, MatchPolicy: mr.MatchPolicy}
	names := map[int][]string{}
	for i, r := range mr.ResourceRules {
		w.Rules = append(w.Rules, admissionregistrationv1.RuleWithOperations{Operations: r.Operations, Rule: r.Rule})
		names[i] = r.ResourceNames
	}
	if len(w.Rules) == 0 {
		// A binding without resource rules narrows by its selectors only.
		w.Rules = []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*", "*/*"}},
		}}
	}
	match = compileHook(name, 0, w)
	match.resourceNames = names
	if len(mr.ExcludeResourceRules) > 0 {
		ex := admissionregistrationv1.MutatingWebhook{Name: name, MatchPolicy: mr.MatchPolicy}
		exNames := map[int][]string{}
		for i, r := range mr.ExcludeResourceRules {
			ex.Rules = append(ex.Rules, admissionregistrationv1.RuleWithOperations{Operations: r.Operations, Rule: r.Rule})
			exNames[i] = r.ResourceNames
		}
		exclude = compileHook(name, 0, ex)
		exclude.resourceNames = exNames
	}
	return match, exclude
}

func compilePolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) *policy {
	cp := &policy{name: p.Name, paramKind: p.Spec.ParamKind}
	cp.failOpen = p.Spec.FailurePolicy != nil && *p.Spec.FailurePolicy == admissionregistrationv1.Ignore
	if mc := p.Spec.MatchConstraints; mc != nil {
		cp.constraints, cp.exclude = resourcesHook(p.Name, mc)
	} else {
		cp.err = errors.New("spec.matchConstraints is required")
		return cp
	}
	compile := func(expr string, result cel.PolicyResult) *cel.Expression {
		e, err := cel.CompilePolicyExpression(expr, result)
		if err != nil && cp.err == nil {
			cp.err = fmt.Errorf("%q: %w", expr, err)
		}
		return e
	}
	for _, c := range p.Spec.MatchConditions {
		cp.conds = append(cp.conds, namedExpr{c.Name, compile(c.Expression, cel.BoolResult), c.Expression})
	}
	for _, v := range p.Spec.Variables {
		cp.variables = append(cp.variables, namedExpr{v.Name, compile(v.Expression, cel.AnyResult), v.Expression})
		cp.variableNames = append(cp.variableNames, v.Name)
	}
	for _, v := range p.Spec.Validations {
		cv := validation{Validation: v, expr: compile(v.Expression, cel.BoolResult)}
		if v.MessageExpression != "" {
			cv.msg = compile(v.MessageExpression, cel.MessageResult)
		}
		cp.validations = append(cp.validations, cv)
	}
	for _, an := range p.Spec.AuditAnnotations {
		cp.annotations = append(cp.annotations, auditAnnotation{AuditAnnotation: an, expr: compile(an.ValueExpression, cel.StringOrNullResult)})
	}
	return cp
}

// matchResources reports whether match (and not exclude) matches the
// request, in the version it matched.
func (a *Admission) matchResources(ctx context.Context, match, exclude *hook, at *Attributes, objects *versions) (*invocation, error) {
	inv, err := a.match(ctx, match, at, objects)
	if err != nil || inv == nil {
		return nil, err
	}
	if exclude != nil {
		ex, err := a.match(ctx, exclude, at, objects)
		if err != nil {
			return nil, err
		}
		if ex != nil {
			return nil, nil
		}
	}
	return inv, nil
}

// bindingParams returns the params a binding evaluates its policy with,
// one evaluation each: a nil param when the policy or binding names none.
func (a *Admission) bindingParams(ctx context.Context, p *policy, b *binding, at *Attributes) ([]map[string]any, error) {
	ref := b.paramRef
	if p.paramKind == nil || ref == nil {
		return []map[string]any{nil}, nil
	}
	if a.params == nil {
		return nil, errors.New("params are not available")
	}
	ns := ref.Namespace
	if ns == "" {
		ns = at.Namespace
	}
	var sel labels.Selector
	switch {
	case ref.Name != "" && ref.Selector != nil:
		return nil, errors.New("paramRef.name and paramRef.selector are mutually exclusive")
	case ref.Name == "" && ref.Selector == nil:
		return nil, errors.New("one of name or selector must be provided")
	case ref.Selector != nil:
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(ref.Selector); err != nil {
			return nil, err
		}
	}
	params, err := a.params.Params(ctx, p.paramKind.APIVersion, p.paramKind.Kind, ns, ref.Name, sel)
	if err != nil {
		return nil, err
	}
	if len(params) == 0 && ref.ParameterNotFoundAction != nil && *ref.ParameterNotFoundAction == admissionregistrationv1.DenyAction {
		return nil, errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")
	}
	return params, nil
}

// decision is one failed validation (or evaluation error).
type decision struct {
	message string
	reason  metav1.StatusReason
	// index is the validation's in the policy (0 for errors that are no
	// validation's), for the Audit action's annotation.
	index int
	// always denies whatever the binding's actions: a binding that cannot
	// be configured, or an audit annotation that failed to evaluate,
	// under failurePolicy Fail.
	always bool
}

// validationFailure is one element of the Audit action's annotation,
// with upstream's JSON field names.
type validationFailure struct {
	Message           string                                     `json:"message"`
	Policy            string                                     `json:"policy"`
	Binding           string                                     `json:"binding"`
	ExpressionIndex   int                                        `json:"expressionIndex"`
	ValidationActions []admissionregistrationv1.ValidationAction `json:"validationActions"`
}

const (
	// validationFailureKey is upstream's annotation for failed
	// validations under the Audit action.
	validationFailureKey = "validation.policy.admission.k8s.io/validation_failure"
	// maxValidationFailures bounds that annotation (about 10 KiB), as
	// upstream's.
	maxValidationFailures = 50
	// maxAuditAnnotationValue is how much of an audit annotation's value
	// is kept, upstream's.
	maxAuditAnnotationValue = 10 * 1024
)

// validatePolicies evaluates the bindings' policies on at: the first
// denial under a Deny action is the error, Warn actions become warnings,
// Audit actions and the policies' auditAnnotations become audit
// annotations. Every binding is evaluated, a denied request's too, so
// that its audit event says everything that failed.
func (a *Admission) validatePolicies(ctx context.Context, at *Attributes, objects *versions) error {
	policies, bindings, err := a.policies(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	var denial error
	var failures []validationFailure
	annotations := map[string]*annotationValues{}
	for _, b := range bindings {
		p, ok := policies[b.policy]
		if !ok {
			continue
		}
		decisions, published, err := a.evaluateBinding(ctx, p, b, at, objects)
		if err != nil {
			return err
		}
		if len(published) > 0 && annotations[p.name] == nil {
			annotations[p.name] = &annotationValues{}
		}
		for _, an := range published {
			annotations[p.name].add(an.key, an.value)
		}
		for _, d := range decisions {
			if d.always {
				if denial == nil {
					denial = policyDenial(p, b, d, at)
				}
				continue
			}
			for _, act := range b.actions {
				switch act {
				case admissionregistrationv1.Deny:
					if denial == nil {
						denial = policyDenial(p, b, d, at)
					}
				case admissionregistrationv1.Audit:
					failures = append(failures, validationFailure{Message: d.message, Policy: b.policy, Binding: b.name, ExpressionIndex: d.index, ValidationActions: b.actions})
				case admissionregistrationv1.Warn:
					if at.Warn != nil {
						at.Warn(fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", p.name, b.name, d.message))
					}
				}
			}
		}
	}
	for name, values := range annotations {
		values.publish(name, at)
	}
	publishFailures(failures, at)
	return denial
}

// evaluateBinding evaluates a binding's policy on at, when both match it,
// once per param: the failed validations (and failures to configure or
// evaluate) and the audit annotations to publish.
func (a *Admission) evaluateBinding(ctx context.Context, p *policy, b *binding, at *Attributes, objects *versions) ([]decision, []annotation, error) {
	if p.err != nil {
		if p.failOpen {
			return nil, nil, nil
		}
		return []decision{{message: fmt.Errorf("failed to configure policy: %w", p.err).Error(), reason: metav1.StatusReasonInvalid}}, nil, nil
	}
	inv, err := a.matchResources(ctx, p.constraints, p.exclude, at, objects)
	if err != nil || inv == nil {
		return nil, nil, err
	}
	if b.match != nil {
		if m, err := a.matchResources(ctx, b.match, b.exclude, at, objects); err != nil || m == nil {
			return nil, nil, err
		}
	}
	params, err := a.bindingParams(ctx, p, b, at)
	if err != nil {
		if p.failOpen {
			return nil, nil, nil
		}
		return []decision{{message: fmt.Errorf("failed to configure binding: %w", err).Error(), reason: metav1.StatusReasonInvalid, always: true}}, nil, nil
	}
	var decisions []decision
	var published []annotation
	for _, param := range params {
		ds, ans, err := a.evaluatePolicy(ctx, p, inv, at, objects, param)
		if err != nil {
			return nil, nil, err
		}
		decisions = append(decisions, ds...)
		published = append(published, ans...)
	}
	return decisions, published, nil
}

// policyDenial is the error of a request a policy's binding denies.
func policyDenial(p *policy, b *binding, d decision, at *Attributes) error {
	msg := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", p.name, b.name, d.message)
	e := apierrors.NewForbidden(at.Resource.GroupResource(), at.Name, errors.New(msg))
	e.ErrStatus.Reason = d.reason
	e.ErrStatus.Code = reasonToCode(d.reason)
	e.ErrStatus.Details.Causes = append(e.ErrStatus.Details.Causes, metav1.StatusCause{Message: msg})
	return e
}

// annotation is one audit annotation a policy publishes, its key without
// the policy's name.
type annotation struct{ key, value string }

// annotationValues collects one policy's audit annotations over its
// bindings and params: the distinct values of a key, in order.
type annotationValues struct {
	keys   []string
	values map[string][]string
}

func (v *annotationValues) add(key, value string) {
	if v.values == nil {
		v.values = map[string][]string{}
	}
	if slices.Contains(v.values[key], value) {
		return
	}
	if v.values[key] == nil {
		v.keys = append(v.keys, key)
	}
	v.values[key] = append(v.values[key], value)
}

// publish annotates the request with "<policy>/<key>", several values of
// a key joined by ", " as upstream joins them.
func (v *annotationValues) publish(policy string, at *Attributes) {
	for _, k := range v.keys {
		at.annotate(policy+"/"+k, strings.Join(v.values[k], ", "))
	}
}

// publishFailures annotates the request with the validations that failed
// under the Audit action, as upstream's JSON list.
func publishFailures(failures []validationFailure, at *Attributes) {
	if len(failures) == 0 {
		return
	}
	if len(failures) > maxValidationFailures {
		failures = failures[:maxValidationFailures]
	}
	b, err := json.Marshal(failures)
	if err != nil {
		return // strings and ints always marshal
	}
	at.annotate(validationFailureKey, string(b))
}

func reasonToCode(r metav1.StatusReason) int32 {
	switch r {
	case metav1.StatusReasonForbidden:
		return http.StatusForbidden
	case metav1.StatusReasonInvalid:
		return http.StatusUnprocessableEntity
	case metav1.StatusReasonRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge
	case metav1.StatusReasonUnauthorized:
		return http.StatusUnauthorized
	}
	return http.StatusBadRequest
}

// evaluatePolicy runs one policy's conditions, variables, validations
// and audit annotations and returns its failed validations and the
// annotations to publish; evaluation errors are failures under
// failurePolicy Fail and ignored under Ignore.
func (a *Admission) evaluatePolicy(ctx context.Context, p *policy, inv *invocation, at *Attributes, objects *versions, params map[string]any) ([]decision, []annotation, error) {
	failure := func(index int, err error) []decision {
		if p.failOpen {
			return nil
		}
		return []decision{{message: err.Error(), reason: metav1.StatusReasonInvalid, index: index}}
	}
	vars, err := a.policyVars(ctx, inv, at, objects, params)
	if err != nil {
		return nil, nil, err
	}
	budget := uint64(cel.ConditionCostBudget)
	var spent uint64
	eval := func(e *cel.Expression) (any, error) {
		v, cost, err := e.Eval(ctx, vars)
		spent += cost
		if err == nil && spent > budget*4 {
			err = errors.New("validation failed due to running out of cost budget, no further validation rules will be run")
		}
		return v, err
	}
	match, err := prepare(p, &vars, eval)
	if err != nil {
		return failure(0, err), nil, nil
	}
	if !match {
		return nil, nil, nil
	}
	var out []decision
	for i, v := range p.validations {
		val, err := eval(v.expr)
		if err != nil {
			out = append(out, failure(i, fmt.Errorf("expression '%s' resulted in error: %w", v.Expression, err))...)
			continue
		}
		if val == true {
			continue
		}
		d := decision{reason: metav1.StatusReasonInvalid, index: i}
		if v.Reason != nil {
			d.reason = *v.Reason
		}
		if v.msg != nil {
			if m, err := eval(v.msg); err == nil {
				if s, ok := m.(string); ok && !strings.Contains(s, "\n") && len(s) <= 5*1024 {
					d.message = strings.TrimSpace(s)
				}
			}
		}
		if d.message == "" {
			d.message = strings.TrimSpace(v.Message)
		}
		if d.message == "" {
			d.message = "failed expression: " + strings.TrimSpace(v.Expression)
		}
		out = append(out, d)
	}
	var published []annotation
	for _, an := range p.annotations {
		val, err := eval(an.expr)
		if err == nil {
			var s string
			if s, err = cel.AuditAnnotationValue(an.ValueExpression, val); err == nil {
				if s != "" {
					published = append(published, annotation{an.Key, truncate(s, maxAuditAnnotationValue)})
				}
				continue
			}
		} else {
			err = fmt.Errorf("expression '%s' resulted in error: %w", an.ValueExpression, err)
		}
		if !p.failOpen {
			out = append(out, decision{message: err.Error(), reason: metav1.StatusReasonInvalid, always: true})
		}
	}
	return out, published, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// policyVars are the variables a policy's expressions see on at, in the
// version inv matched.
func (a *Admission) policyVars(ctx context.Context, inv *invocation, at *Attributes, objects *versions, params map[string]any) (cel.PolicyVars, error) {
	vo, err := objects.get(ctx, inv.kind)
	if err != nil {
		return cel.PolicyVars{}, apierrors.NewInternalError(err)
	}
	vars := cel.PolicyVars{
		Object: vo.object, OldObject: vo.old, Params: params, Authz: a.requestAuthz(at),
		Request: sync.OnceValue(func() map[string]any { return celRequest(inv, at) }),
	}
	if at.Namespace != "" && a.namespaces != nil && !isNamespaceResource(at.Resource) {
		vars.Namespace = sync.OnceValue(func() map[string]any {
			ls, err := a.namespaces.NamespaceLabels(ctx, at.Namespace)
			if err != nil {
				return nil
			}
			labels := map[string]any{}
			for k, v := range ls {
				labels[k] = v
			}
			return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": at.Namespace, "labels": labels}}
		})
	}
	return vars, nil
}

// prepare binds a policy's variables into vars (bindVariables) and
// evaluates its match conditions: whether they all hold. Conditions that
// fail to evaluate are one error together, as upstream aggregates them,
// unless another condition is false.
func prepare(p *policy, vars *cel.PolicyVars, eval func(*cel.Expression) (any, error)) (bool, error) {
	bindVariables(p, vars, eval)
	var condErrs []error
	for _, c := range p.conds {
		v, err := eval(c.expr)
		if err != nil {
			condErrs = append(condErrs, fmt.Errorf("expression '%s' resulted in error: %w", c.src, err))
			continue
		}
		if v == false {
			return false, nil
		}
	}
	if len(condErrs) > 0 {
		return false, utilerrors.NewAggregate(condErrs)
	}
	return true, nil
}

// bindVariables makes p's variables readable through vars, each evaluated
// by eval when an expression first reads it (and kept until bound again),
// as upstream's composited variables: one that fails to evaluate fails
// only the expressions that read it.
func bindVariables(p *policy, vars *cel.PolicyVars, eval func(*cel.Expression) (any, error)) {
	if len(p.variables) == 0 {
		return
	}
	type result struct {
		val  any
		err  error
		done bool
	}
	results := make([]result, len(p.variables))
	vars.VariableNames = p.variableNames
	vars.Variable = func(name string) (any, error) {
		i := slices.Index(p.variableNames, name)
		if i < 0 {
			return nil, fmt.Errorf("no such variable: %s", name)
		}
		r := &results[i]
		if !r.done {
			r.val, r.err = eval(p.variables[i].expr)
			r.done = true
		}
		return r.val, r.err
	}
}
