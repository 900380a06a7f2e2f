package builtin

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// A core event converts to events.k8s.io/v1 with upstream's names and
// back unchanged, and so does a new-style event the other way.
func TestEventConversionRoundTrip(t *testing.T) {
	hooks := EventsV1(time.Hour).Hooks.(eventsV1Hooks)
	core := decodeYAML(t, `apiVersion: v1
kind: Event
metadata: {name: pod.1, namespace: ns, resourceVersion: "5", uid: u1}
involvedObject: {kind: Pod, namespace: ns, name: pod, uid: p1, apiVersion: v1, fieldPath: "spec.containers{c}"}
reason: Started
message: started container
source: {component: kubelet, host: node1}
firstTimestamp: "2026-01-01T00:00:00Z"
lastTimestamp: "2026-01-01T00:01:00Z"
count: 3
type: Normal
eventTime: "2026-01-01T00:00:00.000001Z"
series: {count: 2, lastObservedTime: "2026-01-01T00:01:00.000002Z"}
action: Start
related: {kind: Node, name: node1}
reportingComponent: kubelet
reportingInstance: node1
`)
	wantV1 := decodeYAML(t, `apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: pod.1, namespace: ns, resourceVersion: "5", uid: u1}
regarding: {kind: Pod, namespace: ns, name: pod, uid: p1, apiVersion: v1, fieldPath: "spec.containers{c}"}
reason: Started
note: started container
deprecatedSource: {component: kubelet, host: node1}
deprecatedFirstTimestamp: "2026-01-01T00:00:00Z"
deprecatedLastTimestamp: "2026-01-01T00:01:00Z"
deprecatedCount: 3
type: Normal
eventTime: "2026-01-01T00:00:00.000001Z"
series: {count: 2, lastObservedTime: "2026-01-01T00:01:00.000002Z"}
action: Start
related: {kind: Node, name: node1}
reportingController: kubelet
reportingInstance: node1
`)
	v1 := hooks.FromStorage(runtime.DeepCopyJSON(core), "v1")
	if d := cmp.Diff(wantV1, jsonNormal(t, v1)); d != "" {
		t.Errorf("core → events.k8s.io/v1 (-want +got):\n%s", d)
	}
	back, err := hooks.ToStorage(v1, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(core, jsonNormal(t, back)); d != "" {
		t.Errorf("events.k8s.io/v1 → core (-want +got):\n%s", d)
	}

	// A minimal new-style event: nothing appears that was not there but
	// the legacy times, null, and the legacy source, {}, as upstream's
	// types encode them (kube-apiserver answers deprecatedSource: {}).
	minimal := decodeYAML(t, `apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: e, namespace: ns}
regarding: {kind: Pod, name: p}
eventTime: "2026-01-01T00:00:00.000000Z"
reportingController: example.com/ctl
reportingInstance: ctl-1
action: Act
reason: Why
type: Warning
note: hello
`)
	stored, err := hooks.ToStorage(runtime.DeepCopyJSON(minimal), "v1")
	if err != nil {
		t.Fatal(err)
	}
	if stored["apiVersion"] != "v1" || stored["message"] != "hello" || stored["reportingComponent"] != "example.com/ctl" {
		t.Errorf("stored form: %v", stored)
	}
	again := hooks.FromStorage(stored, "v1")
	for _, k := range []string{"deprecatedFirstTimestamp", "deprecatedLastTimestamp"} {
		if v, ok := again[k]; ok && v != nil {
			t.Errorf("%s = %v, want absent or null", k, v)
		}
		delete(again, k)
	}
	if d := cmp.Diff(map[string]any{}, again["deprecatedSource"]); d != "" {
		t.Errorf("deprecatedSource (-want +got):\n%s", d)
	}
	delete(again, "deprecatedSource")
	if d := cmp.Diff(minimal, jsonNormal(t, again)); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
}

// Writes through events.k8s.io/v1 get upstream's strict rules, core/v1
// writes only the legacy ones; both with upstream's field paths.
func TestEventValidationByAPI(t *testing.T) {
	const valid = `eventTime: "2026-01-01T00:00:00.000000Z"
reportingController: example.com/ctl
reportingInstance: ctl-1
action: Act
reason: Why
type: Normal
regarding: {kind: Pod, name: p, namespace: ns}
`
	cases := []struct {
		name     string
		body     string
		old      string // events.k8s.io/v1 body of the stored event, for an update
		v1, core []string
	}{
		{name: line(), body: valid},
		{name: line(), body: `regarding: {kind: Pod, name: p, namespace: ns}
type: Normal`, v1: []string{
			`eventTime: Required value`,
		}},
		{name: line(), body: `eventTime: "2026-01-01T00:00:00.000000Z"
regarding: {kind: Pod, name: p, namespace: ns}`, v1: []string{
			`reportingController: Required value`,
			`reportingController: Invalid value: "": name part must be non-empty`,
			`reportingController: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`reportingInstance: Required value`,
			`action: Required value`,
			`reason: Required value`,
			`type: Invalid value: "": has invalid value: `,
		}, core: []string{
			`reportingComponent: Required value`,
			`reportingComponent: Invalid value: "": name part must be non-empty`,
			`reportingComponent: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`reportingInstance: Required value`,
			`action: Required value`,
			`reason: Required value`,
		}},
		{name: line(), body: valid + `deprecatedSource: {component: c}
deprecatedCount: 2
deprecatedFirstTimestamp: "2026-01-01T00:00:00Z"
deprecatedLastTimestamp: "2026-01-01T00:00:00Z"
series: {count: 1}`, v1: []string{
			`series.count: Invalid value: "": should be at least 2`,
			`series.lastObservedTime: Required value`,
			`firstTimestamp: Invalid value: "": needs to be unset`,
			`lastTimestamp: Invalid value: "": needs to be unset`,
			`count: Invalid value: "": needs to be unset`,
			`source: Invalid value: "": needs to be unset`,
		}},
		{name: line(), old: valid, body: strings.Replace(valid, "reason: Why", "reason: Because", 1) + "note: changed", v1: []string{
			`reason: Invalid value: "Because": field is immutable`,
			`message: Invalid value: "changed": field is immutable`,
			`reason: Invalid value: "Because": field is immutable`,
		}},
	}
	v1 := EventsV1(time.Hour)
	core := Events(time.Hour)
	v1Hooks := v1.Hooks.(eventsV1Hooks)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			head := "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: x, namespace: ns}\n"
			stored := func(body string) map[string]any {
				obj, err := v1Hooks.ToStorage(decodeYAML(t, head+body), "v1")
				if err != nil {
					t.Fatal(err)
				}
				v1Hooks.PrepareForCreate(obj)
				return obj
			}
			for _, api := range []struct {
				def  *registry.Definition
				want []string
			}{{v1, tc.v1}, {core, tc.core}} {
				var errs field.ErrorList
				val := api.def.Hooks.(registry.Validator)
				if tc.old == "" {
					errs = val.Validate(stored(tc.body))
				} else if api.def == v1 {
					errs = val.ValidateUpdate(stored(tc.body), stored(tc.old))
				} else {
					continue
				}
				var got []string
				for _, e := range errs {
					got = append(got, e.Error())
				}
				if strings.Join(got, "\n") != strings.Join(api.want, "\n") {
					t.Errorf("%s errors:\n%s\nwant:\n%s", api.def.GroupResource(), strings.Join(got, "\n"), strings.Join(api.want, "\n"))
				}
			}
		})
	}
}

// events.k8s.io/v1 field selectors use upstream's label mapping.
func TestEventsV1FieldLabels(t *testing.T) {
	h := EventsV1(time.Hour).Hooks.(registry.FieldLabelConverter)
	for label, want := range map[string]string{
		"regarding.name":      "involvedObject.name",
		"reportingController": "reportingComponent",
		"metadata.name":       "metadata.name",
		"type":                "type",
	} {
		got, _, err := h.ConvertFieldLabel("v1", label, "x")
		if err != nil || got != want {
			t.Errorf("%s → %q, %v; want %q", label, got, err, want)
		}
	}
	for _, label := range []string{"involvedObject.name", "source", "note"} {
		if _, _, err := h.ConvertFieldLabel("v1", label, "x"); err == nil || err.Error() != "field label not supported: "+label {
			t.Errorf("%s: %v, want field label not supported", label, err)
		}
	}
}

// Both APIs print events with the same columns and cells.
func TestEventsV1Table(t *testing.T) {
	core, v1 := Events(time.Hour).Hooks.(registry.TablePrinter), EventsV1(time.Hour).Hooks.(eventsV1Hooks)
	if d := cmp.Diff(core.TableColumns(), v1.TableColumns()); d != "" {
		t.Errorf("columns differ:\n%s", d)
	}
	obj := decodeYAML(t, `apiVersion: v1
kind: Event
metadata: {name: e, namespace: ns}
involvedObject: {kind: Pod, name: p}
reason: Why
message: hi
source: {component: ctl}
type: Normal
`)
	if d := cmp.Diff(core.TableRow(obj), v1.TableRow(v1.FromStorage(runtime.DeepCopyJSON(obj), "v1"))); d != "" {
		t.Errorf("rows differ:\n%s", d)
	}
}

// jsonNormal is m as JSON decodes it (numbers as float64), as decodeYAML
// gives the objects it is compared with.
func jsonNormal(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
