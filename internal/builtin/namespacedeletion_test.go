package builtin

import (
	"testing"
	"time"
)

func TestSetDeletionConditions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	ns := map[string]any{"metadata": map[string]any{"name": "shop"}}

	type want struct{ status, reason, message, transition string }
	check := func(t *testing.T, changed, wantChanged bool, wants map[string]want) {
		t.Helper()
		if changed != wantChanged {
			t.Errorf("changed = %v, want %v", changed, wantChanged)
		}
		conds := ns["status"].(map[string]any)["conditions"].([]any)
		if len(conds) != len(namespaceDeletionConditions) {
			t.Fatalf("%d conditions, want %d: %v", len(conds), len(namespaceDeletionConditions), conds)
		}
		for i, c := range conds {
			m := c.(map[string]any)
			if m["type"] != namespaceDeletionConditions[i] {
				t.Errorf("condition %d is %v, want %s", i, m["type"], namespaceDeletionConditions[i])
			}
			w, ok := wants[m["type"].(string)]
			if !ok {
				continue
			}
			if got := (want{m["status"].(string), m["reason"].(string), m["message"].(string), m["lastTransitionTime"].(string)}); got != w {
				t.Errorf("%s = %+v, want %+v", m["type"], got, w)
			}
		}
	}

	held := NamespaceDeletion{
		Remaining:  map[string]int{"crontabs.stable.example.com": 2, "backups.stable.example.com": 1},
		Finalizers: map[string]int{"stable.example.com/wait": 3},
	}
	check(t, SetDeletionConditions(ns, held, t0), true, map[string]want{
		"NamespaceDeletionDiscoveryFailure": {"False", "ResourcesDiscovered", "All resources successfully discovered", "2026-01-01T00:00:00Z"},
		"NamespaceDeletionContentFailure":   {"False", "ContentDeleted", "All content successfully deleted, may be waiting on finalization", "2026-01-01T00:00:00Z"},
		"NamespaceContentRemaining": {"True", "SomeResourcesRemain",
			"Some resources are remaining: backups.stable.example.com has 1 resource instances, crontabs.stable.example.com has 2 resource instances", "2026-01-01T00:00:00Z"},
		"NamespaceFinalizersRemaining": {"True", "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: stable.example.com/wait in 3 resource instances", "2026-01-01T00:00:00Z"},
	})

	// The same pass again changes nothing.
	check(t, SetDeletionConditions(ns, held, t1), false, nil)

	// A count changes: the message moves, the transition time stays.
	held.Remaining = map[string]int{"crontabs.stable.example.com": 1}
	check(t, SetDeletionConditions(ns, held, t1), true, map[string]want{
		"NamespaceContentRemaining": {"True", "SomeResourcesRemain", "Some resources are remaining: crontabs.stable.example.com has 1 resource instances", "2026-01-01T00:00:00Z"},
	})

	// A failure, then everything gone: statuses flip, with the new time.
	check(t, SetDeletionConditions(ns, NamespaceDeletion{Failures: []string{"b: boom", "a: bang"}}, t1), true, map[string]want{
		"NamespaceDeletionContentFailure": {"True", "ContentDeletionFailed", "Failed to delete all resource types, 2 remaining: a: bang, b: boom", "2026-01-01T00:01:00Z"},
		"NamespaceContentRemaining":       {"False", "ContentRemoved", "All content successfully removed", "2026-01-01T00:01:00Z"},
		"NamespaceFinalizersRemaining":    {"False", "ContentHasNoFinalizers", "All content-preserving finalizers finished", "2026-01-01T00:01:00Z"},
	})

	// Resources that could not be listed.
	check(t, SetDeletionConditions(ns, NamespaceDeletion{Undiscovered: map[string]string{"b.example.com/v1": "no store", "a.example.com/v2": "no store"}}, t1), true, map[string]want{
		"NamespaceDeletionDiscoveryFailure": {"True", "DiscoveryFailed",
			"Discovery failed for some groups, 2 failing: unable to retrieve the complete list of server APIs: a.example.com/v2: no store, b.example.com/v1: no store", "2026-01-01T00:01:00Z"},
		"NamespaceDeletionGroupVersionParsingFailure": {"False", "ParsedGroupVersions", "All legacy kube types successfully parsed", "2026-01-01T00:00:00Z"},
		"NamespaceDeletionContentFailure":             {"False", "ContentDeleted", "All content successfully deleted, may be waiting on finalization", "2026-01-01T00:01:00Z"},
	})
}
