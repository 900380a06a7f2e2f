package apply

import (
	"encoding/json"
	"fmt"
	"maps"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"sigs.k8s.io/structured-merge-diff/v6/merge"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// Client-side apply keeps what kubectl last applied in an annotation.
// kubectl's server-side apply (its manager is "kubectl") takes over from
// it as upstream's does: a field kubectl applied client-side and nobody
// changed since does not conflict, and while the annotation exists it
// follows what kubectl applies server-side.
const (
	lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
	kubectlManager        = "kubectl"
)

func hasLastApplied(obj map[string]any) bool {
	a, _ := metadata(obj)["annotations"].(map[string]any)
	s, _ := a[lastAppliedAnnotation].(string)
	return s != ""
}

// notLastApplied returns the conflicts on fields other than those live's
// last-applied annotation holds with the value live has. Any problem with
// the annotation leaves the conflicts as they are.
func (m *Manager) notLastApplied(live map[string]any, liveT *typed.TypedValue, conflicts merge.Conflicts) merge.Conflicts {
	a, _ := metadata(live)["annotations"].(map[string]any)
	s, _ := a[lastAppliedAnnotation].(string)
	if s == "" {
		return conflicts
	}
	var last map[string]any
	if err := json.Unmarshal([]byte(s), &last); err != nil {
		return conflicts
	}
	if av, _ := last["apiVersion"].(string); av != m.apiVersion() {
		return conflicts
	}
	lastT, err := m.typed(last)
	if err != nil {
		return conflicts
	}
	allowed, err := lastT.ToFieldSet()
	if err != nil {
		return conflicts
	}
	c, err := lastT.Compare(liveT)
	if err != nil {
		return conflicts
	}
	allowed = allowed.Difference(c.Modified).Difference(c.Added).Difference(c.Removed)
	var out merge.Conflicts
	for _, x := range conflicts {
		if !allowed.Has(x.Path) {
			out = append(out, x)
		}
	}
	return out
}

// withLastApplied returns obj with its last-applied annotation set to the
// applied configuration (without that annotation), encoded as kubectl
// encodes it; dropped when it would make the annotations too large.
func withLastApplied(obj, patch map[string]any) (map[string]any, error) {
	cfg := shallowWithoutManagedFields(patch)
	if pa, ok := metadata(patch)["annotations"].(map[string]any); ok {
		cfg = maps.Clone(cfg)
		md := maps.Clone(metadata(cfg))
		a := maps.Clone(pa)
		delete(a, lastAppliedAnnotation)
		md["annotations"] = a
		cfg["metadata"] = md
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to build last-applied annotation: %w", err)
	}
	md := metadata(obj)
	annotations := map[string]string{}
	src, _ := md["annotations"].(map[string]any)
	for k, v := range src {
		annotations[k], _ = v.(string)
	}
	annotations[lastAppliedAnnotation] = string(b) + "\n"
	out := maps.Clone(src)
	if out == nil {
		out = map[string]any{}
	}
	if apivalidation.ValidateAnnotationsSize(annotations) != nil {
		delete(out, lastAppliedAnnotation)
	} else {
		out[lastAppliedAnnotation] = annotations[lastAppliedAnnotation]
	}
	md["annotations"] = out
	return obj, nil
}
