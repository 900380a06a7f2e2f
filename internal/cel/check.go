package cel

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
)

// CheckOptions say how a CRD write's rules are checked.
type CheckOptions struct {
	// Stored reports whether the stored CRD already has an expression (a
	// rule or messageExpression); those compile in the environment of
	// every library, new ones only with the libraries of the
	// compatibility version. Nil: every expression is new.
	Stored func(expr string) bool
	// UnchangedSchema suppresses the per-expression cost limit: the
	// version's schema is the one already stored.
	UnchangedSchema bool
	// Skip reports field paths (of the schema's nodes) at or below which
	// the schema has other errors; rules there are not compiled, as such
	// errors make CEL's types meaningless.
	Skip func(p *field.Path) bool
}

// Check compiles every rule of a CRD version's structural schema s found
// at p and reports, at each rule's path, what kube-apiserver reports:
// compile errors, estimated costs over the per-rule limit (the rule's
// cost times how often it may run), transition rules where old values
// cannot be correlated, optionalOldSelf without oldSelf, and a total over
// the limit for the whole schema.
func Check(s *apiextensionsv1.JSONSchemaProps, p *field.Path, o CheckOptions) field.ErrorList {
	if s == nil || !hasRules(s) {
		return nil
	}
	if o.Stored == nil {
		o.Stored = func(string) bool { return false }
	}
	if o.Skip == nil {
		o.Skip = func(*field.Path) bool { return false }
	}
	one := uint64(1)
	c := &ruleChecker{opts: o}
	root := &scope{schema: s, inScope: len(s.XValidations) > 0, card: &one}
	c.walk(s, p, root, nil)
	if c.total > StaticEstimatedCRDCostLimit {
		for _, e := range c.expensive {
			c.errs = append(c.errs, field.Forbidden(e.path, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"))
		}
		c.errs = append(c.errs, field.Forbidden(p, costMessage("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema", c.total, StaticEstimatedCRDCostLimit)))
	}
	return c.errs
}

type ruleChecker struct {
	opts      CheckOptions
	errs      field.ErrorList
	total     uint64
	expensive []ruleCost // the at most four costliest rules over 1% of the limit
}

type ruleCost struct {
	path *field.Path
	cost uint64
}

// scope is a node's CEL typing context: its DeclType is reached from the
// nearest ancestor with rules (so sizes come from the root's view) or
// built from the node itself, and card is how many times a rule on it
// can run at most (nil: unbounded by the schema).
type scope struct {
	parent  *scope
	access  func(*apiservercel.DeclType) *apiservercel.DeclType
	schema  *apiextensionsv1.JSONSchemaProps
	inScope bool
	card    *uint64

	done bool
	decl *apiservercel.DeclType
}

func (s *scope) declType() *apiservercel.DeclType {
	if !s.inScope {
		return nil
	}
	if s.done {
		return s.decl
	}
	s.done = true
	if s.parent != nil && s.access != nil {
		if pd := s.parent.declType(); pd != nil {
			if s.decl = s.access(pd); s.decl != nil {
				return s.decl
			}
		}
	}
	s.decl = common.SchemaDeclType(newNode(s.schema), s.parent == nil || s.schema.XEmbeddedResource)
	return s.decl
}

func (s *scope) child(schema *apiextensionsv1.JSONSchemaProps, access func(*apiservercel.DeclType) *apiservercel.DeclType) *scope {
	c := &scope{parent: s, access: access, schema: schema, inScope: s.inScope || len(schema.XValidations) > 0}
	if s.card == nil {
		return c
	}
	if max := maxElements(s.schema); max != nil {
		m := mulGuard(*s.card, *max)
		c.card = &m
	}
	return c
}

// maxElements is how many children of a node a value may have: its
// maxItems or maxProperties, one for a struct, nil when unbounded.
func maxElements(s *apiextensionsv1.JSONSchemaProps) *uint64 {
	one := uint64(1)
	switch s.Type {
	case "object":
		if s.AdditionalProperties == nil {
			return &one
		}
		if s.MaxProperties != nil {
			m := uint64(max(*s.MaxProperties, 0))
			return &m
		}
		return nil
	case "array":
		if s.MaxItems != nil {
			m := uint64(max(*s.MaxItems, 0))
			return &m
		}
		return nil
	}
	return &one
}

// walk visits s's children before s, as upstream does, so a parent's
// rule errors follow its children's. forbidOld is the highest node below
// which old values cannot be correlated (oldSelf is then refused).
func (c *ruleChecker) walk(s *apiextensionsv1.JSONSchemaProps, p *field.Path, sc *scope, forbidOld *field.Path) {
	if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
		c.walk(ap.Schema, p.Child("additionalProperties"), sc.child(ap.Schema, func(d *apiservercel.DeclType) *apiservercel.DeclType { return d.ElemType }), forbidOld)
	}
	for _, k := range sortedProps(s.Properties) {
		v := s.Properties[k]
		sub := forbidOld
		if sub == nil && s.XMapType != nil && *s.XMapType != "granular" && *s.XMapType != "atomic" {
			sub = p
		}
		name := k
		c.walk(&v, p.Child("properties").Key(k), sc.child(&v, func(d *apiservercel.DeclType) *apiservercel.DeclType {
			if esc, ok := apiservercel.Escape(name); ok {
				if f, ok := d.Fields[esc]; ok {
					return f.Type
				}
			}
			return nil
		}), sub)
	}
	if s.Items != nil && s.Items.Schema != nil {
		sub := forbidOld
		if sub == nil && (s.XListType == nil || *s.XListType != "map") {
			sub = p
		}
		c.walk(s.Items.Schema, p.Child("items"), sc.child(s.Items.Schema, func(d *apiservercel.DeclType) *apiservercel.DeclType { return d.ElemType }), sub)
	}
	if len(s.XValidations) > 0 && !c.opts.Skip(p) {
		c.rules(s, p, sc, forbidOld)
	}
}

func sortedProps(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (c *ruleChecker) rules(s *apiextensionsv1.JSONSchemaProps, p *field.Path, sc *scope, forbidOld *field.Path) {
	vp := p.Child("x-kubernetes-validations")
	decl := sc.declType()
	if decl == nil {
		c.errs = append(c.errs, field.InternalError(vp, fmt.Errorf("internal error: failed to retrieve type information for x-kubernetes-validations")))
		return
	}
	stored := func(expr string) bool { return c.opts.Stored(expr) }
	results, err := compileRules(newNode(s), decl, stored)
	if err != nil {
		c.errs = append(c.errs, field.InternalError(vp, err))
		return
	}
	for i := range results {
		r := &results[i]
		rp := vp.Index(i)
		card := r.maxCardinality
		if sc.card != nil {
			card = *sc.card
		}
		cost := mulGuard(r.maxCost, card)
		if !c.opts.UnchangedSchema && cost > StaticEstimatedCostLimit {
			c.errs = append(c.errs, field.Forbidden(rp.Child("rule"), costMessage("estimated rule cost", cost, StaticEstimatedCostLimit)))
		}
		c.observe(rp.Child("rule"), cost)
		if r.err != nil {
			if r.err.Type == apiservercel.ErrorTypeRequired {
				c.errs = append(c.errs, field.Required(rp.Child("rule"), r.err.Detail))
			} else {
				c.errs = append(c.errs, field.Invalid(rp.Child("rule"), internalRule(r.rule), r.err.Detail))
			}
		}
		if r.msgErr != nil {
			c.errs = append(c.errs, field.Invalid(rp.Child("messageExpression"), internalRule(r.rule), r.msgErr.Detail))
		} else if r.msgProg != nil {
			if !c.opts.UnchangedSchema && r.msgMaxCost > StaticEstimatedCostLimit {
				c.errs = append(c.errs, field.Forbidden(rp.Child("messageExpression"), costMessage("estimated messageExpression cost", r.msgMaxCost, StaticEstimatedCostLimit)))
			}
			c.observe(rp.Child("messageExpression"), r.msgMaxCost)
		}
		switch {
		case r.usesOldSelf && forbidOld != nil:
			c.errs = append(c.errs, field.Invalid(rp.Child("rule"), r.rule.Rule, fmt.Sprintf("oldSelf cannot be used on the uncorrelatable portion of the schema within %v", forbidOld)))
		case !r.usesOldSelf && r.rule.OptionalOldSelf != nil:
			c.errs = append(c.errs, field.Invalid(rp.Child("optionalOldSelf"), *r.rule.OptionalOldSelf, "may not be set if oldSelf is not used in rule"))
		}
	}
}

// internalRule is the rule as upstream's error value prints it: its
// internal type, whose Go syntax kubectl shows after "Invalid value:".
func internalRule(r *apiextensionsv1.ValidationRule) apiextensions.ValidationRule {
	return apiextensions.ValidationRule{
		Rule:              r.Rule,
		Message:           r.Message,
		MessageExpression: r.MessageExpression,
		Reason:            (*apiextensions.FieldValueErrorReason)(r.Reason),
		FieldPath:         r.FieldPath,
		OptionalOldSelf:   r.OptionalOldSelf,
	}
}

func (c *ruleChecker) observe(p *field.Path, cost uint64) {
	if math.MaxUint64-c.total < cost {
		c.total = math.MaxUint64
	} else {
		c.total += cost
	}
	if cost < StaticEstimatedCRDCostLimit/100 {
		return
	}
	c.expensive = append(c.expensive, ruleCost{path: p, cost: cost})
	sort.SliceStable(c.expensive, func(i, j int) bool { return c.expensive[i].cost > c.expensive[j].cost })
	if len(c.expensive) > 4 {
		c.expensive = c.expensive[:4]
	}
}

func mulGuard(a, b uint64) uint64 {
	if a == 0 {
		return 0
	}
	if math.MaxUint64/a < b {
		return math.MaxUint64
	}
	return a * b
}

// costMessage words a cost over its limit as upstream: the factor, with
// six decimals under 1.5, one decimal up to 100, and "more than 100x"
// beyond, where the rule is likely quadratic and the figure meaningless.
func costMessage(what string, cost, limit uint64) string {
	f := float64(cost) / float64(limit)
	var factor string
	switch {
	case f > 100:
		factor = "more than 100x"
	case f < 1.5:
		factor = fmt.Sprintf("%fx", f)
	default:
		factor = fmt.Sprintf("%.1fx", f)
	}
	return fmt.Sprintf("%s exceeds budget by factor of %s (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)", what, factor)
}

// StoredExpressions lists every rule and messageExpression of a stored
// CRD spec, for CheckOptions.Stored.
func StoredExpressions(spec *apiextensionsv1.CustomResourceDefinitionSpec) func(string) bool {
	set := map[string]bool{}
	if spec != nil {
		for _, v := range spec.Versions {
			if v.Schema != nil {
				collect(v.Schema.OpenAPIV3Schema, set)
			}
		}
	}
	return func(expr string) bool { return set[expr] }
}

func collect(s *apiextensionsv1.JSONSchemaProps, set map[string]bool) {
	if s == nil {
		return
	}
	for _, r := range s.XValidations {
		set[r.Rule] = true
		if r.MessageExpression != "" {
			set[r.MessageExpression] = true
		}
	}
	if s.Items != nil {
		collect(s.Items.Schema, set)
		for i := range s.Items.JSONSchemas {
			collect(&s.Items.JSONSchemas[i], set)
		}
	}
	if s.AdditionalProperties != nil {
		collect(s.AdditionalProperties.Schema, set)
	}
	for _, list := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range list {
			collect(&list[i], set)
		}
	}
	collect(s.Not, set)
	for k := range s.Properties {
		v := s.Properties[k]
		collect(&v, set)
	}
	for k := range s.Definitions {
		v := s.Definitions[k]
		collect(&v, set)
	}
}

// UnderErrors returns a CheckOptions.Skip for the errors already found
// in a schema: a node is skipped when an error's field is it or below it.
func UnderErrors(errs field.ErrorList) func(*field.Path) bool {
	return func(p *field.Path) bool {
		ps := p.String()
		for _, e := range errs {
			if e.Field == ps || strings.HasPrefix(e.Field, ps+".") || strings.HasPrefix(e.Field, ps+"[") {
				return true
			}
		}
		return false
	}
}
