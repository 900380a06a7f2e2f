package apply

import (
	"testing"

	"github.com/crdserver/crdserver/internal/openapi"
)

// Building a definition's types uses the built-in models' library and
// lets it go once idle: the types keep copies of the models they need,
// and the library is a fifth of the heap objects of a server with 10,000
// cached objects.
func TestTypesReleaseLibrary(t *testing.T) {
	if _, err := NewTypes(widgets()).version("v1"); err != nil {
		t.Fatal(err)
	}
	if openapi.LibraryKept() {
		t.Error("the OpenAPI library is kept after the types were built, no release pending")
	}
	// Types built after the release build it again, and are whole.
	v, err := NewTypes(widgets()).version("v1")
	if err != nil || v.pt == nil {
		t.Fatalf("types built after the release: %v, %v", v, err)
	}
}
