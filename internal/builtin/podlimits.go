package builtin

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/crdserver/crdserver/internal/podresources"
)

// checkLimitRange is upstream's LimitRanger validation of a new pod
// against one LimitRange: each container's requests and limits (a
// Container limit), and the pod's sums (a Pod limit), within the range's
// minimums, maximums and limit-to-request ratios, every rule broken
// listed. Upstream lists them in map order; they are by resource name
// here.
func checkLimitRange(lr *corev1.LimitRange, p *corev1.Pod) error {
	var errs []error
	check := func(l corev1.LimitRangeItem, reqs, lims corev1.ResourceList) {
		kind := string(l.Type)
		for _, k := range sortedNames(l.Min) {
			errs = append(errs, minConstraint(kind, k, l.Min[k], reqs, lims))
		}
		for _, k := range sortedNames(l.Max) {
			errs = append(errs, maxConstraint(kind, k, l.Max[k], reqs, lims))
		}
		for _, k := range sortedNames(l.MaxLimitRequestRatio) {
			errs = append(errs, ratioConstraint(kind, k, l.MaxLimitRequestRatio[k], reqs, lims))
		}
	}
	for _, l := range lr.Spec.Limits {
		switch l.Type {
		case corev1.LimitTypeContainer:
			for _, c := range slices.Concat(p.Spec.Containers, p.Spec.InitContainers) {
				check(l, c.Resources.Requests, c.Resources.Limits)
			}
		case corev1.LimitTypePod:
			check(l, podResources(p, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Requests }),
				podResources(p, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Limits }))
		}
	}
	return utilerrors.NewAggregate(slices.DeleteFunc(errs, func(err error) bool { return err == nil }))
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for k := range l {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// values are a request, a limit and the range's value as upstream
// compares them: in thousandths where none overflows.
func values(req, lim, enforced resource.Quantity) (int64, int64, int64) {
	r, l, e := req.Value(), lim.Value(), enforced.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		return req.MilliValue(), lim.MilliValue(), enforced.MilliValue()
	}
	return r, l, e
}

func minConstraint(kind string, name corev1.ResourceName, enforced resource.Quantity, reqs, lims corev1.ResourceList) error {
	req, hasReq := reqs[name]
	lim, hasLim := lims[name]
	r, l, e := values(req, lim, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, kind, enforced.String())
	case r < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	case hasLim && l < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, kind, enforced.String(), lim.String())
	}
	return nil
}

func maxConstraint(kind string, name corev1.ResourceName, enforced resource.Quantity, reqs, lims corev1.ResourceList) error {
	req, hasReq := reqs[name]
	lim, hasLim := lims[name]
	r, l, e := values(req, lim, enforced)
	switch {
	case !hasLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, kind, enforced.String())
	case l > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, kind, enforced.String(), lim.String())
	case hasReq && r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	}
	return nil
}

func ratioConstraint(kind string, name corev1.ResourceName, enforced resource.Quantity, reqs, lims corev1.ResourceList) error {
	req, hasReq := reqs[name]
	lim, hasLim := lims[name]
	r, l, _ := values(req, lim, enforced)
	switch {
	case !hasReq || r == 0:
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, kind, enforced.String())
	case !hasLim || l == 0:
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, kind, enforced.String())
	}
	ratio := float64(l) / float64(r)
	observed, most := ratio, float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed, most = ratio*1000, float64(enforced.MilliValue())
	}
	if observed > most {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, kind, enforced.String(), ratio)
	}
	return nil
}

// podResources sums the containers' requests or limits (of) as upstream's
// LimitRanger does: regular and sidecar containers add up, and each other
// init container, with the sidecars started before it, counts where it
// is more; the pod-level resources of CPU and memory, where given, are the
// pod's.
func podResources(p *corev1.Pod, of func(corev1.ResourceRequirements) corev1.ResourceList) corev1.ResourceList {
	sum := podresources.Aggregate(&p.Spec, func(c *corev1.Container) corev1.ResourceList { return of(c.Resources) })
	if p.Spec.Resources != nil {
		for k, v := range of(*p.Spec.Resources) {
			if k == corev1.ResourceCPU || k == corev1.ResourceMemory {
				sum[k] = v
			}
		}
	}
	return sum
}
