package main

import (
	"strings"
	"testing"
)

const pageWarning = "Warning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.\n"

// TestPageForm checks that two servers' pages compare alike where they
// differ by design alone (times, versions, flags, the delimiter), and
// not where their form differs.
func TestPageForm(t *testing.T) {
	statusz := func(d, started, goVersion, binary, paths string) string {
		return strings.NewReplacer("<D>", d).Replace("\napiserver statusz\n" + pageWarning + "\nStarted<D> " + started +
			"\nUp<D> 0 hr 00 min 03 sec\nGo version<D> " + goVersion + "\nBinary version<D> " + binary +
			"\nEmulation version<D> 1.37\nPaths<D> " + paths + "\n")
	}
	const paths = "/flagz /healthz /livez /metrics /readyz /statusz /version"
	upstream := statusz(":", "Tue Dec  1 04:03:41 UTC 2026", "go1.26.8", "1.37.2", paths)
	flagz := func(lines string) string { return "\napiserver flagz\n" + pageWarning + lines }
	for _, tc := range []struct {
		name       string
		ctype      string
		a, b       string
		equal      bool
		wantInForm string
	}{
		{"statusz, other delimiter and values", "text/plain; charset=utf-8",
			upstream, statusz(": ", "Tue Dec  1 05:00:00 UTC 2026", "go1.26.9", "1.37.0+crdserver.dev", paths), true,
			`Paths<D> /flagz /healthz /livez /metrics /readyz /statusz /version`},
		{"statusz, delimiter space", "text/plain; charset=utf-8", upstream, statusz(" ", "x", "y", "z", paths), true, ""},
		{"statusz, other paths", "text/plain; charset=utf-8", upstream, statusz("=", "x", "y", "z", "/healthz"), false, ""},
		{"statusz, no warning", "text/plain; charset=utf-8", upstream, strings.Replace(upstream, "Warning", "Note", 1), false, ""},
		{"statusz, delimiters mixed", "text/plain; charset=utf-8", upstream, strings.Replace(upstream, "Up:", "Up=", 1), false, ""},
		{"flagz, other flags and delimiter", "text/plain; charset=utf-8",
			flagz("admission-control-config-file:\nallow-privileged:false\nv:2\n"), flagz("anonymous-auth=false\ndata-dir=.crdserver\n"), true,
			"(flags sorted: true)"},
		{"flagz, unsorted", "text/plain; charset=utf-8", flagz("a: 1\nb: 2\n"), flagz("b: 2\na: 1\n"), false, ""},
		{"flagz, delimiters mixed", "text/plain; charset=utf-8", flagz("a: 1\nb: 2\n"), flagz("a: 1\nb=2\n"), false, ""},
		{"object, other values", "application/json;g=config.k8s.io;v=v1beta1;as=Statusz",
			`{"kind":"Statusz","apiVersion":"config.k8s.io/v1beta1","metadata":{"name":"apiserver"},"startTime":"2026-12-01T04:03:41Z","uptimeSeconds":3,"goVersion":"go1.26.8","binaryVersion":"1.37.2","emulationVersion":"1.37","paths":["/flagz"]}` + "\n",
			`{"kind":"Statusz","apiVersion":"config.k8s.io/v1beta1","metadata":{"name":"apiserver"},"startTime":"2026-12-01T05:00:00Z","uptimeSeconds":300,"goVersion":"go1.26.9","binaryVersion":"1.37.0+crdserver.dev","emulationVersion":"1.37","paths":["/flagz"]}` + "\n",
			true, `"startTime":"(string)"`},
		{"object, indented or not", "application/json;g=config.k8s.io;v=v1beta1;as=Flagz",
			`{"kind":"Flagz"}` + "\n", "{\n  \"kind\": \"Flagz\"\n}", false, ""},
		{"object, YAML", "application/yaml;g=config.k8s.io;v=v1alpha1;as=Flagz",
			"apiVersion: config.k8s.io/v1alpha1\nflags:\n  a: \"1\"\nkind: Flagz\nmetadata:\n  name: apiserver\n",
			"apiVersion: config.k8s.io/v1alpha1\nflags:\n  b: \"2\"\nkind: Flagz\nmetadata:\n  name: apiserver\n", true, `"flags":"(map[string]interface {})"`},
	} {
		a, b := pageForm(tc.ctype, []byte(tc.a)), pageForm(tc.ctype, []byte(tc.b))
		if (a == b) != tc.equal {
			t.Errorf("%s: alike %v, want %v:\n%s\n%s", tc.name, a == b, tc.equal, a, b)
		}
		if !strings.Contains(a, tc.wantInForm) {
			t.Errorf("%s: form %s, want it to hold %s", tc.name, a, tc.wantInForm)
		}
	}
}
