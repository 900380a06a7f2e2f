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

// TestParseResourceVersion: a resourceVersion reads as upstream's store
// reads it, none as 0 and anything but a revision as the parser's error.
func TestParseResourceVersion(t *testing.T) {
	for _, tc := range []struct {
		line int
		rv   string
		want uint64
		err  string
	}{
		{line(), "", 0, ""},
		{line(), "0", 0, ""},
		{line(), "42", 42, ""},
		{line(), "abc", 0, `strconv.ParseUint: parsing "abc": invalid syntax`},
		{line(), "-1", 0, `strconv.ParseUint: parsing "-1": invalid syntax`},
		{line(), "18446744073709551616", 0, `strconv.ParseUint: parsing "18446744073709551616": value out of range`},
	} {
		got, err := parseResourceVersion(tc.rv)
		var msg string
		if err != nil {
			msg = err.Error()
		}
		if (err == nil && got != tc.want) || msg != tc.err {
			t.Errorf("line %d: parseResourceVersion(%q) = %d, %q, want %d, %q", tc.line, tc.rv, got, msg, tc.want, tc.err)
		}
	}
}

// line is the line of its caller: a table case's.
func line() int {
	_, _, l, _ := runtime.Caller(1)
	return l
}
