// Package helmbin finds the helm that crdserver's end-to-end tests drive:
// $HELM if set, else helm on PATH, else one built from the module in
// test/helm (upstream's helm v3 at the version pinned there, with the
// Kubernetes libraries crdserver uses, fetched through the Go module
// proxy) and cached as toolbin caches every tool.
package helmbin

import (
	"fmt"
	"regexp"

	"github.com/crdserver/crdserver/test/toolbin"
)

// NoPathEnv names the environment variable that, set to a non-empty value,
// makes Find ignore helm on PATH and use the built one.
const NoPathEnv = "CRDSERVER_TEST_NO_PATH_HELM"

var finder = toolbin.Finder{Name: "helm", Env: "HELM", NoPathEnv: NoPathEnv, Build: Build}

// Find returns the helm to run, building it on first use if needed. It
// is safe for concurrent use; the answer is computed once per process.
func Find() (string, error) { return finder.Find() }

// helmRequire is the require line of helm.sh/helm/v3 in test/helm's go.mod.
var helmRequire = regexp.MustCompile(`(?m)^\s*(?:require\s+)?helm\.sh/helm/v3\s+(v3\.\d+\.\d+)\b`)

// Build builds the helm of the module in src into the cache, unless the
// cache already holds a binary of the same source, and returns its path.
func Build(src string) (string, error) {
	m, err := toolbin.Require(src, helmRequire)
	if err != nil {
		return "", fmt.Errorf("helmbin: %w", err)
	}
	version := string(m[1])
	exe, err := toolbin.Tool{
		Name: "helm", Dir: src, Package: "helm.sh/helm/v3/cmd/helm", Version: version,
		// Stamped as helm's release build does, so `helm version` says it.
		LDFlags: []string{"-X", "helm.sh/helm/v3/internal/version.version=" + version, "-X", "helm.sh/helm/v3/internal/version.gitTreeState=clean"},
		Files:   []string{"go.mod", "go.sum"},
	}.Build()
	if err != nil {
		return "", fmt.Errorf("helmbin: %w", err)
	}
	return exe, nil
}
