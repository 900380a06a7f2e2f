package builtin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/podresources"
	"github.com/crdserver/crdserver/internal/registry"
)

// pods/resize changes a pod's cpu and memory in place, as kube-apiserver
// 1.37 serves it: a write through it is the whole pod, patched or
// replaced; its fields are recorded and mutating admission sees it as
// written, and only then is it kept to what a resize may change
// (upstream's podResizeStrategy), validated (ValidatePodResize) and
// checked by the admission plugins that judge resizes (LimitRanger,
// NodeDeclaredFeatureValidator, PodResizeValidator). ResourceQuota
// charges it too (internal/quota).

var (
	_ registry.UpdateAdmitter         = podHooks{}
	_ registry.UpdateAdmissionChecker = podHooks{}
)

// prepareResize is upstream's resize strategy: of the pod written, the
// resources and resize policies of each container and init container,
// matched by position, and the pod-level resources are kept; the rest of
// the spec, the status and the metadata of statusResetMetadata are old's.
// Containers added, removed or renamed leave the write as it is, for
// validation to refuse. Pod-level resources left out are old's; any are
// completed from the containers' as on create.
func (h podHooks) prepareResize(obj, old map[string]any) map[string]any {
	p, was, err := h.decodeUpdate(obj, old)
	if err != nil {
		return obj // CheckType refused it
	}
	spec, kept := resizedSpec(&p.Spec, &was.Spec)
	next := obj
	if kept {
		next = map[string]any{"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": statusResetMetadata(obj, old)}
	}
	h.rewrite(next, func(t *corev1.Pod) {
		t.Spec = spec
		if kept {
			t.Status = was.Status
		}
		if t.Spec.Resources == nil && was.Spec.Resources != nil {
			t.Spec.Resources = was.Spec.Resources.DeepCopy()
		}
		if t.Spec.Resources != nil {
			defaultPodLevelResources(&t.Spec)
		}
	})
	return next
}

// resizedSpec is was with the resources of now a resize may change, and
// true; or now and false when their containers or init containers differ
// in number. Where one list's names differ, that list is now's.
func resizedSpec(now, was *corev1.PodSpec) (corev1.PodSpec, bool) {
	if len(now.Containers) != len(was.Containers) || len(now.InitContainers) != len(was.InitContainers) {
		return *now.DeepCopy(), false
	}
	s := *was.DeepCopy()
	s.Containers = resizedContainers(now.Containers, s.Containers)
	s.InitContainers = resizedContainers(now.InitContainers, s.InitContainers)
	s.Resources = now.Resources.DeepCopy()
	return s, true
}

// resizedContainers is was given now's resources and resize policies,
// container by container; now itself when a name differs.
func resizedContainers(now, was []corev1.Container) []corev1.Container {
	for i := range now {
		if now[i].Name != was[i].Name {
			return now
		}
	}
	for i := range now {
		was[i].Resources = *now[i].Resources.DeepCopy()
		was[i].ResizePolicy = slices.Clone(now[i].ResizePolicy)
	}
	return was
}

// resizeOnlyCPUMemory is upstream's refusal of a resize that changes
// more of a container, or of the spec, than cpu and memory.
const resizeOnlyCPUMemory = "only cpu and memory resources are mutable"

// validatePodResize is upstream's ValidatePodResize as kube-apiserver
// 1.37.2 runs it (pod-level resizes and init containers' allowed,
// memory-backed volumes' not): the pod as a whole; then a static or
// Windows pod is refused alone; then a change of QoS class, a running
// container that reports no resources (a node that cannot resize), a
// change of the pod-level resources other than their cpu and memory,
// containers added, removed, renamed or reordered (nothing more is
// checked then), requests or limits removed, any change of a container
// other than to its cpu and memory (its resize policy included), a
// resize of an init container that restarts the container, and changed
// volumes. Only when none of those is found is the spec compared once
// more, cpu and memory aside.
func validatePodResize(p, was *corev1.Pod) field.ErrorList {
	errs := validatePodMetadataAndSpec(p)
	if _, ok := was.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}
	}
	if was.Spec.OS != nil && was.Spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "windows pods cannot be resized")}
	}
	sp := field.NewPath("spec")
	wasQOS := was.Status.QOSClass
	if wasQOS == "" {
		wasQOS = podQOS(was)
	}
	if wasQOS != podQOS(p) {
		errs = append(errs, field.Invalid(sp, p.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	if !resizableOnNode(was) {
		errs = append(errs, field.Forbidden(sp, "Pod running on node without support for resize"))
	}
	masked := p.Spec.DeepCopy()
	if podLevelResourcesSet(&p.Spec) || podLevelResourcesSet(&was.Spec) {
		errs = append(errs, validatePodLevelResize(&p.Spec, &was.Spec, masked, sp)...)
	}
	if order := validateResizeOrder(&p.Spec, &was.Spec, sp); order != nil {
		return append(errs, order...)
	}
	for i := range was.Spec.InitContainers {
		errs = append(errs, validateResourcesKept(&p.Spec.InitContainers[i].Resources, &was.Spec.InitContainers[i].Resources,
			sp.Child("initContainers").Index(i).Child("resources"))...)
	}
	for i := range was.Spec.Containers {
		errs = append(errs, validateResourcesKept(&p.Spec.Containers[i].Resources, &was.Spec.Containers[i].Resources,
			sp.Child("containers").Index(i).Child("resources"))...)
	}
	for i := range masked.Containers {
		c := &masked.Containers[i]
		maskCPUMemory(c, &was.Spec.Containers[i])
		if !apiequality.Semantic.DeepEqual(*c, was.Spec.Containers[i]) {
			errs = append(errs, field.Forbidden(sp, resizeOnlyCPUMemory))
		}
	}
	for i := range masked.InitContainers {
		c, o := &masked.InitContainers[i], &was.Spec.InitContainers[i]
		changed := !apiequality.Semantic.DeepEqual(*c, *o)
		maskCPUMemory(c, o)
		ip := sp.Child("initContainers").Index(i)
		if !apiequality.Semantic.DeepEqual(*c, *o) {
			errs = append(errs, field.Forbidden(ip, "only cpu and memory resources for init or sidecar containers are mutable"))
		}
		if !changed || restartable(c) {
			continue
		}
		for _, rp := range c.ResizePolicy {
			if rp.RestartPolicy == corev1.RestartContainer {
				errs = append(errs, field.Forbidden(ip, "non-sidecar init containers with a resize policy of RestartContainer cannot be resized"))
			}
		}
	}
	if !apiequality.Semantic.DeepEqual(p.Spec.Volumes, was.Spec.Volumes) {
		errs = append(errs, field.Forbidden(sp.Child("volumes"), "volumes are immutable on resize when InPlacePodVerticalScalingMemoryBackedVolumes feature gate is disabled"))
	}
	if len(errs) > 0 {
		return errs
	}
	if !apiequality.Semantic.DeepEqual(*masked, was.Spec) {
		errs = append(errs, field.Forbidden(sp, resizeOnlyCPUMemory))
	}
	return errs
}

// resizableOnNode is upstream's check that the node a pod runs on can
// resize it: the first running container reports its resources. A pod
// with none running may be resized.
func resizableOnNode(p *corev1.Pod) bool {
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Running != nil {
			return s.Resources != nil
		}
	}
	return true
}

// validatePodLevelResize refuses pod-level resources removed, or changed
// other than in their cpu and memory, and leaves masked's without the
// change of their cpu and memory.
func validatePodLevelResize(now, was, masked *corev1.PodSpec, sp *field.Path) field.ErrorList {
	rp := sp.Child("resources")
	if was.Resources != nil && now.Resources == nil {
		return field.ErrorList{field.Forbidden(rp, "pod-level resources cannot be removed")}
	}
	var errs field.ErrorList
	if was.Resources != nil {
		if resourcesRemoved(now.Resources.Requests, was.Resources.Requests) {
			errs = append(errs, field.Forbidden(rp.Child("requests"), "pod-level resource requests cannot be removed"))
		}
		if resourcesRemoved(now.Resources.Limits, was.Resources.Limits) {
			errs = append(errs, field.Forbidden(rp.Child("limits"), "pod-level resource limits cannot be removed"))
		}
	}
	if r := masked.Resources; r != nil {
		var reqs, lims corev1.ResourceList
		if was.Resources != nil {
			reqs, lims = was.Resources.Requests, was.Resources.Limits
		}
		r.Requests, r.Limits = withCPUMemoryOf(r.Requests, reqs), withCPUMemoryOf(r.Limits, lims)
		if was.Resources == nil && len(r.Requests) == 0 && len(r.Limits) == 0 && len(r.Claims) == 0 {
			masked.Resources = nil
		}
	}
	if !apiequality.Semantic.DeepEqual(masked.Resources, was.Resources) {
		errs = append(errs, field.Forbidden(sp, "only cpu and memory resources are mutable at pod-level"))
	}
	return errs
}

// validateResizeOrder refuses containers or init containers added,
// removed, renamed or reordered.
func validateResizeOrder(now, was *corev1.PodSpec, sp *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, l := range []struct {
		name     string
		now, was []corev1.Container
	}{{"containers", now.Containers, was.Containers}, {"initContainers", now.InitContainers, was.InitContainers}} {
		lp := sp.Child(l.name)
		if len(l.now) != len(l.was) {
			errs = append(errs, field.Forbidden(lp, l.name+" may not be added or removed on resize"))
			continue
		}
		for i := range l.was {
			if l.now[i].Name != l.was[i].Name {
				errs = append(errs, field.Forbidden(lp.Index(i).Child("name"), l.name+" may not be renamed or reordered on resize"))
			}
		}
	}
	return errs
}

// validateResourcesKept refuses requests or limits removed.
func validateResourcesKept(now, was *corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if resourcesRemoved(now.Requests, was.Requests) {
		errs = append(errs, field.Forbidden(p.Child("requests"), "resource requests cannot be removed"))
	}
	if resourcesRemoved(now.Limits, was.Limits) {
		errs = append(errs, field.Forbidden(p.Child("limits"), "resource limits cannot be removed"))
	}
	return errs
}

// resourcesRemoved reports whether now lacks a resource was has.
func resourcesRemoved(now, was corev1.ResourceList) bool {
	for name := range was {
		if _, ok := now[name]; !ok {
			return true
		}
	}
	return false
}

// maskCPUMemory gives c was's cpu and memory requests and limits, so
// that what differs from was afterwards is what a resize may not change.
func maskCPUMemory(c, was *corev1.Container) {
	c.Resources.Requests = withCPUMemoryOf(c.Resources.Requests, was.Resources.Requests)
	c.Resources.Limits = withCPUMemoryOf(c.Resources.Limits, was.Resources.Limits)
}

// withCPUMemoryOf is l with the cpu and memory of was (none where was
// has none).
func withCPUMemoryOf(l, was corev1.ResourceList) corev1.ResourceList {
	if l == nil && was == nil {
		return nil
	}
	out := l.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		delete(out, name)
		if q, ok := was[name]; ok {
			out[name] = q
		}
	}
	return out
}

// AdmitUpdate is LimitRanger's defaulting of a resize: a container that
// lacks a request or limit a range of the namespace defaults gets it.
// (The annotation saying so goes with the rest of the metadata a resize
// does not change.) A pod being deleted is left alone.
func (h podHooks) AdmitUpdate(ctx context.Context, sub string, obj, old map[string]any) error {
	if sub != "resize" || h.src == nil || nested(old, "metadata", "deletionTimestamp") != nil {
		return nil
	}
	p, _, err := h.Decode(obj)
	if err != nil {
		return nil // CheckType refused it
	}
	ranges, err := h.defaultFromLimitRanges(ctx, p)
	if err != nil || len(ranges) == 0 {
		return err
	}
	h.rewrite(obj, func(t *corev1.Pod) { t.Spec = p.Spec })
	return nil
}

// CheckUpdateAdmission is what upstream's validating admission plugins
// check of a valid resize: the namespace's LimitRanges (unless the pod is
// being deleted); and, when the resize changes the spec of a pod bound
// to a node, that the node exists (NodeDeclaredFeatureValidator and
// PodResizeValidator), declares the features the resize needs, runs
// Linux and can hold the pod's requests.
func (h podHooks) CheckUpdateAdmission(ctx context.Context, sub string, obj, old map[string]any) error {
	if sub != "resize" || h.src == nil {
		return nil
	}
	p, was, err := h.decodeUpdate(obj, old)
	if err != nil {
		return nil // CheckType refused it
	}
	if was.DeletionTimestamp == nil {
		ranges, err := h.src.LimitRanges(ctx, p.Namespace)
		if err != nil {
			return fmt.Errorf("listing LimitRanges: %w", err)
		}
		if err := checkLimitRanges(ranges, p); err != nil {
			return err
		}
	}
	if p.Spec.NodeName == "" || p.Generation == was.Generation {
		return nil
	}
	node, err := h.src.Node(ctx, p.Spec.NodeName)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("node %q not found", p.Spec.NodeName)
	case err != nil:
		return fmt.Errorf("failed to get node %q: %w", p.Spec.NodeName, err)
	}
	if missing := undeclaredResizeFeatures(p, was, node); len(missing) > 0 {
		return fmt.Errorf("pod update requires features %s which are not available on node %q", strings.Join(missing, ", "), node.Name)
	}
	if os, ok := node.Labels[corev1.LabelOSStable]; ok && os != "linux" {
		return resizeRefused(p.Name, "UnsupportedPlatform", fmt.Errorf("pod resize is only supported on linux nodes, node %q is %q", node.Name, os))
	}
	return checkResizeFits(p, node)
}

// The node features a resize may need (upstream's node-declared features
// inferred for a pod update), in name order.
const (
	featurePodLevelResize = "InPlacePodLevelResourcesVerticalScaling"
	featureInitResize     = "InPlacePodVerticalScalingInitContainers"
)

// undeclaredResizeFeatures are the features the resize of was into p
// needs that node does not declare: a resize of the pod-level resources,
// or of an init container that is not a sidecar.
func undeclaredResizeFeatures(p, was *corev1.Pod, node *corev1.Node) []string {
	var need []string
	if (p.Spec.Resources != nil || was.Spec.Resources != nil) && !apiequality.Semantic.DeepEqual(p.Spec.Resources, was.Spec.Resources) {
		need = append(need, featurePodLevelResize)
	}
	for i := range was.Spec.InitContainers {
		c := &was.Spec.InitContainers[i]
		if !restartable(c) && !apiequality.Semantic.DeepEqual(c.Resources, p.Spec.InitContainers[i].Resources) {
			need = append(need, featureInitResize)
			break
		}
	}
	return slices.DeleteFunc(need, func(f string) bool { return slices.Contains(node.Status.DeclaredFeatures, f) })
}

// checkResizeFits is PodResizeValidator's check that the pod's requests
// (its containers', or its pod-level ones, and its overhead) fit what
// the node can allocate, in cpu and memory.
func checkResizeFits(p *corev1.Pod, node *corev1.Node) error {
	reqs := podresources.Aggregate(&p.Spec, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
	if r := p.Spec.Resources; r != nil {
		for name, q := range r.Requests {
			if isPodLevelResource(name) {
				reqs[name] = q
			}
		}
	}
	podresources.Add(reqs, p.Spec.Overhead)
	cpu, mem := reqs[corev1.ResourceCPU], reqs[corev1.ResourceMemory]
	allocCPU, allocMem := node.Status.Allocatable[corev1.ResourceCPU], node.Status.Allocatable[corev1.ResourceMemory]
	var over []string
	if cpu.Cmp(allocCPU) > 0 {
		over = append(over, fmt.Sprintf("cpu, requested: %d, allocatable: %d", cpu.MilliValue(), allocCPU.MilliValue()))
	}
	if mem.Cmp(allocMem) > 0 {
		over = append(over, fmt.Sprintf("memory, requested: %d, allocatable: %d", mem.Value(), allocMem.Value()))
	}
	if len(over) == 0 {
		return nil
	}
	return resizeRefused(p.Name, "NodeCapacity", fmt.Errorf("node didn't have enough allocatable resources: %s", strings.Join(over, "; ")))
}

// resizeRefused is PodResizeValidator's 403, whose cause names why.
func resizeRefused(name string, cause metav1.CauseType, err error) error {
	e := apierrors.NewForbidden(corev1.Resource("pods"), name, err)
	e.ErrStatus.Details.Causes = append(e.ErrStatus.Details.Causes, metav1.StatusCause{Type: cause})
	return e
}
