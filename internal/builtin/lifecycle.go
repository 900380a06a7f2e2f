package builtin

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/version"
)

// The lifecycle methods k8s.io/api generates for a version's Go types
// (zz_generated.prerelease-lifecycle.go, or written by hand for core/v1
// Endpoints): from which Kubernetes release a type is deprecated and
// removed, and what replaces it.
type (
	deprecatedIn interface{ APILifecycleDeprecated() (major, minor int) }
	removedIn    interface{ APILifecycleRemoved() (major, minor int) }
	replacedBy   interface {
		APILifecycleReplacement() schema.GroupVersionKind
	}
)

// withLifecycle is v marked deprecated when upstream's API installer
// marks it: obj, the version's Go type, is deprecated from a release no
// later than the one crdserver serves. The warning is worded as
// upstream's ("<group/version> <Kind> is deprecated in v1.33+[,
// unavailable in v1.x+][; use <group/version> <Kind>]"), and requests to
// the version carry it, with upstream's audit annotations and metric.
func withLifecycle(v registry.Version, obj any, gvk schema.GroupVersionKind) registry.Version {
	d, ok := obj.(deprecatedIn)
	if !ok {
		return v
	}
	major, minor := d.APILifecycleDeprecated()
	if major == 0 && minor == 0 || !version.Serves(major, minor) {
		return v
	}
	v.Deprecated = true
	v.DeprecationWarning = fmt.Sprintf("%s %s is deprecated in v%d.%d+", gvk.GroupVersion(), gvk.Kind, major, minor)
	if r, ok := obj.(removedIn); ok {
		if major, minor := r.APILifecycleRemoved(); major != 0 || minor != 0 {
			v.RemovedRelease = fmt.Sprintf("%d.%d", major, minor)
			v.DeprecationWarning += ", unavailable in v" + v.RemovedRelease + "+"
		}
	}
	if r, ok := obj.(replacedBy); ok {
		if to := r.APILifecycleReplacement(); !to.Empty() {
			v.DeprecationWarning += fmt.Sprintf("; use %s %s", to.GroupVersion(), to.Kind)
		}
	}
	return v
}
