//go:build upstreamenvtest

package memcached_test

// The same suite on controller-runtime's envtest, with kube-apiserver and
// etcd from KUBEBUILDER_ASSETS: compat/envtest/run.sh builds both from the
// Go module proxy and runs the suite on each side.
import "sigs.k8s.io/controller-runtime/pkg/envtest"

type (
	environment           = envtest.Environment
	webhookInstallOptions = envtest.WebhookInstallOptions
)

// hasGarbageCollector: envtest runs no controller manager, so owned
// objects outlive their owner there.
const hasGarbageCollector = false
