package builtin

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/registry"
)

// runtimeClassFor is what upstream's RuntimeClass admission plugin looks
// up for a new pod: the class it names (nil when it names none), or the
// plugin's refusal when there is no such class.
func (h podHooks) runtimeClassFor(ctx context.Context, p *corev1.Pod) (*nodev1.RuntimeClass, error) {
	if p.Spec.RuntimeClassName == nil {
		return nil, nil
	}
	rc, err := h.src.RuntimeClass(ctx, *p.Spec.RuntimeClassName)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("pod rejected: RuntimeClass %q not found", *p.Spec.RuntimeClassName)
	}
	return rc, err
}

// admitRuntimeClass is the plugin's mutating half: the class's overhead
// becomes the pod's (one the pod gives must be the same), and its
// scheduling node selector and tolerations are merged into the pod's (a
// selector key the pod sets otherwise is a conflict).
func admitRuntimeClass(p *corev1.Pod, rc *nodev1.RuntimeClass) error {
	if rc == nil {
		return nil
	}
	if rc.Overhead != nil {
		if len(p.Spec.Overhead) > 0 && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, p.Spec.Overhead) {
			return errOverheadMismatch
		}
		p.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	}
	if s := rc.Scheduling; s != nil {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = s.NodeSelector
		} else {
			for k, v := range s.NodeSelector {
				if pv, ok := p.Spec.NodeSelector[k]; ok && pv != v {
					return fmt.Errorf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, pv)
				}
				p.Spec.NodeSelector[k] = v
			}
		}
		p.Spec.Tolerations = mergeTolerations(p.Spec.Tolerations, s.Tolerations)
	}
	return nil
}

var errOverheadMismatch = fmt.Errorf("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")

var _ registry.CreateAdmissionChecker = podHooks{}

// CheckCreateAdmission is the plugin's validating half, where upstream
// runs it: after the new pod is validated (an invalid overhead is a 422
// first).
func (h podHooks) CheckCreateAdmission(ctx context.Context, obj map[string]any) error {
	if h.src == nil {
		return nil
	}
	p, _, err := h.Decode(obj)
	if err != nil {
		return nil // CheckType refused it
	}
	rc, err := h.runtimeClassFor(ctx, p)
	if err != nil {
		return err
	}
	return validateRuntimeClass(p, rc)
}

// validateRuntimeClass is the plugin's validating half, after every
// mutation: the pod's overhead is its class's, and a pod whose class has
// none (or that names none) has none.
func validateRuntimeClass(p *corev1.Pod, rc *nodev1.RuntimeClass) error {
	if rc != nil && rc.Overhead != nil {
		if !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, p.Spec.Overhead) {
			return errOverheadMismatch
		}
		return nil
	}
	if p.Spec.Overhead != nil {
		return fmt.Errorf("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
	}
	return nil
}

// mergeTolerations is upstream's merge of two lists of tolerations: in
// order, each kept unless one already kept, or a later different one,
// tolerates everything it does.
func mergeTolerations(first, second []corev1.Toleration) []corev1.Toleration {
	all := append(append([]corev1.Toleration(nil), first...), second...)
	var merged []corev1.Toleration
next:
	for i, t := range all {
		for _, m := range merged {
			if toleratesAll(m, t) {
				continue next
			}
		}
		for _, later := range all[i+1:] {
			if !apiequality.Semantic.DeepEqual(t, later) && toleratesAll(later, t) {
				continue next
			}
		}
		merged = append(merged, t)
	}
	return merged
}

// toleratesAll reports whether ss tolerates every taint t does.
func toleratesAll(ss, t corev1.Toleration) bool {
	if apiequality.Semantic.DeepEqual(t, ss) {
		return true
	}
	// An empty key with Exists tolerates every key.
	if t.Key != ss.Key && (ss.Key != "" || ss.Operator != corev1.TolerationOpExists) {
		return false
	}
	// An empty effect tolerates every effect.
	if t.Effect != ss.Effect && ss.Effect != "" {
		return false
	}
	if ss.Effect == corev1.TaintEffectNoExecute && ss.TolerationSeconds != nil &&
		(t.TolerationSeconds == nil || *t.TolerationSeconds > *ss.TolerationSeconds) {
		return false
	}
	switch ss.Operator {
	case corev1.TolerationOpEqual, "":
		return t.Operator == corev1.TolerationOpEqual && t.Value == ss.Value
	case corev1.TolerationOpExists:
		return true
	}
	return false
}
