package builtin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/registry"
)

// RuntimeClassSource is the lookup upstream's RuntimeClass admission
// plugin makes. A PodAdmissionSource that is one has a pod's runtime
// class admitted; one that is not leaves runtime classes alone.
type RuntimeClassSource interface {
	// RuntimeClass returns the named class, or an error that is
	// apierrors.IsNotFound when there is none.
	RuntimeClass(ctx context.Context, name string) (*nodev1.RuntimeClass, error)
}

// admitRuntimeClass is the mutating half of upstream's RuntimeClass
// plugin for a new pod: the class must exist; its overhead becomes the
// pod's (which must match a set one), its node selector is merged into
// the pod's (a key set otherwise is a conflict) and its tolerations into
// the pod's.
func (h podHooks) admitRuntimeClass(ctx context.Context, p *corev1.Pod) error {
	rc, err := h.runtimeClass(ctx, p)
	if err != nil {
		return err
	}
	if rc != nil && rc.Overhead != nil {
		if len(p.Spec.Overhead) > 0 && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, p.Spec.Overhead) {
			return errors.New(overheadMismatch)
		}
		p.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	}
	if rc != nil && rc.Scheduling != nil {
		sel := p.Spec.NodeSelector
		if sel == nil {
			sel = rc.Scheduling.NodeSelector
		} else {
			for _, k := range slices.Sorted(maps.Keys(rc.Scheduling.NodeSelector)) {
				v := rc.Scheduling.NodeSelector[k]
				if pv, ok := sel[k]; ok && pv != v {
					return fmt.Errorf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, pv)
				}
				sel[k] = v
			}
		}
		p.Spec.NodeSelector = sel
		p.Spec.Tolerations = mergeTolerations(p.Spec.Tolerations, rc.Scheduling.Tolerations)
	}
	return nil
}

// runtimeClass is the class p names: nil if it names none or the source
// cannot look one up, an error (upstream's refusal) if there is none.
func (h podHooks) runtimeClass(ctx context.Context, p *corev1.Pod) (*nodev1.RuntimeClass, error) {
	src, ok := h.src.(RuntimeClassSource)
	name := p.Spec.RuntimeClassName
	if !ok || name == nil {
		return nil, nil
	}
	rc, err := src.RuntimeClass(ctx, *name)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("pod rejected: RuntimeClass %q not found", *name)
	}
	return rc, err
}

const overheadMismatch = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"

var _ registry.CreateAdmissionChecker = podHooks{}

// CheckCreateAdmission is the validating half of upstream's RuntimeClass
// plugin, after the pod is validated: a pod has the overhead of its
// class, and none without one.
func (h podHooks) CheckCreateAdmission(ctx context.Context, obj map[string]any) error {
	if _, ok := h.src.(RuntimeClassSource); !ok {
		return nil
	}
	p, _, err := h.Decode(obj)
	if err != nil {
		return nil // CheckType refused it
	}
	rc, err := h.runtimeClass(ctx, p)
	if err != nil {
		return err
	}
	if rc != nil && rc.Overhead != nil {
		if !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, p.Spec.Overhead) {
			return errors.New(overheadMismatch)
		}
	} else if p.Spec.Overhead != nil {
		return errors.New("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
	}
	return nil
}

// mergeTolerations is upstream's merge of a runtime class's tolerations
// into a pod's: all of both, but for one that another (kept or later)
// covers.
func mergeTolerations(first, second []corev1.Toleration) []corev1.Toleration {
	all := append(append([]corev1.Toleration(nil), first...), second...)
	var merged []corev1.Toleration
next:
	for i, t := range all {
		for _, m := range merged {
			if tolerationCovers(m, t) {
				continue next
			}
		}
		for _, later := range all[i+1:] {
			if !apiequality.Semantic.DeepEqual(&t, &later) && tolerationCovers(later, t) {
				continue next
			}
		}
		merged = append(merged, t)
	}
	return merged
}

// tolerationCovers reports whether ss tolerates all that t does.
func tolerationCovers(ss, t corev1.Toleration) bool {
	if apiequality.Semantic.DeepEqual(&t, &ss) {
		return true
	}
	if t.Key != ss.Key && (ss.Key != "" || ss.Operator != corev1.TolerationOpExists) {
		return false
	}
	if t.Effect != ss.Effect && ss.Effect != "" {
		return false
	}
	if ss.Effect == corev1.TaintEffectNoExecute && ss.TolerationSeconds != nil {
		if t.TolerationSeconds == nil || *t.TolerationSeconds > *ss.TolerationSeconds {
			return false
		}
	}
	switch ss.Operator {
	case corev1.TolerationOpEqual, "":
		return t.Operator == corev1.TolerationOpEqual && t.Value == ss.Value
	case corev1.TolerationOpExists:
		return true
	}
	return false
}
