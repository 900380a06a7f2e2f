package structural

import "testing"

// TestSeedExamples are the examples of "Specifying a structural schema"
// (seed 001), with "..." filled in by a string field.
func TestSeedExamples(t *testing.T) {
	run(t, []tc{
		{line: at(), name: "example 1", schema: `
allOf:
- properties:
    foo: {type: string}
`, want: []string{
			"spec.validation.openAPIV3Schema.allOf[0].properties[foo].type: Forbidden: must be empty to be structural",
			"spec.validation.openAPIV3Schema.properties[foo]: Required value: because it is defined in spec.validation.openAPIV3Schema.allOf[0].properties[foo]",
			"spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root",
		}},
		{line: at(), name: "example 1 corrected", schema: `
type: object
properties:
  foo: {type: string}
allOf:
- properties:
    foo: {minLength: 1}
`},
		{line: at(), name: "example 2", schema: `
allOf:
- items:
    properties:
      foo: {type: string}
`, want: []string{
			"spec.validation.openAPIV3Schema.allOf[0].items.properties[foo].type: Forbidden: must be empty to be structural",
			"spec.validation.openAPIV3Schema.items: Required value: because it is defined in spec.validation.openAPIV3Schema.allOf[0].items",
			"spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root",
		}},
		// Like upstream, only the root's junctors are held to rule 2.
		{line: at(), name: "example 2 below the root", schema: `
type: object
properties:
  list:
    type: array
    items: {type: string}
    allOf:
    - items:
        properties:
          foo: {minLength: 1}
`},
		{line: at(), name: "example 2 corrected", schema: `
type: object
properties:
  list:
    type: array
    items:
      type: object
      properties:
        foo: {type: string}
allOf:
- properties:
    list:
      items:
        properties:
          foo: {minLength: 1}
`},
		{line: at(), name: "example 3", schema: seedNonStructural, want: []string{
			// each violation the seed lists, in upstream's order
			"spec.validation.openAPIV3Schema.anyOf[0].description: Forbidden: must be empty to be structural",
			"spec.validation.openAPIV3Schema.anyOf[0].properties[bar].type: Forbidden: must be empty to be structural",
			"spec.validation.openAPIV3Schema.properties[bar]: Required value: because it is defined in spec.validation.openAPIV3Schema.anyOf[0].properties[bar]",
			"spec.validation.openAPIV3Schema.properties[foo].type: Required value: must not be empty for specified object fields",
			"spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
			"spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root",
		}},
		{line: at(), name: "example 3 corrected", schema: `
type: object
description: "foo bar object"
properties:
  foo:
    type: string
    pattern: "abc"
  bar:
    type: integer
  metadata:
    type: object
    properties:
      name:
        type: string
        pattern: "^a"
anyOf:
- properties:
    bar:
      minimum: 42
  required: ["bar"]
`},
	})
}

const seedNonStructural = `
properties:
  foo:
    pattern: "abc"
  metadata:
    type: object
    properties:
      name:
        type: string
        pattern: "^a"
      finalizers:
        type: array
        items:
          type: string
          pattern: "my-finalizer"
anyOf:
- properties:
    bar:
      type: integer
      minimum: 42
  required: ["bar"]
  description: "foo bar object"
`
