package builtin

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// validateCase is one object (and, for an update, the stored one) and the
// errors upstream gives for it, in order ("" for none).
type validateCase struct {
	name     string
	old, obj string
	want     []string
}

// checkValidation prepares and validates each case's object as the
// handler does (PrepareForCreate or PrepareForUpdate, then Validate or
// ValidateUpdate) and compares the errors' texts.
func checkValidation(t *testing.T, def *registry.Definition, cases []validateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			head := "apiVersion: v1\nkind: " + def.Kind + "\nmetadata: {name: x, namespace: ns}\n"
			obj := decodeYAML(t, head+tc.obj)
			var errs field.ErrorList
			if tc.old == "" {
				def.Hooks.(registry.CreatePreparer).PrepareForCreate(obj)
				errs = def.Hooks.(registry.Validator).Validate(obj)
			} else {
				old := decodeYAML(t, head+tc.old)
				def.Hooks.(registry.CreatePreparer).PrepareForCreate(old)
				def.Hooks.(registry.UpdatePreparer).PrepareForUpdate(obj, old)
				errs = def.Hooks.(registry.Validator).ValidateUpdate(obj, old)
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestConfigMapValidation(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	checkValidation(t, ConfigMaps(), []validateCase{
		{name: line(), obj: "data: {a.b: c, _d-e: f}"},
		{name: line(), obj: "data: {a/b: c}", want: []string{
			`data[a/b]: Invalid value: "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`}},
		{name: line(), obj: "data: {..: c}", want: []string{`data[..]: Invalid value: "..": must not be '..'`}},
		{name: line(), obj: "data: {a: b}\nbinaryData: {a: Yg==}", want: []string{`data[a]: Invalid value: "a": duplicate of key present in binaryData`}},
		{name: line(), obj: "data: {a: " + big + "}"},
		{name: line(), obj: "data: {a: " + big + "x}", want: []string{`[]: Too long: may not be more than 1048576 bytes`}},
		{name: line(), obj: "data: {a: " + big[1:] + "}\nbinaryData: {b: eHg=}", want: []string{`[]: Too long: may not be more than 1048576 bytes`}},
		{name: line(), old: "data: {a: b}", obj: "data: {a: c}"},
		{name: line(), old: "immutable: true\ndata: {a: b}", obj: "immutable: true\ndata: {a: b}"},
		{name: line(), old: "immutable: true\ndata: {a: b}", obj: "data: {a: c}\nbinaryData: {b: Yg==}", want: []string{
			"immutable: Forbidden: field is immutable when `immutable` is set",
			"data: Forbidden: field is immutable when `immutable` is set",
			"binaryData: Forbidden: field is immutable when `immutable` is set"}},
	})
}

func TestSecretValidation(t *testing.T) {
	checkValidation(t, Secrets(), []validateCase{
		{name: line(), obj: "data: {a: Yg==}"},
		{name: line(), obj: "data: {a b: Yg==}", want: []string{
			`data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`}},
		{name: line(), obj: "stringData: {a: " + strings.Repeat("x", 1<<20+1) + "}", want: []string{`data: Too long: may not be more than 1048576 bytes`}},
		{name: line(), obj: "type: kubernetes.io/service-account-token", want: []string{`metadata.annotations[kubernetes.io/service-account.name]: Required value`}},
		{name: line(), obj: "type: kubernetes.io/dockercfg", want: []string{`data[.dockercfg]: Required value`}},
		{name: line(), obj: "type: kubernetes.io/dockerconfigjson\nstringData: {.dockerconfigjson: '[1'}", want: []string{
			`data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": unexpected end of JSON input`}},
		{name: line(), obj: "type: kubernetes.io/dockerconfigjson\nstringData: {.dockerconfigjson: '{}'}"},
		{name: line(), obj: "type: kubernetes.io/basic-auth", want: []string{`data[username]: Required value`, `data[password]: Required value`}},
		{name: line(), obj: "type: kubernetes.io/basic-auth\nstringData: {password: ''}"},
		{name: line(), obj: "type: kubernetes.io/ssh-auth\nstringData: {ssh-privatekey: ''}", want: []string{`data[ssh-privatekey]: Required value`}},
		{name: line(), obj: "type: kubernetes.io/tls\nstringData: {tls.key: k}", want: []string{`data[tls.crt]: Required value`}},
		{name: line(), obj: "type: bootstrap.kubernetes.io/token"},
		{name: line(), old: "type: Opaque", obj: "type: kubernetes.io/tls\nstringData: {tls.crt: c, tls.key: k}", want: []string{
			`type: Invalid value: "kubernetes.io/tls": field is immutable`}},
		// The type defaults to Opaque on update too.
		{name: line(), old: "type: foo/bar", obj: "data: {}", want: []string{`type: Invalid value: "Opaque": field is immutable`}},
		{name: line(), old: "immutable: true\ndata: {a: Yg==}", obj: "immutable: false\nstringData: {a: c}", want: []string{
			"immutable: Forbidden: field is immutable when `immutable` is set",
			"data: Forbidden: field is immutable when `immutable` is set"}},
		{name: line(), old: "immutable: true\ndata: {a: Yg==}", obj: "immutable: true\nstringData: {a: b}"},
	})
}

// stringData is merged into data, base64-encoded, winning over data, and
// never stored; the type defaults to Opaque.
func TestSecretStringData(t *testing.T) {
	obj := decodeYAML(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {a: eA==, b: eQ==}\nstringData: {b: z, c: w}")
	Secrets().Hooks.(registry.CreatePreparer).PrepareForCreate(obj)
	data := obj["data"].(map[string]any)
	if data["a"] != "eA==" || data["b"] != "eg==" || data["c"] != "dw==" || obj["stringData"] != nil || obj["type"] != "Opaque" {
		t.Errorf("prepared secret: %v", obj)
	}
}

func TestLeaseValidation(t *testing.T) {
	checkValidation(t, Leases(), []validateCase{
		{name: line(), obj: "spec: {holderIdentity: a, leaseDurationSeconds: 15, leaseTransitions: 0}"},
		{name: line(), obj: "spec: {leaseDurationSeconds: -1}", want: []string{`spec.leaseDurationSeconds: Invalid value: -1: must be greater than 0`}},
		{name: line(), obj: "spec: {leaseDurationSeconds: 0, leaseTransitions: -2}", want: []string{
			`spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0`,
			`spec.leaseTransitions: Invalid value: -2: must be greater than or equal to 0`}},
		// Dropped, as upstream drops them with CoordinatedLeaderElection off.
		{name: line(), obj: "spec: {strategy: Bogus, preferredHolder: a}"},
		{name: line(), old: "spec: {leaseDurationSeconds: 1}", obj: "spec: {leaseDurationSeconds: 0}", want: []string{
			`spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0`}},
	})
}

func TestEventValidation(t *testing.T) {
	const newStyle = "eventTime: '2026-01-01T00:00:00.000000Z'\n"
	checkValidation(t, Events(time.Hour), []validateCase{
		{name: line(), obj: "involvedObject: {kind: Pod, name: p, namespace: ns}\nreason: Started"},
		{name: line(), obj: "involvedObject: {kind: Pod, name: p, namespace: other}", want: []string{
			`involvedObject.namespace: Invalid value: "other": does not match event.namespace`}},
		{name: line(), obj: "involvedObject: {kind: Node, name: node1}", want: []string{
			`involvedObject.namespace: Invalid value: "": does not match event.namespace`}},
		{name: line(), obj: newStyle + "involvedObject: {kind: Pod, name: p, namespace: ns}\nreportingComponent: example.com/ctl\nreportingInstance: i\naction: Do\nreason: Done"},
		{name: line(), obj: newStyle + "involvedObject: {kind: Pod, name: p, namespace: ns}", want: []string{
			// Upstream checks the empty name's form too.
			`reportingComponent: Required value`,
			`reportingComponent: Invalid value: "": name part must be non-empty`,
			`reportingComponent: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`reportingInstance: Required value`,
			`action: Required value`,
			`reason: Required value`}},
		{name: line(), obj: newStyle + "involvedObject: {kind: Pod, name: p, namespace: ns}\nreportingComponent: 'a b'\nreportingInstance: i\naction: Do\nreason: " + strings.Repeat("r", 129) + "\nmessage: " + strings.Repeat("m", 1025), want: []string{
			`reportingComponent: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`reason: Invalid value: "": can have at most 128 characters`,
			`message: Invalid value: "": can have at most 1024 characters`}},
	})
}

func TestEventComputedSource(t *testing.T) {
	h := Events(time.Hour).Hooks.(registry.FieldComputer)
	for _, tc := range []struct{ obj, want string }{
		{"source: {component: kubelet}\nreportingComponent: x", "kubelet"},
		{"reportingComponent: example.com/ctl", "example.com/ctl"},
		{"{}", ""},
	} {
		if got := h.ComputedFields(decodeYAML(t, tc.obj))["source"]; got != tc.want {
			t.Errorf("%s: source %q, want %q", tc.obj, got, tc.want)
		}
	}
}

// TestPodTemplateValidation checks against kube-apiserver 1.37's answers:
// regular containers come before init containers, which share their name
// space; a port name is used once in a container.
func TestPodTemplateValidation(t *testing.T) {
	checkValidation(t, PodTemplates(), []validateCase{
		{name: line(), obj: "template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}"},
		{name: line(), obj: "template: {spec: {}}", want: []string{`template.spec.containers: Required value`}},
		{name: line(), obj: "template: {metadata: {labels: {'a b': c}}, spec: {initContainers: [{name: c}], containers: [{name: c}, {name: ''}, {name: C}]}}", want: []string{
			`template.labels: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`template.spec.containers[0].image: Required value`,
			`template.spec.containers[1].name: Required value`,
			`template.spec.containers[1].image: Required value`,
			`template.spec.containers[2].name: Invalid value: "C": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			`template.spec.containers[2].image: Required value`,
			`template.spec.initContainers[0].image: Required value`,
			`template.spec.initContainers[0].name: Duplicate value: "c"`}},
		{name: line(), obj: `template: {spec: {
			initContainers: [{name: init, image: i, ports: [{name: p, containerPort: 1}, {name: p, containerPort: 2}]}],
			containers: [{name: c, image: i, ports: [{name: http, containerPort: 80}, {name: http, containerPort: 81}]}, {name: d, image: i, ports: [{name: http, containerPort: 80}]}]}}`,
			want: []string{
				`template.spec.containers[0].ports[1].name: Duplicate value: "http"`,
				`template.spec.initContainers[0].ports[1].name: Duplicate value: "p"`}},
	})
}

// TestContainerPorts checks a container's ports as kube-apiserver 1.37
// does, in its order and words.
func TestContainerPorts(t *testing.T) {
	ports := `[{name: http, containerPort: 80}, {name: http, containerPort: 81}, {name: Bad_Name, containerPort: 82},
		{containerPort: 0}, {name: udp, containerPort: 83, hostPort: 70000, protocol: FOO}]`
	obj := decodeYAML(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w, namespace: default}\n"+
		"spec: {selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: ["+
		"{name: c, image: i, ports: "+ports+"}, {name: d, image: i, ports: [{name: http, containerPort: 80}]}]}}}")
	hooks := Deployments().Hooks
	hooks.(registry.CreatePreparer).PrepareForCreate(obj)
	var got []string
	for _, e := range hooks.(registry.Validator).Validate(obj) {
		got = append(got, e.Error())
	}
	want := []string{
		`spec.template.spec.containers[0].ports[1].name: Duplicate value: "http"`,
		`spec.template.spec.containers[0].ports[2].name: Invalid value: "Bad_Name": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
		`spec.template.spec.containers[0].ports[3].containerPort: Required value`,
		`spec.template.spec.containers[0].ports[4].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive`,
		`spec.template.spec.containers[0].ports[4].protocol: Unsupported value: "FOO": supported values: "SCTP", "TCP", "UDP"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestComputedColumns(t *testing.T) {
	for _, tc := range []struct {
		name string
		def  *registry.Definition
		obj  string
		want []any // cells but the last (the age)
	}{
		{line(), ConfigMaps(), "data: {a: b}\nbinaryData: {c: eA==}", []any{"x", int64(2)}},
		{line(), Secrets(), "type: kubernetes.io/tls\ndata: {tls.crt: eA==, tls.key: eA==}", []any{"x", "kubernetes.io/tls", int64(2)}},
	} {
		obj := decodeYAML(t, "metadata: {name: x, creationTimestamp: '2026-01-01T00:00:00Z'}\n"+tc.obj)
		tp := tc.def.Hooks.(registry.TablePrinter)
		cells := tp.TableRow(obj)
		if len(cells) != len(tp.TableColumns()) {
			t.Fatalf("%s: %d cells for %d columns", tc.name, len(cells), len(tp.TableColumns()))
		}
		for i, w := range tc.want {
			if cells[i] != w {
				t.Errorf("%s: cell %d = %#v, want %#v", tc.name, i, cells[i], w)
			}
		}
	}
	ev := decodeYAML(t, `
metadata: {name: p.1}
involvedObject: {kind: Pod, name: p, fieldPath: 'spec.containers{c}'}
type: Normal
reason: Pulled
message: " done "
source: {component: kubelet, host: n1}
count: 3
`)
	got := Events(time.Hour).Hooks.(registry.TablePrinter).TableRow(ev)
	want := []any{"<unknown>", "Normal", "Pulled", "pod/p", "spec.containers{c}", "kubelet, n1", "done", "<unknown>", int64(3), "p.1"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event cell %d = %#v, want %#v", i, got[i], want[i])
		}
	}
	pt := decodeYAML(t, "metadata: {name: t}\ntemplate: {metadata: {labels: {b: '2', a: '1'}}, spec: {containers: [{name: c1, image: i1}, {name: c2, image: i2}]}}")
	got = PodTemplates().Hooks.(registry.TablePrinter).TableRow(pt)
	want = []any{"t", "c1,c2", "i1,i2", "a=1,b=2"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("podtemplate cell %d = %#v, want %#v", i, got[i], want[i])
		}
	}
}
