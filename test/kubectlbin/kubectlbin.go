// Package kubectlbin finds the kubectl that crdserver's tests and the
// upstream e2e runner drive: $KUBECTL if set, else kubectl on PATH, else
// one built from the module in test/kubectl (upstream's kubectl at the
// Kubernetes version crdserver serves, fetched through the Go module
// proxy). So Go is all a machine needs to run the tests.
//
// The built binary is cached in the user's cache directory, keyed by the
// kubectl version and the content of test/kubectl (see toolbin).
package kubectlbin

import (
	"fmt"
	"regexp"

	"github.com/crdserver/crdserver/test/toolbin"
)

// NoPathEnv names the environment variable that, set to a non-empty value,
// makes Find ignore kubectl on PATH and use the built one: the path a
// machine without kubectl takes.
const NoPathEnv = "CRDSERVER_TEST_NO_PATH_KUBECTL"

var finder = toolbin.Finder{Name: "kubectl", Env: "KUBECTL", NoPathEnv: NoPathEnv, Build: Build}

// Find returns the kubectl to run, building it on first use if needed. It
// is safe for concurrent use; the answer is computed once per process.
func Find() (string, error) { return finder.Find() }

// kubectlRequire is the require line of k8s.io/kubectl in test/kubectl's
// go.mod: v0.X.Y is the library of Kubernetes v1.X.Y.
var kubectlRequire = regexp.MustCompile(`(?m)^\s*(?:require\s+)?k8s\.io/kubectl\s+v0\.(\d+)\.(\d+)\s*$`)

// Build builds the kubectl module in src into the cache, unless the cache
// already holds a binary of the same source, and returns its path.
func Build(src string) (string, error) {
	m, err := toolbin.Require(src, kubectlRequire)
	if err != nil {
		return "", fmt.Errorf("kubectlbin: %w", err)
	}
	minor, patch := string(m[1]), string(m[2])
	version := "v1." + minor + "." + patch

	// The version is stamped as upstream's release build does, so that
	// `kubectl version` reports it and kubectl's version-skew warning
	// compares real versions.
	var ldflags []string
	for _, pkg := range []string{"k8s.io/client-go/pkg/version", "k8s.io/component-base/version"} {
		ldflags = append(ldflags,
			"-X", pkg+".gitVersion="+version,
			"-X", pkg+".gitMajor=1",
			"-X", pkg+".gitMinor="+minor,
			"-X", pkg+".gitTreeState=clean")
	}
	exe, err := toolbin.Tool{
		Name: "kubectl", Dir: src, Package: ".", Version: version, LDFlags: ldflags,
		Files: []string{"go.mod", "go.sum", "main.go"},
	}.Build()
	if err != nil {
		return "", fmt.Errorf("kubectlbin: %w", err)
	}
	return exe, nil
}
