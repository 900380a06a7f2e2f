package builtin

import (
	"reflect"
	"testing"

	"github.com/crdserver/crdserver/internal/registry"
)

// DRA objects get upstream's defaults and its errors in its order: the
// handwritten checks' first, then those its declarative rules report.
func TestResourceValidation(t *testing.T) {
	const (
		class = `{kind: DeviceClass, metadata: {name: c}, spec: `
		claim = `{kind: ResourceClaim, metadata: {name: c, namespace: ns}, spec: {devices: `
		slice = `{kind: ResourceSlice, metadata: {name: s}, spec: `
	)
	for _, tc := range []struct {
		line string
		def  func() *registry.Definition
		old  string // an update's stored object
		obj  string
		want []string
	}{
		{line: line(), def: DeviceClasses, obj: class + `{selectors: [{cel: {expression: "device.driver == 'x'"}}]}}`},
		{line: line(), def: DeviceClasses, obj: class + `{selectors: [{}, {cel: {expression: "device."}}], config: [{opaque: {driver: Bad_Driver, parameters: [1]}}], extendedResourceName: kubernetes.io/gpu}}`,
			want: []string{
				"spec.selectors[0].cel: Required value",
				"spec.selectors[1].cel.expression: Invalid value: \"device.\": compilation failed: ERROR: <input>:1:8: Syntax error: no viable alternative at input '.'\n | device.\n | .......^",
				`spec.config[0].opaque.parameters: Invalid value: "<value omitted>": must be a valid JSON object`,
				`spec.config[0].opaque.driver: Invalid value: "Bad_Driver": an RFC 1123 subdomain must consist of alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'Example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
				`spec.extendedResourceName: Invalid value: "kubernetes.io/gpu": must not have "kubernetes.io/" domain`,
			}},
		{line: line(), def: ResourceClaims, obj: claim + `{requests: [{name: a, exactly: {deviceClassName: c}}, {name: b, firstAvailable: [{name: x, deviceClassName: c, allocationMode: All}]}]}}}`},
		{line: line(), def: ResourceClaims, obj: claim + `{requests: [{name: a}, {name: a, exactly: {deviceClassName: c, allocationMode: Some}}]}}}`,
			want: []string{
				"spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required",
				`spec.devices.requests[1]: Duplicate value: {"name":"a","exactly":{"deviceClassName":"c","allocationMode":"Some"}}`,
				`spec.devices.requests[1].exactly.allocationMode: Unsupported value: "Some": supported values: "All", "ExactCount"`,
			}},
		{line: line(), def: ResourceClaims, obj: claim + `{requests: [{name: a, exactly: {deviceClassName: c, allocationMode: All, count: 2, tolerations: [{key: k, operator: Exists, value: v}]}}]}}}`,
			want: []string{
				"spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'",
				"spec.devices.requests[0].exactly.tolerations[0].value: Invalid value: \"v\": must be empty for operator `Exists`",
			}},
		{line: line(), def: ResourceClaims, obj: claim + `{requests: [{name: a, firstAvailable: [{name: x}]}], constraints: [{requests: [a/y], matchAttribute: numa}], config: [{requests: [b]}]}}}`,
			want: []string{
				`spec.devices.constraints[0].requests[0]: Invalid value: "a/y": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'`,
				`spec.devices.config[0].requests[0]: Invalid value: "b": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'`,
				"spec.devices.config[0].opaque: Required value",
				"spec.devices.requests[0].firstAvailable[0].deviceClassName: Required value",
				`spec.devices.constraints[0].matchAttribute: Invalid value: "numa": a fully qualified name must be a domain and a name separated by a slash`,
			}},
		{line: line(), def: ResourceClaims, old: claim + `{requests: [{name: a, exactly: {deviceClassName: c}}]}}}`,
			obj:  claim + `{requests: [{name: a, exactly: {deviceClassName: d}}]}}}`,
			want: []string{"spec: Invalid value: null: field is immutable"}},
		{line: line(), def: ResourceClaimTemplates, old: `{kind: ResourceClaimTemplate, metadata: {name: t}, spec: {spec: {devices: {requests: [{name: a, exactly: {deviceClassName: c}}]}}}}`,
			obj:  `{kind: ResourceClaimTemplate, metadata: {name: t}, spec: {metadata: {labels: {a: b}}, spec: {devices: {requests: [{name: a, exactly: {deviceClassName: d, count: 1}}]}}}}`,
			want: []string{`spec: Invalid value: {"Spec":{"Devices":{"Config":null,"Constraints":null,"Requests":[{"Exactly":{"AdminAccess":null,"AllocationMode":"ExactCount","Capacity":null,"Count":1,"DerivedAttributes":null,"DeviceClassName":"d","Selectors":null,"Tolerations":null},"FirstAvailable":null,"Name":"a"}]}},"labels":{"a":"b"}}: field is immutable`}},
		{line: line(), def: ResourceSlices, obj: slice + `{driver: d.example.com, nodeName: node-1, pool: {name: p, resourceSliceCount: 1}, devices: [{name: a, attributes: {model: {string: x}}}]}}`},
		{line: line(), def: ResourceSlices, obj: slice + `{driver: "", pool: {name: "", generation: -1}}}`,
			want: []string{
				"spec.driver: Required value",
				"spec.pool.name: Required value",
				"spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
				"spec.pool.generation: Invalid value: -1: must be greater than or equal to zero",
				"spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
			}},
		{line: line(), def: ResourceSlices, obj: slice + `{driver: d, allNodes: true, nodeName: node-1, pool: {name: p, resourceSliceCount: 1}, devices: [{name: a, attributes: {x: {}, w: {int: 1, bool: true}}}, {name: a, taints: [{key: k}]}]}}`,
			want: []string{
				"spec: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set",
				`spec.devices[1]: Duplicate value: "a"`,
				"spec.devices[0].attributes[w]: Invalid value: \"{int, bool}\": must specify exactly one of: `int`, `bool`, `string`, `version`, `ints`, `bools`, `strings`, `versions`",
				"spec.devices[0].attributes[x]: Invalid value: \"\": must specify one of: `int`, `bool`, `string`, `version`, `ints`, `bools`, `strings`, `versions`",
				"spec.devices[1].taints[0].effect: Required value",
			}},
		{line: line(), def: DeviceTaintRules, obj: `{kind: DeviceTaintRule, metadata: {name: r}, spec: {deviceSelector: {driver: Bad_Driver, device: Gpu_0}, taint: {key: k, effect: Evict}}}`,
			want: []string{
				`spec.deviceSelector.driver: Invalid value: "Bad_Driver": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
				`spec.deviceSelector.device: Invalid value: "Gpu_0": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`spec.taint.effect: Unsupported value: "Evict": supported values: "NoExecute", "NoSchedule", "None"`,
			}},
		{line: line(), def: ResourceSlices, old: slice + `{driver: d, nodeName: node-1, pool: {name: p, resourceSliceCount: 1}}}`,
			obj:  slice + `{driver: e, nodeName: node-1, pool: {name: p, resourceSliceCount: 1}}}`,
			want: []string{`spec.driver: Invalid value: "e": field is immutable`}},
	} {
		h := tc.def().Hooks
		obj := decodeYAML(t, tc.obj)
		h.(registry.Defaulter).Default(obj)
		var errs []string
		if tc.old != "" {
			old := decodeYAML(t, tc.old)
			h.(registry.Defaulter).Default(old)
			for _, e := range h.(registry.Validator).ValidateUpdate(obj, old) {
				errs = append(errs, e.Error())
			}
		} else {
			for _, e := range h.(registry.Validator).Validate(obj) {
				errs = append(errs, e.Error())
			}
		}
		if !reflect.DeepEqual(errs, tc.want) {
			t.Errorf("%s: got\n%q\nwant\n%q", tc.line, errs, tc.want)
		}
	}
}

// A claim's requests default to one device of their class, tolerations
// to the Equal operator; a slice's taints get the time they were added.
func TestResourceDefaults(t *testing.T) {
	obj := decodeYAML(t, `{kind: ResourceClaim, metadata: {name: c}, spec: {devices: {requests: [
		{name: a, exactly: {deviceClassName: c, tolerations: [{key: k}]}},
		{name: b, firstAvailable: [{name: x, deviceClassName: c}, {name: z, deviceClassName: c, allocationMode: All}]}]}}}`)
	ResourceClaims().Hooks.(registry.Defaulter).Default(obj)
	reqs := obj["spec"].(map[string]any)["devices"].(map[string]any)["requests"].([]any)
	exactly := reqs[0].(map[string]any)["exactly"].(map[string]any)
	if exactly["allocationMode"] != "ExactCount" || exactly["count"] != int64(1) {
		t.Errorf("exactly: %v", exactly)
	}
	if op := exactly["tolerations"].([]any)[0].(map[string]any)["operator"]; op != "Equal" {
		t.Errorf("toleration operator %v", op)
	}
	subs := reqs[1].(map[string]any)["firstAvailable"].([]any)
	if x := subs[0].(map[string]any); x["allocationMode"] != "ExactCount" || x["count"] != int64(1) {
		t.Errorf("subrequest x: %v", x)
	}
	if y := subs[1].(map[string]any); y["allocationMode"] != "All" || y["count"] != nil {
		t.Errorf("subrequest z: %v", y)
	}

	slice := decodeYAML(t, `{kind: ResourceSlice, metadata: {name: s}, spec: {devices: [{name: a, taints: [{key: k, effect: NoSchedule}]}]}}`)
	ResourceSlices().Hooks.(registry.Defaulter).Default(slice)
	taint := slice["spec"].(map[string]any)["devices"].([]any)[0].(map[string]any)["taints"].([]any)[0].(map[string]any)
	if taint["timeAdded"] == nil {
		t.Errorf("taint without timeAdded: %v", taint)
	}
}

// Tables are upstream's: a claim's state, a slice's node, driver and pool.
func TestResourceTables(t *testing.T) {
	for _, tc := range []struct {
		line string
		def  func() *registry.Definition
		obj  string
		want []any // the cells but the age
	}{
		{line(), ResourceClaims, `{kind: ResourceClaim, metadata: {name: c}}`, []any{"c", "pending"}},
		{line(), ResourceClaims, `{kind: ResourceClaim, metadata: {name: c}, status: {allocation: {devices: {}}, reservedFor: [{resource: pods, name: p, uid: u}]}}`, []any{"c", "allocated,reserved"}},
		{line(), ResourceClaims, `{kind: ResourceClaim, metadata: {name: c, deletionTimestamp: "2026-01-01T00:00:00Z"}}`, []any{"c", "deleted"}},
		{line(), ResourceSlices, `{kind: ResourceSlice, metadata: {name: s}, spec: {driver: d, nodeName: node-1, pool: {name: p}}}`, []any{"s", "node-1", "d", "p"}},
		{line(), ResourceSlices, `{kind: ResourceSlice, metadata: {name: s}, spec: {driver: d, allNodes: true, pool: {name: p}}}`, []any{"s", "", "d", "p"}},
		{line(), DeviceClasses, `{kind: DeviceClass, metadata: {name: c}}`, []any{"c"}},
		{line(), DeviceTaintRules, `{kind: DeviceTaintRule, metadata: {name: r}, spec: {taint: {key: k, value: v, effect: NoSchedule}}}`, []any{"r", "k", "v", "NoSchedule", ""}},
	} {
		p := tc.def().Hooks.(registry.TablePrinter)
		cells := p.TableRow(decodeYAML(t, tc.obj))
		if len(cells) != len(p.TableColumns()) {
			t.Errorf("%s: %d cells for %d columns", tc.line, len(cells), len(p.TableColumns()))
			continue
		}
		if got := cells[:len(cells)-1]; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: cells %q, want %q", tc.line, got, tc.want)
		}
	}
}

// A slice's driver name with capitals is taken with upstream's warning.
func TestResourceSliceWarnings(t *testing.T) {
	w := ResourceSlices().Hooks.(registry.Warner)
	obj := decodeYAML(t, `{kind: ResourceSlice, metadata: {name: s}, spec: {driver: GPU.example.com}}`)
	want := []string{`spec.driver: driver names should be lowercase; "GPU.example.com" contains uppercase characters`}
	if got := w.Warnings(obj, nil, ""); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings %q, want %q", got, want)
	}
	obj = decodeYAML(t, `{kind: ResourceSlice, metadata: {name: s}, spec: {driver: gpu.example.com}}`)
	if got := w.Warnings(obj, nil, ""); got != nil {
		t.Errorf("warnings %q, want none", got)
	}
}
