package main

import "testing"

func TestSortMembers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b":1,"a":{"d":[{"y":1,"x":2}],"c":{}}}` + "\n", `{"a":{"c":{},"d":[{"x":2,"y":1}]},"b":1}` + "\n"},
		// Indented: each member keeps its text, the separators stay.
		{"{\n  \"kind\": \"X\",\n  \"apiVersion\": \"v1\",\n  \"a\": [\n    2,\n    1\n  ]\n}",
			"{\n  \"a\": [\n    2,\n    1\n  ],\n  \"apiVersion\": \"v1\",\n  \"kind\": \"X\"\n}"},
		// Separators that differ keep the order, so the difference shows.
		{"{\"b\":1,\n\"a\":2, \"c\":3}", "{\"b\":1,\n\"a\":2, \"c\":3}"},
		// Strings with brackets and escapes; events one after another.
		{`{"b":"}\"","a":"{"}` + "\n" + `{"d":[],"c":null}` + "\n", `{"a":"{","b":"}\""}` + "\n" + `{"c":null,"d":[]}` + "\n"},
		// Not JSON: as it is.
		{"404 page not found\n", "404 page not found\n"},
		{`{"a":`, `{"a":`},
	} {
		if got := string(sortMembers([]byte(tc.in))); got != tc.want {
			t.Errorf("sortMembers(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestRawText(t *testing.T) {
	in := "{\n  \"metadata\": {\n    \"uid\": \"9d2cb16c-1076-40fe-810b-dfeb04bd669c\",\n    \"resourceVersion\": \"61\",\n" +
		"    \"creationTimestamp\": \"2026-11-29T10:59:29Z\"\n  },\n  \"serverAddress\": \"127.0.0.1:41234\",\n  \"cells\": [\"12s\", \"x\"]\n}"
	want := `"{\n  \"cells\": [\"-\", \"x\"],\n  \"metadata\": {\n    \"creationTimestamp\": \"-\",\n    \"resourceVersion\": \"-\",\n    \"uid\": \"-\"\n  },\n  \"serverAddress\": \"127.0.0.1:-\"\n}"`
	if got := rawText([]byte(in)); got != want {
		t.Errorf("rawText\n got %s\nwant %s", got, want)
	}
}
