package handler

import (
	"runtime"
	"testing"
)

// TestPatchMediaType: the patch type is what comes before the first ";",
// taken as it is, as upstream's patch handler takes it.
func TestPatchMediaType(t *testing.T) {
	for _, tc := range []struct {
		line        int
		contentType string
		want        string
	}{
		{line(), "application/merge-patch+json", "application/merge-patch+json"},
		{line(), "application/merge-patch+json; charset=utf-8", "application/merge-patch+json"},
		{line(), "application/merge-patch+json;", "application/merge-patch+json"},
		{line(), "application/merge-patch+json ;charset=utf-8", "application/merge-patch+json "},
		{line(), "APPLICATION/MERGE-PATCH+JSON", "APPLICATION/MERGE-PATCH+JSON"},
		{line(), ";charset=utf-8", ";charset=utf-8"},
		{line(), "", ""},
	} {
		if got := patchMediaType(tc.contentType); got != tc.want {
			t.Errorf("line %d: patchMediaType(%q) = %q, want %q", tc.line, tc.contentType, got, tc.want)
		}
	}
}

// TestRestfulConsumes: a built-in's routes take a Content-Type one of
// whose comma-separated media types, without parameters and spaces around,
// is a patch type, compared case-sensitively.
func TestRestfulConsumes(t *testing.T) {
	for _, tc := range []struct {
		line        int
		contentType string
		want        bool
	}{
		{line(), "application/merge-patch+json", true},
		{line(), " application/merge-patch+json ; charset=utf-8", true},
		{line(), "text/plain, application/json-patch+json", true},
		{line(), "application/json-patch+json,text/plain", true},
		{line(), "APPLICATION/MERGE-PATCH+JSON", false},
		{line(), "application/json", false},
		{line(), "application/merge-patch+json\t", false},
		{line(), "", false},
	} {
		if got := restfulConsumes(tc.contentType, builtinPatchTypes); got != tc.want {
			t.Errorf("line %d: restfulConsumes(%q) = %v, want %v", tc.line, tc.contentType, got, tc.want)
		}
	}
}

// line is the line of its caller: a table case's.
func line() int {
	_, _, l, _ := runtime.Caller(1)
	return l
}
