package structural

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// openAPIV3Types are the types a CRD schema may name.
var openAPIV3Types = map[string]bool{"string": true, "number": true, "integer": true, "boolean": true, "array": true, "object": true}

// openAPIV3TypeList is openAPIV3Types sorted, as NotSupported lists them.
var openAPIV3TypeList = []string{"array", "boolean", "integer", "number", "object", "string"}

// validationReasons are the reasons an x-kubernetes-validations rule may
// give, sorted.
var validationReasons = []string{"FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"}

// metaFields are the fields of a resource the server owns.
var metaFields = map[string]bool{"metadata": true, "kind": true, "apiVersion": true}

// newlines are the line breaks of CEL's grammar.
var newlines = regexp.MustCompile(`[\n\r]+`)

// unsupported returns upstream's error for the first keyword in s that
// its structural model cannot represent, "" when there is none. The walk
// follows upstream's conversion order so that the same keyword is named.
func unsupported(s *apiextensionsv1.JSONSchemaProps, depth int) string {
	if s == nil || depth > maxDepth {
		return ""
	}
	switch {
	case s.ID != "":
		return "OpenAPIV3Schema 'id' is not supported"
	case s.Schema != "":
		return "OpenAPIV3Schema 'schema' is not supported"
	case s.Ref != nil && *s.Ref != "":
		return "OpenAPIV3Schema '$ref' is not supported"
	case len(s.PatternProperties) > 0:
		return "OpenAPIV3Schema 'patternProperties' is not supported"
	case len(s.Dependencies) > 0:
		return "OpenAPIV3Schema 'dependencies' is not supported"
	case s.AdditionalItems != nil:
		return "OpenAPIV3Schema 'additionalItems' is not supported"
	case len(s.Definitions) > 0:
		return "OpenAPIV3Schema 'definitions' is not supported"
	}
	if msg := unsupported(s.Not, depth+1); msg != "" {
		return msg
	}
	for _, list := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range list {
			if msg := unsupported(&list[i], depth+1); msg != "" {
				return msg
			}
		}
	}
	if s.XPreserveUnknownFields != nil && !*s.XPreserveUnknownFields {
		return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
	}
	if s.Items != nil {
		if len(s.Items.JSONSchemas) > 0 {
			return "OpenAPIV3Schema 'items' must be a schema, but is an array"
		}
		if msg := unsupported(s.Items.Schema, depth+1); msg != "" {
			return msg
		}
	}
	for _, k := range sortedKeys(s.Properties) {
		p := s.Properties[k]
		if msg := unsupported(&p, depth+1); msg != "" {
			return msg
		}
	}
	if s.AdditionalProperties != nil {
		return unsupported(s.AdditionalProperties.Schema, depth+1)
	}
	return ""
}

// keywordCtx is what a node's keyword checks depend on from above.
type keywordCtx struct {
	allowDefaults bool
	// defaultsReason completes "must not be set" when defaults are not
	// allowed.
	defaultsReason string
	// insideMeta: the node is within apiVersion, kind or metadata of the
	// root or of an embedded resource.
	insideMeta bool
}

func (c keywordCtx) forbidDefaults(reason string) keywordCtx {
	c.allowDefaults = false
	c.defaultsReason = reason
	return c
}

// keywords collects the OpenAPI keyword errors of a schema, in upstream's
// order: a node's own keywords, its children, then its extensions.
type keywords struct {
	opts             Options
	requireValidType bool
	errs             field.ErrorList
}

func (k *keywords) add(e *field.Error) { k.errs = append(k.errs, e) }

func (k *keywords) check(s *apiextensionsv1.JSONSchemaProps, p *field.Path, ctx keywordCtx, isRoot bool, depth int) {
	if s == nil || depth > maxDepth {
		return
	}
	k.node(s, p, ctx)

	if s.UniqueItems {
		k.add(field.Forbidden(p.Child("uniqueItems"), "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
	}
	if ap := s.AdditionalProperties; ap != nil {
		// properties are for structs, additionalProperties for maps; both
		// at once would contradict ignoring unknown fields.
		if len(s.Properties) != 0 && (!ap.Allows || ap.Schema != nil) {
			k.add(field.Forbidden(p.Child("additionalProperties"), "additionalProperties and properties are mutual exclusive"))
		}
		sub := ctx
		if ctx.insideMeta {
			// Pruning a defaulted map entry of metadata would be ambiguous.
			sub = ctx.forbidDefaults("inside additionalProperties applying to object metadata")
		}
		k.check(ap.Schema, p.Child("additionalProperties"), sub, false, depth+1)
	}
	for _, name := range sortedKeys(s.Properties) {
		sub := ctx
		if (isRoot || s.XEmbeddedResource) && metaFields[name] {
			sub.insideMeta = true
			if isRoot {
				sub = sub.forbidDefaults("in top-level " + name)
			}
		}
		v := s.Properties[name]
		k.check(&v, p.Child("properties").Key(name), sub, false, depth+1)
	}
	k.check(s.Not, p.Child("not"), ctx, false, depth+1)
	for i := range s.AllOf {
		k.check(&s.AllOf[i], p.Child("allOf").Index(i), ctx, false, depth+1)
	}
	for i := range s.OneOf {
		k.check(&s.OneOf[i], p.Child("oneOf").Index(i), ctx, false, depth+1)
	}
	for i := range s.AnyOf {
		k.check(&s.AnyOf[i], p.Child("anyOf").Index(i), ctx, false, depth+1)
	}
	for _, name := range sortedKeys(s.Definitions) {
		v := s.Definitions[name]
		k.check(&v, p.Child("definitions").Key(name), ctx, false, depth+1)
	}
	if s.Items != nil {
		k.check(s.Items.Schema, p.Child("items"), ctx, false, depth+1)
		for i := range s.Items.JSONSchemas {
			k.check(&s.Items.JSONSchemas[i], p.Child("items").Index(i), ctx, false, depth+1)
		}
	}
	for _, name := range sortedDependencies(s.Dependencies) {
		k.check(s.Dependencies[name].Schema, p.Child("dependencies").Key(name), ctx, false, depth+1)
	}

	k.extensions(s, p)
	if !k.opts.AllowInvalidMapListKeys {
		k.errs = append(k.errs, mapListKeysMapSet(s, p)...)
	}
	k.validationRules(s, p)
}

// node checks the keywords of s itself that CRDs do not support.
func (k *keywords) node(s *apiextensionsv1.JSONSchemaProps, p *field.Path, ctx keywordCtx) {
	if k.requireValidType && s.Type != "" && !openAPIV3Types[s.Type] {
		k.add(field.NotSupported(p.Child("type"), s.Type, openAPIV3TypeList))
	}
	if s.Default != nil && !ctx.allowDefaults {
		detail := "must not be set"
		if ctx.defaultsReason != "" {
			detail += " " + ctx.defaultsReason
		}
		k.add(field.Forbidden(p.Child("default"), detail))
	}
	if s.ID != "" {
		k.add(field.Forbidden(p.Child("id"), "id is not supported"))
	}
	if s.AdditionalItems != nil {
		k.add(field.Forbidden(p.Child("additionalItems"), "additionalItems is not supported"))
	}
	if len(s.PatternProperties) != 0 {
		k.add(field.Forbidden(p.Child("patternProperties"), "patternProperties is not supported"))
	}
	if len(s.Definitions) != 0 {
		k.add(field.Forbidden(p.Child("definitions"), "definitions is not supported"))
	}
	if s.Dependencies != nil {
		k.add(field.Forbidden(p.Child("dependencies"), "dependencies is not supported"))
	}
	if s.Ref != nil {
		k.add(field.Forbidden(p.Child("$ref"), "$ref is not supported"))
	}
	if s.Type == "null" {
		k.add(field.Forbidden(p.Child("type"), "type cannot be set to null, use nullable as an alternative"))
	}
	if s.Items != nil && len(s.Items.JSONSchemas) != 0 {
		k.add(field.Forbidden(p.Child("items"), "items must be a schema object and not an array"))
	}
	if ctx.insideMeta && s.XEmbeddedResource {
		k.add(field.Forbidden(p.Child("x-kubernetes-embedded-resource"), "must not be used inside of resource meta"))
	}
}

// extensions checks the x-kubernetes-* keywords that shape lists and maps.
func (k *keywords) extensions(s *apiextensionsv1.JSONSchemaProps, p *field.Path) {
	if s.XPreserveUnknownFields != nil && !*s.XPreserveUnknownFields {
		k.add(field.Invalid(p.Child("x-kubernetes-preserve-unknown-fields"), false, "must be true or undefined"))
	}
	if s.XMapType != nil && s.Type != "object" {
		if s.Type == "" {
			k.add(field.Required(p.Child("type"), "must be object if x-kubernetes-map-type is specified"))
		} else {
			k.add(field.Invalid(p.Child("type"), s.Type, "must be object if x-kubernetes-map-type is specified"))
		}
	}
	if s.XMapType != nil && *s.XMapType != "atomic" && *s.XMapType != "granular" {
		k.add(field.NotSupported(p.Child("x-kubernetes-map-type"), *s.XMapType, []string{"atomic", "granular"}))
	}

	if s.XListType != nil && s.Type != "array" {
		if s.Type == "" {
			k.add(field.Required(p.Child("type"), "must be array if x-kubernetes-list-type is specified"))
		} else {
			k.add(field.Invalid(p.Child("type"), s.Type, "must be array if x-kubernetes-list-type is specified"))
		}
	} else if !k.opts.AllowNonAtomicSetItems && hasNonAtomicSetItems(s) {
		is := s.Items.Schema
		// Upstream reports the items' list type as the value in both
		// cases (a pointer: null for objects).
		if is.Type == "array" {
			k.add(field.Invalid(p.Child("items").Child("x-kubernetes-list-type"), is.XListType, "must be atomic as item of a list with x-kubernetes-list-type=set"))
		} else {
			k.add(field.Invalid(p.Child("items").Child("x-kubernetes-map-type"), is.XListType, "must be atomic as item of a list with x-kubernetes-list-type=set"))
		}
	}
	if s.XListType != nil && *s.XListType != "atomic" && *s.XListType != "set" && *s.XListType != "map" {
		k.add(field.NotSupported(p.Child("x-kubernetes-list-type"), *s.XListType, []string{"atomic", "set", "map"}))
	}

	if len(s.XListMapKeys) > 0 {
		if s.XListType == nil {
			k.add(field.Required(p.Child("x-kubernetes-list-type"), "must be map if x-kubernetes-list-map-keys is non-empty"))
		} else if *s.XListType != "map" {
			k.add(field.Invalid(p.Child("x-kubernetes-list-type"), *s.XListType, "must be map if x-kubernetes-list-map-keys is non-empty"))
		}
	}
	if s.XListType == nil || *s.XListType != "map" {
		return
	}
	if len(s.XListMapKeys) == 0 {
		k.add(field.Required(p.Child("x-kubernetes-list-map-keys"), "must not be empty if x-kubernetes-list-type is map"))
	}
	if s.Items == nil {
		k.add(field.Required(p.Child("items"), "must have a schema if x-kubernetes-list-type is map"))
		return
	}
	if s.Items.Schema == nil {
		k.add(field.Invalid(p.Child("items"), s.Items, "must only have a single schema if x-kubernetes-list-type is map"))
		return
	}
	item := s.Items.Schema
	if item.Type != "object" {
		k.add(field.Invalid(p.Child("items").Child("type"), item.Type, "must be object if parent array's x-kubernetes-list-type is map"))
		return
	}
	seen := make(map[string]bool, len(s.XListMapKeys))
	for _, key := range s.XListMapKeys {
		if ks, ok := item.Properties[key]; ok {
			if ks.Type == "array" || ks.Type == "object" {
				// Upstream reports the item's type as the value.
				k.add(field.Invalid(p.Child("items").Child("properties").Key(key).Child("type"), item.Type, "must be a scalar type if parent array's x-kubernetes-list-type is map"))
			}
		} else {
			k.add(field.Invalid(p.Child("x-kubernetes-list-map-keys"), s.XListMapKeys, "entries must all be names of item properties"))
		}
		if seen[key] {
			k.add(field.Invalid(p.Child("x-kubernetes-list-map-keys"), s.XListMapKeys, "must not contain duplicate entries"))
		}
		seen[key] = true
	}
}

// hasNonAtomicSetItems reports whether s is a set list whose items are
// not atomic: a list with another list type, or an object that is not
// x-kubernetes-map-type: atomic (granular is the default).
func hasNonAtomicSetItems(s *apiextensionsv1.JSONSchemaProps) bool {
	if s.XListType == nil || *s.XListType != "set" || s.Items == nil || s.Items.Schema == nil {
		return false
	}
	is := s.Items.Schema
	switch is.Type {
	case "array":
		return is.XListType != nil && *is.XListType != "atomic"
	case "object":
		return is.XMapType == nil || *is.XMapType != "atomic"
	}
	return false
}

// mapListKeysMapSet checks the items of set and map lists: never
// nullable, and map keys required or defaulted and not nullable, so every
// item has its identity.
func mapListKeysMapSet(s *apiextensionsv1.JSONSchemaProps, p *field.Path) field.ErrorList {
	if s.Items == nil || s.Items.Schema == nil || s.XListType == nil || (*s.XListType != "set" && *s.XListType != "map") {
		return nil
	}
	var errs field.ErrorList
	item := s.Items.Schema
	if item.Nullable {
		errs = append(errs, field.Forbidden(p.Child("items").Child("nullable"), "cannot be nullable when x-kubernetes-list-type is "+*s.XListType))
	}
	if *s.XListType != "map" {
		return errs
	}
	required := make(map[string]bool, len(item.Required))
	for _, r := range item.Required {
		required[r] = true
	}
	for _, key := range s.XListMapKeys {
		ks, ok := item.Properties[key]
		if !ok {
			continue // reported by extensions
		}
		if !required[key] && ks.Default == nil {
			errs = append(errs, field.Required(p.Child("items").Child("properties").Key(key).Child("default"), "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"))
		}
		if ks.Nullable {
			errs = append(errs, field.Forbidden(p.Child("items").Child("properties").Key(key).Child("nullable"), "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"))
		}
	}
	return errs
}

// validationRules checks the static shape of x-kubernetes-validations
// rules. Compiling them and their cost are the CEL package's.
func (k *keywords) validationRules(s *apiextensionsv1.JSONSchemaProps, p *field.Path) {
	for i, rule := range s.XValidations {
		rp := p.Child("x-kubernetes-validations").Index(i)
		r := strings.TrimSpace(rule.Rule)
		msg := strings.TrimSpace(rule.Message)
		switch {
		case r == "":
			k.add(field.Required(rp.Child("rule"), "rule is not specified"))
		case rule.Message != "" && msg == "":
			k.add(field.Invalid(rp.Child("message"), rule.Message, "must be non-empty if specified"))
		case newlines.MatchString(msg):
			k.add(field.Invalid(rp.Child("message"), rule.Message, "must not contain line breaks"))
		case newlines.MatchString(r) && msg == "":
			k.add(field.Required(rp.Child("message"), "message must be specified if rule contains line breaks"))
		}
		if rule.MessageExpression != "" && strings.TrimSpace(rule.MessageExpression) == "" {
			k.add(field.Required(rp.Child("messageExpression"), "messageExpression must be non-empty if specified"))
		}
		if rule.Reason != nil && !contains(validationReasons, string(*rule.Reason)) {
			k.add(field.NotSupported(rp.Child("reason"), string(*rule.Reason), validationReasons))
		}
		if rule.FieldPath != "" && strings.TrimSpace(rule.FieldPath) == "" {
			k.add(field.Invalid(rp.Child("fieldPath"), rule.FieldPath, "must be non-empty if specified"))
		}
		if newlines.MatchString(rule.FieldPath) {
			k.add(field.Invalid(rp.Child("fieldPath"), rule.FieldPath, "must not contain line breaks"))
		}
		// fieldPath is resolved from the node the rule is on; upstream
		// accepts any path below a keyword it cannot model.
		if rule.FieldPath != "" && unsupported(s, 0) == "" {
			if _, _, err := FieldPath(rule.FieldPath, s, true); err != nil {
				k.add(field.Invalid(rp.Child("fieldPath"), rule.FieldPath, "must be a valid path"))
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sortedDependencies(d apiextensionsv1.JSONSchemaDependencies) []string {
	m := make(map[string]apiextensionsv1.JSONSchemaProps, len(d))
	for k := range d {
		m[k] = apiextensionsv1.JSONSchemaProps{}
	}
	return sortedKeys(m)
}

// allowedAtRoot are the fields (Go names of upstream's internal schema
// type) the root may set when the status subresource is on: those that
// still hold after properties.status is cut out as the status schema.
var allowedAtRoot = map[string]bool{
	"Description": true, "Type": true, "Format": true, "Title": true, "Maximum": true, "ExclusiveMaximum": true,
	"Minimum": true, "ExclusiveMinimum": true, "MaxLength": true, "MinLength": true, "Pattern": true, "MaxItems": true,
	"MinItems": true, "UniqueItems": true, "MultipleOf": true, "Required": true, "Items": true, "Properties": true,
	"ExternalDocs": true, "Example": true, "XPreserveUnknownFields": true, "XValidations": true,
}

// allowedAtRootText is how upstream prints the allowed list in its message.
const allowedAtRootText = "[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations]"

// rootWithStatus checks the root of a schema whose version has a status
// subresource: type object and only the allowed fields. Upstream inspects
// its internal form field by field and reports the first offending field
// only; its message carries that whole internal schema as the value, so
// the schema is converted to produce the same text.
func rootWithStatus(s *apiextensionsv1.JSONSchemaProps, p *field.Path) field.ErrorList {
	// The v1 type has the same fields under the same names; the costly
	// conversion is only needed for the message of a schema that fails.
	if len(rootFields(reflect.ValueOf(s).Elem(), s.Type, nil, p)) == 0 {
		return nil
	}
	var in apiextensionsinternal.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, &in, nil); err != nil {
		// Only a default or enum that is not JSON fails to convert, which
		// decoding already refused; fall back to checking the v1 form.
		return rootFields(reflect.ValueOf(s).Elem(), s.Type, s, p)
	}
	return rootFields(reflect.ValueOf(&in).Elem(), in.Type, in, p)
}

func rootFields(v reflect.Value, typ string, value any, p *field.Path) field.ErrorList {
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if isZero(f) {
			continue
		}
		name := v.Type().Field(i).Name
		if name == "Type" {
			if typ != "object" {
				return field.ErrorList{field.Invalid(p.Child("type"), typ, `only "object" is allowed as the type at the root of the schema if the status subresource is enabled`)}
			}
			continue
		}
		if !allowedAtRoot[name] {
			return field.ErrorList{field.Invalid(p, value, fmt.Sprintf("only %s fields are allowed at the root of the schema if the status subresource is enabled", allowedAtRootText))}
		}
	}
	return nil
}

// isZero is reflect.DeepEqual against the zero value, as upstream tests
// it: an empty but non-nil slice or map is not zero.
func isZero(f reflect.Value) bool {
	return reflect.DeepEqual(f.Interface(), reflect.Zero(f.Type()).Interface())
}
