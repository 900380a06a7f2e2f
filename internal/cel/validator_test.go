package cel

import (
	"context"
	"runtime"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// named annotates a case with the line that declared it.
func named(name string) string {
	_, file, line, _ := runtime.Caller(1)
	return name + " (" + file[strings.LastIndex(file, "/")+1:] + ":" + itoa(line) + ")"
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		if i /= 10; i == 0 {
			break
		}
	}
	return string(b[n:])
}

func props(t testing.TB, y string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	var p apiextensionsv1.JSONSchemaProps
	if err := yaml.Unmarshal([]byte(y), &p); err != nil {
		t.Fatalf("schema: %v", err)
	}
	return &p
}

func object(t testing.TB, y string) map[string]any {
	t.Helper()
	if y == "" {
		return nil
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatalf("object: %v", err)
	}
	return fixNumbers(m).(map[string]any)
}

// fixNumbers turns whole float64s into int64, as the request decoder
// decodes integers.
func fixNumbers(v any) any {
	switch v := v.(type) {
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
	case map[string]any:
		for k, e := range v {
			v[k] = fixNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = fixNumbers(e)
		}
	}
	return v
}

const replicasSchema = `
type: object
properties:
  spec:
    type: object
    x-kubernetes-validations:
    - rule: "self.minReplicas <= self.replicas"
      message: "replicas should be greater than or equal to minReplicas."
    - rule: "self.replicas <= self.maxReplicas"
    properties:
      minReplicas: {type: integer}
      replicas: {type: integer}
      maxReplicas: {type: integer}
`

func TestValidate(t *testing.T) {
	cases := []struct {
		name     string
		schema   string
		obj, old string
		errs     []string
		warnings []string
	}{{
		name:   named("message"),
		schema: replicasSchema,
		obj:    `{spec: {minReplicas: 5, replicas: 2, maxReplicas: 10}}`,
		errs:   []string{`spec: Invalid value: replicas should be greater than or equal to minReplicas.`},
	}, {
		name:   named("default message"),
		schema: replicasSchema,
		obj:    `{spec: {minReplicas: 0, replicas: 20, maxReplicas: 10}}`,
		errs:   []string{`spec: Invalid value: failed rule: self.replicas <= self.maxReplicas`},
	}, {
		name:   named("valid"),
		schema: replicasSchema,
		obj:    `{spec: {minReplicas: 0, replicas: 5, maxReplicas: 10}}`,
	}, {
		name: named("metadata.name at the root"),
		schema: `
type: object
x-kubernetes-validations:
- rule: "self.metadata.name.startsWith('a')"
properties:
  spec: {type: object}`,
		obj:  `{apiVersion: v1, kind: X, metadata: {name: bob}, spec: {}}`,
		errs: []string{`<nil>: Invalid value: failed rule: self.metadata.name.startsWith('a')`},
	}, {
		name: named("transition rule runs on update only"),
		schema: `
type: object
properties:
  spec:
    type: object
    properties:
      name:
        type: string
        x-kubernetes-validations:
        - rule: "self == oldSelf"
          message: Value is immutable`,
		obj:  `{spec: {name: b}}`,
		old:  `{spec: {name: a}}`,
		errs: []string{`spec.name: Invalid value: "b": Value is immutable`},
	}, {
		name: named("transition rule not run on create"),
		schema: `
type: object
properties:
  spec:
    type: object
    properties:
      name:
        type: string
        x-kubernetes-validations:
        - rule: "self == oldSelf"`,
		obj: `{spec: {name: b}}`,
	}, {
		name: named("optionalOldSelf sees none on create"),
		schema: `
type: object
properties:
  spec:
    type: object
    properties:
      name:
        type: string
        x-kubernetes-validations:
        - rule: "!oldSelf.hasValue()"
          optionalOldSelf: true
          message: set once`,
		obj: `{spec: {name: b}}`,
	}, {
		name: named("optionalOldSelf sees the old value on update"),
		schema: `
type: object
properties:
  spec:
    type: object
    properties:
      name:
        type: string
        x-kubernetes-validations:
        - rule: "!oldSelf.hasValue()"
          optionalOldSelf: true
          message: set once`,
		obj:  `{spec: {name: b}}`,
		old:  `{spec: {name: a}}`,
		errs: []string{`spec.name: Invalid value: "b": set once`},
	}, {
		name: named("ratcheting: unchanged failing value warns"),
		schema: `
type: object
properties:
  spec:
    type: object
    properties:
      a:
        type: integer
        x-kubernetes-validations:
        - rule: "self < 10"
      b: {type: integer}`,
		obj:      `{spec: {a: 20, b: 2}}`,
		old:      `{spec: {a: 20, b: 1}}`,
		warnings: []string{`spec.a: Invalid value: 20: failed rule: self < 10`},
	}, {
		name: named("ratcheting: changed failing value fails"),
		schema: `
type: object
properties:
  spec:
    type: object
    properties:
      a:
        type: integer
        x-kubernetes-validations:
        - rule: "self < 10"`,
		obj:  `{spec: {a: 21}}`,
		old:  `{spec: {a: 20}}`,
		errs: []string{`spec.a: Invalid value: 21: failed rule: self < 10`},
	}, {
		name: named("map list items correlate by key"),
		schema: `
type: object
properties:
  items:
    type: array
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [name]
    items:
      type: object
      required: [name]
      properties:
        name: {type: string}
        v:
          type: integer
          x-kubernetes-validations:
          - rule: "self >= oldSelf"
            message: may only grow`,
		obj:  `{items: [{name: b, v: 1}, {name: a, v: 1}]}`,
		old:  `{items: [{name: a, v: 2}, {name: b, v: 0}]}`,
		errs: []string{`items[1].v: Invalid value: 1: may only grow`},
	}, {
		name: named("messageExpression"),
		schema: `
type: object
properties:
  spec:
    type: object
    properties:
      x:
        type: integer
        x-kubernetes-validations:
        - rule: "self < 5"
          messageExpression: "'x is ' + string(self) + ', want < 5'"`,
		obj:  `{spec: {x: 7}}`,
		errs: []string{`spec.x: Invalid value: 7: x is 7, want < 5`},
	}, {
		name: named("messageExpression empty falls back to message"),
		schema: `
type: object
properties:
  x:
    type: integer
    x-kubernetes-validations:
    - rule: "self < 5"
      message: too big
      messageExpression: "''"`,
		obj:  `{x: 7}`,
		errs: []string{`x: Invalid value: 7: too big`},
	}, {
		name: named("reason and fieldPath"),
		schema: `
type: object
properties:
  spec:
    type: object
    x-kubernetes-validations:
    - rule: "has(self.a)"
      reason: FieldValueRequired
      fieldPath: ".a"
      message: a is required
    properties:
      a: {type: string}`,
		obj:  `{spec: {}}`,
		errs: []string{`spec.a: Required value: a is required`},
	}, {
		name: named("list type set compares as a set"),
		schema: `
type: object
properties:
  s:
    type: array
    x-kubernetes-list-type: set
    items: {type: string}
    x-kubernetes-validations:
    - rule: "self == ['b', 'a']"`,
		obj: `{s: [a, b]}`,
	}, {
		name: named("int-or-string is dynamic"),
		schema: `
type: object
properties:
  p:
    x-kubernetes-int-or-string: true
    x-kubernetes-validations:
    - rule: "type(self) == int ? self < 10 : self.endsWith('%')"`,
		obj:  `{p: "50"}`,
		errs: []string{`p: Invalid value: "50": failed rule: type(self) == int ? self < 10 : self.endsWith('%')`},
	}, {
		name: named("date-time is a timestamp"),
		schema: `
type: object
properties:
  t:
    type: string
    format: date-time
    x-kubernetes-validations:
    - rule: "self > timestamp('2020-01-01T00:00:00Z')"`,
		obj:  `{t: "2019-01-01T00:00:00Z"}`,
		errs: []string{`t: Invalid value: "2019-01-01T00:00:00Z": failed rule: self > timestamp('2020-01-01T00:00:00Z')`},
	}, {
		name: named("escaped property names"),
		schema: `
type: object
x-kubernetes-validations:
- rule: "self.__namespace__ > 0 && self.x__dash__y > 0 && self.a__dot__b > 0"
properties:
  namespace: {type: integer}
  x-y: {type: integer}
  a.b: {type: integer}`,
		obj:  `{namespace: 1, x-y: 0, a.b: 1}`,
		errs: []string{`<nil>: Invalid value: failed rule: self.__namespace__ > 0 && self.x__dash__y > 0 && self.a__dot__b > 0`},
	}, {
		name: named("Kubernetes libraries: quantity, regex, url, ip, semver"),
		schema: `
type: object
properties:
  q:
    type: string
    x-kubernetes-validations:
    - rule: "quantity(self).isGreaterThan(quantity('1Gi'))"
    - rule: "self.matches('^[0-9]+[GM]i$')"
  u:
    type: string
    x-kubernetes-validations:
    - rule: "url(self).getHost() == 'example.com'"
  ip:
    type: string
    x-kubernetes-validations:
    - rule: "isIP(self) && ip(self).family() == 4"
  v:
    type: string
    x-kubernetes-validations:
    - rule: "isSemver(self) && semver(self).isGreaterThan(semver('1.0.0'))"`,
		obj: `{q: 2Gi, u: "https://example.com/x", ip: 10.0.0.1, v: 1.2.3}`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := New(props(t, tc.schema))
			if v == nil {
				t.Fatal("New returned nil for a schema with rules")
			}
			errs, warnings := v.Validate(context.Background(), object(t, tc.obj), object(t, tc.old))
			if got := errStrings(errs); strings.Join(got, "\n") != strings.Join(tc.errs, "\n") {
				t.Errorf("errors:\n got %q\nwant %q", got, tc.errs)
			}
			if strings.Join(warnings, "\n") != strings.Join(tc.warnings, "\n") {
				t.Errorf("warnings:\n got %q\nwant %q", warnings, tc.warnings)
			}
		})
	}
}

func errStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func TestNoRulesNoValidator(t *testing.T) {
	if v := New(props(t, `{type: object, properties: {a: {type: string}}}`)); v != nil {
		t.Fatal("a schema without rules should have no validator")
	}
}

// A rule that would run for a long time is stopped by the per-call
// limit and reported, instead of holding the request.
func TestRuntimeCostLimit(t *testing.T) {
	v := New(props(t, `
type: object
properties:
  l:
    type: array
    maxItems: 1000
    items: {type: string, maxLength: 1000}
    x-kubernetes-validations:
    - rule: "self.all(x, self.all(y, self.all(z, x + y + z != '')))"`))
	var items []any
	for i := 0; i < 1000; i++ {
		items = append(items, strings.Repeat("x", 100))
	}
	errs, _ := v.Validate(context.Background(), map[string]any{"l": items}, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "call cost exceeds limit") {
		t.Fatalf("want one cost-limit error, got %v", errs)
	}
}

func TestCheck(t *testing.T) {
	p := field.NewPath("spec", "validation", "openAPIV3Schema")
	cases := []struct {
		name   string
		schema string
		errs   []string
	}{{
		name:   named("no matching overload"),
		schema: `{type: object, properties: {spec: {type: integer, x-kubernetes-validations: [{rule: "self == true"}]}}}`,
		errs: []string{`spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self == true","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:6: found no matching overload for '_==_' applied to '(int, bool)'
 | self == true
 | .....^`},
	}, {
		name:   named("fields preserved as unknown are out of reach"),
		schema: `{type: object, properties: {free: {type: object, x-kubernetes-preserve-unknown-fields: true, x-kubernetes-validations: [{rule: "self.a == 1"}]}}}`,
		errs: []string{`spec.validation.openAPIV3Schema.properties[free].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.a == 1","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:5: undefined field 'a'
 | self.a == 1
 | ....^`},
	}, {
		name:   named("messageExpression must be a string"),
		schema: `{type: object, properties: {x: {type: integer, x-kubernetes-validations: [{rule: "self > 0", messageExpression: "self"}]}}}`,
		errs:   []string{`spec.validation.openAPIV3Schema.properties[x].x-kubernetes-validations[0].messageExpression: Invalid value: {"Rule":"self \u003e 0","Message":"","MessageExpression":"self","Reason":null,"FieldPath":"","OptionalOldSelf":null}: messageExpression must evaluate to a string`},
	}, {
		name:   named("unbounded list: quadratic rule over budget"),
		schema: `{type: object, properties: {l: {type: array, items: {type: string}, x-kubernetes-validations: [{rule: "self.all(x, x.contains('a string'))"}]}}}`,
		errs: []string{
			`spec.validation.openAPIV3Schema.properties[l].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`,
			`spec.validation.openAPIV3Schema.properties[l].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema`,
			`spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`,
		},
	}, {
		name:   named("bounded list: accepted"),
		schema: `{type: object, properties: {l: {type: array, maxItems: 25, items: {type: string, maxLength: 10}, x-kubernetes-validations: [{rule: "self.all(x, x.contains('a string'))"}]}}}`,
	}, {
		name:   named("oldSelf under an atomic list"),
		schema: `{type: object, properties: {l: {type: array, maxItems: 10, items: {type: string, maxLength: 10, x-kubernetes-validations: [{rule: "self == oldSelf"}]}}}}`,
		errs:   []string{`spec.validation.openAPIV3Schema.properties[l].items.x-kubernetes-validations[0].rule: Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[l]`},
	}, {
		name:   named("optionalOldSelf without oldSelf"),
		schema: `{type: object, properties: {x: {type: integer, x-kubernetes-validations: [{rule: "self > 0", optionalOldSelf: true}]}}}`,
		errs:   []string{`spec.validation.openAPIV3Schema.properties[x].x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule`},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := errStrings(Check(props(t, tc.schema), p, CheckOptions{}))
			if strings.Join(got, "\n") != strings.Join(tc.errs, "\n") {
				t.Errorf("errors:\n got %q\nwant %q", got, tc.errs)
			}
		})
	}
}

// A schema change leaves the programs of rules it did not touch alone.
func TestUpdateReusesUnchangedRules(t *testing.T) {
	before := New(props(t, `
type: object
properties:
  a: {type: integer, x-kubernetes-validations: [{rule: "self > 0"}]}
  b: {type: string, x-kubernetes-validations: [{rule: "self != ''"}]}`))
	after := Update(before, props(t, `
type: object
properties:
  a: {type: integer, x-kubernetes-validations: [{rule: "self > 0"}]}
  b: {type: string, maxLength: 5, x-kubernetes-validations: [{rule: "self != ''"}]}
  c: {type: string}`))
	if before.root.props["a"].rules[0].prog != after.root.props["a"].rules[0].prog {
		t.Error("the rule on a, whose node did not change, was compiled again")
	}
	if before.root.props["b"].rules[0].prog == after.root.props["b"].rules[0].prog {
		t.Error("the rule on b, whose node changed, was not compiled again")
	}
	if errs, _ := after.Validate(context.Background(), map[string]any{"a": int64(0), "b": ""}, nil); len(errs) != 2 {
		t.Errorf("reused rules: got %v, want two errors", errs)
	}
}
