package structural

import (
	"fmt"
	"reflect"
	"regexp"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// level is where a structural node sits; the missing-type message names it.
type level int

const (
	rootLevel level = iota
	itemLevel
	fieldLevel
)

// invariants checks the structural node s (a node outside any junctor) and
// everything below it.
func invariants(errs field.ErrorList, s *apiextensionsv1.JSONSchemaProps, lvl level, p *field.Path, depth int) field.ErrorList {
	if s == nil || depth > maxDepth {
		return errs
	}
	items := itemsSchema(s)
	if s.Type == "array" && items == nil {
		errs = append(errs, field.Required(p.Child("items"), "must be specified"))
	}
	errs = invariants(errs, items, itemLevel, p.Child("items"), depth+1)
	for _, k := range sortedKeys(s.Properties) {
		v := s.Properties[k]
		errs = invariants(errs, &v, fieldLevel, p.Child("properties").Key(k), depth+1)
	}
	if s.AdditionalProperties != nil {
		if lvl == rootLevel {
			errs = append(errs, field.Forbidden(p.Child("additionalProperties"), "must not be used at the root"))
		}
		errs = invariants(errs, s.AdditionalProperties.Schema, fieldLevel, p.Child("additionalProperties"), depth+1)
	}

	preserve := s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
	if s.XIntOrString && preserve {
		errs = append(errs, field.Invalid(p.Child("x-kubernetes-preserve-unknown-fields"), true, "must be false if x-kubernetes-int-or-string is true"))
	}
	if s.XIntOrString && s.XEmbeddedResource {
		errs = append(errs, field.Invalid(p.Child("x-kubernetes-embedded-resource"), true, "must be false if x-kubernetes-int-or-string is true"))
	}

	errs = junctors(errs, s, isIntOrStringAnyOf(s), isIntOrStringAllOf(s), p, depth)

	switch {
	case s.XEmbeddedResource && s.Type != "object":
		if s.Type == "" {
			errs = append(errs, field.Required(p.Child("type"), "must be object if x-kubernetes-embedded-resource is true"))
		} else {
			errs = append(errs, field.Invalid(p.Child("type"), s.Type, "must be object if x-kubernetes-embedded-resource is true"))
		}
	case s.Type == "" && !s.XIntOrString && !preserve:
		detail := map[level]string{
			rootLevel:  "must not be empty at the root",
			itemLevel:  "must not be empty for specified array items",
			fieldLevel: "must not be empty for specified object fields",
		}[lvl]
		errs = append(errs, field.Required(p.Child("type"), detail))
	}
	if s.XEmbeddedResource && s.AdditionalProperties != nil {
		errs = append(errs, field.Forbidden(p.Child("additionalProperties"), "must not be used if x-kubernetes-embedded-resource is set"))
	}
	if lvl == rootLevel && s.Type != "" && s.Type != "object" {
		errs = append(errs, field.Invalid(p.Child("type"), s.Type, "must be object at the root"))
	}

	// The root and embedded resources hold apiVersion, kind and metadata,
	// which the server fills and validates itself.
	checkMeta := lvl == rootLevel || s.XEmbeddedResource
	for _, k := range []string{"kind", "apiVersion"} {
		if v, ok := s.Properties[k]; ok && checkMeta && v.Type != "string" {
			errs = append(errs, field.Invalid(p.Child("properties").Key(k).Child("type"), v.Type, "must be string"))
		}
	}
	if m, ok := s.Properties["metadata"]; ok {
		errs = metadataInvariants(errs, &m, checkMeta, lvl, p.Child("properties").Key("metadata"))
	}
	if s.XEmbeddedResource && !preserve && len(s.Properties) == 0 {
		errs = append(errs, field.Required(p.Child("properties"), "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"))
	}
	return errs
}

// metadataInvariants restricts a metadata schema: an object wherever
// ObjectMeta lives, and at the root nothing but restrictions of name and
// generateName (anything else could contradict what the server writes).
func metadataInvariants(errs field.ErrorList, m *apiextensionsv1.JSONSchemaProps, checkMeta bool, lvl level, p *field.Path) field.ErrorList {
	if checkMeta && m.Type != "object" {
		errs = append(errs, field.Invalid(p.Child("type"), m.Type, "must be object"))
	}
	if lvl != rootLevel {
		return errs
	}
	rest := normalized(*m)
	_, name := rest.Properties["name"]
	_, generateName := rest.Properties["generateName"]
	if (name && generateName && len(rest.Properties) == 2) || ((name || generateName) && len(rest.Properties) == 1) {
		rest.Properties = nil
	}
	rest.Type = ""
	rest.Default = nil // forbidden there by the keyword checks
	if !reflect.DeepEqual(rest, apiextensionsv1.JSONSchemaProps{}) {
		errs = append(errs, field.Forbidden(p, "must not specify anything other than name and generateName, but metadata is implicitly specified"))
	}
	return errs
}

// normalized drops what upstream's structural model does not keep or
// keeps only when non-empty, so that a DeepEqual on the result compares
// like upstream's on its model.
func normalized(s apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	if len(s.Enum) == 0 {
		s.Enum = nil
	}
	if len(s.AllOf) == 0 {
		s.AllOf = nil
	}
	if len(s.AnyOf) == 0 {
		s.AnyOf = nil
	}
	if len(s.OneOf) == 0 {
		s.OneOf = nil
	}
	if s.Default != nil && !jsonSet(s.Default) {
		s.Default = nil
	}
	if s.Example != nil && !jsonSet(s.Example) {
		s.Example = nil
	}
	return s
}

// jsonSet reports whether j holds a value other than null.
func jsonSet(j *apiextensionsv1.JSON) bool {
	return j != nil && len(j.Raw) > 0 && string(j.Raw) != "null"
}

// itemsSchema is the single items schema, nil when items is absent or an
// array (the keyword checks refuse the latter).
func itemsSchema(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	if s.Items == nil {
		return nil
	}
	return s.Items.Schema
}

// isIntOrStringAnyOf matches the first int-or-string pattern, whose type
// keywords inside anyOf are allowed:
//
//	anyOf: [{type: integer}, {type: string}]
func isIntOrStringAnyOf(s *apiextensionsv1.JSONSchemaProps) bool {
	return len(s.AnyOf) == 2 && onlyType(&s.AnyOf[0], "integer") && onlyType(&s.AnyOf[1], "string")
}

// isIntOrStringAllOf matches the second pattern: allOf whose first clause
// is the first pattern, followed by anything.
func isIntOrStringAllOf(s *apiextensionsv1.JSONSchemaProps) bool {
	return len(s.AllOf) >= 1 && isIntOrStringAnyOf(&s.AllOf[0])
}

// onlyType reports whether clause says nothing but type: t.
func onlyType(clause *apiextensionsv1.JSONSchemaProps, t string) bool {
	if clause.Type != t {
		return false
	}
	c := normalized(*clause)
	c.Type = ""
	// Inside a junctor, additionalProperties: false is dropped by upstream's
	// model.
	if c.AdditionalProperties != nil && c.AdditionalProperties.Schema == nil && !c.AdditionalProperties.Allows {
		c.AdditionalProperties = nil
	}
	return reflect.DeepEqual(c, apiextensionsv1.JSONSchemaProps{})
}

// junctors checks the allOf/anyOf/oneOf/not clauses of s and s's pattern.
// skipAnyOf and skipFirstAllOfAnyOf exempt the int-or-string patterns.
func junctors(errs field.ErrorList, s *apiextensionsv1.JSONSchemaProps, skipAnyOf, skipFirstAllOfAnyOf bool, p *field.Path, depth int) field.ErrorList {
	if depth > maxDepth {
		return errs
	}
	if !skipAnyOf {
		for i := range s.AnyOf {
			errs = nested(errs, &s.AnyOf[i], false, p.Child("anyOf").Index(i), depth+1)
		}
	}
	for i := range s.AllOf {
		errs = nested(errs, &s.AllOf[i], skipFirstAllOfAnyOf && i == 0, p.Child("allOf").Index(i), depth+1)
	}
	for i := range s.OneOf {
		errs = nested(errs, &s.OneOf[i], false, p.Child("oneOf").Index(i), depth+1)
	}
	if s.Not != nil {
		errs = nested(errs, s.Not, false, p.Child("not"), depth+1)
	}
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil {
			errs = append(errs, field.Invalid(p.Child("pattern"), s.Pattern, fmt.Sprintf("must be a valid regular expression, but isn't: %v", err)))
		}
	}
	return errs
}

// nested checks a schema inside a junctor: it may only validate values,
// never shape them (no type, default, nullable, extensions and so on).
func nested(errs field.ErrorList, v *apiextensionsv1.JSONSchemaProps, skipAnyOf bool, p *field.Path, depth int) field.ErrorList {
	if v == nil || depth > maxDepth {
		return errs
	}
	errs = junctors(errs, v, skipAnyOf, false, p, depth)
	if it := itemsSchema(v); it != nil {
		errs = nested(errs, it, false, p.Child("items"), depth+1)
	}
	for _, k := range sortedKeys(v.Properties) {
		f := v.Properties[k]
		errs = nested(errs, &f, false, p.Child("properties").Key(k), depth+1)
	}
	forbid := func(child, detail string) {
		errs = append(errs, field.Forbidden(p.Child(child), detail))
	}
	if v.Type != "" {
		forbid("type", "must be empty to be structural")
	}
	// additionalProperties: false is dropped by upstream's model here, so
	// only true or a schema count.
	if ap := v.AdditionalProperties; ap != nil && (ap.Schema != nil || ap.Allows) {
		forbid("additionalProperties", "must be undefined to be structural")
	}
	if jsonSet(v.Default) {
		forbid("default", "must be undefined to be structural")
	}
	if v.Title != "" {
		forbid("title", "must be empty to be structural")
	}
	if v.Description != "" {
		forbid("description", "must be empty to be structural")
	}
	if v.Nullable {
		forbid("nullable", "must be false to be structural")
	}
	if v.XPreserveUnknownFields != nil && *v.XPreserveUnknownFields {
		forbid("x-kubernetes-preserve-unknown-fields", "must be false to be structural")
	}
	if v.XEmbeddedResource {
		forbid("x-kubernetes-embedded-resource", "must be false to be structural")
	}
	if v.XIntOrString {
		forbid("x-kubernetes-int-or-string", "must be false to be structural")
	}
	if len(v.XListMapKeys) > 0 {
		forbid("x-kubernetes-list-map-keys", "must be empty to be structural")
	}
	if v.XListType != nil {
		forbid("x-kubernetes-list-type", "must be undefined to be structural")
	}
	if v.XMapType != nil {
		forbid("x-kubernetes-map-type", "must be undefined to be structural")
	}
	if len(v.XValidations) > 0 {
		forbid("x-kubernetes-validations", "must be empty to be structural")
	}
	if _, ok := v.Properties["metadata"]; ok {
		errs = append(errs, field.Forbidden(p.Child("properties").Key("metadata"), "must not be specified in a nested context"))
	}
	return errs
}

// completeness checks that every field and item that a junctor of v
// (recursively) talks about is also specified in the structural node s.
// Like upstream, it starts from the root's junctors only.
func completeness(errs field.ErrorList, v, s *apiextensionsv1.JSONSchemaProps, sPath, vPath *field.Path, depth int) field.ErrorList {
	if v == nil || depth > maxDepth {
		return errs
	}
	if v.Not != nil {
		errs = nestedCompleteness(errs, v.Not, s, sPath, vPath.Child("not"), depth+1)
	}
	for i := range v.AllOf {
		errs = nestedCompleteness(errs, &v.AllOf[i], s, sPath, vPath.Child("allOf").Index(i), depth+1)
	}
	for i := range v.AnyOf {
		errs = nestedCompleteness(errs, &v.AnyOf[i], s, sPath, vPath.Child("anyOf").Index(i), depth+1)
	}
	for i := range v.OneOf {
		errs = nestedCompleteness(errs, &v.OneOf[i], s, sPath, vPath.Child("oneOf").Index(i), depth+1)
	}
	return errs
}

func nestedCompleteness(errs field.ErrorList, v, s *apiextensionsv1.JSONSchemaProps, sPath, vPath *field.Path, depth int) field.ErrorList {
	if v == nil || depth > maxDepth {
		return errs
	}
	if s == nil {
		return append(errs, field.Required(sPath, "because it is defined in "+vPath.String()))
	}
	errs = completeness(errs, v, s, sPath, vPath, depth)
	if it := itemsSchema(v); it != nil {
		errs = nestedCompleteness(errs, it, itemsSchema(s), sPath.Child("items"), vPath.Child("items"), depth+1)
	}
	for _, k := range sortedKeys(v.Properties) {
		vf := v.Properties[k]
		sf, ok := s.Properties[k]
		if !ok {
			errs = append(errs, field.Required(sPath.Child("properties").Key(k), "because it is defined in "+vPath.Child("properties").Key(k).String()))
			continue
		}
		errs = nestedCompleteness(errs, &vf, &sf, sPath.Child("properties").Key(k), vPath.Child("properties").Key(k), depth+1)
	}
	return errs
}
