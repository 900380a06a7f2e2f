// Package podresources sums what a pod's containers request or limit, as
// upstream's resource helper does for LimitRanger, pod-level resource
// defaults and quota alike: regular and sidecar containers add up, and
// each other init container, with the sidecars started before it, counts
// where it needs more.
package podresources

import corev1 "k8s.io/api/core/v1"

// Aggregate is what the containers of s need of what of gives each.
func Aggregate(s *corev1.PodSpec, of func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for i := range s.Containers {
		Add(sum, of(&s.Containers[i]))
	}
	sidecars, inits := corev1.ResourceList{}, corev1.ResourceList{}
	for i := range s.InitContainers {
		c := &s.InitContainers[i]
		own := of(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			Add(sum, own)
			Add(sidecars, own)
			own = sidecars
		} else {
			with := corev1.ResourceList{}
			Add(with, own)
			Add(with, sidecars)
			own = with
		}
		Max(inits, own)
	}
	Max(sum, inits)
	return sum
}

// Add adds each quantity of from to to's.
func Add(to, from corev1.ResourceList) {
	for name, v := range from {
		cur, ok := to[name]
		if !ok {
			to[name] = v.DeepCopy()
			continue
		}
		cur.Add(v)
		to[name] = cur
	}
}

// Max raises each quantity of to to from's where from's is more.
func Max(to, from corev1.ResourceList) {
	for name, v := range from {
		if cur, ok := to[name]; !ok || v.Cmp(cur) > 0 {
			to[name] = v.DeepCopy()
		}
	}
}
