package builtin

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestNewAPIService(t *testing.T) {
	now := time.Now()
	if NewAPIService(schema.GroupVersion{Group: "nobody.k8s.io", Version: "v1"}, false, now) != nil {
		t.Error("a built-in group/version without upstream priorities got an APIService")
	}
	h := APIServices().Hooks.(apiServiceHooks)
	for _, tc := range []struct {
		gv     schema.GroupVersion
		custom bool
		name   string
		label  string
		group  int64
	}{
		{schema.GroupVersion{Version: "v1"}, false, "v1.", "onstart", 18000},
		{schema.GroupVersion{Group: "apps", Version: "v1"}, false, "v1.apps", "onstart", 17800},
		{schema.GroupVersion{Group: "stable.example.com", Version: "v1beta1"}, true, "v1beta1.stable.example.com", "true", 1000},
	} {
		obj := NewAPIService(tc.gv, tc.custom, now)
		if got := lookup(obj, "metadata.name"); got != tc.name {
			t.Errorf("%v: name %v, want %s", tc.gv, got, tc.name)
		}
		if got := obj["metadata"].(map[string]any)["labels"].(map[string]any)[AutomanagedLabel]; got != tc.label {
			t.Errorf("%v: label %v, want %s", tc.gv, got, tc.label)
		}
		if got := lookup(obj, "spec.groupPriorityMinimum"); got != tc.group {
			t.Errorf("%v: groupPriorityMinimum %v, want %d", tc.gv, got, tc.group)
		}
		if errs := h.Validate(obj); len(errs) > 0 {
			t.Errorf("%v: refused: %v", tc.gv, errs)
		}
		if row := h.TableRow(obj); row[1] != "Local" || row[2] != "True" {
			t.Errorf("%v: row %v", tc.gv, row)
		}
	}
}

func TestAPIServiceValidation(t *testing.T) {
	h := APIServices().Hooks.(apiServiceHooks)
	for _, tc := range []struct{ name, body, want string }{
		{line(), `{metadata: {name: v1.x.io}, spec: {group: x.io, version: v1, groupPriorityMinimum: 1, versionPriority: 1}}`, ""},
		{line(), `{metadata: {name: v2.x.io}, spec: {group: x.io, version: v1, groupPriorityMinimum: 1, versionPriority: 1}}`, "metadata.name: Invalid value: \"v2.x.io\": must be `spec.version+\".\"+spec.group`: \"v1.x.io\""},
		{line(), `{metadata: {name: v2.}, spec: {version: v2, groupPriorityMinimum: 1, versionPriority: 1}}`, "spec.group: Required value: only v1 may have an empty group"},
		{line(), `{metadata: {name: v1.x.io}, spec: {group: x.io, version: v1, groupPriorityMinimum: 0, versionPriority: 1}}`, "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000"},
		{line(), `{metadata: {name: v1.x.io}, spec: {group: x.io, version: v1, groupPriorityMinimum: 1, versionPriority: 1001}}`, "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000"},
	} {
		obj := decodeYAML(t, tc.body)
		obj["apiVersion"], obj["kind"] = "apiregistration.k8s.io/v1", "APIService"
		h.PrepareForCreate(obj)
		got := h.Validate(obj).ToAggregate()
		checkErrors(t, tc.name, got, tc.want)
	}
	if msgs := h.ValidateName("v1.", false); len(msgs) > 0 {
		t.Errorf("the core group's name refused: %v", msgs)
	}
}
