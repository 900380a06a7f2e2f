package handler

import (
	"testing"

	"github.com/crdserver/crdserver/internal/registry"
)

// A Scale's status.selector is the selector's string form, whether the
// object holds a LabelSelector (the apps kinds) or a plain label map (a
// ReplicationController).
func TestScaleSelector(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sc       registry.Scale
		selector any
		want     any
	}{
		{"label selector", registry.Scale{LabelSelectorObject: true},
			map[string]any{"matchLabels": map[string]any{"b": "2", "a": "1"}}, "a=1,b=2"},
		{"label map", registry.Scale{LabelSelectorSet: true},
			map[string]any{"tier": "front", "app": "web"}, "app=web,tier=front"},
		{"empty label map", registry.Scale{LabelSelectorSet: true}, map[string]any{}, nil},
		{"string", registry.Scale{}, "x=y", "x=y"},
	} {
		tc.sc.SpecReplicasPath, tc.sc.StatusReplicasPath, tc.sc.LabelSelectorPath = ".spec.replicas", ".status.replicas", ".spec.selector"
		obj := map[string]any{"metadata": map[string]any{"name": "o"}, "spec": map[string]any{"replicas": int64(2), "selector": tc.selector}}
		status := toScale(obj, &tc.sc)["status"].(map[string]any)
		if got := status["selector"]; got != tc.want {
			t.Errorf("%s: status.selector = %#v, want %#v", tc.name, got, tc.want)
		}
	}
}
