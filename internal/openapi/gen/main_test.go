package main

import (
	"bytes"
	"os"
	"testing"
)

// builtin.json is what gen writes from upstream's models today: a change of
// roots, of the k8s.io/api version in go.mod or of how gen reads the
// models, that was not followed by go generate fails here.
func TestBuiltinJSONIsCurrent(t *testing.T) {
	dir, err := moduleDir()
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../builtin.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("internal/openapi/builtin.json is stale: run go generate ./internal/openapi")
	}
}
