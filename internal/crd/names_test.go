package crd

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/registry"
)

// accepted returns a CRD whose requested names are all accepted; listKind
// is "OtherList".
func accepted(t *testing.T, group, plural, singular, kind string, shortNames ...any) map[string]any {
	t.Helper()
	obj := valid(t, "crontab.yaml")
	set(obj, plural+"."+group, "metadata", "name")
	set(obj, group, "spec", "group")
	set(obj, map[string]any{"plural": plural, "singular": singular, "kind": kind, "listKind": "OtherList", "shortNames": shortNames}, "spec", "names")
	set(obj, deepCopy(at(obj, "spec", "names")), "status", "acceptedNames")
	return obj
}

func TestAcceptNames(t *testing.T) {
	const group = "stable.example.com"
	builtins := []*registry.Definition{{Group: group, Resource: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList", ShortNames: []string{"wd"}}}
	cases := []struct {
		name    string
		mutate  func(crd map[string]any)
		others  []map[string]any
		ok      bool
		reason  string
		message string
		names   map[string]any // expected accepted names; nil: all requested
	}{
		{name: "no conflicts", ok: true, reason: "NoConflicts", message: "no conflicts found"},
		{name: "plural taken", ok: false, reason: "PluralConflict", message: `"crontabs" is already in use`,
			others: []map[string]any{accepted(t, group, "others", "crontabs", "Other")},
			names:  map[string]any{"plural": "", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList", "shortNames": []any{"ct"}}},
		{name: "singular taken by a plural", ok: false, reason: "SingularConflict", message: `"crontab" is already in use`,
			others: []map[string]any{accepted(t, group, "crontab", "other", "Other")},
			names:  map[string]any{"plural": "crontabs", "kind": "CronTab", "listKind": "CronTabList", "shortNames": []any{"ct"}}},
		{name: "short name taken", ok: false, reason: "ShortNamesConflict", message: `"ct" is already in use`,
			others: []map[string]any{accepted(t, group, "others", "other", "Other", "ct")},
			names:  map[string]any{"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList"}},
		{name: "kind taken", ok: false, reason: "KindConflict", message: `"CronTab" is already in use`,
			others: []map[string]any{accepted(t, group, "others", "other", "CronTab")},
			names:  map[string]any{"plural": "crontabs", "singular": "crontab", "listKind": "CronTabList", "kind": "", "shortNames": []any{"ct"}}},
		{name: "listKind taken by a kind", ok: false, reason: "ListKindConflict", message: `"CronTabList" is already in use`,
			others: []map[string]any{accepted(t, group, "others", "other", "CronTabList")},
			names:  map[string]any{"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": []any{"ct"}}},
		{name: "last conflict reported", ok: false, reason: "KindConflict", message: `"CronTab" is already in use`,
			others: []map[string]any{accepted(t, group, "others", "crontabs", "CronTab")},
			names:  map[string]any{"singular": "crontab", "listKind": "CronTabList", "plural": "", "kind": "", "shortNames": []any{"ct"}}},
		{name: "other group does not conflict", ok: true, reason: "NoConflicts", message: "no conflicts found",
			others: []map[string]any{accepted(t, "other.example.com", "crontabs", "crontab", "CronTab", "ct")}},
		{name: "requested but not accepted names do not conflict", ok: true, reason: "NoConflicts", message: "no conflicts found",
			others: func() []map[string]any {
				o := accepted(t, group, "others", "other", "Other")
				set(o, "crontabs", "spec", "names", "plural")
				return []map[string]any{o}
			}()},
		{name: "the CRD itself in others", ok: true, reason: "NoConflicts", message: "no conflicts found",
			others: func() []map[string]any {
				self := valid(t, "crontab.yaml")
				set(self, deepCopy(at(self, "spec", "names")), "status", "acceptedNames")
				return []map[string]any{self}
			}()},
		{name: "built-in resource", ok: false, reason: "PluralConflict", message: `"widgets" is already in use`,
			mutate: func(c map[string]any) { set(c, "widgets", "spec", "names", "plural") },
			names:  map[string]any{"plural": "", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList", "shortNames": []any{"ct"}}},
		{name: "built-in short name", ok: false, reason: "ShortNamesConflict", message: `"wd" is already in use`,
			mutate: func(c map[string]any) { set(c, []any{"ct", "wd"}, "spec", "names", "shortNames") },
			names:  map[string]any{"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList"}},
		{name: "built-in kind", ok: false, reason: "KindConflict", message: `"Widget" is already in use`,
			mutate: func(c map[string]any) { set(c, "Widget", "spec", "names", "kind") },
			names:  map[string]any{"plural": "crontabs", "singular": "crontab", "kind": "", "listKind": "CronTabList", "shortNames": []any{"ct"}}},
		{name: "own accepted names stay", ok: true, reason: "NoConflicts", message: "no conflicts found",
			mutate: func(c map[string]any) {
				set(c, at(c, "spec", "names"), "status", "acceptedNames")
				set(c, []any{"ct", "cts"}, "spec", "names", "shortNames")
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			crd := valid(t, "crontab.yaml")
			set(crd, []any{"all"}, "spec", "names", "categories")
			if c.mutate != nil {
				c.mutate(crd)
			}
			names, ok, reason, message := AcceptNames(crd, c.others, builtins)
			if ok != c.ok || reason != c.reason || message != c.message {
				t.Errorf("got %v %q %q, want %v %q %q", ok, reason, message, c.ok, c.reason, c.message)
			}
			want := c.names
			if want == nil {
				want = copyObj(at(crd, "spec", "names").(map[string]any))
			}
			want["categories"] = []any{"all"}
			if !reflect.DeepEqual(names, want) {
				t.Errorf("accepted %v, want %v", names, want)
			}
		})
	}
}

func TestSyncStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	crd := valid(t, "crontab.yaml")
	if NamesAccepted(crd) {
		t.Fatal("a new CRD is not served")
	}
	// First pass: names accepted, installing.
	if !SyncStatus(crd, nil, nil, t0) {
		t.Fatal("a new CRD changes")
	}
	if got := at(crd, "status", "acceptedNames"); !reflect.DeepEqual(got, at(crd, "spec", "names")) {
		t.Errorf("acceptedNames %v", got)
	}
	want := []any{
		map[string]any{"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": "2026-01-01T00:00:00Z"},
		map[string]any{"type": "Established", "status": "False", "reason": "Installing", "message": "the initial names have been accepted", "lastTransitionTime": "2026-01-01T00:00:00Z"},
	}
	if got := at(crd, "status", "conditions"); !reflect.DeepEqual(got, want) {
		t.Errorf("conditions %v", got)
	}
	if !NamesAccepted(crd) || Established(crd) {
		t.Error("served but not established yet")
	}
	// A pass before the routes are served changes nothing: Established
	// never comes before them.
	if SyncStatusServing(crd, nil, nil, t1, false) || Established(crd) {
		t.Fatal("established before being served")
	}
	// Second pass (after the routes are served): established.
	if !SyncStatus(crd, nil, nil, t1) {
		t.Fatal("not established")
	}
	want[1] = map[string]any{"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": "2026-01-01T00:01:00Z"}
	if got := at(crd, "status", "conditions"); !reflect.DeepEqual(got, want) {
		t.Errorf("conditions %v", got)
	}
	if SyncStatus(crd, nil, nil, t1.Add(time.Minute)) {
		t.Error("a settled CRD changes again")
	}
	// The result passes validation as a status write.
	if errs := (Hooks{}).ValidateStatusUpdate(crd, valid(t, "crontab.yaml")); len(errs) > 0 {
		t.Error(list(errs))
	}

	// A conflicting CRD is neither served nor established.
	other := valid(t, "crontab.yaml")
	set(other, "crontabs2.stable.example.com", "metadata", "name")
	set(other, "crontabs2", "spec", "names", "plural")
	set(other, "CronTab2", "spec", "names", "kind")
	set(other, "CronTab2List", "spec", "names", "listKind")
	set(other, nil, "spec", "names", "shortNames")
	if !SyncStatus(other, []map[string]any{crd}, nil, t0) {
		t.Fatal("no change")
	}
	if NamesAccepted(other) || Established(other) {
		t.Errorf("conditions %v", at(other, "status", "conditions"))
	}
	if c := findCondition(other, ConditionEstablished); c["reason"] != ReasonNotAccepted || c["status"] != StatusFalse {
		t.Errorf("Established %v", c)
	}
	if c := findCondition(other, ConditionNamesAccepted); c["reason"] != ReasonSingularConflict || c["message"] != `"crontab" is already in use` {
		t.Errorf("NamesAccepted %v", c)
	}
	// Once the conflict is gone (the other CRD deleted), it is accepted, then established.
	SyncStatus(other, nil, nil, t1)
	if c := findCondition(other, ConditionEstablished); c["reason"] != ReasonInstalling {
		t.Errorf("Established %v", c)
	}
	if !SyncStatus(other, nil, nil, t1) || !Established(other) {
		t.Errorf("conditions %v", at(other, "status", "conditions"))
	}

	// An established CRD keeps being served while a new name conflicts.
	set(crd, []any{"ct", "ct2"}, "spec", "names", "shortNames")
	set(other, []any{"ct2"}, "status", "acceptedNames", "shortNames")
	SyncStatus(crd, []map[string]any{other}, nil, t1)
	if ConditionStatus(crd, ConditionNamesAccepted) != StatusFalse || !Established(crd) || !NamesAccepted(crd) {
		t.Errorf("conditions %v", at(crd, "status", "conditions"))
	}

	// An invalid caBundle keeps a CRD from being established.
	hook := valid(t, "crontab-webhook.yaml")
	SyncStatus(hook, nil, nil, t0)
	SyncStatus(hook, nil, nil, t0)
	if c := findCondition(hook, ConditionEstablished); c["status"] != StatusFalse || c["reason"] != ReasonInvalidCABundle {
		t.Errorf("Established %v", c)
	}
}

func TestCleanup(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, established := range []bool{true, false} {
		obj := valid(t, "crontab.yaml")
		if established {
			SetCondition(obj, ConditionEstablished, StatusTrue, ReasonInitialNamesAccepted, MessageInitialNamesAccepted, t0)
		}
		set(obj, "2026-01-01T00:00:00Z", "metadata", "deletionTimestamp")
		Hooks{}.MarkDeleting(obj, &metav1.DeleteOptions{})
		if !StartCleanup(obj, t0) || StartCleanup(obj, t0) {
			t.Error("StartCleanup changes once")
		}
		if c := findCondition(obj, ConditionTerminating); c["reason"] != ReasonInstanceDeletionInProgress {
			t.Errorf("Terminating %v", c)
		}
		if !FinishCleanup(obj, t0) || FinishCleanup(obj, t0) {
			t.Error("FinishCleanup changes once")
		}
		wantReason := ReasonNeverEstablished
		if established {
			wantReason = ReasonInstanceDeletionCompleted
		}
		if c := findCondition(obj, ConditionTerminating); c["reason"] != wantReason || c["status"] != StatusFalse {
			t.Errorf("Terminating %v", c)
		}
		if f := at(obj, "metadata", "finalizers"); f != nil {
			t.Errorf("finalizers %v", f)
		}
	}
}

func TestTableRow(t *testing.T) {
	obj := valid(t, "crontab-webhook.yaml")
	set(obj, "2026-01-01T00:00:00Z", "metadata", "creationTimestamp")
	set(obj, false, "spec", "versions", 1, "served")
	got := Hooks{}.TableRow(obj)
	want := []any{"crontabs.example.com", "Namespaced", "v1beta1(storage)", "2026-01-01T00:00:00Z", "example.com", "CronTab", "ct", false}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("row %v, want %v", got, want)
	}
}

func TestDecodeChecks(t *testing.T) {
	h := Hooks{}
	obj := load(t, "crontab.yaml")
	if err := h.CheckType(obj); err != nil {
		t.Error(err)
	}
	if u := h.UnknownFields(obj); len(u) != 0 {
		t.Errorf("unknown fields %v", u)
	}
	set(obj, "x", "spec", "foo")
	set(obj, true, "spec", "versions", 0, "Served")
	if u := h.UnknownFields(obj); !reflect.DeepEqual(u, []string{`unknown field "spec.foo"`, `unknown field "spec.versions[0].Served"`}) {
		t.Errorf("unknown fields %q", u)
	}
	set(obj, int64(1), "spec", "group")
	want := `CustomResourceDefinition in version "v1" cannot be handled as a CustomResourceDefinition: json: cannot unmarshal number into Go struct field CustomResourceDefinitionSpec.spec.group of type string`
	if err := h.CheckType(obj); err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
