//go:build !upstreamenvtest

package memcached_test

// The one import that differs from a suite on controller-runtime's
// envtest; env_envtest_test.go (build tag upstreamenvtest) is that suite.
import "github.com/crdserver/crdserver/crdtest/envtest"

type (
	environment           = envtest.Environment
	webhookInstallOptions = envtest.WebhookInstallOptions
)

// hasGarbageCollector: crdserver deletes what a deleted object owned.
const hasGarbageCollector = true
