// Package kubectlbin finds the kubectl that crdserver's tests and the
// upstream e2e runner drive: $KUBECTL if set, else kubectl on PATH, else
// one built from the module in test/kubectl (upstream's kubectl at the
// Kubernetes version crdserver serves, fetched through the Go module
// proxy). So Go is all a machine needs to run the tests.
//
// The built binary is cached in the user's cache directory
// (os.UserCacheDir()/crdserver/kubectl/<version>-<hash>/kubectl), keyed by
// the kubectl version and the content of test/kubectl, and reused by every
// later run. Concurrent builders each write a temporary file and rename it
// into place, so a reader never sees half a binary.
package kubectlbin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
)

// NoPathEnv names the environment variable that, set to a non-empty value,
// makes Find ignore kubectl on PATH and use the built one: the path a
// machine without kubectl takes.
const NoPathEnv = "CRDSERVER_TEST_NO_PATH_KUBECTL"

var found struct {
	once sync.Once
	path string
	err  error
}

// Find returns the kubectl to run, building it on first use if needed.
// It is safe for concurrent use; the answer is computed once per process.
func Find() (string, error) {
	found.once.Do(func() { found.path, found.err = find() })
	return found.path, found.err
}

func find() (string, error) {
	if p := os.Getenv("KUBECTL"); p != "" {
		return p, nil
	}
	if os.Getenv(NoPathEnv) == "" {
		if p, err := exec.LookPath("kubectl"); err == nil {
			return p, nil
		}
	}
	src, err := sourceDir()
	if err != nil {
		return "", err
	}
	return Build(src)
}

// sourceDir is test/kubectl of the crdserver checkout this package was
// compiled from, or, when the binary was built with -trimpath, of the
// checkout the go command resolves the crdserver module to from the
// working directory.
func sourceDir() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Join(filepath.Dir(file), "..", "kubectl")
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/crdserver/crdserver").Output()
	if err != nil {
		return "", fmt.Errorf("kubectlbin: locating the crdserver module: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "test", "kubectl")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("kubectlbin: no kubectl module: %w", err)
	}
	return dir, nil
}

// kubectlRequire is the require line of k8s.io/kubectl in test/kubectl's
// go.mod: v0.X.Y is the library of Kubernetes v1.X.Y.
var kubectlRequire = regexp.MustCompile(`(?m)^\s*(?:require\s+)?k8s\.io/kubectl\s+v0\.(\d+)\.(\d+)\s*$`)

// Build builds the kubectl module in src into the cache, unless the cache
// already holds a binary of the same source, and returns its path.
func Build(src string) (string, error) {
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("kubectlbin: %w", err)
	}
	m := kubectlRequire.FindSubmatch(gomod)
	if m == nil {
		return "", fmt.Errorf("kubectlbin: %s requires no k8s.io/kubectl v0.X.Y", filepath.Join(src, "go.mod"))
	}
	minor, patch := string(m[1]), string(m[2])
	version := "v1." + minor + "." + patch

	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum", "main.go"} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return "", fmt.Errorf("kubectlbin: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir() // no home directory: still reused until reboot
	}
	dir := filepath.Join(cache, "crdserver", "kubectl",
		fmt.Sprintf("%s-%s-%s_%s", version, hex.EncodeToString(h.Sum(nil)[:6]), runtime.GOOS, runtime.GOARCH))
	exe := filepath.Join(dir, "kubectl")
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	if fi, err := os.Stat(exe); err == nil && fi.Mode().IsRegular() {
		return exe, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("kubectlbin: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".kubectl-*")
	if err != nil {
		return "", fmt.Errorf("kubectlbin: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op

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
	cmd := exec.Command("go", "build", "-o", tmp.Name(), "-ldflags", strings.Join(ldflags, " "), ".")
	cmd.Dir = src
	// The module stands alone: no workspace of the caller's may change
	// its dependencies.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kubectlbin: building kubectl %s in %s: %w\n%s", version, src, err, out.String())
	}
	if err := os.Rename(tmp.Name(), exe); err != nil {
		// Windows refuses to replace a file another process runs; the
		// winner of the race left a usable binary.
		if _, statErr := os.Stat(exe); statErr == nil {
			return exe, nil
		}
		return "", fmt.Errorf("kubectlbin: %w", err)
	}
	return exe, nil
}
