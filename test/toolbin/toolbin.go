// Package toolbin builds the command-line tools crdserver's tests drive
// (kubectl, helm) from the modules under test/ that pin them, through the
// Go module proxy, so Go is all a machine needs to run the tests. Each
// tool's module stands alone, so that its dependencies stay out of
// crdserver's go.mod and out of `go test ./...`.
//
// A built binary is cached in the user's cache directory
// (os.UserCacheDir()/crdserver/<name>/<version>-<hash>-<os>_<arch>/<name>),
// keyed by the tool's version and the content of its module's files, and
// reused by every later run. Concurrent builders each write a temporary
// file and rename it into place, so a reader never sees half a binary.
package toolbin

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

// Tool is one tool to build.
type Tool struct {
	// Name is the binary's name ("kubectl").
	Name string
	// Dir is the tool's module directory (see SourceDir).
	Dir string
	// Package is what `go build` builds in Dir: "." for a main package
	// of the module's own, or a tool's import path.
	Package string
	// Version is the tool's version, for the cache key and messages.
	Version string
	// LDFlags are passed to the linker (version stamps).
	LDFlags []string
	// Files are the files of Dir whose content keys the cache.
	Files []string
}

// SourceDir is test/<name> of the crdserver checkout this package was
// compiled from, or, when the binary was built with -trimpath, of the
// checkout the go command resolves the crdserver module to from the
// working directory.
func SourceDir(name string) (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Join(filepath.Dir(file), "..", name)
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/crdserver/crdserver").Output()
	if err != nil {
		return "", fmt.Errorf("locating the crdserver module: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "test", name)
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("no %s module: %w", name, err)
	}
	return dir, nil
}

// Build builds t into the cache, unless the cache already holds a binary
// of the same source, and returns its path.
func (t Tool) Build() (string, error) {
	h := sha256.New()
	for _, name := range t.Files {
		data, err := os.ReadFile(filepath.Join(t.Dir, name))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir() // no home directory: still reused until reboot
	}
	dir := filepath.Join(cache, "crdserver", t.Name,
		fmt.Sprintf("%s-%s-%s_%s", t.Version, hex.EncodeToString(h.Sum(nil)[:6]), runtime.GOOS, runtime.GOARCH))
	exe := filepath.Join(dir, t.Name)
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	if fi, err := os.Stat(exe); err == nil && fi.Mode().IsRegular() {
		return exe, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "."+t.Name+"-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op

	cmd := exec.Command("go", "build", "-o", tmp.Name(), "-ldflags", strings.Join(t.LDFlags, " "), t.Package)
	cmd.Dir = t.Dir
	// The module stands alone: no workspace of the caller's may change
	// its dependencies.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s %s in %s: %w\n%s", t.Name, t.Version, t.Dir, err, out.String())
	}
	if err := os.Rename(tmp.Name(), exe); err != nil {
		// Windows refuses to replace a file another process runs; the
		// winner of the race left a usable binary.
		if _, statErr := os.Stat(exe); statErr == nil {
			return exe, nil
		}
		return "", err
	}
	return exe, nil
}

// Finder finds a tool once per process: the binary $Env names if set,
// else Name on PATH (unless $NoPathEnv is set), else Build's of the
// module in test/<Name>. Its zero value is not usable; declare one per
// tool as a package variable. Find is safe for concurrent use.
type Finder struct {
	Name, Env, NoPathEnv string
	// Build builds the tool from its module directory.
	Build func(src string) (string, error)

	once sync.Once
	path string
	err  error
}

// Find returns the tool's path, building it on first use if needed; the
// answer is computed once.
func (f *Finder) Find() (string, error) {
	f.once.Do(func() { f.path, f.err = f.find() })
	return f.path, f.err
}

func (f *Finder) find() (string, error) {
	if p := os.Getenv(f.Env); p != "" {
		return p, nil
	}
	if os.Getenv(f.NoPathEnv) == "" {
		if p, err := exec.LookPath(f.Name); err == nil {
			return p, nil
		}
	}
	src, err := SourceDir(f.Name)
	if err != nil {
		return "", fmt.Errorf("%sbin: %w", f.Name, err)
	}
	return f.Build(src)
}

// Require returns the submatches of re, a require line's pattern, in the
// go.mod of the module in dir: the version of the tool it pins.
func Require(dir string, re *regexp.Regexp) ([][]byte, error) {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, err
	}
	m := re.FindSubmatch(gomod)
	if m == nil {
		return nil, fmt.Errorf("%s has no require line matching %s", filepath.Join(dir, "go.mod"), re)
	}
	return m, nil
}
