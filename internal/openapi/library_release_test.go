package openapi

import (
	"runtime"
	"testing"
)

// A released library is collected once unused, and the next use builds
// it again, whole.
func TestReleaseLibrary(t *testing.T) {
	n := len(lib().models)
	ReleaseLibrary()
	runtime.GC()
	runtime.GC()
	if libWeak.Value() != nil {
		t.Log("library still held after release (something else holds it)")
	}
	if got := len(lib().models); got != n || n == 0 {
		t.Fatalf("rebuilt library has %d models, want %d", got, n)
	}
	if libStrong.Load() == nil {
		t.Fatal("library not held again after use")
	}
}
