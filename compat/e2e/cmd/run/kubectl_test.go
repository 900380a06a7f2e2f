package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestSplitWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{" get  crontabs -o wide ", []string{"get", "crontabs", "-o", "wide"}},
		{`get cm -o 'jsonpath={.items[*].metadata.name}'`, []string{"get", "cm", "-o", "jsonpath={.items[*].metadata.name}"}},
		{`-o "custom-columns=NAME:.metadata.name, X:.a\"b"`, []string{"-o", `custom-columns=NAME:.metadata.name, X:.a"b`}},
		{`a\ b c''d ""`, []string{"a b", "cd", ""}},
	} {
		got, err := splitWords(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{`a 'b`, `a "b`} {
		if _, err := splitWords(in); err == nil {
			t.Errorf("splitWords(%q) did not fail", in)
		}
	}
}

func TestReadRequestsKubectl(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "in.yaml"), []byte("kind: X\n"), 0o644)
	file := filepath.Join(dir, "r.txt")
	os.WriteFile(file, []byte("GET /api\n"+
		"kubectl get cm -o 'jsonpath={.items[*].metadata.name}'\n"+
		"setup kubectl apply -f - stdin=@in.yaml kubectl=1.29\n"+
		"wait kubectl get crontabs\n"), 0o644)
	reqs, err := readRequests(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 4 || reqs[0].kubectl != nil {
		t.Fatalf("readRequests = %+v", reqs)
	}
	if r := reqs[1]; r.mode != "" || !reflect.DeepEqual(r.kubectl, []string{"get", "cm", "-o", "jsonpath={.items[*].metadata.name}"}) || r.kubectlVersion != "1.33" || r.stdin != nil {
		t.Errorf("line 2 = %+v", r)
	}
	if r := reqs[2]; r.mode != "setup" || !reflect.DeepEqual(r.kubectl, []string{"apply", "-f", "-"}) || r.kubectlVersion != "1.29" || string(r.stdin) != "kind: X\n" {
		t.Errorf("line 3 = %+v", r)
	}
	if r := reqs[3]; r.mode != "wait" || !reflect.DeepEqual(r.kubectl, []string{"get", "crontabs"}) {
		t.Errorf("line 4 = %+v", r)
	}
}

func TestMaskKubectl(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"ages in a table, and the widths they make",
			"NAME   SPEC   AGE\nx      a      5s\nlonger b      10m\n",
			"NAME  SPEC  AGE\nx  a  <age>\nlonger b  <age>\n"},
		{"ages side by side, a compound one",
			"x   3m20s   2d   4y10d\n", "x  <age>  <age>  <age>\n"},
		{"a word that only starts like an age",
			"5sec 1m2 x5s\n", "5sec 1m2 x5s\n"},
		{"indentation is kept",
			"metadata:\n  name: x\n    y:    z\n", "metadata:\n  name: x\n    y:  z\n"},
		{"times",
			"creationTimestamp: \"2026-11-30T12:06:38Z\"\nat 2026-11-30T12:06:38.123456+01:00\nStart Time: Mon, 30 Nov 2026 12:06:38 +0000\nRenew: 2026-11-30 12:06:38.5 +0000 UTC\n",
			"creationTimestamp: \"<time>\"\nat <time>\nStart Time: <time>\nRenew: <time>\n"},
		{"uids and resourceVersions",
			"uid: 9d2cb16c-1076-40fe-810b-dfeb04bd669c\nresourceVersion: \"61\"\n{\"resourceVersion\":\"61\"}\nresourceVersion=7\n",
			"uid: <uid>\nresourceVersion: <rv>\n{\"resourceVersion\":<rv>}\nresourceVersion=<rv>\n"},
		{"describe's resourceVersion",
			"  Resource Version:  261\n", "  Resource Version:  <rv>\n"},
		{"a klog line",
			"W1130 12:21:51.462472  19809 schema.go:145] cannot perform\n", "W<klog> schema.go:145] cannot perform\n"},
		{"kubectl diff's files and times",
			"--- /tmp/LIVE-795375212/v1.ConfigMap.kc.applied\t2026-11-30 12:19:56.805089313 +0000\n",
			"--- /tmp/LIVE-<n>/v1.ConfigMap.kc.applied\t<time>\n"},
		{"addresses and cluster IPs",
			"running at https://127.0.0.1:41234\nIP: 10.0.0.117\nnot 110.0.0.1\n",
			"running at https://127.0.0.1:<port>\nIP: 10.0.0.<ip>\nnot 110.0.0.1\n"},
		{"generated names",
			"job.batch/pi-x7q2z created\nconfigmap/kube-root-ca.crt\n",
			"job.batch/pi-<suffix> created\nconfigmap/kube-root-ca.crt\n"},
		{"tokens",
			"eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOlsiYSJdfQ.c2lnbmF0dXJl\n", "<token>\n"},
		{"a last line without a newline gets one", "x", "x\n"},
		{"nothing", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := maskKubectl(tc.in); got != tc.want {
				t.Errorf("maskKubectl(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestLineDiff(t *testing.T) {
	got := lineDiff("a\nb\nc", "a\nB\nc")
	want := "      a\n    - b\n    + B\n      c\n"
	if got != want {
		t.Errorf("lineDiff\n got %q\nwant %q", got, want)
	}
}
