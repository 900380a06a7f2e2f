package builtin

import (
	"strings"
	"testing"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func svmObject(group, resource string) map[string]any {
	return map[string]any{
		"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
		"metadata": map[string]any{"name": "m"},
		"spec":     map[string]any{"resource": map[string]any{"group": group, "resource": resource}},
		"status":   map[string]any{"resourceVersion": "7"},
		"extra":    true,
	}
}

func TestMigrationHooks(t *testing.T) {
	h := migrationHooks{migrationTyped}
	obj := svmObject("example.com", "widgets")
	h.PrepareForCreate(obj)
	if _, ok := obj["status"]; ok {
		t.Error("a new migration keeps the status it was sent")
	}
	if _, ok := obj["extra"]; ok {
		t.Error("a field the type does not have is kept")
	}
	if errs := h.Validate(obj); len(errs) > 0 {
		t.Errorf("valid migration refused: %v", errs)
	}
	if errs := h.Validate(svmObject("", "namespaces")); len(errs) > 0 {
		t.Errorf("core group refused: %v", errs)
	}
	if errs := h.Validate(svmObject("example.com", "")); len(errs) != 1 || errs[0].Error() != "spec.resource.resource: Required value" {
		t.Errorf("missing resource: %v", errs)
	}
	if errs := h.ValidateUpdate(svmObject("example.com", "gadgets"), obj); len(errs) != 1 || !strings.Contains(errs[0].Error(), "spec: Invalid value") || !strings.Contains(errs[0].Error(), "field is immutable") {
		t.Errorf("changed resource: %v", errs)
	}

	var st svmv1.StorageVersionMigrationStatus
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	SetMigrationCondition(&st, svmv1.MigrationSucceeded, metav1.ConditionTrue, MigrationReasonSucceeded, "done", 1, now)
	SetMigrationCondition(&st, svmv1.MigrationFailed, metav1.ConditionTrue, MigrationReasonFailed, "no", 1, now)
	bad := svmObject("example.com", "widgets")
	bad["status"] = map[string]any{"conditions": []any{
		map[string]any{"type": "Succeeded", "status": "True", "reason": MigrationReasonSucceeded, "message": "done", "lastTransitionTime": "2026-01-02T03:04:05Z"},
		map[string]any{"type": "Failed", "status": "True", "reason": MigrationReasonFailed, "message": "no", "lastTransitionTime": "2026-01-02T03:04:05Z"},
	}}
	if errs := h.ValidateStatusUpdate(bad, obj); len(errs) != 1 || !strings.Contains(errs[0].Error(), "both Succeeded and Failed") {
		t.Errorf("Succeeded and Failed both True: %v", errs)
	}
}

func TestSetMigrationCondition(t *testing.T) {
	var st svmv1.StorageVersionMigrationStatus
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if !SetMigrationCondition(&st, svmv1.MigrationRunning, metav1.ConditionTrue, MigrationReasonRunning, MigrationProgress(0, 10, "v2"), 1, t0) {
		t.Fatal("no change on a new condition")
	}
	if SetMigrationCondition(&st, svmv1.MigrationRunning, metav1.ConditionTrue, MigrationReasonRunning, MigrationProgress(0, 10, "v2"), 1, t0.Add(time.Second)) {
		t.Error("an unchanged condition changes")
	}
	SetMigrationCondition(&st, svmv1.MigrationRunning, metav1.ConditionTrue, MigrationReasonRunning, MigrationProgress(5, 10, "v2"), 1, t0.Add(time.Minute))
	if c := st.Conditions[0]; !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("progress moved lastTransitionTime to %v", c.LastTransitionTime)
	}
	if done, total, ok := ParseMigrationProgress(st.Conditions[0].Message); !ok || done != 5 || total != 10 {
		t.Errorf("progress %q reads as %d/%d %v", st.Conditions[0].Message, done, total, ok)
	}
	SetMigrationCondition(&st, svmv1.MigrationRunning, metav1.ConditionFalse, MigrationReasonSucceeded, "done", 1, t0.Add(time.Hour))
	if c := st.Conditions[0]; !c.LastTransitionTime.Time.Equal(t0.Add(time.Hour)) {
		t.Errorf("a new status kept lastTransitionTime %v", c.LastTransitionTime)
	}
}
