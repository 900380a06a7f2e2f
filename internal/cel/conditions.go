package cel

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/lazy"
	"k8s.io/apiserver/pkg/cel/library"
	"k8s.io/apiserver/pkg/cel/mutation"
	"k8s.io/apiserver/pkg/cel/mutation/dynamic"
)

// Admission match conditions: CEL expressions over the admission request
// that decide whether a webhook is called, with the variables object,
// oldObject, request and the authorizer ones (authorizer.go).
//
// object and oldObject are the objects as the webhook would receive them
// (null when absent: oldObject on create, object on delete); request is the
// AdmissionRequest as JSON decodes it.

// ConditionCostBudget is what all match conditions of one webhook may spend
// on one request, upstream's.
const ConditionCostBudget = celconfig.RuntimeCELCostBudgetMatchConditions

var conditionEnv = func() *cel.Env {
	set, err := baseEnv.Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions: append([]cel.EnvOption{
			cel.Variable("object", cel.DynType),
			cel.Variable("oldObject", cel.DynType),
			cel.Variable("request", cel.DynType),
		}, authorizerVars...),
	})
	if err != nil {
		panic(fmt.Sprintf("cel: match condition environment: %v", err))
	}
	return decodingRaw(set.StoredExpressionsEnv())
}()

// Condition is one compiled match condition, safe for concurrent use.
type Condition struct {
	prog program
}

// CompileCondition compiles a match condition; the error words what is
// wrong as upstream's validation of webhook configurations does.
func CompileCondition(expr string) (*Condition, error) {
	ast, iss := conditionEnv.Compile(expr)
	if iss != nil {
		return nil, fmt.Errorf("compilation failed: %s", iss.String())
	}
	if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
		return nil, fmt.Errorf("must evaluate to bool")
	}
	prog, err := newProgram(conditionEnv, ast, cel.CostLimit(PerCallLimit), cel.InterruptCheckFrequency(celconfig.CheckFrequency), cel.EvalOptions(cel.OptTrackCost))
	if err != nil {
		return nil, fmt.Errorf("program instantiation failed: %v", err)
	}
	return &Condition{prog: prog}, nil
}

// Eval evaluates the condition; object and oldObject may be nil (null),
// and so may authz (then the authorizer variables are unbound). cost is
// what the evaluation spent, for the caller's budget.
func (c *Condition) Eval(ctx context.Context, object, oldObject, request map[string]any, authz *RequestAuthz) (bool, uint64, error) {
	out, det, err := c.prog.run(ctx, &policyActivation{object: object, oldObject: oldObject, request: request, authz: authz})
	var cost uint64
	if det != nil && det.ActualCost() != nil {
		cost = *det.ActualCost()
	}
	if err != nil {
		return false, cost, fmt.Errorf("expression evaluation failed: %v", err)
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, cost, fmt.Errorf("expression must evaluate to bool, got %s", out.Type())
	}
	return bool(b), cost, nil
}

func nullable(m map[string]any) any {
	if m == nil {
		return types.NullValue
	}
	return m
}

// Policy expressions: a ValidatingAdmissionPolicy's validations,
// messageExpressions, matchConditions, variables and audit annotations
// see object, oldObject, request, params, namespaceObject and variables
// (the values of the policy's variables by name), and all but
// messageExpressions the authorizer variables, as upstream declares them.

var messageSet = func() *environment.EnvSet {
	set, err := baseEnv.Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions: []cel.EnvOption{
			cel.Variable("object", cel.DynType),
			cel.Variable("oldObject", cel.DynType),
			cel.Variable("request", cel.DynType),
			cel.Variable("params", cel.DynType),
			cel.Variable("namespaceObject", cel.DynType),
			cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)),
		},
	})
	if err != nil {
		panic(fmt.Sprintf("cel: policy environment: %v", err))
	}
	return set
}()

var basePolicySet = func() *environment.EnvSet {
	set, err := messageSet.Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        authorizerVars,
	})
	if err != nil {
		panic(fmt.Sprintf("cel: policy environment: %v", err))
	}
	return set
}()

var (
	policyEnv  = decodingRaw(basePolicySet.StoredExpressionsEnv())
	messageEnv = decodingRaw(messageSet.StoredExpressionsEnv())
)

// Expression is a compiled policy expression, safe for concurrent use.
type Expression struct {
	prog program
	// mutation expressions return their CEL value, for JSONPatchOps and
	// ApplyConfiguration to read.
	mutation bool
}

// PolicyResult is the type an expression must have.
type PolicyResult int

const (
	// AnyResult is a variable's expression.
	AnyResult PolicyResult = iota
	BoolResult
	// MessageResult is a validation's messageExpression: a string, and
	// no authorizer.
	MessageResult
	// StringOrNullResult is an audit annotation's valueExpression.
	StringOrNullResult
)

// CompilePolicyExpression compiles a policy expression that must return
// result (or dyn).
func CompilePolicyExpression(expr string, result PolicyResult) (*Expression, error) {
	env := policyEnv
	if result == MessageResult {
		env = messageEnv
	}
	ast, iss := env.Compile(expr)
	if iss != nil {
		return nil, fmt.Errorf("compilation failed: %s", iss.String())
	}
	t := ast.OutputType()
	switch {
	case result == BoolResult && t != cel.BoolType && t != cel.DynType:
		return nil, fmt.Errorf("must evaluate to bool but got %v", t)
	case result == MessageResult && t != cel.StringType && t != cel.DynType:
		return nil, fmt.Errorf("must evaluate to string but got %v", t)
	case result == StringOrNullResult && t != cel.StringType && t != cel.NullType && t != cel.DynType:
		return nil, fmt.Errorf("must evaluate to one of %v but got %v", []*cel.Type{cel.StringType, cel.NullType}, t)
	}
	prog, err := newProgram(env, ast, cel.CostLimit(PerCallLimit), cel.InterruptCheckFrequency(celconfig.CheckFrequency), cel.EvalOptions(cel.OptTrackCost))
	if err != nil {
		return nil, fmt.Errorf("program instantiation failed: %v", err)
	}
	return &Expression{prog: prog}, nil
}

// PolicyVars are the variables of one evaluation; nil maps are null.
// Request and Namespace are called only when an expression reads request
// or namespaceObject (nil, or returning nil: null), so that what no
// expression reads is never built; callers memoize them across the
// expressions of one evaluation.
type PolicyVars struct {
	Object, OldObject, Params map[string]any
	Request, Namespace        func() map[string]any
	Variables                 map[string]any
	// Variable, when set, gives the policy's variables (VariableNames
	// names them) instead of Variables: an expression evaluates a variable
	// through it when it reads it, and one that fails to evaluate fails
	// only the expressions that read it, as upstream's composited
	// variables. The caller memoizes the values.
	Variable      func(name string) (any, error)
	VariableNames []string
	// Authz binds the authorizer variables; nil leaves them unbound.
	Authz *RequestAuthz
}

// Eval evaluates the expression and returns its value as Go (bool,
// string, or what a variable holds) and the cost spent.
func (e *Expression) Eval(ctx context.Context, v PolicyVars) (any, uint64, error) {
	var variables any = v.Variables
	if v.Variable != nil {
		variables = lazyVariables(v.VariableNames, v.Variable)
	}
	out, det, err := e.prog.run(ctx, &policyActivation{
		object: v.Object, oldObject: v.OldObject, params: v.Params, variables: variables,
		requestFunc: v.Request, namespaceFunc: v.Namespace, authz: v.Authz,
	})
	var cost uint64
	if det != nil && det.ActualCost() != nil {
		cost = *det.ActualCost()
	}
	if err != nil {
		return nil, cost, err
	}
	if e.mutation {
		return out, cost, nil
	}
	return out.Value(), cost, nil
}

// AuditAnnotationValue reads what an audit annotation's valueExpression
// returned (Eval's value): a string trimmed of spaces, or "" to leave the
// annotation out (null, or only spaces). Other types are an error worded
// as upstream's.
func AuditAnnotationValue(expr string, v any) (string, error) {
	switch v := v.(type) {
	case string:
		return strings.TrimSpace(v), nil
	case structpb.NullValue:
		return "", nil
	}
	return "", fmt.Errorf("valueExpression '%v' resulted in unsupported return type: %v. Return type must be either string or null.",
		expr, types.DefaultTypeAdapter.NativeToValue(v).Type())
}

// Mutations: a MutatingAdmissionPolicy's JSONPatch and ApplyConfiguration
// expressions see what policy expressions see, and may also build the
// JSONPatch and Object.… types and call jsonpatch.escapeKey, as upstream's
// environment with patch types offers.

var mutationEnv = func() *cel.Env {
	set, err := basePolicySet.Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions: []cel.EnvOption{
			common.ResolverEnvOption(&mutation.DynamicTypeResolver{}),
			environment.UnversionedLib(library.JSONPatch),
		},
	})
	if err != nil {
		panic(fmt.Sprintf("cel: mutation environment: %v", err))
	}
	return set.StoredExpressionsEnv()
}()

// CompileMutation compiles a mutation expression: an ApplyConfiguration's
// when apply (it must return an Object), else a JSONPatch's (a list of
// JSONPatch). The types must match exactly, as upstream checks them.
func CompileMutation(expr string, apply bool) (*Expression, error) {
	ast, iss := mutationEnv.Compile(expr)
	if iss != nil {
		return nil, fmt.Errorf("compilation failed: %s", iss.String())
	}
	want := cel.ListType(cel.ObjectType("JSONPatch"))
	if apply {
		want = cel.ObjectType("Object")
	}
	if !ast.OutputType().IsExactType(want) {
		return nil, fmt.Errorf("must evaluate to %v but got %v", want, ast.OutputType())
	}
	prog, err := newProgram(mutationEnv, ast, cel.CostLimit(PerCallLimit), cel.InterruptCheckFrequency(celconfig.CheckFrequency), cel.EvalOptions(cel.OptTrackCost))
	if err != nil {
		return nil, fmt.Errorf("program instantiation failed: %v", err)
	}
	return &Expression{prog: prog, mutation: true}, nil
}

// JSONPatchOps converts what a JSONPatch expression returned to JSON patch
// operations (each with op, path and, when set, from and value); errors are
// worded as upstream's.
func JSONPatchOps(v any) ([]map[string]any, error) {
	iter, ok := v.(traits.Lister)
	if !ok {
		return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array")
	}
	var ops []map[string]any
	for it := iter.Iterator(); it.HasNext() == types.True; {
		native, err := it.Next().ConvertToNative(reflect.TypeOf(&mutation.JSONPatchVal{}))
		if err != nil {
			return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch: %w", err)
		}
		p, ok := native.(*mutation.JSONPatchVal)
		if !ok {
			return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of %T", native)
		}
		op := map[string]any{"op": p.Op, "path": p.Path}
		if p.From != "" {
			op["from"] = p.From
		}
		if p.Val != nil {
			if obj, ok := p.Val.(*dynamic.ObjectVal); ok {
				if err := obj.CheckTypeNamesMatchFieldPathNames(); err != nil {
					return nil, fmt.Errorf("type mismatch: %w", err)
				}
			}
			val, err := p.Val.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
			if err != nil {
				return nil, fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
			}
			op["value"] = val.(*structpb.Value).AsInterface()
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// ApplyConfiguration converts what an ApplyConfiguration expression
// returned to the object to merge; errors are worded as upstream's.
func ApplyConfiguration(v any) (map[string]any, error) {
	obj, ok := v.(*dynamic.ObjectVal)
	if !ok {
		t := "unknown"
		if rv, ok := v.(ref.Val); ok {
			t = rv.Type().TypeName()
		}
		return nil, fmt.Errorf("unsupported return type from ApplyConfiguration expression: %v", t)
	}
	if err := obj.CheckTypeNamesMatchFieldPathNames(); err != nil {
		return nil, fmt.Errorf("type mismatch: %w", err)
	}
	m, ok := obj.Value().(map[string]any)
	if !ok {
		return nil, fmt.Errorf("invalid return type: %T", v)
	}
	return m, nil
}

// variablesType is the type of a policy's lazily evaluated variables.
var variablesType = types.NewObjectType("kubernetes.variables")

// lazyVariables is the variables value of an evaluation whose variables
// get evaluates when first read; a failure is an error value, which fails
// the expression reading it in upstream's words.
func lazyVariables(names []string, get func(string) (any, error)) ref.Val {
	m := lazy.NewMapValue(variablesType)
	for _, name := range names {
		m.Append(name, func(*lazy.MapValue) ref.Val {
			v, err := get(name)
			if err != nil {
				return types.NewErr("composited variable %q fails to evaluate: %v", name, err)
			}
			return policyEnv.CELTypeAdapter().NativeToValue(v)
		})
	}
	return m
}
