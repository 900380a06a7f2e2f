package apply

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/crdserver/crdserver/internal/registry"
)

const widgetSchema = `{
  "type": "object",
  "properties": {
    "spec": {"type": "object", "properties": {
      "color": {"type": "string"},
      "replicas": {"type": "integer"},
      "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
      "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
      "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}}
    }},
    "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
  }
}`

func widgets() *registry.Definition {
	v := func(name string, storage bool) registry.Version {
		return registry.Version{Name: name, Served: true, Storage: storage, OpenAPISchema: []byte(widgetSchema),
			Subresources: registry.Subresources{Status: true}}
	}
	return &registry.Definition{Group: "example.com", Resource: "widgets", Kind: "Widget", ListKind: "WidgetList",
		Scope: registry.Namespaced, Versions: []registry.Version{v("v1", true), v("v2", false)}}
}

func manager(t *testing.T, version, sub string) *Manager {
	t.Helper()
	m := &Manager{Types: NewTypes(widgets()), GroupVersion: schema.GroupVersion{Group: "example.com", Version: version}, Kind: "Widget", Subresource: sub}
	if sub == "" {
		m.Reset = map[fieldpath.APIVersion]*fieldpath.Set{fieldpath.APIVersion(m.apiVersion()): fieldpath.NewSet(fieldpath.MakePathOrDie("status"))}
	}
	return m
}

func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	var o map[string]any
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// summary lists an object's entries as "manager/operation/apiVersion/subresource: fields".
func summary(o map[string]any) []string {
	var out []string
	for _, x := range managedFieldsOf(o) {
		e := x.(map[string]any)
		f, _ := json.Marshal(e["fieldsV1"])
		sub, _ := e["subresource"].(string)
		out = append(out, fmt.Sprintf("%v/%v/%v/%s: %s", e["manager"], e["operation"], e["apiVersion"], sub, f))
	}
	return out
}

const w1 = `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns","labels":{"a":"b"}},
  "spec":{"color":"red","replicas":1,"tags":["x"],"ports":[{"name":"http","port":80}],"selector":{"k":"v"}}}`

func TestUpdate(t *testing.T) {
	tests := []struct {
		name  string
		steps func(t *testing.T) map[string]any
		want  []string
	}{{
		name: "create owns every field it set but the server's metadata",
		steps: func(t *testing.T) map[string]any {
			o := obj(t, w1)
			manager(t, "v1", "").Update(nil, o, "kubectl-create")
			return o
		},
		want: []string{`kubectl-create/Update/example.com/v1/: {"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{".":{},"f:color":{},"f:ports":{".":{},"k:{\"name\":\"http\"}":{".":{},"f:name":{},"f:port":{}}},"f:replicas":{},"f:selector":{},"f:tags":{".":{},"v:\"x\"":{}}}}`},
	}, {
		name: "an update takes what it changed from the owner",
		steps: func(t *testing.T) map[string]any {
			m := manager(t, "v1", "")
			live := obj(t, w1)
			m.Update(nil, live, "creator")
			next := deepCopyJSON(t, live)
			next["spec"].(map[string]any)["color"] = "blue"
			m.Update(live, next, "editor")
			return next
		},
		want: []string{
			`creator/Update/example.com/v1/: {"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{".":{},"f:ports":{".":{},"k:{\"name\":\"http\"}":{".":{},"f:name":{},"f:port":{}}},"f:replicas":{},"f:selector":{},"f:tags":{".":{},"v:\"x\"":{}}}}`,
			`editor/Update/example.com/v1/: {"f:spec":{"f:color":{}}}`,
		},
	}, {
		name: "status written through the resource is nobody's",
		steps: func(t *testing.T) map[string]any {
			o := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"status":{"phase":"x"}}`)
			manager(t, "v1", "").Update(nil, o, "m")
			return o
		},
		want: nil,
	}, {
		name: "status writes own status only",
		steps: func(t *testing.T) map[string]any {
			live := obj(t, w1)
			manager(t, "v1", "").Update(nil, live, "creator")
			next := deepCopyJSON(t, live)
			next["status"] = map[string]any{"phase": "ok"}
			next["spec"].(map[string]any)["color"] = "green"
			m := manager(t, "v1", "status")
			m.Reset = map[fieldpath.APIVersion]*fieldpath.Set{"example.com/v1": fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata"))}
			m.Update(live, next, "ctrl")
			return next
		},
		want: []string{
			`creator/Update/example.com/v1/: {"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{".":{},"f:color":{},"f:ports":{".":{},"k:{\"name\":\"http\"}":{".":{},"f:name":{},"f:port":{}}},"f:replicas":{},"f:selector":{},"f:tags":{".":{},"v:\"x\"":{}}}}`,
			`ctrl/Update/example.com/v1/status: {"f:status":{".":{},"f:phase":{}}}`,
		},
	}, {
		name: "an empty managedFields list clears them",
		steps: func(t *testing.T) map[string]any {
			m := manager(t, "v1", "")
			live := obj(t, w1)
			m.Update(nil, live, "creator")
			next := deepCopyJSON(t, live)
			next["metadata"].(map[string]any)["managedFields"] = []any{}
			m.Update(live, next, "clearer")
			return next
		},
		want: nil,
	}, {
		name: "invalid managedFields sent are replaced by the live ones",
		steps: func(t *testing.T) map[string]any {
			m := manager(t, "v1", "")
			live := obj(t, w1)
			m.Update(nil, live, "creator")
			next := deepCopyJSON(t, live)
			next["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "x", "operation": "Bogus"}}
			m.Update(live, next, "other")
			return next
		},
		want: []string{`creator/Update/example.com/v1/: {"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{".":{},"f:color":{},"f:ports":{".":{},"k:{\"name\":\"http\"}":{".":{},"f:name":{},"f:port":{}}},"f:replicas":{},"f:selector":{},"f:tags":{".":{},"v:\"x\"":{}}}}`},
	}, {
		name: "more than ten updaters fold the oldest into ancient-changes",
		steps: func(t *testing.T) map[string]any {
			m := manager(t, "v1", "")
			live := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"c"}}`)
			m.Update(nil, live, "creator")
			for i := range 12 {
				next := deepCopyJSON(t, live)
				md := next["metadata"].(map[string]any)
				if md["labels"] == nil {
					md["labels"] = map[string]any{}
				}
				md["labels"].(map[string]any)[fmt.Sprintf("l%02d", i)] = "x"
				m.Update(live, next, fmt.Sprintf("m%02d", i))
				live = next
			}
			return live
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summary(tt.steps(t))
			if tt.name == "more than ten updaters fold the oldest into ancient-changes" {
				if len(got) != MaxUpdateManagers || !strings.HasPrefix(got[0], "ancient-changes/") && !containsPrefix(got, "ancient-changes/") {
					t.Fatalf("entries = %d, want %d with an ancient-changes one:\n%s", len(got), MaxUpdateManagers, strings.Join(got, "\n"))
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("managedFields:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tt.want, "\n     "))
			}
		})
	}
}

func containsPrefix(ss []string, p string) bool {
	for _, s := range ss {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func deepCopyJSON(t *testing.T, o map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return obj(t, string(b))
}

func TestApply(t *testing.T) {
	m := manager(t, "v1", "")
	live, err := m.Apply(nil, obj(t, w1), "alice", false)
	if err != nil {
		t.Fatalf("apply creating: %v", err)
	}
	if got := summary(live); len(got) != 1 || !strings.HasPrefix(got[0], "alice/Apply/example.com/v1/") {
		t.Fatalf("after alice's apply: %v", got)
	}

	// Bob sets the same value: shared ownership, no conflict.
	same := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns"},"spec":{"color":"red"}}`)
	if live, err = m.Apply(live, same, "bob", false); err != nil {
		t.Fatalf("bob applying the same value: %v", err)
	}
	// Bob sets another value: a conflict, worded as upstream's.
	other := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns"},"spec":{"color":"blue","replicas":2}}`)
	_, err = m.Apply(live, other, "bob", false)
	var se *apierrors.StatusError
	if !apierrors.IsConflict(err) || !errorAs(err, &se) {
		t.Fatalf("conflicting apply: err = %v, want a 409", err)
	}
	wantMsg := "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .spec.color\n- .spec.replicas"
	if se.ErrStatus.Message != wantMsg {
		t.Errorf("conflict message = %q, want %q", se.ErrStatus.Message, wantMsg)
	}
	if c := se.ErrStatus.Details.Causes; len(c) != 2 || c[1].Field != ".spec.replicas" || c[1].Message != `conflict with "alice"` || c[1].Type != "FieldManagerConflict" {
		t.Errorf("conflict causes = %+v", c)
	}
	// Forced, bob takes replicas and color.
	if live, err = m.Apply(live, other, "bob", true); err != nil {
		t.Fatalf("forced apply: %v", err)
	}
	if live["spec"].(map[string]any)["replicas"] != int64(2) && live["spec"].(map[string]any)["replicas"] != float64(2) {
		t.Errorf("replicas after forced apply = %v", live["spec"].(map[string]any)["replicas"])
	}
	// Alice stops applying tags: they go, nobody else owned them.
	less := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns"},"spec":{"ports":[{"name":"http","port":80}]}}`)
	if live, err = m.Apply(live, less, "alice", false); err != nil {
		t.Fatalf("alice applying less: %v", err)
	}
	if _, ok := live["spec"].(map[string]any)["tags"]; ok {
		t.Errorf("tags kept after their only manager stopped applying them: %v", live["spec"])
	}
	if _, ok := live["spec"].(map[string]any)["color"]; !ok {
		t.Errorf("color removed though bob still applies it: %v", live["spec"])
	}
}

func errorAs(err error, se **apierrors.StatusError) bool {
	s, ok := err.(*apierrors.StatusError)
	*se = s
	return ok
}

func TestApplyRefuses(t *testing.T) {
	m := manager(t, "v1", "")
	tests := []struct {
		name, patch, want string
		code              int32
	}{
		{"another kind", `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"w"}}`, "invalid object type: example.com/v1, Kind=Gadget", 400},
		{"another version", `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w"}}`, "invalid object type: example.com/v2, Kind=Widget", 400},
		{"managedFields", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","managedFields":[]}}`, "metadata.managedFields must be nil", 400},
		{"unknown field", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1}}`, ".spec.size: field not declared in schema", 0},
		{"duplicate list-map keys", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"ports":[{"name":"a"},{"name":"a"}]}}`, `duplicate entries for key [name="a"]`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Apply(nil, obj(t, tt.patch), "m", false)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
			if tt.code != 0 {
				if se, ok := err.(*apierrors.StatusError); !ok || se.ErrStatus.Code != tt.code {
					t.Errorf("err = %#v, want a %d", err, tt.code)
				}
			}
		})
	}
}

func TestApplyAcrossVersions(t *testing.T) {
	v1, v2 := manager(t, "v1", ""), manager(t, "v2", "")
	live, err := v1.Apply(nil, obj(t, w1), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	// The object read at v2 (None conversion: only apiVersion changes).
	live["apiVersion"] = "example.com/v2"
	patch := obj(t, strings.Replace(w1, "example.com/v1", "example.com/v2", 1))
	patch["spec"].(map[string]any)["replicas"] = 5
	_, err = v2.Apply(live, patch, "bob", false)
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "alice": .spec.replicas`) {
		t.Fatalf("bob's apply at v2 over alice's v1 fields: err = %v, want a conflict on .spec.replicas", err)
	}
	// Alice reapplying at v2 keeps one Apply entry, now at v2.
	next, err := v2.Apply(live, patch, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(next); len(got) != 1 || !strings.HasPrefix(got[0], "alice/Apply/example.com/v2/") {
		t.Errorf("alice's entries after applying at v2: %v", got)
	}
}

func TestManagerName(t *testing.T) {
	tests := []struct{ fieldManager, ua, want string }{
		{"mine", "kubectl/v1.33", "mine"},
		{"", "kubectl-client-side-apply/v1.33.0 (linux/amd64) kubernetes/abc", "kubectl-client-side-apply"},
		{"", "kube\x01ctl/v1", "kubectl"},
		{"", strings.Repeat("a", 200), strings.Repeat("a", 128)},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := ManagerName(tt.fieldManager, tt.ua); got != tt.want {
			t.Errorf("ManagerName(%q, %q) = %q, want %q", tt.fieldManager, tt.ua, got, tt.want)
		}
	}
}

func TestScaleUpdate(t *testing.T) {
	m := manager(t, "v1", "")
	o := obj(t, w1)
	m.Update(nil, o, "creator")
	paths := map[string]fieldpath.Path{"example.com/v1": ReplicasPath(".spec.replicas"), "example.com/v2": ReplicasPath(".spec.replicas")}
	unchanged := deepCopyJSON(t, o)
	ScaleUpdate(unchanged, paths, "example.com/v1", "hpa", false)
	if !reflect.DeepEqual(summary(unchanged), summary(o)) {
		t.Errorf("a scale write that changes nothing changed managedFields:\n%v", summary(unchanged))
	}
	ScaleUpdate(o, paths, "example.com/v1", "hpa", true)
	got := summary(o)
	want := `hpa/Update/example.com/v1/scale: {"f:spec":{"f:replicas":{}}}`
	// The new entry has no time, so it sorts first, as upstream's does.
	if len(got) != 2 || got[0] != want || strings.Contains(got[1], "f:replicas") {
		t.Errorf("after scaling:\n%s\nwant %s and the creator without replicas", strings.Join(got, "\n"), want)
	}
	for _, x := range managedFieldsOf(o) {
		if e := x.(map[string]any); e["manager"] == "hpa" && e["time"] != nil {
			t.Errorf("a new scale entry has a time (upstream's has none): %v", e["time"])
		}
	}
}

// TestApplyAfterClientSideApply: kubectl's server-side apply takes over
// the fields its client-side apply set, but not those another manager
// changed since, and keeps the annotation up to date.
func TestApplyAfterClientSideApply(t *testing.T) {
	m := manager(t, "v1", "")
	cfg := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns"},"spec":{"color":"red","replicas":1}}`
	live := obj(t, cfg)
	live["metadata"].(map[string]any)["annotations"] = map[string]any{lastAppliedAnnotation: cfg + "\n"}
	m.Update(nil, live, "kubectl-client-side-apply")

	next := obj(t, strings.Replace(cfg, `"color":"red"`, `"color":"blue"`, 1))
	applied, err := m.Apply(live, next, "kubectl", false)
	if err != nil {
		t.Fatalf("kubectl's first server-side apply over its client-side apply: %v", err)
	}
	got := applied["metadata"].(map[string]any)["annotations"].(map[string]any)[lastAppliedAnnotation]
	if want := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns"},"spec":{"color":"blue","replicas":1}}` + "\n"; got != want {
		t.Errorf("last-applied annotation = %q, want %q", got, want)
	}

	// Another manager changes replicas: kubectl no longer owns them by
	// its client-side apply, so applying other replicas conflicts.
	edited := deepCopyJSON(t, applied)
	edited["spec"].(map[string]any)["replicas"] = int64(5)
	m.Update(applied, edited, "kubectl-edit")
	again := obj(t, strings.Replace(cfg, `"replicas":1`, `"replicas":2`, 1))
	if _, err := m.Apply(edited, again, "kubectl", false); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "kubectl-edit"`) {
		t.Errorf("applying replicas another manager changed: err = %v, want a conflict with kubectl-edit", err)
	}
	// Any other manager gets no such leeway.
	if _, err := m.Apply(live, next, "flux", false); !apierrors.IsConflict(err) {
		t.Errorf("another manager over client-side-applied fields: err = %v, want a conflict", err)
	}
}

// TestApplyAcrossVersionsConvertingInPlace: the server's None conversion
// sets apiVersion in place; the values being compared must not change.
func TestApplyAcrossVersionsConvertingInPlace(t *testing.T) {
	v1, v2 := manager(t, "v1", ""), manager(t, "v2", "")
	inPlace := func(obj map[string]any, apiVersion string) (map[string]any, error) {
		obj["apiVersion"] = apiVersion
		return obj, nil
	}
	v1.Convert, v2.Convert = inPlace, inPlace
	live, err := v1.Apply(nil, obj(t, w1), "m", false)
	if err != nil {
		t.Fatal(err)
	}
	live["apiVersion"] = "example.com/v2"
	if _, err := v2.Apply(live, obj(t, strings.Replace(w1, "example.com/v1", "example.com/v2", 1)), "m", false); err != nil {
		t.Fatalf("applying at v2 what the manager applied at v1: %v", err)
	}
}
