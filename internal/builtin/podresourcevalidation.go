package builtin

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/podresources"
)

// Pod-level resources (spec.resources), a beta of 1.37 that is on: what
// upstream checks of them, and the requests and limits a new pod gets
// from its containers'. Upstream ranges over maps where this file sorts
// resource names, so with several errors its order may vary; crdserver's
// is by name.

// podLevelResources are the resources a pod may name at its level
// (hugepages by prefix), as upstream lists them.
var podLevelResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceHugePagesPrefix, corev1.ResourceMemory}

func isPodLevelResource(n corev1.ResourceName) bool {
	return n == corev1.ResourceCPU || n == corev1.ResourceMemory || isHugePages(n)
}

// podLevelResourcesSet reports whether the spec sets pod-level requests
// or limits.
func podLevelResourcesSet(s *corev1.PodSpec) bool {
	return s.Resources != nil && len(s.Resources.Requests)+len(s.Resources.Limits) > 0
}

func isHugePages(n corev1.ResourceName) bool {
	return strings.HasPrefix(string(n), corev1.ResourceHugePagesPrefix)
}

// validatePodResources checks a pod's own resources: none for a Windows
// pod, no claims, names and quantities, requests within limits, and room
// for the containers' requests and limits.
func validatePodResources(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	r := s.Resources
	if r == nil {
		return nil
	}
	rp := p.Child("resources")
	if s.OS != nil && s.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(rp, "may not be set for a windows pod")}
	}
	var errs field.ErrorList
	if r.Claims != nil {
		errs = append(errs, field.Forbidden(rp.Child("claims"), "claims may not be set for Resources at pod-level"))
	}
	errs = append(errs, validatePodResourceRequirements(r, rp)...)
	return append(errs, validatePodResourceConsistency(s, rp)...)
}

func validatePodResourceName(n corev1.ResourceName, p *field.Path) field.ErrorList {
	if errs := validateResourceName(n, p); len(errs) > 0 {
		return errs
	}
	if !isPodLevelResource(n) {
		return field.ErrorList{field.NotSupported(p, n, podLevelResources)}
	}
	return nil
}

// hugePagesDivisible: a hugepages quantity is a whole number of pages.
func hugePagesDivisible(n corev1.ResourceName, q resource.Quantity) bool {
	size, err := resource.ParseQuantity(strings.TrimPrefix(string(n), corev1.ResourceHugePagesPrefix))
	if err != nil || size.Sign() <= 0 || size.MilliValue()%1000 != 0 {
		return false
	}
	return q.Value()%size.Value() == 0
}

func validatePodResourceRequirements(r *corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	lp, rp := p.Child("limits"), p.Child("requests")
	cpuOrMemory, hugePages := false, false
	check := func(n corev1.ResourceName, q resource.Quantity, kp *field.Path) {
		if isHugePages(n) {
			hugePages = true
			if !hugePagesDivisible(n, q) {
				errs = append(errs, field.Invalid(kp, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), n)))
			}
		}
		if n == corev1.ResourceCPU || n == corev1.ResourceMemory {
			cpuOrMemory = true
		}
	}
	for _, n := range slices.Sorted(maps.Keys(r.Limits)) {
		q, kp := r.Limits[n], lp.Key(string(n))
		errs = append(errs, validatePodResourceName(n, kp)...)
		errs = append(errs, validateQuantityValue(n, q, kp)...)
		check(n, q, kp)
	}
	for _, n := range slices.Sorted(maps.Keys(r.Requests)) {
		q, kp := r.Requests[n], rp.Key(string(n))
		errs = append(errs, validatePodResourceName(n, kp)...)
		errs = append(errs, validateQuantityValue(n, q, kp)...)
		lim, ok := r.Limits[n]
		switch {
		case ok && q.Cmp(lim) != 0 && !overcommitAllowed(n):
			errs = append(errs, field.Invalid(rp, q.String(), fmt.Sprintf("must be equal to %s limit of %s", n, lim.String())))
		case ok && q.Cmp(lim) > 0:
			errs = append(errs, field.Invalid(rp, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", n, lim.String())))
		case !ok && !overcommitAllowed(n):
			errs = append(errs, field.Required(lp, "Limit must be set for non overcommitable resources"))
		}
		check(n, q, kp)
	}
	if !cpuOrMemory && hugePages {
		errs = append(errs, field.Forbidden(p, "HugePages require cpu or memory"))
	}
	return errs
}

// validatePodResourceConsistency: the pod's requests hold the containers'
// together, its hugepages limits theirs, and its limits each container's.
// Upstream names a container's limit at resources.containers[i][name].limits.
func validatePodResourceConsistency(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	reqs := podresources.Aggregate(s, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
	for _, n := range slices.Sorted(maps.Keys(reqs)) {
		if pod, ok := s.Resources.Requests[n]; ok {
			if q := reqs[n]; q.Cmp(pod) <= 0 {
				continue
			}
			q := reqs[n]
			errs = append(errs, field.Invalid(p.Child("requests").Key(string(n)), pod.String(), fmt.Sprintf("must be greater than or equal to aggregate container requests of %s", q.String())))
		}
	}
	lims := podresources.Aggregate(s, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
	for _, n := range slices.Sorted(maps.Keys(lims)) {
		if pod, ok := s.Resources.Limits[n]; ok && isHugePages(n) {
			if q := lims[n]; q.Cmp(pod) <= 0 {
				continue
			}
			q := lims[n]
			errs = append(errs, field.Invalid(p.Child("limits").Key(string(n)), pod.String(), fmt.Sprintf("must be greater than or equal to aggregate container limits of %s", q.String())))
		}
	}
	for i, c := range s.Containers {
		for _, n := range slices.Sorted(maps.Keys(c.Resources.Limits)) {
			if pod, ok := s.Resources.Limits[n]; ok {
				if q := c.Resources.Limits[n]; q.Cmp(pod) <= 0 {
					continue
				}
				q := c.Resources.Limits[n]
				errs = append(errs, field.Invalid(p.Child("containers").Index(i).Key(string(n)).Child("limits"), q.String(), fmt.Sprintf("must be less than or equal to pod limits of %s", pod.String())))
			}
		}
	}
	return errs
}

// defaultPodLevelResources is what upstream's pod strategy gives a new
// pod with requests or limits of its own: hugepages limits the
// containers' (unless requested), cpu and memory requests the
// containers' together or else the pod's limit, and a limit the
// containers' together (at least the request) when every container has
// one.
func defaultPodLevelResources(s *corev1.PodSpec) {
	if !podLevelResourcesSet(s) {
		return
	}
	r := s.Resources
	lims := podresources.Aggregate(s, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
	podLims := r.Limits
	if podLims == nil {
		podLims = corev1.ResourceList{}
	}
	for n, q := range lims {
		if !isHugePages(n) {
			continue
		}
		if _, ok := r.Requests[n]; ok {
			continue
		}
		if _, ok := podLims[n]; !ok {
			podLims[n] = q
		}
	}
	if len(podLims) > 0 {
		r.Limits = podLims
	}
	reqs := podresources.Aggregate(s, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
	podReqs := r.Requests
	if podReqs == nil {
		podReqs = corev1.ResourceList{}
	}
	for n, q := range reqs {
		if _, ok := podReqs[n]; !ok && isPodLevelResource(n) && overcommitAllowed(n) {
			podReqs[n] = q
		}
	}
	for n, q := range r.Limits {
		if _, ok := podReqs[n]; !ok && isPodLevelResource(n) {
			podReqs[n] = q.DeepCopy()
		}
	}
	if len(podReqs) > 0 {
		r.Requests = podReqs
	}
	var candidates []corev1.ResourceName
	for n := range r.Requests {
		if _, ok := r.Limits[n]; !ok && isPodLevelResource(n) {
			candidates = append(candidates, n)
		}
	}
	candidates = slices.DeleteFunc(candidates, func(n corev1.ResourceName) bool {
		for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
			for _, c := range cs {
				if _, ok := c.Resources.Limits[n]; !ok {
					return true
				}
			}
		}
		for _, c := range s.EphemeralContainers {
			if _, ok := c.Resources.Limits[n]; !ok {
				return true
			}
		}
		return false
	})
	for _, n := range candidates {
		v, ok := lims[n]
		if !ok {
			continue
		}
		if req := r.Requests[n]; req.Cmp(v) > 0 {
			v = req
		}
		if r.Limits == nil {
			r.Limits = corev1.ResourceList{}
		}
		r.Limits[n] = v
	}
}
