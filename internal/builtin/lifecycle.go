package builtin

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/deprecation"

	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/version"
)

// withLifecycle is v marked deprecated when upstream's API installer marks
// it: obj, the version's Go type, says in k8s.io/api's lifecycle methods
// from which release it is deprecated (and removed, and by what replaced),
// and the release crdserver serves is that one or later. Requests to it
// then carry upstream's warning, audit annotations and metric.
func withLifecycle(v registry.Version, obj runtime.Object, gvk schema.GroupVersionKind) registry.Version {
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	major, minor, err := deprecation.MajorMinor(version.Get())
	if err != nil || !deprecation.IsDeprecated(obj, major, minor) {
		return v
	}
	v.Deprecated = true
	v.DeprecationWarning = deprecation.WarningMessage(obj)
	v.RemovedRelease = deprecation.RemovedRelease(obj)
	return v
}
