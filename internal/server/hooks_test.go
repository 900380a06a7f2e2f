package server

import (
	"sync/atomic"
	"testing"
)

// TestPostStartHookChecks: a hook's check fails with upstream's reason
// until its counterpart is done, and passes from then on.
func TestPostStartHookChecks(t *testing.T) {
	var done atomic.Bool
	checks := postStartHookChecks([]postStartHook{{"start-service-ip-repair-controllers", done.Load}})
	if len(checks) != 1 || checks[0].Name != "poststarthook/start-service-ip-repair-controllers" {
		t.Fatalf("checks %+v", checks)
	}
	if err := checks[0].Func(t.Context()); err == nil || err.Error() != "not finished" {
		t.Errorf("before: %v, want not finished", err)
	}
	done.Store(true)
	if err := checks[0].Func(t.Context()); err != nil {
		t.Errorf("after: %v", err)
	}
	done.Store(false)
	if err := checks[0].Func(t.Context()); err != nil {
		t.Errorf("a finished hook failed again: %v", err)
	}
}
