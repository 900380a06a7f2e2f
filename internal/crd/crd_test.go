package crd

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/registry"
)

func TestDefinition(t *testing.T) {
	d := Definition()
	if d.GroupResource().String() != "customresourcedefinitions.apiextensions.k8s.io" || d.Kind != "CustomResourceDefinition" ||
		d.ListKind != "CustomResourceDefinitionList" || d.Singular != "customresourcedefinition" || d.Namespaced() {
		t.Errorf("names: %+v", d)
	}
	if !reflect.DeepEqual(d.ShortNames, []string{"crd", "crds"}) || !reflect.DeepEqual(d.Categories, []string{"api-extensions"}) {
		t.Errorf("shortNames %v categories %v", d.ShortNames, d.Categories)
	}
	v := d.StorageVersion()
	if v == nil || v.Name != "v1" || !v.Subresources.Status {
		t.Errorf("version: %+v", v)
	}
	h := d.Hooks.(Hooks)
	if cols := h.TableColumns(); len(cols) != 8 || cols[3].Name != "Created At" || cols[7].Type != "boolean" {
		t.Errorf("table columns: %+v", cols)
	}
	if _, ok := h.NewProtobuf().(interface{ Unmarshal([]byte) error }); !ok {
		t.Error("no protobuf type")
	}
}

func TestPrepareForCreate(t *testing.T) {
	obj := load(t, "crontab.yaml")
	set(obj, nil, "spec", "names", "singular")
	set(obj, map[string]any{"storedVersions": []any{"v0"}, "conditions": []any{map[string]any{"type": "Established", "status": "True"}}}, "status")
	set(obj, "ignored", "spec", "unknownField")
	set(obj, "ignored", "topLevel")
	Hooks{}.PrepareForCreate(obj)

	for _, c := range []struct {
		keys []any
		want any
	}{
		{[]any{"spec", "names", "singular"}, "crontab"},
		{[]any{"spec", "names", "listKind"}, "CronTabList"},
		{[]any{"spec", "conversion"}, map[string]any{"strategy": "None"}},
		{[]any{"spec", "unknownField"}, nil},
		{[]any{"topLevel"}, nil},
		{[]any{"status"}, map[string]any{
			"acceptedNames":  map[string]any{"kind": "", "plural": ""},
			"conditions":     nil,
			"storedVersions": []any{"v1"},
		}},
		{[]any{"metadata", "name"}, "crontabs.stable.example.com"},
		{[]any{"spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "spec", "properties", "replicas"}, map[string]any{"type": "integer"}},
	} {
		if got := at(obj, c.keys...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v = %#v, want %#v", c.keys, got, c.want)
		}
	}

	// Integers stay int64, as the handler holds them.
	obj = load(t, "crontab-webhook.yaml")
	set(obj, int64(5), "spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "hostPort", "maxLength")
	set(obj, int64(7), "spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "hostPort", "default")
	Hooks{}.PrepareForCreate(obj)
	for _, keys := range [][]any{
		{"spec", "conversion", "webhook", "clientConfig", "service", "port"},
		{"spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "hostPort", "maxLength"},
		{"spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "hostPort", "default"},
	} {
		if _, ok := at(obj, keys...).(int64); !ok {
			t.Errorf("%v = %#v, want an int64", keys, at(obj, keys...))
		}
	}
	if got := at(obj, "spec", "conversion", "webhook", "clientConfig", "service", "port"); got != int64(443) {
		t.Errorf("service port defaults to 443, got %v", got)
	}
}

func TestPrepareForUpdateStoredVersions(t *testing.T) {
	old := valid(t, "crontab-webhook.yaml")
	set(old, []any{map[string]any{"type": "Established", "status": "True", "reason": "InitialNamesAccepted"}}, "status", "conditions")

	// Storage moves to v1: v1 is added, v1beta1 stays, conditions stay.
	obj := copyObj(old)
	set(obj, false, "spec", "versions", 0, "storage")
	set(obj, true, "spec", "versions", 1, "storage")
	Hooks{}.PrepareForUpdate(obj, old)
	if got := at(obj, "status", "storedVersions"); !reflect.DeepEqual(got, []any{"v1beta1", "v1"}) {
		t.Errorf("storedVersions = %v", got)
	}
	if !Established(obj) {
		t.Error("conditions lost")
	}
	// Moving back adds nothing.
	back := copyObj(obj)
	set(back, true, "spec", "versions", 0, "storage")
	set(back, false, "spec", "versions", 1, "storage")
	Hooks{}.PrepareForUpdate(back, obj)
	if got := at(back, "status", "storedVersions"); !reflect.DeepEqual(got, []any{"v1beta1", "v1"}) {
		t.Errorf("storedVersions = %v", got)
	}
	if errs := (Hooks{}).ValidateUpdate(back, obj); len(errs) > 0 {
		t.Error(list(errs))
	}
}

// A status write that empties storedVersions gets the storage version
// back, as kube-apiserver's v1 defaults give it; a shrunk list stays.
func TestPrepareForStatusUpdate(t *testing.T) {
	old := valid(t, "crontab-webhook.yaml")
	set(old, []any{"v1beta1", "v1"}, "status", "storedVersions")
	for _, stored := range []any{[]any{}, nil} {
		obj := copyObj(old)
		set(obj, stored, "status", "storedVersions")
		Hooks{}.PrepareForStatusUpdate(obj, old)
		if got := at(obj, "status", "storedVersions"); !reflect.DeepEqual(got, []any{"v1beta1"}) {
			t.Errorf("storedVersions %v written: stored %v, want [v1beta1], the storage version", stored, got)
		}
	}
	obj := copyObj(old)
	set(obj, []any{"v1"}, "status", "storedVersions")
	Hooks{}.PrepareForStatusUpdate(obj, old)
	if got := at(obj, "status", "storedVersions"); !reflect.DeepEqual(got, []any{"v1"}) {
		t.Errorf("storedVersions shrunk to [v1]: stored %v", got)
	}
}

// A CRD's first delete only marks it: the cleanup finalizer (once) and
// the Terminating condition, whatever the options; a later delete is the
// generic one (Pending is false), and an unmet precondition is worded as
// upstream's CRD storage words it.
func TestFinalizer(t *testing.T) {
	h := Hooks{}
	obj := valid(t, "crontab.yaml")
	// What the handler does on the first delete.
	set(obj, "2026-01-02T03:04:05Z", "metadata", "deletionTimestamp")
	set(obj, []any{"example.com/keep"}, "metadata", "finalizers")
	orphan := metav1.DeletePropagationOrphan
	h.MarkDeleting(obj, &metav1.DeleteOptions{PropagationPolicy: &orphan})
	h.MarkDeleting(obj, &metav1.DeleteOptions{})

	if got := at(obj, "metadata", "finalizers"); !reflect.DeepEqual(got, []any{"example.com/keep", CleanupFinalizer}) {
		t.Errorf("finalizers = %v", got)
	}
	if at(obj, "metadata", "deletionGracePeriodSeconds") != nil {
		t.Error("deletionGracePeriodSeconds set")
	}
	want := map[string]any{
		"type": "Terminating", "status": "True", "lastTransitionTime": "2026-01-02T03:04:05Z",
		"reason":  "InstanceDeletionPending",
		"message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
	}
	if got := findCondition(obj, ConditionTerminating); !reflect.DeepEqual(got, want) {
		t.Errorf("Terminating = %v", got)
	}
	if h.Pending(obj) {
		t.Error("once marked, only the finalizer keeps the CRD")
	}
	d, err := FromCRD(obj)
	if err != nil || !d.Terminating {
		t.Errorf("FromCRD: terminating %v, %v", d != nil && d.Terminating, err)
	}
	const msg = `Operation cannot be fulfilled on customresourcedefinitions.apiextensions.k8s.io "crontabs.stable.example.com": precondition failed: UID in precondition: a, UID in object meta: b`
	if err := h.PreconditionFailed("crontabs.stable.example.com", "UID", "a", "b"); !apierrors.IsConflict(err) || err.Error() != msg {
		t.Errorf("PreconditionFailed = %v, want a conflict %q", err, msg)
	}
}

func TestFromCRD(t *testing.T) {
	obj := valid(t, "crontab-scale.yaml")
	d, err := FromCRD(obj)
	if err != nil {
		t.Fatal(err)
	}
	age := registry.PrinterColumn{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: metaDocs["creationTimestamp"]}
	wantSchema, _ := json.Marshal(at(obj, "spec", "versions", 0, "schema", "openAPIV3Schema"))
	want := &registry.Definition{
		Group: "stable.example.com", Resource: "crontabs", Singular: "crontab",
		Kind: "CronTab", ListKind: "CronTabList", ShortNames: []string{"ct"},
		Scope: registry.Namespaced,
		Versions: []registry.Version{{
			Name: "v1", Served: true, Storage: true,
			Subresources: registry.Subresources{Status: true, Scale: &registry.Scale{
				SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ".status.labelSelector",
			}},
			PrinterColumns: []registry.PrinterColumn{age},
			OpenAPISchema:  d.Versions[0].OpenAPISchema,
		}},
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("got  %+v\nwant %+v", d, want)
	}
	var got, wantS any
	json.Unmarshal(d.Versions[0].OpenAPISchema, &got)
	json.Unmarshal(wantSchema, &wantS)
	if !reflect.DeepEqual(got, wantS) {
		t.Errorf("schema %s, want %s", d.Versions[0].OpenAPISchema, wantSchema)
	}

	// Declared columns are served as declared; deprecation carries over;
	// accepted names win over requested ones.
	obj = valid(t, "crontab-columns.yaml")
	set(obj, int64(1), "spec", "versions", 0, "additionalPrinterColumns", 1, "priority")
	set(obj, "int32", "spec", "versions", 0, "additionalPrinterColumns", 1, "format")
	set(obj, true, "spec", "versions", 0, "deprecated")
	set(obj, "use v2", "spec", "versions", 0, "deprecationWarning")
	set(obj, map[string]any{"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList", "categories": []any{"all"}}, "status", "acceptedNames")
	d, err = FromCRD(obj)
	if err != nil {
		t.Fatal(err)
	}
	v := d.Versions[0]
	wantCols := []registry.PrinterColumn{
		{Name: "Spec", Type: "string", Description: "The cron spec defining the interval a CronJob is run", JSONPath: ".spec.cronSpec"},
		{Name: "Replicas", Type: "integer", Format: "int32", Priority: 1, Description: "The number of jobs launched by the CronJob", JSONPath: ".spec.replicas"},
		{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	}
	if !reflect.DeepEqual(v.PrinterColumns, wantCols) {
		t.Errorf("columns %+v", v.PrinterColumns)
	}
	if !v.Deprecated || v.DeprecationWarning != "use v2" || v.Subresources.Status || v.Subresources.Scale != nil {
		t.Errorf("version %+v", v)
	}
	if d.ShortNames != nil || !reflect.DeepEqual(d.Categories, []string{"all"}) {
		t.Errorf("accepted names not served: shortNames %v categories %v", d.ShortNames, d.Categories)
	}

	// A CRD without a schema on a version serves no OpenAPI for it.
	obj = valid(t, "crontab.yaml")
	set(obj, nil, "spec", "versions", 0, "schema")
	if d, err := FromCRD(obj); err != nil || d.Versions[0].OpenAPISchema != nil {
		t.Errorf("schema %s, %v", d.Versions[0].OpenAPISchema, err)
	}
	set(obj, "x", "spec", "versions")
	if _, err := FromCRD(obj); err == nil {
		t.Error("a malformed CRD converts")
	}
}

func TestSetCondition(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1, t2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
	obj := valid(t, "crontab.yaml")
	ltt := func() any { return findCondition(obj, ConditionEstablished)["lastTransitionTime"] }

	steps := []struct {
		name                    string
		status, reason, message string
		now                     time.Time
		changed                 bool
		ltt                     string
	}{
		{"added", StatusFalse, ReasonInstalling, MessageInstalling, t0, true, "2026-01-01T00:00:00Z"},
		{"same again", StatusFalse, ReasonInstalling, MessageInstalling, t1, false, "2026-01-01T00:00:00Z"},
		{"new reason keeps the time", StatusFalse, ReasonNotAccepted, MessageNotAccepted, t1, true, "2026-01-01T00:00:00Z"},
		{"new status moves it", StatusTrue, ReasonInitialNamesAccepted, MessageInitialNamesAccepted, t2, true, "2026-01-01T00:02:00Z"},
	}
	for _, s := range steps {
		if got := SetCondition(obj, ConditionEstablished, s.status, s.reason, s.message, s.now); got != s.changed {
			t.Errorf("%s: changed = %v", s.name, got)
		}
		if ltt() != s.ltt {
			t.Errorf("%s: lastTransitionTime = %v, want %s", s.name, ltt(), s.ltt)
		}
	}
	if !Established(obj) || ConditionStatus(obj, ConditionNamesAccepted) != "" {
		t.Error("condition lookups")
	}
	if n := len(at(obj, "status", "conditions").([]any)); n != 1 {
		t.Errorf("%d conditions", n)
	}
	SetCondition(obj, ConditionNamesAccepted, StatusTrue, "", "", t0)
	if c := findCondition(obj, ConditionNamesAccepted); c == nil || c["reason"] != nil || c["message"] != nil {
		t.Errorf("empty reason and message are omitted: %v", c)
	}
}
