package cel

import (
	"context"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// program is a compiled expression that knows whether it loops.
// Evaluating under a context costs a cancellable context and its
// bookkeeping per evaluation, and cel-go consults the context only
// between the iterations of comprehensions (all, exists, map, filter…):
// an expression without any runs exactly as it would under one, so it
// runs without.
type program struct {
	cel.Program
	loops bool
}

func newProgram(env *cel.Env, checked *cel.Ast, opts ...cel.ProgramOption) (program, error) {
	p, err := env.Program(checked, opts...)
	if err != nil {
		return program{}, err
	}
	return program{Program: p, loops: hasComprehension(checked)}, nil
}

func hasComprehension(checked *cel.Ast) bool {
	nav := ast.NavigateAST(checked.NativeRep())
	return len(ast.MatchDescendants(nav, ast.KindMatcher(ast.ComprehensionKind))) > 0
}

// run evaluates p on input, under ctx when p loops.
func (p program) run(ctx context.Context, input any) (ref.Val, *cel.EvalDetails, error) {
	if p.loops {
		return p.ContextEval(ctx, input)
	}
	return p.Eval(input)
}

// policyActivation binds the variables of one evaluation of a policy
// expression or a match condition by name, as a map of them would, but
// without building one per evaluation. Variables no environment declares
// are never asked for: the expressions were checked.
type policyActivation struct {
	object, oldObject, params map[string]any
	// variables is a map[string]any, or a ref.Val (lazyVariables).
	variables any
	// request is the request itself (match conditions), or built by
	// requestFunc when first read (policies); namespaceFunc likewise.
	request                    map[string]any
	requestFunc, namespaceFunc func() map[string]any
	authz                      *RequestAuthz

	// What the functions built, kept for later reads in the evaluation.
	requestVal, namespaceVal, authorizerVal, resourceVal any
}

var _ interpreter.Activation = (*policyActivation)(nil)

func (a *policyActivation) ResolveName(name string) (any, bool) {
	switch name {
	case "object":
		return nullable(a.object), true
	case "oldObject":
		return nullable(a.oldObject), true
	case "params":
		return nullable(a.params), true
	case "variables":
		if m, ok := a.variables.(map[string]any); a.variables == nil || ok && m == nil {
			return map[string]any{}, true
		}
		return a.variables, true
	case "request":
		switch {
		case a.request != nil:
			return a.request, true
		case a.requestFunc == nil:
			return types.NullValue, true
		}
		return once(&a.requestVal, func() any { return nullable(a.requestFunc()) }), true
	case "namespaceObject":
		if a.namespaceFunc == nil {
			return types.NullValue, true
		}
		return once(&a.namespaceVal, func() any { return nullable(a.namespaceFunc()) }), true
	case authorizerVar, requestResourceVar:
		if a.authz == nil || a.authz.Authorizer == nil {
			return nil, false
		}
		if name == authorizerVar {
			return once(&a.authorizerVal, a.authz.authorizerVal), true
		}
		return once(&a.resourceVal, a.authz.resourceVal), true
	}
	return nil, false
}

func (a *policyActivation) Parent() interpreter.Activation { return nil }

// once returns *v, building it with f the first time.
func once(v *any, f func() any) any {
	if *v == nil {
		*v = f()
	}
	return *v
}
