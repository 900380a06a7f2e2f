package oidc

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
)

// Expressions see the token's claims as `claims` and, in user validation
// rules, the mapped user as `user` (username, uid, groups, extra), as
// upstream names them.
var (
	claimsEnv = mustEnv(cel.Variable("claims", cel.MapType(cel.StringType, cel.DynType)))
	userEnv   = mustEnv(cel.Variable("user", cel.MapType(cel.StringType, cel.DynType)))
)

func mustEnv(opts ...cel.EnvOption) *cel.Env {
	env, err := cel.NewEnv(append(opts, ext.Strings(), ext.Lists(), ext.Sets(), ext.Encoders())...)
	if err != nil {
		panic(err)
	}
	return env
}

// costLimit bounds one expression's evaluation, so that a token with huge
// claims cannot make the server work without end.
const costLimit = 1_000_000

// compile compiles an expression once, at configuration time.
func compile(env *cel.Env, expr string) (cel.Program, error) {
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("compilation failed: %w", iss.Err())
	}
	return env.Program(ast, cel.CostLimit(costLimit))
}

// eval runs prg with one variable bound.
func eval(prg cel.Program, name string, value map[string]any) (ref.Val, error) {
	out, _, err := prg.Eval(map[string]any{name: value})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// asString converts an expression's result to a string.
func asString(v ref.Val) (string, error) {
	if s, ok := v.(types.String); ok {
		return string(s), nil
	}
	return "", fmt.Errorf("expression must return a string, got %s", v.Type().TypeName())
}

// asStrings converts a string or list-of-strings result.
func asStrings(v ref.Val) ([]string, error) {
	if s, ok := v.(types.String); ok {
		return []string{string(s)}, nil
	}
	native, err := v.ConvertToNative(stringsType)
	if err != nil {
		return nil, fmt.Errorf("expression must return a string or a list of strings, got %s", v.Type().TypeName())
	}
	return native.([]string), nil
}

// asBool converts a validation rule's result.
func asBool(v ref.Val) (bool, error) {
	if b, ok := v.(types.Bool); ok {
		return bool(b), nil
	}
	return false, fmt.Errorf("expression must return a boolean, got %s", v.Type().TypeName())
}

var stringsType = reflect.TypeOf([]string(nil))
