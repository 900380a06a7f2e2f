package cel

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
)

// Validator runs a version's rules on objects. It is built once per CRD
// version, is immutable, and safe for concurrent use.
type Validator struct {
	root   *vnode
	schema *node // the root's adapter, for ratcheting correlation
	// programs holds each node's compiled rules by what they depend on,
	// so that the next version of the schema reuses what did not change.
	programs map[string]programs
}

// programs are one node's compiled rules, or why they could not be.
type programs struct {
	rules []compiled
	err   error
}

// vnode holds the rules of one schema node and the vnodes of those
// children that have rules at or below them; nodes without rules are
// not visited at all.
type vnode struct {
	s       *node // how values here are typed (with apiVersion/kind/metadata at a resource root)
	typ     string
	rules   []compiled
	err     error // the node's rules could not be compiled at all
	oldSelf bool  // some rule reads oldSelf
	// correlatable: old values of this object's fields are passed down
	// (x-kubernetes-map-type unset, granular or atomic).
	correlatable bool

	props    map[string]*vnode
	propKeys []string // sorted, so errors come in a stable order
	addl     *vnode
	items    *vnode
	allOf    []*vnode
}

// New compiles the rules of a version's schema. It returns nil when the
// schema has none, so callers skip CEL entirely for such versions.
func New(props *apiextensionsv1.JSONSchemaProps) *Validator {
	return Update(nil, props)
}

// Update is New for the next version of a schema whose rules prev
// compiled (prev may be nil): a node whose rules and schema below it are
// unchanged keeps its compiled programs, as its rules would type and
// cost the same. Compiling is the expensive part of serving a CRD.
func Update(prev *Validator, props *apiextensionsv1.JSONSchemaProps) *Validator {
	if props == nil || !hasRules(props) {
		return nil
	}
	root := newNode(props)
	root.withMeta = root.typeAndObjectMeta()
	decl := common.SchemaDeclType(root, true)
	b := &builder{programs: map[string]programs{}}
	if prev != nil {
		b.prev = prev.programs
	}
	return &Validator{root: b.build(props, root, true, decl), schema: root, programs: b.programs}
}

// builder builds a Validator's tree, reusing programs of a previous one.
type builder struct {
	prev, programs map[string]programs
}

// compile compiles the rules src declares for values of n, or reuses
// them: they depend on the rules, on n's schema and everything below it
// (which gives self its type and sizes), and on whether n is a resource
// root (which adds apiVersion, kind and metadata).
func (b *builder) compile(src *apiextensionsv1.JSONSchemaProps, n *node, resourceRoot bool, decl *apiservercel.DeclType) programs {
	rules, _ := json.Marshal(src.XValidations)
	schema, _ := json.Marshal(n.p)
	key := fmt.Sprintf("%t\x00%s\x00%s", resourceRoot, rules, schema)
	if p, ok := b.programs[key]; ok {
		return p
	}
	p, ok := b.prev[key]
	if !ok {
		rulesOf := *n
		rulesOf.p = withRules(n.p, src.XValidations)
		p.rules, p.err = compileRules(&rulesOf, decl, allStored)
	}
	b.programs[key] = p
	return p
}

func hasRules(p *apiextensionsv1.JSONSchemaProps) bool {
	if p == nil {
		return false
	}
	if len(p.XValidations) > 0 {
		return true
	}
	if p.Items != nil && hasRules(p.Items.Schema) {
		return true
	}
	if p.AdditionalProperties != nil && hasRules(p.AdditionalProperties.Schema) {
		return true
	}
	for k := range p.Properties {
		v := p.Properties[k]
		if hasRules(&v) {
			return true
		}
	}
	for i := range p.AllOf {
		if hasRules(&p.AllOf[i]) {
			return true
		}
	}
	return false
}

// build compiles the rules that src declares for values of schema n (src
// is n's own props, or one of its allOf branches, whose rules apply to
// the same values).
func (b *builder) build(src *apiextensionsv1.JSONSchemaProps, n *node, resourceRoot bool, decl *apiservercel.DeclType) *vnode {
	if src == nil || n == nil || !hasRules(src) {
		return nil
	}
	v := &vnode{s: n, typ: n.typ, correlatable: n.mapType == "" || n.mapType == "granular" || n.mapType == "atomic"}
	if resourceRoot {
		v.s = n.WithTypeAndObjectMeta().(*node)
	}
	if len(src.XValidations) > 0 {
		p := b.compile(src, n, resourceRoot, decl)
		v.rules, v.err = p.rules, p.err
		for _, c := range v.rules {
			v.oldSelf = v.oldSelf || c.usesOldSelf
		}
	}
	var elem *apiservercel.DeclType
	if decl != nil {
		elem = decl.ElemType
	}
	if src.Items != nil && n.items != nil {
		v.items = b.build(src.Items.Schema, n.items, n.items.p.XEmbeddedResource, elem)
	}
	if src.AdditionalProperties != nil && n.addl != nil && n.addl.s != nil {
		v.addl = b.build(src.AdditionalProperties.Schema, n.addl.s, n.addl.s.p.XEmbeddedResource, elem)
	}
	for k := range src.Properties {
		child, ok := n.props[k].(*node)
		if !ok {
			continue
		}
		var ft *apiservercel.DeclType
		if name, ok := apiservercel.Escape(k); ok {
			if decl == nil {
				continue
			}
			f, ok := decl.Fields[name]
			if !ok {
				continue // a field CEL cannot type is not validated by rules
			}
			ft = f.Type
		} else if ft = common.SchemaDeclType(child, child.p.XEmbeddedResource); ft == nil {
			continue
		}
		sp := src.Properties[k]
		if c := b.build(&sp, child, child.p.XEmbeddedResource, ft); c != nil {
			if v.props == nil {
				v.props = map[string]*vnode{}
			}
			v.props[k] = c
			v.propKeys = append(v.propKeys, k)
		}
	}
	sort.Strings(v.propKeys)
	for i := range src.AllOf {
		if c := b.build(&src.AllOf[i], n, resourceRoot, decl); c != nil {
			v.allOf = append(v.allOf, c)
		}
	}
	return v
}

// withRules is p with the rules of an allOf branch in place of its own.
func withRules(p *apiextensionsv1.JSONSchemaProps, rules apiextensionsv1.ValidationRules) *apiextensionsv1.JSONSchemaProps {
	if len(p.XValidations) == len(rules) && (len(rules) == 0 || &p.XValidations[0] == &rules[0]) {
		return p
	}
	c := *p
	c.XValidations = rules
	return &c
}

// state is one object's evaluation: what it found and what it may still
// spend.
type state struct {
	ctx      context.Context
	errs     field.ErrorList
	warnings []string
	budget   int64
}

// Validate runs every rule on obj. old is the stored object on update
// (nil on create): transition rules run only then, and an error in a
// value unchanged from old becomes a warning instead (upstream's
// CRDValidationRatcheting). A status write validates the whole object as
// an update does.
func (v *Validator) Validate(ctx context.Context, obj, old map[string]any) (field.ErrorList, []string) {
	if v == nil || obj == nil {
		return nil, nil
	}
	st := &state{ctx: ctx, budget: RuntimeBudget}
	var r ratchet
	var oldV any
	if old != nil {
		r.cur = common.NewCorrelatedObject(obj, old, v.schema)
		oldV = old
	}
	v.root.validate(st, nil, obj, oldV, r)
	return st.errs, st.warnings
}

// ratchet follows the correlation of new and old values down the object.
type ratchet struct{ cur, parent *common.CorrelatedObject }

func (r ratchet) unchanged() bool {
	if r.cur != nil {
		return r.cur.CachedDeepEqual()
	}
	return r.parent.CachedDeepEqual()
}

func (r ratchet) key(k string) ratchet {
	switch {
	case r.cur == nil:
		return r
	case r.parent == nil && (k == "apiVersion" || k == "kind"):
		return ratchet{}
	}
	return ratchet{cur: r.cur.Key(k), parent: r.cur}
}

func (r ratchet) index(i int) ratchet {
	if r.cur == nil {
		return r
	}
	return ratchet{cur: r.cur.Index(i), parent: r.cur}
}

// validate evaluates n's rules on obj and descends; it reports false once
// the budget is spent, after which nothing more is evaluated.
func (n *vnode) validate(st *state, p *field.Path, obj, old any, r ratchet) bool {
	if n == nil || obj == nil {
		return true
	}
	if !n.expressions(st, p, obj, old, r) {
		return false
	}
	for _, a := range n.allOf {
		if !a.validate(st, p, obj, old, ratchet{parent: r.parent}) {
			return false
		}
	}
	switch x := obj.(type) {
	case map[string]any:
		oldMap, _ := old.(map[string]any)
		if !n.correlatable {
			oldMap = nil
		}
		if n.addl != nil {
			for _, k := range sortedKeys(x) {
				if !n.addl.validate(st, p.Key(k), x[k], lookup(oldMap, k), r.key(k)) {
					return false
				}
			}
		}
		for _, k := range n.propKeys {
			val, ok := x[k]
			if !ok {
				continue
			}
			if !n.props[k].validate(st, p.Child(k), val, lookup(oldMap, k), r.key(k)) {
				return false
			}
		}
	case []any:
		if n.items == nil {
			return true
		}
		oldList, _ := old.([]any)
		olds := common.MakeMapList(n.s, oldList)
		for i, e := range x {
			if !n.items.validate(st, p.Index(i), e, olds.Get(e), r.index(i)) {
				return false
			}
		}
	}
	return true
}

func lookup(m map[string]any, k string) any {
	if m == nil {
		return nil
	}
	return m[k]
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

const outOfBudget = "validation failed due to running out of cost budget, no further validation rules will be run"

// expressions evaluates n's own rules on obj.
func (n *vnode) expressions(st *state, p *field.Path, obj, old any, r ratchet) bool {
	if n.err != nil {
		st.errs = append(st.errs, field.Invalid(p, n.typ, fmt.Sprintf("rule compiler initialization error: %v", n.err)))
		return true
	}
	if len(n.rules) == 0 {
		return true
	}
	if st.budget <= 0 {
		st.errs = append(st.errs, field.Invalid(p, n.typ, outOfBudget))
		return false
	}
	act := &activation{self: common.UnstructuredToVal(obj, n.s)}
	opt := act
	if n.oldSelf {
		opt = &activation{self: act.self, hasOld: true, old: types.OptionalNone}
		if old != nil {
			act.old, act.hasOld = common.UnstructuredToVal(old, n.s), true
			opt.old = types.OptionalOf(act.old)
		}
	}
	for i := range n.rules {
		c := &n.rules[i]
		if c.err != nil {
			st.errs = append(st.errs, field.Invalid(p, n.typ, fmt.Sprintf("rule compile error: %v", c.err)))
			continue
		}
		if c.prog == nil || (c.usesOldSelf && old == nil && !c.optionalOld) {
			continue
		}
		a := act
		if c.optionalOld {
			a = opt
		}
		out, details, err := c.prog.run(st.ctx, a)
		if details == nil || details.ActualCost() == nil {
			st.errs = append(st.errs, field.Invalid(p, n.typ, fmt.Sprintf("runtime cost could not be calculated for validation rule: %v, no further validation rules will be run", ruleString(c.rule))))
			return false
		}
		if cost := *details.ActualCost(); cost > math.MaxInt64 || int64(cost) > st.budget {
			st.errs = append(st.errs, field.Invalid(p, n.typ, outOfBudget))
			return false
		} else {
			st.budget -= int64(cost)
		}
		if err != nil {
			msg := err.Error()
			switch {
			case strings.HasPrefix(msg, "no such overload"):
				st.errs = append(st.errs, field.Invalid(p, n.typ, fmt.Sprintf("'%v': call arguments did not match a supported operator, function or macro signature for rule: %v", err, ruleString(c.rule))))
			case strings.HasPrefix(msg, "operation cancelled: actual cost limit exceeded"):
				st.errs = append(st.errs, field.Invalid(p, n.typ, fmt.Sprintf("'%v': no further validation rules will be run due to call cost exceeds limit for rule: %v", err, ruleString(c.rule))))
				return false
			default:
				st.errs = append(st.errs, field.Invalid(p, n.typ, fmt.Sprintf("%v evaluating rule: %v", err, ruleString(c.rule))))
			}
			continue
		}
		if out == types.True {
			continue
		}
		if !n.fail(st, p, obj, c, act, r) {
			return false
		}
	}
	return true
}

// fail reports a rule that evaluated to false, with its messageExpression,
// message or the default message, at its fieldPath. An error in a value
// unchanged from old is only a warning, unless the rule is a transition
// rule (it compares with old on purpose).
func (n *vnode) fail(st *state, p *field.Path, obj any, c *compiled, act *activation, r ratchet) bool {
	if c.fieldPath != "" {
		p = p.Child(c.fieldPath)
	}
	ratcheted := !c.usesOldSelf && r.unchanged()
	add := func(e *field.Error) {
		if ratcheted {
			st.warnings = append(st.warnings, e.Error())
		} else {
			st.errs = append(st.errs, e)
		}
	}
	detail, ok := "", false
	if c.msgProg != nil {
		msg, err := st.message(c, act)
		switch {
		case err == nil:
			detail, ok = msg, true
		case err.Type == apiservercel.ErrorTypeInternal:
			add(field.InternalError(p, err))
			return false
		case err.Type == apiservercel.ErrorTypeInvalid:
			add(field.Invalid(p, n.typ, err.Error()))
			return false
		}
	}
	if !ok {
		detail = ruleMessage(c.rule)
	}
	var value any = obj
	if n.typ == "object" || n.typ == "array" {
		value = field.OmitValueType{}
	}
	add(reasonError(p, value, detail, c.rule.Reason))
	return true
}

func reasonError(p *field.Path, value any, detail string, reason *apiextensionsv1.FieldValueErrorReason) *field.Error {
	if reason == nil {
		return field.Invalid(p, value, detail)
	}
	switch *reason {
	case apiextensionsv1.FieldValueForbidden:
		return field.Forbidden(p, detail)
	case apiextensionsv1.FieldValueRequired:
		return field.Required(p, detail)
	case apiextensionsv1.FieldValueDuplicate:
		return field.Duplicate(p, value)
	}
	return field.Invalid(p, value, detail)
}

var lineBreaks = regexp.MustCompile(`[\n]+`)

// message evaluates a rule's messageExpression. An error without a type
// means the expression failed in a way that falls back to the rule's
// message; typed errors stop validation, as upstream.
func (st *state) message(c *compiled, act *activation) (string, *apiservercel.Error) {
	expr := c.rule.MessageExpression
	out, details, err := c.msgProg.run(st.ctx, act)
	if details == nil || details.ActualCost() == nil {
		st.budget = -1
		return "", &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: fmt.Sprintf("runtime cost could not be calculated for messageExpression: %q", expr)}
	}
	cost := *details.ActualCost()
	if cost > math.MaxInt64 || int64(cost) > st.budget {
		st.budget = -1
		return "", invalid("messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run")
	}
	if err != nil && strings.HasPrefix(err.Error(), "operation cancelled: actual cost limit exceeded") {
		st.budget = -1
		return "", invalid(fmt.Sprintf("no further validation rules will be run due to call cost exceeds limit for messageExpression: %q", expr))
	}
	st.budget -= int64(cost)
	if err != nil {
		return "", &apiservercel.Error{Detail: "messageExpression evaluation failed due to: " + err.Error()}
	}
	s, ok := out.Value().(string)
	if !ok {
		return "", &apiservercel.Error{Detail: "messageExpression failed to convert to string"}
	}
	s = strings.TrimSpace(s)
	switch {
	case len(s) > celconfig.MaxEvaluatedMessageExpressionSizeBytes:
		return "", &apiservercel.Error{Detail: fmt.Sprintf("messageExpression beyond allowable length of %d", celconfig.MaxEvaluatedMessageExpressionSizeBytes)}
	case lineBreaks.MatchString(s):
		return "", &apiservercel.Error{Detail: "messageExpression should not contain line breaks"}
	case s == "":
		return "", &apiservercel.Error{Detail: "messageExpression should evaluate to a non-empty string"}
	}
	return s, nil
}

func ruleMessage(r *apiextensionsv1.ValidationRule) string {
	if r.Message == "" {
		return "failed rule: " + ruleString(r)
	}
	return strings.TrimSpace(r.Message)
}

func ruleString(r *apiextensionsv1.ValidationRule) string {
	if r.Message != "" {
		return strings.TrimSpace(r.Message)
	}
	return strings.TrimSpace(r.Rule)
}

// activation binds self and oldSelf; hasOld says oldSelf is declared
// (its value may be an empty optional).
type activation struct {
	self, old ref.Val
	hasOld    bool
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case selfVar:
		return a.self, true
	case oldSelfVar:
		return a.old, a.hasOld
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

var _ interpreter.Activation = (*activation)(nil)
