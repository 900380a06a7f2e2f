package cel

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/util/version"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"
	celopenapi "k8s.io/apiserver/pkg/cel/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Type checking of admission policies: a ValidatingAdmissionPolicy's
// expressions are compiled again with object and oldObject typed as the
// resources the policy matches (and params as its paramKind), so that
// status.typeChecking can warn about expressions that cannot work, as
// upstream's policy status controller does.

// ObjectType is the CEL type of objects described by the OpenAPI v3 model
// root among models (as openapi.Models returns them), or nil when the
// model does not describe them.
func ObjectType(root string, models map[string]map[string]any) (*apiservercel.DeclType, error) {
	decoded := map[string]*spec.Schema{}
	for name, m := range models {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		s := new(spec.Schema)
		if err := json.Unmarshal(b, s); err != nil {
			return nil, fmt.Errorf("decoding model %s: %w", name, err)
		}
		decoded[name] = s
	}
	s, ok := decoded[root]
	if !ok {
		return nil, fmt.Errorf("no model %s", root)
	}
	resolved := inlineRefs(s, decoded, map[string]bool{root: true})
	t := common.SchemaDeclType(&celopenapi.Schema{Schema: resolved}, true)
	if t == nil {
		return nil, nil
	}
	return t.MaybeAssignTypeName(strings.ReplaceAll(root, ".", "_")), nil
}

// inlineRefs returns s with every reference to a model replaced by the
// model (a reference inside allOf too, as v3 models hold them). A model
// that refers back to itself on the way is left untyped there.
func inlineRefs(s *spec.Schema, models map[string]*spec.Schema, seen map[string]bool) *spec.Schema {
	if s == nil {
		return nil
	}
	if ref := refName(s); ref != "" {
		m, ok := models[ref]
		if !ok || seen[ref] {
			return &spec.Schema{VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}}}
		}
		seen[ref] = true
		out := inlineRefs(m, models, seen)
		delete(seen, ref)
		if s.Description != "" || len(s.Extensions) > 0 {
			c := *out
			out = &c
		}
		return out
	}
	c := *s
	if len(c.Properties) > 0 {
		props := make(map[string]spec.Schema, len(c.Properties))
		for k, p := range c.Properties {
			props[k] = *inlineRefs(&p, models, seen)
		}
		c.Properties = props
	}
	if c.Items != nil && c.Items.Schema != nil {
		c.Items = &spec.SchemaOrArray{Schema: inlineRefs(c.Items.Schema, models, seen)}
	}
	if c.AdditionalProperties != nil && c.AdditionalProperties.Schema != nil {
		c.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: inlineRefs(c.AdditionalProperties.Schema, models, seen)}
	}
	return &c
}

// refName is the model a schema refers to: by $ref, or by an allOf of one
// $ref (the v3 form that keeps a description beside a reference).
func refName(s *spec.Schema) string {
	r := s.Ref.String()
	if r == "" && len(s.AllOf) == 1 {
		r = s.AllOf[0].Ref.String()
	}
	if r == "" {
		return ""
	}
	return r[strings.LastIndex(r, "/")+1:]
}

// CheckPolicyExpression type-checks a policy expression with object and
// oldObject of type object and params of type params (nil: not known, so
// dynamic); variables stay dynamic. It returns what is wrong, as CEL
// words it, or "".
func CheckPolicyExpression(object, params *apiservercel.DeclType, expr string) string {
	env, err := typedPolicyEnv(object, params)
	if err != nil {
		return ""
	}
	_, iss := env.Compile(expr)
	if iss == nil || iss.Err() == nil {
		return ""
	}
	return "compilation failed: " + iss.String()
}

func typedPolicyEnv(object, params *apiservercel.DeclType) (*cel.Env, error) {
	objType, paramsType := cel.DynType, cel.DynType
	var types []*apiservercel.DeclType
	if object != nil {
		objType = object.CelType()
		types = append(types, object)
	}
	if params != nil {
		paramsType = params.CelType()
		types = append(types, params)
	}
	opts := []cel.EnvOption{
		cel.Variable("object", objType),
		cel.Variable("oldObject", objType),
		cel.Variable("request", cel.DynType),
		cel.Variable("params", paramsType),
		cel.Variable("namespaceObject", cel.DynType),
		cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)),
	}
	opts = append(opts, authorizerVars...)
	set, err := baseEnv.Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        opts,
		DeclTypes:         types,
	})
	if err != nil {
		return nil, err
	}
	return set.StoredExpressionsEnv(), nil
}
