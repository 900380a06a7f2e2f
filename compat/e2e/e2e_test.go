// Package e2e is upstream Kubernetes' end-to-end test suite, built from the
// Go module proxy, with the API machinery specs linked in, and the auth,
// instrumentation, kubectl, network and storage ones, whose API specs need
// no nodes. It runs against any API server named by --kubeconfig; cmd/run
// builds it, starts a crdserver (or a kube-apiserver) and runs the subset
// that needs no nodes.
//
// The flags are upstream's: the framework's (--kubeconfig, --provider,
// --report-dir, …) and Ginkgo's (--ginkgo.focus, --ginkgo.skip, …).
package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"k8s.io/kubernetes/test/e2e"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"
	testfixtures "k8s.io/kubernetes/test/fixtures"

	// The specs: importing a package registers its Ginkgo specs.
	_ "k8s.io/kubernetes/test/e2e/apimachinery"
	_ "k8s.io/kubernetes/test/e2e/auth"
	_ "k8s.io/kubernetes/test/e2e/instrumentation"
	_ "k8s.io/kubernetes/test/e2e/kubectl"
	_ "k8s.io/kubernetes/test/e2e/network"
	_ "k8s.io/kubernetes/test/e2e/storage"
)

func TestMain(m *testing.M) {
	// The framework reads its settings from flags only; they must all be
	// registered before the one flag.Parse.
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected arguments: %q\n", flag.Args())
		os.Exit(2)
	}
	// Manifests some specs load by path, served from the embedded copies.
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	testfiles.AddFileSource(testfixtures.GetTestFixturesFS())
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

// TestE2E runs the Ginkgo suite: every registered spec that --ginkgo.focus
// and --ginkgo.skip select.
func TestE2E(t *testing.T) {
	e2e.RunE2ETests(t)
}
