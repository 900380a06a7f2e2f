// Package e2e drives a real crdserver binary the way users do: it builds
// cmd/crdserver once, starts it on fresh data directories, and talks to it
// with the real kubectl and with client-go.
//
// Every test starts its own server (or several, for restarts), so tests are
// independent and may run in parallel. Set CRDSERVER_BIN to test a binary
// built elsewhere instead of building one.
package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binary is the crdserver executable every test starts.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if b := os.Getenv("CRDSERVER_BIN"); b != "" {
		binary = b
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "crdserver-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "crdserver")
	if err := build(binary); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building crdserver:", err)
		return 1
	}
	return m.Run()
}

// build compiles ./cmd/crdserver from the module root into out.
func build(out string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", out, "./cmd/crdserver")
	cmd.Dir = root
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/crdserver in %s: %w\n%s", root, err, output.String())
	}
	return nil
}

// moduleRoot is the directory of the go.mod that holds this package.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside a Go module (go env GOMOD = %q)", gomod)
	}
	return filepath.Dir(gomod), nil
}
