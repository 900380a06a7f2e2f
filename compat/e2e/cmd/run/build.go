package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"

	"github.com/crdserver/crdserver/test/kubectlbin"
)

// paths of the checkout the runner belongs to.
type paths struct {
	root  string // the crdserver module
	suite string // compat/e2e, the module of the e2e test binary
}

// locate finds compat/e2e from this source file (go run keeps its path),
// else from the go command's idea of the current module.
func locate() (paths, error) {
	var suite string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		suite = filepath.Join(filepath.Dir(file), "..", "..")
	} else {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			return paths{}, fmt.Errorf("go env GOMOD: %w", err)
		}
		suite = filepath.Dir(strings.TrimSpace(string(out)))
	}
	p := paths{suite: filepath.Clean(suite), root: filepath.Clean(filepath.Join(suite, "..", ".."))}
	for _, f := range []string{filepath.Join(p.suite, "e2e_test.go"), filepath.Join(p.root, "cmd", "crdserver")} {
		if _, err := os.Stat(f); err != nil {
			return paths{}, fmt.Errorf("not in a crdserver checkout (run it with go run -C compat/e2e ./cmd/run): %w", err)
		}
	}
	return p, nil
}

var kubernetesRequire = regexp.MustCompile(`(?m)^\s*(?:require\s+)?k8s\.io/kubernetes\s+(v\S+)`)

// buildSuite returns the e2e test binary of compat/e2e, building it unless
// the cache holds one of the same source.
func buildSuite(ctx context.Context, p paths) (string, error) {
	return buildCached(ctx, p, "e2e.test", "upstream's e2e suite", "test", "-c", ".")
}

// buildKubeAPIServer returns upstream's kube-apiserver of the same
// Kubernetes release as the suite, building it unless the cache holds it.
func buildKubeAPIServer(ctx context.Context, p paths) (string, error) {
	return buildCached(ctx, p, "kube-apiserver", "kube-apiserver", "build", "k8s.io/kubernetes/cmd/kube-apiserver")
}

// buildCached runs `go args...` in compat/e2e, stamped with the Kubernetes
// version, into the cache as name, unless the cache already holds it. The
// cache is keyed by the Kubernetes version, the module's go.mod, go.sum and
// Go files, and the Go version; a binary is written under a temporary name
// and renamed into place, so concurrent runners never see half of one.
func buildCached(ctx context.Context, p paths, name, what string, args ...string) (string, error) {
	version, err := kubernetesVersion(p)
	if err != nil {
		return "", err
	}
	files, err := filepath.Glob(filepath.Join(p.suite, "*.go"))
	if err != nil {
		return "", err
	}
	files = append(files, filepath.Join(p.suite, "go.mod"), filepath.Join(p.suite, "go.sum"))
	sort.Strings(files)
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(data))
		h.Write(data)
	}
	dir := filepath.Join(cacheDir(), "upstream",
		fmt.Sprintf("%s-%s-%s_%s", version, hex.EncodeToString(h.Sum(nil)[:6]), runtime.GOOS, runtime.GOARCH))
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	fmt.Printf("building %s %s (once; minutes on a small machine)\n", what, version)
	// -ldflags goes before the package, the last argument.
	full := append(append([]string{}, args[:len(args)-1]...), "-ldflags", versionFlags(version), args[len(args)-1])
	if err := goBuild(ctx, p.suite, dir, bin, full...); err != nil {
		return "", err
	}
	return bin, nil
}

// goBuild runs `go args... -o tmp` in dir and renames tmp to out, which
// lies in cache (created if needed).
func goBuild(ctx context.Context, dir, cache, out string, args ...string) error {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(cache, "."+filepath.Base(out)+"-*")
	if err != nil {
		return err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	full := append(append([]string{}, args[:len(args)-1]...), "-o", tmp.Name(), args[len(args)-1])
	cmd := exec.CommandContext(ctx, "go", full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s in %s: %w\n%s", strings.Join(full, " "), dir, err, output.String())
	}
	return os.Rename(tmp.Name(), out)
}

// versionFlags stamps a binary with the Kubernetes version it was built
// from, as upstream's release build does, so that /version and the suite's
// version checks see v1.X.Y rather than v0.0.0.
func versionFlags(version string) string {
	minor := strings.SplitN(strings.TrimPrefix(version, "v1."), ".", 2)[0]
	var flags []string
	for _, pkg := range []string{"k8s.io/client-go/pkg/version", "k8s.io/component-base/version"} {
		flags = append(flags,
			"-X", pkg+".gitVersion="+version,
			"-X", pkg+".gitMajor=1",
			"-X", pkg+".gitMinor="+minor,
			"-X", pkg+".gitTreeState=clean")
	}
	return strings.Join(flags, " ")
}

// kubernetesVersion is the k8s.io/kubernetes release compat/e2e requires.
func kubernetesVersion(p paths) (string, error) {
	gomod, err := os.ReadFile(filepath.Join(p.suite, "go.mod"))
	if err != nil {
		return "", err
	}
	m := kubernetesRequire.FindSubmatch(gomod)
	if m == nil {
		return "", fmt.Errorf("%s requires no k8s.io/kubernetes", filepath.Join(p.suite, "go.mod"))
	}
	return string(m[1]), nil
}

// cacheDir is where built binaries are kept between runs.
func cacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "crdserver")
}

// findKubectl is the kubectl the kubectl-calling specs run.
func findKubectl() (string, error) {
	p, err := kubectlbin.Find()
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}
