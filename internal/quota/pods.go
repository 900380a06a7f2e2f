package quota

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/crdserver/crdserver/internal/podresources"
)

// podNames are the names the pod evaluator counts besides huge pages
// and extended resources' requests.
var podNames = []corev1.ResourceName{
	"count/pods", corev1.ResourcePods,
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
}

// deviceClassRequests prefixes the requests of a device class's implicit
// extended resource.
const deviceClassRequests = corev1.DefaultResourceRequestsPrefix + "deviceclass.resource.kubernetes.io/"

// podCounts reports whether the pod evaluator counts name: its own names,
// huge pages, and requests.<extended resource>.
func podCounts(name corev1.ResourceName) bool {
	s := string(name)
	switch {
	case slices.Contains(podNames, name),
		strings.HasPrefix(s, corev1.ResourceHugePagesPrefix),
		strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix):
		return true
	}
	return strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) && (!nativeResource(name) || strings.HasPrefix(s, deviceClassRequests))
}

// nativeResource reports whether name is in the kubernetes.io domain,
// unqualified names included.
func nativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// extendedResource reports whether a container's resource name is an
// extended resource (or a device class's), counted as requests.<name>.
func extendedResource(name corev1.ResourceName) bool {
	if strings.HasPrefix(string(name), "deviceclass.resource.kubernetes.io/") {
		return true
	}
	if nativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// podUsage is what a pod counts for at now, as upstream's pod evaluator
// counts it: count/pods always; while the pod is live (not Succeeded or
// Failed, nor deleted longer ago than its grace period) also pods and
// the requests and limits of the pod as a whole.
func podUsage(p *corev1.Pod, now time.Time) corev1.ResourceList {
	u := corev1.ResourceList{"count/pods": *resource.NewQuantity(1, resource.DecimalSI)}
	if !podLive(p, now) {
		return u
	}
	for name, v := range computeUsage(podRequests(p), podLimits(p)) {
		u[name] = v
	}
	return u
}

// podLive reports whether a pod's compute still counts.
func podLive(p *corev1.Pod, now time.Time) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	if p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil {
		end := p.DeletionTimestamp.Add(time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
		return !now.After(end)
	}
	return true
}

// computeUsage names requests and limits (of a pod or one container) as a
// quota counts them: pods 1; cpu, memory and ephemeral-storage requests
// both bare and as requests.*, their limits as limits.*; huge pages as
// both; extended resources as requests.* only.
func computeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	u := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if v, ok := requests[name]; ok {
			u[name] = v
			u[corev1.DefaultResourceRequestsPrefix+name] = v
		}
		if v, ok := limits[name]; ok {
			u["limits."+name] = v
		}
	}
	for name, v := range requests {
		if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			u[name] = v
			u[corev1.DefaultResourceRequestsPrefix+name] = v
		}
		if extendedResource(name) {
			u[corev1.DefaultResourceRequestsPrefix+name] = v
		}
	}
	return u
}

// podLevelResource reports whether the pod-level resources may set name.
func podLevelResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// podLevelSet reports whether l names a resource pod-level resources set.
func podLevelSet(l corev1.ResourceList) bool {
	for name := range l {
		if podLevelResource(name) {
			return true
		}
	}
	return false
}

// resizeInfeasible reports whether the pod's last resize was found
// infeasible: then what its spec asks is not counted, only what it has.
func resizeInfeasible(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending {
			return c.Reason == corev1.PodReasonInfeasible
		}
	}
	return false
}

// containerStatus is the status of the container named name, or nil.
func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, ss := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for i := range ss {
			if ss[i].Name == name {
				return &ss[i]
			}
		}
	}
	return nil
}

// podRequests are a pod's requests as upstream's resource helpers sum
// them for quota: for each container the most of what its spec asks,
// what the node allocated and what runs (status); the pod-level requests
// of cpu, memory and huge pages in place of the containers'; plus the
// pod's overhead.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	infeasible := resizeInfeasible(p)
	allocated := func(c *corev1.Container, cs *corev1.ContainerStatus) corev1.ResourceList {
		switch {
		case cs != nil && cs.AllocatedResources != nil:
			return cs.AllocatedResources
		case infeasible:
			return nil
		}
		return c.Resources.Requests
	}
	actuated := func(c *corev1.Container, cs *corev1.ContainerStatus) corev1.ResourceList {
		if cs != nil && cs.Resources != nil && cs.Resources.Requests != nil {
			return cs.Resources.Requests
		}
		return allocated(c, cs)
	}
	all := []corev1.ResourceList{aggregate(p, allocated), aggregate(p, actuated)}
	if !infeasible {
		all = append(all, aggregate(p, func(c *corev1.Container, _ *corev1.ContainerStatus) corev1.ResourceList { return c.Resources.Requests }))
	}
	reqs := maxOf(all...)
	if r := p.Spec.Resources; r != nil && podLevelSet(r.Requests) {
		for name, v := range r.Requests {
			if podLevelResource(name) {
				reqs[name] = v
			}
		}
	}
	podresources.Add(reqs, p.Spec.Overhead)
	return reqs
}

// podLimits are a pod's limits, summed as podRequests sums requests
// (the spec's and what runs); the overhead adds only to a limit set.
func podLimits(p *corev1.Pod) corev1.ResourceList {
	infeasible := resizeInfeasible(p)
	actuated := func(c *corev1.Container, cs *corev1.ContainerStatus) corev1.ResourceList {
		switch {
		case cs != nil && cs.Resources != nil && cs.Resources.Limits != nil:
			return cs.Resources.Limits
		case infeasible:
			return nil
		}
		return c.Resources.Limits
	}
	all := []corev1.ResourceList{aggregate(p, actuated)}
	if !infeasible {
		all = append(all, aggregate(p, func(c *corev1.Container, _ *corev1.ContainerStatus) corev1.ResourceList { return c.Resources.Limits }))
	}
	lims := maxOf(all...)
	if r := p.Spec.Resources; r != nil && (podLevelSet(r.Requests) || podLevelSet(r.Limits)) {
		for name, v := range r.Limits {
			if podLevelResource(name) {
				lims[name] = v
			}
		}
	}
	for name, v := range p.Spec.Overhead {
		if cur, ok := lims[name]; ok && !cur.IsZero() {
			cur.Add(v)
			lims[name] = cur
		}
	}
	return lims
}

// aggregate sums what of returns for each container (with its status)
// as podresources.Aggregate does.
func aggregate(p *corev1.Pod, of func(*corev1.Container, *corev1.ContainerStatus) corev1.ResourceList) corev1.ResourceList {
	return podresources.Aggregate(&p.Spec, func(c *corev1.Container) corev1.ResourceList { return of(c, containerStatus(p, c.Name)) })
}

func maxOf(ls ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, l := range ls {
		podresources.Max(out, l)
	}
	return out
}

// requiredNames are the names a quota may only limit for pods whose
// every container says how much of them it requests or limits.
var requiredNames = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
}

// podConstraints is upstream's refusal of a pod that a quota limiting
// cpu or memory (required: the names the quota limits) cannot count:
// a container that does not set them, unless the pod sets pod-level
// resources.
func podConstraints(p *corev1.Pod, required []corev1.ResourceName) error {
	if r := p.Spec.Resources; r != nil && (podLevelSet(r.Requests) || podLevelSet(r.Limits)) {
		return nil
	}
	missing := map[corev1.ResourceName][]string{}
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, c := range cs {
			has := computeUsage(c.Resources.Requests, c.Resources.Limits)
			for _, name := range requiredNames {
				if _, ok := has[name]; !ok && slices.Contains(required, name) && !slices.Contains(missing[name], c.Name) {
					missing[name] = append(missing[name], c.Name)
				}
			}
		}
	}
	var parts []string
	for _, name := range requiredNames { // sorted
		if names := missing[name]; len(names) > 0 {
			slices.Sort(names)
			parts = append(parts, fmt.Sprintf("%s for: %s", name, strings.Join(names, ",")))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("must specify %s", strings.Join(parts, "; "))
}

// podMatchesScope reports whether a pod is in a quota's scope.
func podMatchesScope(p *corev1.Pod, sel corev1.ScopedResourceSelectorRequirement) (bool, error) {
	switch sel.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return terminating(p), nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return !terminating(p), nil
	case corev1.ResourceQuotaScopeBestEffort:
		return bestEffort(p), nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !bestEffort(p), nil
	case corev1.ResourceQuotaScopePriorityClass:
		if sel.Operator == corev1.ScopeSelectorOpExists {
			return p.Spec.PriorityClassName != "", nil
		}
		var set labels.Set
		if p.Spec.PriorityClassName != "" {
			set = labels.Set{string(corev1.ResourceQuotaScopePriorityClass): p.Spec.PriorityClassName}
		}
		return selectorMatches(sel, set)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(p), nil
	}
	return false, nil
}

// selectorMatches reports whether a scope selector's requirement holds
// for set, keyed by the scope's name.
func selectorMatches(sel corev1.ScopedResourceSelectorRequirement, set labels.Set) (bool, error) {
	var op selection.Operator
	switch sel.Operator {
	case corev1.ScopeSelectorOpIn:
		op = selection.In
	case corev1.ScopeSelectorOpNotIn:
		op = selection.NotIn
	case corev1.ScopeSelectorOpExists:
		op = selection.Exists
	case corev1.ScopeSelectorOpDoesNotExist:
		op = selection.DoesNotExist
	default:
		return false, fmt.Errorf("failed to parse and convert selector: %q is not a valid scope selector operator", sel.Operator)
	}
	req, err := labels.NewRequirement(string(sel.ScopeName), op, sel.Values)
	if err != nil {
		return false, fmt.Errorf("failed to parse and convert selector: %w", err)
	}
	return labels.NewSelector().Add(*req).Matches(set), nil
}

// terminating reports whether a pod has an active deadline.
func terminating(p *corev1.Pod) bool {
	return p.Spec.ActiveDeadlineSeconds != nil && *p.Spec.ActiveDeadlineSeconds >= 0
}

// bestEffort reports whether a pod's QoS class is BestEffort: its
// pod-level resources, when set, else none of its containers, request or
// limit cpu or memory.
func bestEffort(p *corev1.Pod) bool {
	sets := func(r *corev1.ResourceRequirements) bool {
		for _, l := range []corev1.ResourceList{r.Requests, r.Limits} {
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if v, ok := l[name]; ok && v.Sign() != 0 {
					return true
				}
			}
		}
		return false
	}
	if r := p.Spec.Resources; r != nil && (podLevelSet(r.Requests) || podLevelSet(r.Limits)) {
		return !sets(r)
	}
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			if sets(&cs[i].Resources) {
				return false
			}
		}
	}
	return true
}

// crossNamespaceAffinity reports whether a pod's affinity or
// anti-affinity terms name other namespaces.
func crossNamespaceAffinity(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(t *corev1.PodAffinityTerm) bool { return len(t.Namespaces) > 0 || t.NamespaceSelector != nil }
	var required []corev1.PodAffinityTerm
	var preferred []corev1.WeightedPodAffinityTerm
	if a.PodAffinity != nil {
		required = append(required, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		preferred = append(preferred, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	if a.PodAntiAffinity != nil {
		required = append(required, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		preferred = append(preferred, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	for i := range required {
		if cross(&required[i]) {
			return true
		}
	}
	for i := range preferred {
		if cross(&preferred[i].PodAffinityTerm) {
			return true
		}
	}
	return false
}
