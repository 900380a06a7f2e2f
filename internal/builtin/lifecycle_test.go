package builtin

import (
	"testing"

	"github.com/crdserver/crdserver/internal/registry"
)

// TestLifecycle: a built-in version is deprecated exactly when k8s.io/api
// says it is by the release crdserver serves, with upstream's warning.
func TestLifecycle(t *testing.T) {
	deprecated := map[string]registry.Version{}
	for _, d := range []*registry.Definition{
		ConfigMaps(), Secrets(), Endpoints(), EndpointSlices(), Services(nil, nil), PodTemplates(), Leases(),
		Deployments(), ReplicaSets(), StatefulSets(), DaemonSets(), Jobs(), CronJobs(),
		HorizontalPodAutoscalers(), PodDisruptionBudgets(), PriorityClasses(), RuntimeClasses(),
		NetworkPolicies(), IngressClasses(), ResourceQuotas(), LimitRanges(), CSINodes(),
		CertificateSigningRequests(), ValidatingWebhookConfigurations(), MutatingWebhookConfigurations(),
	} {
		for _, v := range d.Versions {
			if v.Deprecated {
				deprecated[d.Resource+"/"+v.Name] = v
			}
		}
	}
	want := map[string]registry.Version{
		"endpoints/v1": {
			DeprecationWarning: "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice",
		},
		"validatingwebhookconfigurations/v1beta1": {
			DeprecationWarning: "admissionregistration.k8s.io/v1beta1 ValidatingWebhookConfiguration is deprecated in v1.16+, unavailable in v1.22+; use admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration",
			RemovedRelease:     "1.22",
		},
		"mutatingwebhookconfigurations/v1beta1": {
			DeprecationWarning: "admissionregistration.k8s.io/v1beta1 MutatingWebhookConfiguration is deprecated in v1.16+, unavailable in v1.22+; use admissionregistration.k8s.io/v1 MutatingWebhookConfiguration",
			RemovedRelease:     "1.22",
		},
	}
	for k, w := range want {
		got, ok := deprecated[k]
		switch {
		case !ok:
			t.Errorf("%s: not deprecated", k)
		case got.DeprecationWarning != w.DeprecationWarning || got.RemovedRelease != w.RemovedRelease:
			t.Errorf("%s: warning %q, removed in %q; want %q, %q", k, got.DeprecationWarning, got.RemovedRelease, w.DeprecationWarning, w.RemovedRelease)
		}
	}
	for k := range deprecated {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: deprecated", k)
		}
	}
}
