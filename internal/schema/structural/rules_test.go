package structural

import "testing"

// TestRules has one case per rule.
func TestRules(t *testing.T) {
	run(t, []tc{
		{line: at(), name: "structural", schema: `
type: object
description: d
properties:
  spec:
    type: object
    properties:
      replicas: {type: integer, minimum: 1, default: 1}
      port: {x-kubernetes-int-or-string: true}
      raw: {x-kubernetes-preserve-unknown-fields: true}
      tags: {type: array, items: {type: string}, x-kubernetes-list-type: set}
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [name]
        items: {type: object, required: [name], properties: {name: {type: string}}}
      labels: {type: object, additionalProperties: {type: string}, x-kubernetes-map-type: granular}
      anything: {type: object, additionalProperties: true}
      embedded:
        type: object
        x-kubernetes-embedded-resource: true
        x-kubernetes-preserve-unknown-fields: true
  metadata:
    type: object
    properties:
      name: {type: string, maxLength: 10}
      generateName: {type: string}
`},
		{line: at(), name: "root type missing", schema: `
properties:
  a: {type: string}`, want: []string{
			"spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root",
		}},
		{line: at(), name: "root type not object", schema: `type: string`, want: []string{
			`spec.validation.openAPIV3Schema.type: Invalid value: "string": must be object at the root`,
		}},
		{line: at(), name: "field type missing", schema: `
type: object
properties:
  a: {}`, want: []string{
			"spec.validation.openAPIV3Schema.properties[a].type: Required value: must not be empty for specified object fields",
		}},
		{line: at(), name: "additionalProperties type missing", schema: `
type: object
properties:
  a: {type: object, additionalProperties: {minLength: 1}}`, want: []string{
			"spec.validation.openAPIV3Schema.properties[a].additionalProperties.type: Required value: must not be empty for specified object fields",
		}},
		{line: at(), name: "items type missing", schema: `
type: object
properties:
  a: {type: array, items: {}}`, want: []string{
			"spec.validation.openAPIV3Schema.properties[a].items.type: Required value: must not be empty for specified array items",
		}},
		{line: at(), name: "array without items", schema: `
type: object
properties:
  a: {type: array}`, want: []string{
			"spec.validation.openAPIV3Schema.properties[a].items: Required value: must be specified",
		}},
		{line: at(), name: "int-or-string patterns", schema: `
type: object
properties:
  a:
    x-kubernetes-int-or-string: true
    anyOf: [{type: integer}, {type: string}]
  b:
    x-kubernetes-int-or-string: true
    allOf:
    - anyOf: [{type: integer}, {type: string}]
    - pattern: "^[0-9]+%?$"
`},
		{line: at(), name: "int-or-string pattern with more than a type", schema: `
type: object
properties:
  a:
    x-kubernetes-int-or-string: true
    anyOf: [{type: integer, minimum: 1}, {type: string}]
`, want: []string{
			"spec.validation.openAPIV3Schema.properties[a].anyOf[0].type: Forbidden: must be empty to be structural",
			"spec.validation.openAPIV3Schema.properties[a].anyOf[1].type: Forbidden: must be empty to be structural",
		}},
		{line: at(), name: "int-or-string with preserve or embedded", schema: `
type: object
properties:
  a:
    type: object
    x-kubernetes-int-or-string: true
    x-kubernetes-preserve-unknown-fields: true
    x-kubernetes-embedded-resource: true
`, want: []string{
			"spec.validation.openAPIV3Schema.properties[a].x-kubernetes-embedded-resource: Invalid value: true: must be false if x-kubernetes-int-or-string is true",
			"spec.validation.openAPIV3Schema.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true",
		}},
		{line: at(), name: "value-shaping keywords inside junctors", schema: `
type: object
properties:
  a: {type: string}
anyOf:
- type: object
  description: d
  title: t
  default: {}
  nullable: true
  additionalProperties: true
  x-kubernetes-preserve-unknown-fields: true
  x-kubernetes-embedded-resource: true
  x-kubernetes-int-or-string: true
  x-kubernetes-list-type: atomic
  x-kubernetes-list-map-keys: [a]
  x-kubernetes-map-type: atomic
  x-kubernetes-validations: [{rule: "true"}]
`, want: []string{
			"spec.validation.openAPIV3Schema.anyOf[0].additionalProperties: Forbidden: must be undefined to be structural",
			"spec.validation.openAPIV3Schema.anyOf[0].default: Forbidden: must be undefined to be structural",
			"spec.validation.openAPIV3Schema.anyOf[0].description: Forbidden: must be empty to be structural",
			"spec.validation.openAPIV3Schema.anyOf[0].nullable: Forbidden: must be false to be structural",
			"spec.validation.openAPIV3Schema.anyOf[0].title: Forbidden: must be empty to be structural",
			"spec.validation.openAPIV3Schema.anyOf[0].type: Forbidden: must be empty to be structural",
			"spec.validation.openAPIV3Schema.anyOf[0].x-kubernetes-embedded-resource: Forbidden: must be false to be structural",
			"spec.validation.openAPIV3Schema.anyOf[0].x-kubernetes-int-or-string: Forbidden: must be false to be structural",
			"spec.validation.openAPIV3Schema.anyOf[0].x-kubernetes-list-map-keys: Forbidden: must be empty to be structural",
			"spec.validation.openAPIV3Schema.anyOf[0].x-kubernetes-list-type: Forbidden: must be undefined to be structural",
			"spec.validation.openAPIV3Schema.anyOf[0].x-kubernetes-map-type: Forbidden: must be undefined to be structural",
			"spec.validation.openAPIV3Schema.anyOf[0].x-kubernetes-preserve-unknown-fields: Forbidden: must be false to be structural",
			"spec.validation.openAPIV3Schema.anyOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural",
			`spec.validation.openAPIV3Schema.anyOf[0].type: Invalid value: "object": must be array if x-kubernetes-list-type is specified`,
			"spec.validation.openAPIV3Schema.anyOf[0].x-kubernetes-list-type: Invalid value: \"atomic\": must be map if x-kubernetes-list-map-keys is non-empty",
		}},
		{line: at(), name: "junctors: allOf oneOf not and nested fields", schema: `
type: object
properties:
  a:
    type: object
    properties:
      b: {type: string}
allOf:
- properties: {a: {properties: {b: {type: string}}}}
oneOf:
- properties: {a: {description: x}}
not:
  properties: {a: {nullable: true}}
`, want: []string{
			"spec.validation.openAPIV3Schema.allOf[0].properties[a].properties[b].type: Forbidden: must be empty to be structural",
			"spec.validation.openAPIV3Schema.not.properties[a].nullable: Forbidden: must be false to be structural",
			"spec.validation.openAPIV3Schema.oneOf[0].properties[a].description: Forbidden: must be empty to be structural",
		}},
		{line: at(), name: "field in junctor not specified outside", schema: `
type: object
properties:
  foo: {type: string}
allOf:
- properties:
    foo: {minLength: 1}
    bar: {minLength: 1}
`, want: []string{
			"spec.validation.openAPIV3Schema.properties[bar]: Required value: because it is defined in spec.validation.openAPIV3Schema.allOf[0].properties[bar]",
		}},
		{line: at(), name: "items in junctor not specified outside", schema: `
type: object
properties:
  a:
    type: object
    properties:
      b: {type: string}
anyOf:
- properties:
    a:
      properties:
        b:
          items: {minLength: 1}
        c:
          not: {items: {}}
`, want: []string{
			"spec.validation.openAPIV3Schema.properties[a].properties[b].items: Required value: because it is defined in spec.validation.openAPIV3Schema.anyOf[0].properties[a].properties[b].items",
			"spec.validation.openAPIV3Schema.properties[a].properties[c]: Required value: because it is defined in spec.validation.openAPIV3Schema.anyOf[0].properties[a].properties[c]",
		}},
		{line: at(), name: "metadata restricted to name and generateName", schema: `
type: object
properties:
  metadata:
    type: object
    properties:
      name: {type: string}
      labels: {type: object, additionalProperties: {type: string}}
`, want: []string{
			"spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
		}},
		{line: at(), name: "metadata with other keywords", schema: `
type: object
properties:
  metadata:
    type: object
    required: [name]
    properties:
      name: {type: string}
`, want: []string{
			"spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
		}},
		{line: at(), name: "metadata, kind and apiVersion types", schema: `
type: object
properties:
  metadata: {type: string}
  kind: {type: integer}
  apiVersion: {type: object}
`, want: []string{
			`spec.validation.openAPIV3Schema.properties[apiVersion].type: Invalid value: "object": must be string`,
			`spec.validation.openAPIV3Schema.properties[kind].type: Invalid value: "integer": must be string`,
			`spec.validation.openAPIV3Schema.properties[metadata].type: Invalid value: "string": must be object`,
		}},
		{line: at(), name: "metadata nested in junctor", schema: `
type: object
properties:
  metadata: {type: object}
allOf:
- properties:
    metadata: {}
`, want: []string{
			"spec.validation.openAPIV3Schema.allOf[0].properties[metadata]: Forbidden: must not be specified in a nested context",
		}},
		{line: at(), name: "metadata deeper is free", schema: `
type: object
properties:
  spec:
    type: object
    properties:
      metadata: {type: string}
      kind: {type: integer}
`},
		{line: at(), name: "default in top-level metadata", schema: `
type: object
properties:
  metadata:
    type: object
    default: {}
  kind: {type: string, default: K}
`, want: []string{
			"spec.validation.openAPIV3Schema.properties[kind].default: Forbidden: must not be set in top-level kind",
			"spec.validation.openAPIV3Schema.properties[metadata].default: Forbidden: must not be set in top-level metadata",
		}},
		{line: at(), name: "embedded resource", schema: `
type: object
properties:
  a: {x-kubernetes-embedded-resource: true}
  b: {type: string, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
  c:
    type: object
    x-kubernetes-embedded-resource: true
    additionalProperties: {type: string}
  d:
    type: object
    x-kubernetes-embedded-resource: true
    properties:
      kind: {type: integer}
      metadata:
        type: object
        properties:
          labels:
            type: object
            additionalProperties: {type: string, default: x}
          e: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
`, want: []string{
			"spec.validation.openAPIV3Schema.properties[a].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
			"spec.validation.openAPIV3Schema.properties[a].type: Required value: must be object if x-kubernetes-embedded-resource is true",
			`spec.validation.openAPIV3Schema.properties[b].type: Invalid value: "string": must be object if x-kubernetes-embedded-resource is true`,
			"spec.validation.openAPIV3Schema.properties[c].additionalProperties: Forbidden: must not be used if x-kubernetes-embedded-resource is set",
			"spec.validation.openAPIV3Schema.properties[c].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
			`spec.validation.openAPIV3Schema.properties[d].properties[kind].type: Invalid value: "integer": must be string`,
			"spec.validation.openAPIV3Schema.properties[d].properties[metadata].properties[e].x-kubernetes-embedded-resource: Forbidden: must not be used inside of resource meta",
			"spec.validation.openAPIV3Schema.properties[d].properties[metadata].properties[labels].additionalProperties.default: Forbidden: must not be set inside additionalProperties applying to object metadata",
		}},
		{line: at(), name: "additionalProperties at the root", schema: `
type: object
additionalProperties: {type: string}
`, want: []string{
			"spec.validation.openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root",
		}},
		{line: at(), name: "additionalProperties with properties", schema: `
type: object
properties:
  a:
    type: object
    properties: {b: {type: string}}
    additionalProperties: false
  c:
    type: object
    properties: {b: {type: string}}
    additionalProperties: {type: string}
  d:
    type: object
    properties: {b: {type: string}}
    additionalProperties: true
`, want: []string{
			"spec.validation.openAPIV3Schema.properties[a].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
			"spec.validation.openAPIV3Schema.properties[c].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
		}},
		{line: at(), name: "uniqueItems", schema: `
type: object
properties:
  a: {type: array, uniqueItems: true, items: {type: string}}
`, want: []string{
			"spec.validation.openAPIV3Schema.properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
		}},
		{line: at(), name: "$ref", schema: `
type: object
properties:
  a: {type: object, $ref: "#/definitions/x"}
`, want: []string{
			"spec.validation.openAPIV3Schema.properties[a].$ref: Forbidden: $ref is not supported",
		}},
		{line: at(), name: "unsupported keywords hide structural errors", schema: `
properties:
  a:
    id: x
    patternProperties: {"^a": {type: string}}
    dependencies: {b: [c]}
    additionalItems: false
    definitions: {d: {type: string}}
    items: [{type: string}]
`, want: []string{
			"spec.validation.openAPIV3Schema.properties[a].id: Forbidden: id is not supported",
			"spec.validation.openAPIV3Schema.properties[a].additionalItems: Forbidden: additionalItems is not supported",
			"spec.validation.openAPIV3Schema.properties[a].patternProperties: Forbidden: patternProperties is not supported",
			"spec.validation.openAPIV3Schema.properties[a].definitions: Forbidden: definitions is not supported",
			"spec.validation.openAPIV3Schema.properties[a].dependencies: Forbidden: dependencies is not supported",
			"spec.validation.openAPIV3Schema.properties[a].items: Forbidden: items must be a schema object and not an array",
		}},
		{line: at(), name: "$schema alone", schema: `
type: object
properties:
  a: {type: string, $schema: "http://json-schema.org/draft-04/schema#"}
`, want: []string{
			`spec.validation.openAPIV3Schema: Invalid value: "": OpenAPIV3Schema 'schema' is not supported`,
		}},
		{line: at(), name: "preserve-unknown-fields false", schema: `
type: object
properties:
  a: {type: object, x-kubernetes-preserve-unknown-fields: false}
`, want: []string{
			"spec.validation.openAPIV3Schema.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined",
		}},
		{line: at(), name: "types", schema: `
type: object
properties:
  a: {type: "null"}
  b: {type: date}
`, want: []string{
			`spec.validation.openAPIV3Schema.properties[a].type: Unsupported value: "null": supported values: "array", "boolean", "integer", "number", "object", "string"`,
			"spec.validation.openAPIV3Schema.properties[a].type: Forbidden: type cannot be set to null, use nullable as an alternative",
			`spec.validation.openAPIV3Schema.properties[b].type: Unsupported value: "date": supported values: "array", "boolean", "integer", "number", "object", "string"`,
		}},
		{line: at(), name: "invalid pattern", schema: `
type: object
properties:
  a: {type: string, pattern: "a("}
`, want: []string{
			"spec.validation.openAPIV3Schema.properties[a].pattern: Invalid value: \"a(\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `a(`",
		}},
		{line: at(), name: "nullable root", schema: `
type: object
nullable: true
`, want: []string{
			"spec.validation.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root",
		}},
		{line: at(), name: "list and map types", schema: `
type: object
properties:
  a: {type: object, x-kubernetes-list-type: set}
  b: {type: array, items: {type: string}, x-kubernetes-list-type: bag}
  c: {type: string, x-kubernetes-map-type: atomic}
  d: {type: object, x-kubernetes-map-type: shared}
  e: {x-kubernetes-map-type: atomic, x-kubernetes-preserve-unknown-fields: true}
`, want: []string{
			`spec.validation.openAPIV3Schema.properties[a].type: Invalid value: "object": must be array if x-kubernetes-list-type is specified`,
			`spec.validation.openAPIV3Schema.properties[b].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map"`,
			`spec.validation.openAPIV3Schema.properties[c].type: Invalid value: "string": must be object if x-kubernetes-map-type is specified`,
			`spec.validation.openAPIV3Schema.properties[d].x-kubernetes-map-type: Unsupported value: "shared": supported values: "atomic", "granular"`,
			"spec.validation.openAPIV3Schema.properties[e].type: Required value: must be object if x-kubernetes-map-type is specified",
		}},
		{line: at(), name: "list-type map", schema: `
type: object
properties:
  a: {type: array, items: {type: string}, x-kubernetes-list-map-keys: [k]}
  b: {type: array, items: {type: object, properties: {k: {type: string}}, required: [k]}, x-kubernetes-list-type: map}
  c: {type: array, items: {type: string}, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k]}
  d:
    type: array
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [k, k, x, o]
    items:
      type: object
      required: [k]
      properties:
        k: {type: string}
        o: {type: object, nullable: true}
`, want: []string{
			"spec.validation.openAPIV3Schema.properties[a].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty",
			"spec.validation.openAPIV3Schema.properties[b].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
			`spec.validation.openAPIV3Schema.properties[c].items.type: Invalid value: "string": must be object if parent array's x-kubernetes-list-type is map`,
			`spec.validation.openAPIV3Schema.properties[d].x-kubernetes-list-map-keys: Invalid value: ["k","k","x","o"]: must not contain duplicate entries`,
			`spec.validation.openAPIV3Schema.properties[d].x-kubernetes-list-map-keys: Invalid value: ["k","k","x","o"]: entries must all be names of item properties`,
			`spec.validation.openAPIV3Schema.properties[d].items.properties[o].type: Invalid value: "object": must be a scalar type if parent array's x-kubernetes-list-type is map`,
			"spec.validation.openAPIV3Schema.properties[d].items.properties[o].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
			"spec.validation.openAPIV3Schema.properties[d].items.properties[o].nullable: Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
		}},
		{line: at(), name: "list-type set items", schema: `
type: object
properties:
  a: {type: array, x-kubernetes-list-type: set, items: {type: object}}
  b: {type: array, x-kubernetes-list-type: set, items: {type: array, x-kubernetes-list-type: set, items: {type: string}}}
  c: {type: array, x-kubernetes-list-type: set, items: {type: string, nullable: true}}
  d: {type: array, x-kubernetes-list-type: set, items: {type: object, x-kubernetes-map-type: atomic}}
`, want: []string{
			`spec.validation.openAPIV3Schema.properties[a].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set`,
			`spec.validation.openAPIV3Schema.properties[b].items.x-kubernetes-list-type: Invalid value: "set": must be atomic as item of a list with x-kubernetes-list-type=set`,
			"spec.validation.openAPIV3Schema.properties[c].items.nullable: Forbidden: cannot be nullable when x-kubernetes-list-type is set",
		}},
		{line: at(), name: "validation rules", schema: `
type: object
x-kubernetes-validations:
- rule: " "
- {rule: "self.a", message: " "}
- {rule: "self.a", message: "a\nb"}
- rule: "self.a ||\nself.b"
- {rule: "true", messageExpression: " ", reason: Bogus, fieldPath: " "}
- {rule: "true", fieldPath: ".a\n"}
- {rule: "true", fieldPath: ".a['x']"}
- {rule: "true", fieldPath: ".b"}
properties:
  a: {type: object, additionalProperties: {type: string}}
`, want: []string{
			"spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule: Required value: rule is not specified",
			`spec.validation.openAPIV3Schema.x-kubernetes-validations[1].message: Invalid value: " ": must be non-empty if specified`,
			`spec.validation.openAPIV3Schema.x-kubernetes-validations[2].message: Invalid value: "a\nb": must not contain line breaks`,
			"spec.validation.openAPIV3Schema.x-kubernetes-validations[3].message: Required value: message must be specified if rule contains line breaks",
			"spec.validation.openAPIV3Schema.x-kubernetes-validations[4].messageExpression: Required value: messageExpression must be non-empty if specified",
			`spec.validation.openAPIV3Schema.x-kubernetes-validations[4].reason: Unsupported value: "Bogus": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"`,
			`spec.validation.openAPIV3Schema.x-kubernetes-validations[4].fieldPath: Invalid value: " ": must be non-empty if specified`,
			`spec.validation.openAPIV3Schema.x-kubernetes-validations[4].fieldPath: Invalid value: " ": must be a valid path`,
			`spec.validation.openAPIV3Schema.x-kubernetes-validations[5].fieldPath: Invalid value: ".a\n": must not contain line breaks`,
			`spec.validation.openAPIV3Schema.x-kubernetes-validations[5].fieldPath: Invalid value: ".a\n": must be a valid path`,
			`spec.validation.openAPIV3Schema.x-kubernetes-validations[7].fieldPath: Invalid value: ".b": must be a valid path`,
		}},
		{line: at(), name: "status: allowed root", status: true, schema: `
type: object
description: d
required: [spec]
x-kubernetes-preserve-unknown-fields: true
properties:
  spec: {type: object}
  status: {type: object}
`},
		{line: at(), name: "status: type not object", status: true, schema: `type: string`, want: []string{
			`spec.validation.openAPIV3Schema.type: Invalid value: "string": only "object" is allowed as the type at the root of the schema if the status subresource is enabled`,
			`spec.validation.openAPIV3Schema.type: Invalid value: "string": must be object at the root`,
		}},
		{line: at(), name: "status: field not allowed", status: true, schema: `
type: object
properties:
  a: {type: string}
anyOf:
- required: [a]
`, want: []string{
			`spec.validation.openAPIV3Schema: Invalid value: {"ID":"","Schema":"","Ref":null,"Description":"","Type":"object","Nullable":false,"Format":"","Title":"","Default":null,"Maximum":null,"ExclusiveMaximum":false,"Minimum":null,"ExclusiveMinimum":false,"MaxLength":null,"MinLength":null,"Pattern":"","MaxItems":null,"MinItems":null,"UniqueItems":false,"MultipleOf":null,"Enum":null,"MaxProperties":null,"MinProperties":null,"Required":null,"Items":null,"AllOf":null,"OneOf":null,"AnyOf":[{"ID":"","Schema":"","Ref":null,"Description":"","Type":"","Nullable":false,"Format":"","Title":"","Default":null,"Maximum":null,"ExclusiveMaximum":false,"Minimum":null,"ExclusiveMinimum":false,"MaxLength":null,"MinLength":null,"Pattern":"","MaxItems":null,"MinItems":null,"UniqueItems":false,"MultipleOf":null,"Enum":null,"MaxProperties":null,"MinProperties":null,"Required":["a"],"Items":null,"AllOf":null,"OneOf":null,"AnyOf":null,"Not":null,"Properties":null,"AdditionalProperties":null,"PatternProperties":null,"Dependencies":null,"AdditionalItems":null,"Definitions":null,"ExternalDocs":null,"Example":null,"XPreserveUnknownFields":null,"XEmbeddedResource":false,"XIntOrString":false,"XListMapKeys":null,"XListType":null,"XMapType":null,"XValidations":null}],"Not":null,"Properties":{"a":{"ID":"","Schema":"","Ref":null,"Description":"","Type":"string","Nullable":false,"Format":"","Title":"","Default":null,"Maximum":null,"ExclusiveMaximum":false,"Minimum":null,"ExclusiveMinimum":false,"MaxLength":null,"MinLength":null,"Pattern":"","MaxItems":null,"MinItems":null,"UniqueItems":false,"MultipleOf":null,"Enum":null,"MaxProperties":null,"MinProperties":null,"Required":null,"Items":null,"AllOf":null,"OneOf":null,"AnyOf":null,"Not":null,"Properties":null,"AdditionalProperties":null,"PatternProperties":null,"Dependencies":null,"AdditionalItems":null,"Definitions":null,"ExternalDocs":null,"Example":null,"XPreserveUnknownFields":null,"XEmbeddedResource":false,"XIntOrString":false,"XListMapKeys":null,"XListType":null,"XMapType":null,"XValidations":null}},"AdditionalProperties":null,"PatternProperties":null,"Dependencies":null,"AdditionalItems":null,"Definitions":null,"ExternalDocs":null,"Example":null,"XPreserveUnknownFields":null,"XEmbeddedResource":false,"XIntOrString":false,"XListMapKeys":null,"XListType":null,"XMapType":null,"XValidations":null}: only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled`,
		}},
		{line: at(), name: "status off: anything at the root", schema: `
type: object
properties:
  a: {type: string}
anyOf:
- required: [a]
`},
	})
}

// TestRatcheting: rules the stored CRD already broke do not fail an update.
func TestRatcheting(t *testing.T) {
	nonStructural := `
type: object
properties:
  a: {}
  b: {type: date}
  c: {type: array, x-kubernetes-list-type: set, items: {type: object}}
  d: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: object, properties: {k: {type: string}}}}
`
	old := parse(t, nonStructural)
	opts := OptionsFor(specWith(old))
	want := Options{AllowNonStructural: true, AllowInvalidTypes: true, AllowNonAtomicSetItems: true, AllowInvalidMapListKeys: true}
	if opts != want {
		t.Fatalf("OptionsFor = %+v, want %+v", opts, want)
	}
	run(t, []tc{
		{line: at(), name: "everything ratchets", schema: nonStructural, opts: opts},
		{line: at(), name: "create does not", schema: nonStructural, want: []string{
			"spec.validation.openAPIV3Schema.properties[a].type: Required value: must not be empty for specified object fields",
			`spec.validation.openAPIV3Schema.properties[b].type: Unsupported value: "date": supported values: "array", "boolean", "integer", "number", "object", "string"`,
			`spec.validation.openAPIV3Schema.properties[c].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set`,
			"spec.validation.openAPIV3Schema.properties[d].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
		}},
	})
	if got := OptionsFor(specWith(parse(t, "type: object"))); got != (Options{}) {
		t.Errorf("OptionsFor(structural) = %+v, want zero", got)
	}
	if got := OptionsFor(nil); got != (Options{}) {
		t.Errorf("OptionsFor(nil) = %+v, want zero", got)
	}
}
