package server

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/crdserver/crdserver/internal/health"
)

// postStartHook is a kube-apiserver post-start hook that crdserver does
// the work of: upstream lists each as the check poststarthook/NAME of
// /healthz, /livez and /readyz, failing until the hook has returned; done
// reports whether crdserver's counterpart has done what the hook waits
// for. Only hooks with such a counterpart are listed.
type postStartHook struct {
	name string
	done func() bool
}

// postStartHooks are in the order kube-apiserver 1.37 lists them. Adding
// one is one line.
func (s *Server) postStartHooks(apf *apfConfig) []postStartHook {
	crds, _ := s.stores.Store(crdGR)
	hooks := []postStartHook{
		// Admission reads its webhooks and policies from these caches.
		{"start-apiserver-admission-initializer", func() bool { return s.stores.readyOf(admissionGRs...) }},
		// Every cache is started before the server listens; informer-sync
		// and storage-readiness say when they are filled.
		{"generic-apiserver-start-informers", func() bool { return s.stores != nil }},
		{"priority-and-fairness-config-consumer", apf.consumed.Load},
		{"start-apiextensions-informers", func() bool { return crds.Cache != nil }},
		{"start-apiextensions-controllers", s.crdControllersStarted.Load},
		// Every CRD in storage is served.
		{"crd-informer-synced", func() bool { return s.crds.served.Load() }},
		{"start-system-namespaces-controller", s.systemNamespacesEnsured.Load},
		// The identity Lease loop, which also deletes expired Leases.
		{"start-kube-apiserver-identity-lease-controller", s.leaseWritten.Load},
		{"start-kube-apiserver-identity-lease-garbage-collector", s.leaseWritten.Load},
		// Upstream's WatchCacheInitializationPostStartHook, GA and on in
		// 1.37: every watch cache filled.
		{"storage-readiness", s.stores.ready},
		{"start-service-ip-repair-controllers", func() bool { return s.ipRepaired.Load() && s.portsRepaired.Load() }},
	}
	if s.authz.mode == ModeRBAC {
		hooks = append(hooks, postStartHook{"rbac/bootstrap-roles", s.bootstrapped})
	}
	return append(hooks,
		postStartHook{"scheduling/bootstrap-system-priority-classes", s.priorityClassesEnsured.Load},
		postStartHook{"priority-and-fairness-config-producer", s.apfEnsured.Load},
		// The default/kubernetes Service, its Endpoints and EndpointSlice.
		postStartHook{"bootstrap-controller", s.kubernetesServiceEnsured.Load},
		postStartHook{"start-kubernetes-service-cidr-controller", s.serviceCIDREnsured.Load},
	)
}

// errHookNotFinished is upstream's reason for a hook not yet done.
var errHookNotFinished = errors.New("not finished")

// postStartHookChecks are the hooks' checks. As an upstream hook finishes
// once, a check that passed passes from then on: a cache that refills
// later (after a compaction) must not fail /livez and have the server
// restarted.
func postStartHookChecks(hooks []postStartHook) []health.Check {
	checks := make([]health.Check, len(hooks))
	for i, h := range hooks {
		var finished atomic.Bool
		checks[i] = health.Check{Name: "poststarthook/" + h.name, Func: func(context.Context) error {
			if finished.Load() {
				return nil
			}
			if !h.done() {
				return errHookNotFinished
			}
			finished.Store(true)
			return nil
		}}
	}
	return checks
}
