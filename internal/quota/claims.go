package quota

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
)

// storageClassInfix joins a storage class's name to the claim resource a
// quota limits for that class alone.
const storageClassInfix = ".storageclass.storage.k8s.io/"

// claimNames are the names the claim evaluator counts besides the
// per-class ones.
var claimNames = []corev1.ResourceName{"count/persistentvolumeclaims", corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage}

// claimCounts reports whether the claim evaluator counts name.
func claimCounts(name corev1.ResourceName) bool {
	return slices.Contains(claimNames, name) ||
		strings.HasSuffix(string(name), storageClassInfix+string(corev1.ResourcePersistentVolumeClaims)) ||
		strings.HasSuffix(string(name), storageClassInfix+string(corev1.ResourceRequestsStorage))
}

// betaStorageClass is the annotation that named a claim's class before
// spec.storageClassName; it wins when set.
const betaStorageClass = "volume.beta.kubernetes.io/storage-class"

// claimClass is a claim's storage class name, "" for none.
func claimClass(c *corev1.PersistentVolumeClaim) string {
	if class, ok := c.Annotations[betaStorageClass]; ok {
		return class
	}
	if c.Spec.StorageClassName != nil {
		return *c.Spec.StorageClassName
	}
	return ""
}

// claimUsage is what a claim counts for, as upstream's evaluator counts
// it: one claim (and one of its class), and the storage it requests, or
// what was allocated to it when more, rounded up to whole bytes (also
// for its class).
func claimUsage(c *corev1.PersistentVolumeClaim) corev1.ResourceList {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	u := corev1.ResourceList{corev1.ResourcePersistentVolumeClaims: one, "count/persistentvolumeclaims": one}
	class := claimClass(c)
	if class != "" {
		u[corev1.ResourceName(class+storageClassInfix+string(corev1.ResourcePersistentVolumeClaims))] = one
	}
	storage, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return u
	}
	if allocated, ok := c.Status.AllocatedResources[corev1.ResourceStorage]; ok && allocated.Cmp(storage) > 0 {
		storage = allocated
	}
	storage = roundUp(storage)
	u[corev1.ResourceRequestsStorage] = storage
	if class != "" {
		u[corev1.ResourceName(class+storageClassInfix+string(corev1.ResourceRequestsStorage))] = storage
	}
	return u
}

// roundUp is q rounded up to a whole number.
func roundUp(q resource.Quantity) resource.Quantity {
	r := q.DeepCopy()
	if !r.RoundUp(0) {
		return r
	}
	return q
}

// claimMatchesScope reports whether a claim is in a quota's scope: only
// VolumeAttributesClass applies to claims, matched against every class
// the claim names (asked for, current, or being moved to).
func claimMatchesScope(c *corev1.PersistentVolumeClaim, sel corev1.ScopedResourceSelectorRequirement) (bool, error) {
	if sel.ScopeName != corev1.ResourceQuotaScopeVolumeAttributesClass {
		return false, nil
	}
	var names []string
	add := func(name string) {
		if name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if c.Spec.VolumeAttributesClassName != nil {
		add(*c.Spec.VolumeAttributesClassName)
	}
	if c.Status.CurrentVolumeAttributesClassName != nil {
		add(*c.Status.CurrentVolumeAttributesClassName)
	}
	if m := c.Status.ModifyVolumeStatus; m != nil {
		add(m.TargetVolumeAttributesClassName)
	}
	if sel.Operator == corev1.ScopeSelectorOpExists {
		return len(names) > 0, nil
	}
	if len(names) == 0 {
		return selectorMatches(sel, labels.Set{})
	}
	for _, name := range names {
		ok, err := selectorMatches(sel, labels.Set{string(corev1.ResourceQuotaScopeVolumeAttributesClass): name})
		if ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}
