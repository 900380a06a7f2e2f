package cel

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/crdserver/crdserver/internal/schema/structural"
)

// Upstream's limits (k8s.io/apiserver/pkg/apis/cel and apiextensions'
// CRD validation), in CEL cost units.
const (
	// PerCallLimit stops one evaluation of one rule.
	PerCallLimit = celconfig.PerCallLimit
	// RuntimeBudget is what all rules together may spend on one object.
	RuntimeBudget = celconfig.RuntimeCELCostBudget
	// StaticEstimatedCostLimit is the largest estimated cost of one rule,
	// times the number of times it may run, that a CRD may declare.
	StaticEstimatedCostLimit = 10_000_000
	// StaticEstimatedCRDCostLimit is the same for all of a schema's rules.
	StaticEstimatedCRDCostLimit = 100_000_000

	selfVar    = "self"
	oldSelfVar = "oldSelf"
)

// baseEnv is the Kubernetes CEL environment at the compatibility version
// kube-apiserver of this library's release uses, with every library CRD
// rules may call. It is built once per process.
var baseEnv = environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())

// compiled is one rule ready to run, or the reason it cannot.
type compiled struct {
	rule *apiextensionsv1.ValidationRule
	// prog is nil for a blank rule (reported by the CRD checks) or one
	// that failed to compile (err says why).
	prog           *program
	err            *apiservercel.Error
	usesOldSelf    bool
	optionalOld    bool
	maxCost        uint64
	maxCardinality uint64

	msgProg    *program
	msgErr     *apiservercel.Error
	msgMaxCost uint64
	// fieldPath is the rule's fieldPath normalized to a field path relative
	// to the node ("spec.x", "m[key]"), "" when unset or invalid.
	fieldPath string
}

// envFor decides which environment compiles an expression: the stored
// one (every library) for expressions the CRD already had, the new one
// (libraries of the compatibility version only) for others, as upstream
// does so that a CRD stays valid across a rollback.
type envFor func(expr string) bool

func allStored(string) bool { return true }

var typeSeq atomic.Uint64

// compileRules compiles the rules of s, a node whose CEL type is decl.
func compileRules(s *node, decl *apiservercel.DeclType, stored envFor) ([]compiled, error) {
	if len(s.p.XValidations) == 0 {
		return nil, nil
	}
	if decl == nil {
		return nil, fmt.Errorf("failed to convert to declType for CEL validation rules")
	}
	scoped := decl.MaybeAssignTypeName(fmt.Sprintf("selfType%d", typeSeq.Add(1)))
	plain, optional, err := envSets(scoped)
	if err != nil {
		return nil, err
	}
	est := &library.CostEstimator{SizeEstimator: &sizeEstimator{root: decl}}
	card := maxCardinality(decl.MinSerializedSize)
	out := make([]compiled, len(s.p.XValidations))
	for i := range s.p.XValidations {
		r := &s.p.XValidations[i]
		envs := plain
		if r.OptionalOldSelf != nil && *r.OptionalOldSelf {
			envs = optional
		}
		out[i] = compileRule(s, r, envs, stored, est, card)
	}
	return out, nil
}

// envSets declares self as the node's type, and oldSelf as the same type
// or, for optionalOldSelf rules, an optional of it.
func envSets(scoped *apiservercel.DeclType) (plain, optional *environment.EnvSet, err error) {
	self := environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        []cel.EnvOption{cel.Variable(selfVar, scoped.CelType())},
		DeclTypes:         []*apiservercel.DeclType{scoped},
	}
	plain, err = baseEnv.Extend(self, environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 24),
		EnvOptions:        []cel.EnvOption{cel.Variable(oldSelfVar, scoped.CelType())},
	})
	if err != nil {
		return nil, nil, err
	}
	optional, err = baseEnv.Extend(self, environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 24),
		EnvOptions:        []cel.EnvOption{cel.Variable(oldSelfVar, types.NewOptionalType(scoped.CelType()))},
	})
	return plain, optional, err
}

func envOf(set *environment.EnvSet, stored envFor, expr string) *cel.Env {
	if stored(expr) {
		return set.StoredExpressionsEnv()
	}
	return set.NewExpressionsEnv()
}

func compileRule(s *node, r *apiextensionsv1.ValidationRule, set *environment.EnvSet, stored envFor, est *library.CostEstimator, card uint64) compiled {
	c := compiled{rule: r, optionalOld: r.OptionalOldSelf != nil && *r.OptionalOldSelf}
	if strings.TrimSpace(r.Rule) == "" {
		return c
	}
	env := envOf(set, stored, r.Rule)
	ast, iss := env.Compile(r.Rule)
	if iss != nil {
		c.err = invalid("compilation failed: " + iss.String())
		return c
	}
	if ast.OutputType() != cel.BoolType {
		c.err = invalid("cel expression must evaluate to a bool")
		return c
	}
	checked, err := cel.AstToCheckedExpr(ast)
	if err != nil {
		c.err = &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: "unexpected compilation error: " + err.Error()}
		return c
	}
	for _, ref := range checked.ReferenceMap {
		if ref.Name == oldSelfVar {
			c.usesOldSelf = true
			break
		}
	}
	prog, err := newProgram(env, ast, cel.CostLimit(PerCallLimit), cel.CostTracking(est), cel.InterruptCheckFrequency(celconfig.CheckFrequency))
	if err != nil {
		c.err = invalid("program instantiation failed: " + err.Error())
		return c
	}
	cost, err := env.EstimateCost(ast, est)
	if err != nil {
		c.err = &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: "cost estimation failed: " + err.Error()}
		return c
	}
	c.prog, c.maxCost, c.maxCardinality = &prog, cost.Max, card
	if r.MessageExpression != "" {
		c.compileMessage(set, stored, est)
	}
	if r.FieldPath != "" {
		if p, err := fieldPath(r.FieldPath, s.p); err == nil {
			c.fieldPath = p.String()
		}
	}
	return c
}

func (c *compiled) compileMessage(set *environment.EnvSet, stored envFor, est *library.CostEstimator) {
	expr := c.rule.MessageExpression
	env := envOf(set, stored, expr)
	ast, iss := env.Compile(expr)
	if iss != nil {
		c.msgErr = invalid("messageExpression compilation failed: " + iss.String())
		return
	}
	if ast.OutputType() != cel.StringType {
		c.msgErr = invalid("messageExpression must evaluate to a string")
		return
	}
	prog, err := newProgram(env, ast, cel.CostLimit(PerCallLimit), cel.CostTracking(est), cel.InterruptCheckFrequency(celconfig.CheckFrequency))
	if err != nil {
		c.msgErr = invalid("messageExpression instantiation failed: " + err.Error())
		return
	}
	cost, err := env.EstimateCost(ast, est)
	if err != nil {
		c.msgErr = &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: "cost estimation failed for messageExpression: " + err.Error()}
		return
	}
	c.msgProg, c.msgMaxCost = &prog, cost.Max
}

func invalid(detail string) *apiservercel.Error {
	return &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid, Detail: detail}
}

// sizeEstimator sizes the values a rule reaches from self by the
// schema's maxItems, maxLength and maxProperties, or what the request size
// limit leaves for them.
type sizeEstimator struct{ root *apiservercel.DeclType }

func (e *sizeEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	path := n.Path()
	if len(path) == 0 {
		return nil
	}
	t := e.root
	for _, name := range path[1:] { // path[0] is self
		switch name {
		case "@items", "@values":
			t = t.ElemType
		case "@keys":
			t = t.KeyType
		default:
			f, ok := t.Fields[name]
			if !ok {
				return nil
			}
			t = f.Type
		}
		if t == nil {
			return nil
		}
	}
	return &checker.SizeEstimate{Min: 0, Max: uint64(t.MaxElements)}
}

func (e *sizeEstimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	return nil
}

// maxCardinality is how many times a rule may run at most when nothing
// above it bounds its node: one per smallest serialized value that fits
// in a request.
func maxCardinality(minSize int64) uint64 {
	return uint64(celconfig.MaxRequestSizeBytes / (minSize + 1))
}

// fieldPath resolves a rule's fieldPath against the node it is on.
func fieldPath(path string, s *apiextensionsv1.JSONSchemaProps) (*field.Path, error) {
	p, _, err := structural.FieldPath(path, s, true)
	return p, err
}
