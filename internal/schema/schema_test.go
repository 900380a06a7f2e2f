package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// caseName annotates a table case with the file and line of its caller.
func caseName(name string) string {
	_, file, line, _ := runtime.Caller(1)
	return fmt.Sprintf("%s:%d:%s", file[strings.LastIndex(file, "/")+1:], line, name)
}

func mustCompile(t testing.TB, schemaYAML string) *Schema {
	t.Helper()
	var props apiextensionsv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict([]byte(schemaYAML), &props); err != nil {
		t.Fatalf("schema: %v", err)
	}
	s, err := Compile(&props)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return s
}

// obj decodes YAML as request bodies are decoded: int64 for integers.
func obj(t testing.TB, y string) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("object: %v", err)
	}
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("object: %v", err)
	}
	m, _ := convertNumbers(v).(map[string]any)
	return m
}

func errStrings(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	sort.Strings(out)
	return out
}

const cronTabSchema = `
type: object
properties:
  spec:
    type: object
    properties:
      cronSpec:
        type: string
        pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
      image:
        type: string
      replicas:
        type: integer
        minimum: 1
        maximum: 10
`

const preserveSchema = `
type: object
properties:
  json:
    x-kubernetes-preserve-unknown-fields: true
    type: object
    properties:
      spec:
        type: object
        properties:
          foo:
            type: string
          bar:
            type: string
`

const embeddedSchema = `
type: object
properties:
  foo:
    x-kubernetes-embedded-resource: true
    x-kubernetes-preserve-unknown-fields: true
    type: object
  pruned:
    x-kubernetes-embedded-resource: true
    type: object
    properties:
      spec:
        type: object
        properties:
          a:
            type: string
`

func TestPrune(t *testing.T) {
	tests := []struct {
		name, schema, in, want string
		paths                  []string
	}{
		{
			name:   caseName("someRandomField"),
			schema: cronTabSchema,
			in: `
apiVersion: stable.example.com/v1
kind: CronTab
metadata: {name: my-new-cron-object}
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
someRandomField: 42`,
			want: `
apiVersion: stable.example.com/v1
kind: CronTab
metadata: {name: my-new-cron-object}
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image`,
			paths: []string{"someRandomField"},
		},
		{
			name: caseName("MaintenanceNightlyJob privileged"),
			schema: `
type: object
properties:
  spec:
    type: object
    properties:
      command: {type: string}
      shell: {type: string}
      machines:
        type: array
        items: {type: string}
`,
			in: `
apiVersion: operations/v1
kind: MaintenanceNightlyJob
spec:
  shell: grep backdoor /etc/passwd
  machines: [az1-master1, az1-master2]
  privileged: true`,
			want: `
apiVersion: operations/v1
kind: MaintenanceNightlyJob
spec:
  shell: grep backdoor /etc/passwd
  machines: [az1-master1, az1-master2]`,
			paths: []string{"spec.privileged"},
		},
		{
			name:   caseName("preserve-unknown-fields json.spec.something"),
			schema: preserveSchema,
			in: `
json:
  spec: {foo: abc, bar: def, something: x}
  status: {something: x}`,
			want: `
json:
  spec: {foo: abc, bar: def}
  status: {something: x}`,
			paths: []string{"json.spec.something"},
		},
		{
			name:   caseName("preserve-unknown-fields keeps any JSON"),
			schema: "type: object\nproperties:\n  json:\n    x-kubernetes-preserve-unknown-fields: true\n",
			in:     `json: {a: [1, {b: 2}], c: null}`,
			want:   `json: {a: [1, {b: 2}], c: null}`,
		},
		{
			name:   caseName("root metadata pruned to ObjectMeta"),
			schema: "type: object",
			in: `
metadata:
  name: a
  foo: bar
  labels: {x: y}
  ownerReferences: [{apiVersion: v1, kind: Pod, name: p, uid: u, extra: 1}]
extra: 1`,
			want: `
metadata:
  name: a
  labels: {x: y}
  ownerReferences: [{apiVersion: v1, kind: Pod, name: p, uid: u}]`,
			// Upstream reports the root metadata's before the rest.
			paths: []string{"metadata.foo", "metadata.ownerReferences[0].extra", "extra"},
		},
		{
			name: caseName("root metadata in its encoding's order, then the body, then embedded metadata"),
			schema: `
type: object
properties:
  spec:
    type: object
    properties:
      e:
        type: object
        x-kubernetes-embedded-resource: true
        x-kubernetes-preserve-unknown-fields: true
      a: {type: string}
`,
			in: `
metadata:
  zz: 1
  ownerReferences:
  - {apiVersion: v1, kind: Pod, name: p0, uid: u}
  - {apiVersion: v1, kind: Pod, name: p1, uid: u}
  - {apiVersion: v1, kind: Pod, name: p2, uid: u, yy: 1, xx: 1}
  - {apiVersion: v1, kind: Pod, name: p3, uid: u}
  - {apiVersion: v1, kind: Pod, name: p4, uid: u}
  - {apiVersion: v1, kind: Pod, name: p5, uid: u}
  - {apiVersion: v1, kind: Pod, name: p6, uid: u}
  - {apiVersion: v1, kind: Pod, name: p7, uid: u}
  - {apiVersion: v1, kind: Pod, name: p8, uid: u}
  - {apiVersion: v1, kind: Pod, name: p9, uid: u}
  - {apiVersion: v1, kind: Pod, name: p10, uid: u, w: 1}
  aa: 1
a: 1
spec:
  b: 1
  e: {apiVersion: v1, kind: X, metadata: {q: 1, b: 1}, free: 1}
z: 1`,
			want: `
metadata:
  ownerReferences:
  - {apiVersion: v1, kind: Pod, name: p0, uid: u}
  - {apiVersion: v1, kind: Pod, name: p1, uid: u}
  - {apiVersion: v1, kind: Pod, name: p2, uid: u}
  - {apiVersion: v1, kind: Pod, name: p3, uid: u}
  - {apiVersion: v1, kind: Pod, name: p4, uid: u}
  - {apiVersion: v1, kind: Pod, name: p5, uid: u}
  - {apiVersion: v1, kind: Pod, name: p6, uid: u}
  - {apiVersion: v1, kind: Pod, name: p7, uid: u}
  - {apiVersion: v1, kind: Pod, name: p8, uid: u}
  - {apiVersion: v1, kind: Pod, name: p9, uid: u}
  - {apiVersion: v1, kind: Pod, name: p10, uid: u}
spec:
  e: {apiVersion: v1, kind: X, metadata: {}, free: 1}`,
			paths: []string{
				"metadata.aa", "metadata.ownerReferences[2].xx", "metadata.ownerReferences[2].yy",
				"metadata.ownerReferences[10].w", "metadata.zz",
				"a", "spec.b", "z",
				"spec.e.metadata.b", "spec.e.metadata.q",
			},
		},
		{
			name:   caseName("embedded resources keep apiVersion kind metadata"),
			schema: embeddedSchema,
			in: `
foo:
  apiVersion: v1
  kind: Pod
  metadata: {name: p, unspecified: x}
  spec: {containers: []}
pruned:
  apiVersion: v1
  kind: Foo
  unspecified: x
  metadata: {name: p}
  spec: {a: b, unspecified: x}`,
			want: `
foo:
  apiVersion: v1
  kind: Pod
  metadata: {name: p}
  spec: {containers: []}
pruned:
  apiVersion: v1
  kind: Foo
  metadata: {name: p}
  spec: {a: b}`,
			// Upstream reports embedded resources' metadata last.
			paths: []string{"pruned.spec.unspecified", "pruned.unspecified", "foo.metadata.unspecified"},
		},
		{
			name: caseName("lists and additionalProperties"),
			schema: `
type: object
properties:
  list:
    type: array
    items:
      type: object
      properties:
        a: {type: string}
  m:
    type: object
    additionalProperties:
      type: object
      properties:
        a: {type: string}
`,
			in:    `{list: [{a: x, b: y}], m: {k: {a: x, z: 1}}, apiVersion: v1}`,
			want:  `{list: [{a: x}], m: {k: {a: x}}, apiVersion: v1}`,
			paths: []string{"list[0].b", "m.k.z"},
		},
		{
			name:   caseName("nested apiVersion outside an embedded resource is pruned"),
			schema: "type: object\nproperties:\n  spec:\n    type: object\n",
			in:     `{spec: {apiVersion: v1, kind: X}}`,
			want:   `{spec: {}}`,
			paths:  []string{"spec.apiVersion", "spec.kind"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema)
			o := obj(t, tt.in)
			paths := s.Prune(o)
			if want := obj(t, tt.want); !reflect.DeepEqual(o, want) {
				t.Errorf("pruned\n got %v\nwant %v", o, want)
			}
			if !reflect.DeepEqual(paths, tt.paths) {
				t.Errorf("paths: got %q, want %q", paths, tt.paths)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	tests := []struct {
		name, schema, in, want string
	}{
		{
			name: caseName("foo/bar/baz nullable"),
			schema: `
type: object
properties:
  spec:
    type: object
    properties:
      foo: {type: string, nullable: false, default: "default"}
      bar: {type: string, nullable: true}
      baz: {type: string}
`,
			in:   `spec: {foo: null, bar: null, baz: null}`,
			want: `spec: {foo: default, bar: null}`,
		},
		{
			name: caseName("CronTab cronSpec and replicas"),
			schema: `
type: object
properties:
  spec:
    type: object
    properties:
      cronSpec: {type: string, default: "5 0 * * *"}
      image: {type: string}
      replicas: {type: integer, minimum: 1, maximum: 10, default: 1}
`,
			in:   `{apiVersion: stable.example.com/v1, kind: CronTab, spec: {image: my-awesome-cron-image}}`,
			want: `{apiVersion: stable.example.com/v1, kind: CronTab, spec: {cronSpec: "5 0 * * *", image: my-awesome-cron-image, replicas: 1}}`,
		},
		{
			name: caseName("At image busybox"),
			schema: `
type: object
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {type: object}
  spec:
    type: object
    properties:
      schedule: {type: string}
      command: {type: string}
      image: {type: string, default: "busybox"}
    required: [schedule, command]
`,
			in:   `{kind: At, spec: {schedule: "2019-07-03T02:00:00Z", command: echo "hello world!"}}`,
			want: `{kind: At, spec: {schedule: "2019-07-03T02:00:00Z", command: echo "hello world!", image: busybox}}`,
		},
		{
			name: caseName("defaults per item and per additionalProperties value"),
			schema: `
type: object
properties:
  list:
    type: array
    items:
      type: object
      default: {a: 0}
      properties:
        a: {type: integer}
        b: {type: string, default: x}
  m:
    type: object
    additionalProperties:
      type: object
      properties:
        c: {type: boolean, default: true}
`,
			in:   `{list: [{a: 1}, null, {b: y}], m: {k: {}, l: null}}`,
			want: `{list: [{a: 1, b: x}, {a: 0, b: x}, {b: y}], m: {k: {c: true}}}`,
		},
		{
			name: caseName("object default then nested defaults"),
			schema: `
type: object
properties:
  spec:
    type: object
    default: {}
    properties:
      n: {type: integer, default: 3}
`,
			in:   `{}`,
			want: `{spec: {n: 3}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema)
			o := obj(t, tt.in)
			s.Default(o)
			if want := obj(t, tt.want); !reflect.DeepEqual(o, want) {
				t.Errorf("defaulted\n got %v\nwant %v", o, want)
			}
		})
	}
}

func TestDefaultsAreCopied(t *testing.T) {
	s := mustCompile(t, "type: object\nproperties:\n  spec:\n    type: object\n    default: {a: {b: 1}}\n")
	o1, o2 := map[string]any{}, map[string]any{}
	s.Default(o1)
	o1["spec"].(map[string]any)["a"].(map[string]any)["b"] = int64(2)
	s.Default(o2)
	if got := o2["spec"].(map[string]any)["a"].(map[string]any)["b"]; got != int64(1) {
		t.Fatalf("default shared between objects: got %v", got)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name, schema, in string
		want             []string
	}{
		{
			name:   caseName("CronTab validation error"),
			schema: cronTabSchema,
			in:     `{spec: {cronSpec: "* * * *", image: my-awesome-cron-image, replicas: 15}}`,
			want: []string{
				`spec.cronSpec: Invalid value: "* * * *": spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'`,
				`spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10`,
			},
		},
		{
			name:   caseName("CronTab valid"),
			schema: cronTabSchema,
			in:     `{spec: {cronSpec: "* * * * */5", image: x, replicas: 1}}`,
		},
		{
			name:   caseName("minimum"),
			schema: cronTabSchema,
			in:     `{spec: {replicas: 0}}`,
			want:   []string{`spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1`},
		},
		{
			name:   caseName("type string"),
			schema: cronTabSchema,
			in:     `{spec: {image: 1}}`,
			want:   []string{`spec.image: Invalid value: "integer": spec.image in body must be of type string: "integer"`},
		},
		{
			name:   caseName("type integer given a float"),
			schema: cronTabSchema,
			in:     `{spec: {replicas: 1.5}}`,
			want: []string{
				`<nil>: Invalid value: "": Checked value must be of type integer (default format) in spec.replicas`,
				`spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number"`,
			},
		},
		{
			name:   caseName("integral float is an integer"),
			schema: cronTabSchema,
			in:     `{spec: {replicas: 2.0}}`,
		},
		{
			name:   caseName("null not nullable"),
			schema: cronTabSchema,
			in:     `{spec: {image: null}}`,
			want:   []string{`spec.image: Invalid value: "null": spec.image in body must be of type string: "null"`},
		},
		{
			name:   caseName("null nullable"),
			schema: "type: object\nproperties:\n  a: {type: string, nullable: true}\n",
			in:     `{a: null}`,
		},
		{
			name:   caseName("required"),
			schema: "type: object\nproperties:\n  spec:\n    type: object\n    required: [a]\n    properties:\n      a: {type: string}\nrequired: [spec, status]\n",
			in:     `{spec: {}}`,
			want:   []string{`spec.a: Required value`, `status: Required value`},
		},
		{
			name:   caseName("enum"),
			schema: "type: object\nproperties:\n  a: {type: string, enum: [x, z1]}\n  num: {type: integer, enum: [1, 2]}\n",
			in:     `{a: z, num: 3}`,
			want: []string{
				`a: Unsupported value: "z": supported values: "x", "z1"`,
				`num: Unsupported value: 3: supported values: "1", "2"`,
			},
		},
		{
			name: caseName("string lengths"),
			schema: `
type: object
properties:
  long: {type: string, maxLength: 3}
  short: {type: string, minLength: 3}
`,
			in: `{long: abcd, short: ab}`,
			want: []string{
				`long: Too long: may not be more than 3 bytes`,
				`short: Invalid value: "ab": short in body should be at least 3 chars long`,
			},
		},
		{
			name: caseName("number keywords"),
			schema: `
type: object
properties:
  m: {type: integer, multipleOf: 3}
  f: {type: number, multipleOf: 0.5}
  x: {type: integer, maximum: 10, exclusiveMaximum: true}
  z: {type: number, minimum: 1.5, exclusiveMinimum: true}
  i32: {type: integer, format: int32}
`,
			in: `{m: 4, f: 0.7, x: 10, z: 1.5, i32: 3000000000}`,
			want: []string{
				`<nil>: Invalid value: "": Checked value must be of type integer with format int32 in i32`,
				`f: Invalid value: 0.7: f in body should be a multiple of 0.5`,
				`m: Invalid value: 4: m in body should be a multiple of 3`,
				`x: Invalid value: 10: x in body should be less than 10`,
				`z: Invalid value: 1.5: z in body should be greater than 1.5`,
			},
		},
		{
			name: caseName("items and properties counts"),
			schema: `
type: object
properties:
  l: {type: array, minItems: 2, maxItems: 3, items: {type: string}}
  k: {type: array, maxItems: 1, items: {type: string}}
  o: {type: object, minProperties: 2, additionalProperties: {type: string}}
  p: {type: object, maxProperties: 1, additionalProperties: {type: string}}
`,
			in: `{l: [a], k: [a, b], o: {a: x}, p: {a: x, b: z}}`,
			want: []string{
				`k: Too many: 2: must have at most 1 item`,
				`l: Invalid value: 1: l in body should have at least 2 items`,
				`o: Invalid value: 1: o in body should have at least 2 properties`,
				`p: Too many: 2: must have at most 1 item`,
			},
		},
		{
			name: caseName("formats"),
			schema: `
type: object
properties:
  d: {type: string, format: date}
  dt: {type: string, format: date-time}
  u: {type: string, format: uuid}
  b: {type: string, format: byte}
  ip: {type: string, format: ipv4}
  e: {type: string, format: email}
  h: {type: string, format: hostname}
  dur: {type: string, format: duration}
  c: {type: string, format: cidr}
  unknown: {type: string, format: foo}
`,
			in: `{d: 2019-13-01, dt: "2019-07-03 02:00:00", u: not-a-uuid, b: "!!", ip: 1.2.3, e: nope, h: "-x-", dur: forever, c: 10.0.0.0, unknown: anything}`,
			want: []string{
				`b: Invalid value: "!!": b in body must be of type byte: "!!"`,
				`c: Invalid value: "10.0.0.0": c in body must be of type cidr: "10.0.0.0"`,
				`d: Invalid value: "2019-13-01": d in body must be of type date: "2019-13-01"`,
				`dt: Invalid value: "2019-07-03 02:00:00": dt in body must be of type date-time: "2019-07-03 02:00:00"`,
				`dur: Invalid value: "forever": dur in body must be of type duration: "forever"`,
				`e: Invalid value: "nope": e in body must be of type email: "nope"`,
				`h: Invalid value: "-x-": h in body must be of type hostname: "-x-"`,
				`ip: Invalid value: "1.2.3": ip in body must be of type ipv4: "1.2.3"`,
				`u: Invalid value: "not-a-uuid": u in body must be of type uuid: "not-a-uuid"`,
			},
		},
		{
			name: caseName("valid formats"),
			schema: `
type: object
properties:
  d: {type: string, format: date}
  dt: {type: string, format: date-time}
  u: {type: string, format: uuid}
  b: {type: string, format: byte}
  dur: {type: string, format: duration}
  mac: {type: string, format: mac}
  uri: {type: string, format: uri}
  i6: {type: string, format: ipv6}
`,
			in: `{d: 2019-07-03, dt: "2019-07-03T02:00:00Z", u: 0e0c6a5c-8b8e-4f4e-9f4f-4a4a4a4a4a4a, b: aGVsbG8=, dur: 3 days, mac: "00:1a:2b:3c:4d:5e", uri: "https://example.com/x", i6: "::1"}`,
		},
		{
			name: caseName("int-or-string"),
			schema: `
type: object
properties:
  foo:
    x-kubernetes-int-or-string: true
    anyOf: [{type: integer}, {type: string}]
`,
			in: `{foo: true}`,
			want: []string{
				`<nil>: Invalid value: "": "foo" must validate at least one schema (anyOf)`,
				`foo: Invalid value: "boolean": foo in body must be of type integer: "boolean"`,
				`foo: Invalid value: "boolean": foo in body must be of type integer,string: "boolean"`,
			},
		},
		{
			name:   caseName("int-or-string accepts int and string"),
			schema: "type: object\nproperties:\n  a: {x-kubernetes-int-or-string: true}\n  b: {x-kubernetes-int-or-string: true}\n",
			in:     `{a: 1, b: "50%"}`,
		},
		{
			name: caseName("oneOf none valid"),
			schema: `
type: object
properties:
  spec:
    type: object
    properties:
      command: {type: string}
      shell: {type: string}
    oneOf:
    - required: [command]
    - required: [shell]
`,
			in: `{spec: {}}`,
			want: []string{
				`<nil>: Invalid value: "": "spec" must validate one and only one schema (oneOf). Found none valid`,
				`spec.command: Required value`,
			},
		},
		{
			name: caseName("oneOf two valid"),
			schema: `
type: object
properties:
  spec:
    type: object
    properties:
      command: {type: string}
      shell: {type: string}
    oneOf:
    - required: [command]
    - required: [shell]
`,
			in:   `{spec: {command: a, shell: b}}`,
			want: []string{`<nil>: Invalid value: "": "spec" must validate one and only one schema (oneOf). Found 2 valid alternatives`},
		},
		{
			name: caseName("allOf and not"),
			schema: `
type: object
properties:
  a:
    type: string
    allOf: [{minLength: 2}, {maxLength: 1}]
  b:
    type: string
    not: {enum: [forbidden]}
`,
			in: `{a: abc, b: forbidden}`,
			want: []string{
				`<nil>: Invalid value: "": "a" must validate all the schemas (allOf)`,
				`<nil>: Invalid value: "": "b" must not validate the schema (not)`,
				`a: Too long: may not be more than 1 byte`,
			},
		},
		{
			name: caseName("list-type set and map duplicates"),
			schema: `
type: object
properties:
  s:
    type: array
    x-kubernetes-list-type: set
    items: {type: string}
  m:
    type: array
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [name]
    items:
      type: object
      properties:
        name: {type: string}
        v: {type: integer}
`,
			in: `{s: [a, b, a, a], m: [{name: x, v: 1}, {name: x, v: 2}]}`,
			want: []string{
				`m[1]: Duplicate value: {"name":"x"}`,
				`s[2]: Duplicate value: "a"`,
			},
		},
		{
			name:   caseName("embedded resource needs apiVersion and kind"),
			schema: embeddedSchema,
			in:     `{foo: {metadata: {name: "a/b"}}, pruned: {apiVersion: v1, kind: "a.b"}}`,
			want: []string{
				`foo.apiVersion: Required value`,
				`foo.kind: Required value`,
				`foo.metadata.name: Invalid value: "a/b": may not contain '/'`,
				`pruned.kind: Invalid value: "a.b": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`,
			},
		},
		{
			name:   caseName("metadata name validated by the schema"),
			schema: "type: object\nproperties:\n  metadata:\n    type: object\n    properties:\n      name: {type: string, maxLength: 5}\n",
			in:     `{metadata: {name: toolong}}`,
			want:   []string{`metadata.name: Too long: may not be more than 5 bytes`},
		},
		{
			name:   caseName("root additionalProperties path"),
			schema: "type: object\nadditionalProperties: {type: string}\n",
			in:     `{k: 1}`,
			want:   []string{`k: Invalid value: "integer": .k in body must be of type string: "integer"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema)
			got := errStrings(s.Validate(obj(t, tt.in)))
			want := append([]string{}, tt.want...)
			sort.Strings(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("errors\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestValidateUpdateRatcheting(t *testing.T) {
	schema := `
type: object
properties:
  spec:
    type: object
    properties:
      a: {type: string, maxLength: 3}
      b: {type: string, maxLength: 3}
      items:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [name]
        items:
          type: object
          properties:
            name: {type: string}
            v: {type: integer, maximum: 5}
      atomic:
        type: array
        items: {type: integer, maximum: 5}
`
	tests := []struct {
		name, old, new string
		want           []string
	}{
		{
			name: caseName("unchanged invalid field passes"),
			old:  `{spec: {a: toolong, b: ok}}`,
			new:  `{spec: {a: toolong, b: new}}`,
		},
		{
			name: caseName("changed invalid field fails"),
			old:  `{spec: {a: toolong}}`,
			new:  `{spec: {a: toolong2}}`,
			want: []string{`spec.a: Too long: may not be more than 3 bytes`},
		},
		{
			name: caseName("new invalid field fails"),
			old:  `{spec: {a: toolong}}`,
			new:  `{spec: {a: toolong, b: toolong}}`,
			want: []string{`spec.b: Too long: may not be more than 3 bytes`},
		},
		{
			name: caseName("map list correlated by key"),
			old:  `{spec: {items: [{name: x, v: 9}, {name: y, v: 1}]}}`,
			new:  `{spec: {items: [{name: y, v: 2}, {name: x, v: 9}]}}`,
		},
		{
			name: caseName("map list changed element fails"),
			old:  `{spec: {items: [{name: x, v: 9}]}}`,
			new:  `{spec: {items: [{name: x, v: 8}]}}`,
			want: []string{`spec.items[0].v: Invalid value: 8: spec.items[0].v in body should be less than or equal to 5`},
		},
		{
			name: caseName("atomic list elements are not correlated"),
			old:  `{spec: {atomic: [9]}}`,
			new:  `{spec: {atomic: [9, 1]}}`,
			want: []string{`spec.atomic[0]: Invalid value: 9: spec.atomic[0] in body should be less than or equal to 5`},
		},
	}
	s := mustCompile(t, schema)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errStrings(s.ValidateUpdate(obj(t, tt.new), obj(t, tt.old)))
			if !reflect.DeepEqual(got, append([]string{}, tt.want...)) {
				t.Errorf("errors\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestPipelineIsIdempotent(t *testing.T) {
	s := mustCompile(t, widgetsSchema(t))
	o := widgetObject(t)
	s.Prune(o)
	s.Default(o)
	once, _ := json.Marshal(o)
	if paths := s.Prune(o); len(paths) != 0 {
		t.Fatalf("second prune removed %q", paths)
	}
	s.Default(o)
	twice, _ := json.Marshal(o)
	if !bytes.Equal(once, twice) {
		t.Fatalf("pipeline not idempotent:\n%s\n%s", once, twice)
	}
	if errs := s.Validate(o); len(errs) != 0 {
		t.Fatalf("widget invalid: %v", errs)
	}
}
