package builtin

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"

	"github.com/crdserver/crdserver/internal/registry"
)

// TestConnectOptions checks the options of the connect subresources of
// pods and nodes as upstream's parameter codec decodes a query into
// them, written as their v1 types' JSON writes them.
func TestConnectOptions(t *testing.T) {
	pods, nodes := Pods(nil, nil).Hooks.(registry.ConnectOptioner), Nodes().Hooks.(registry.ConnectOptioner)
	for _, tc := range []struct {
		name    string
		hooks   registry.ConnectOptioner
		sub     string
		query   string
		subpath string
		want    string // the options' JSON; "-" for none
		err     string
	}{
		{line(), pods, "exec", "", "", `{"command":null}`, ""},
		{line(), pods, "exec", "command=sh&command=-c&command=echo+hi&container=app&stdin=true&tty=1", "", `{"command":["sh","-c","echo hi"],"container":"app","stdin":true,"tty":true}`, ""},
		{line(), pods, "exec", "stdin=FALSE&stdout=0&stderr=&tty=no", "", `{"command":null,"stderr":true,"tty":true}`, ""},
		{line(), pods, "exec", "container=a&container=b&command=", "", `{"command":[""],"container":"a"}`, ""},
		{line(), pods, "attach", "command=ls&stdout=true&container=", "", `{"stdout":true}`, ""},
		{line(), pods, "portforward", "", "", `{}`, ""},
		{line(), pods, "portforward", "ports=80,22&ports=8080", "", `{"ports":[80,22,8080]}`, ""},
		{line(), pods, "portforward", "ports=0,65535", "", `{"ports":[0,65535]}`, ""},
		{line(), pods, "portforward", "ports=65536", "", "", `cannot convert to []int32: strconv.ParseUint: parsing "65536": value out of range`},
		{line(), pods, "portforward", "ports=80,x", "", "", `cannot convert to []int32: strconv.ParseUint: parsing "x": invalid syntax`},
		{line(), pods, "portforward", "ports=", "", "", `cannot convert to []int32: strconv.ParseUint: parsing "": invalid syntax`},
		{line(), pods, "proxy", "path=/q", "/a//b/", `{"path":"/a//b/"}`, ""},
		{line(), pods, "proxy", "path=/q", "", `{}`, ""},
		{line(), pods, "log", "container=a", "", "-", ""},
		{line(), nodes, "proxy", "path=/q", "/metrics", `{"path":"/metrics"}`, ""},
	} {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		opts, ok, err := tc.hooks.ConnectOptions(tc.sub, q, tc.subpath)
		got := "-"
		if ok && err == nil {
			b, _ := json.Marshal(opts)
			got = string(b)
		}
		if tc.err != "" {
			if !ok || fmt.Sprint(err) != tc.err {
				t.Errorf("%s: %s?%s: %v, %v, want the error %q", tc.name, tc.sub, tc.query, ok, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %s?%s: %s, %v; want %s", tc.name, tc.sub, tc.query, got, err, tc.want)
		}
	}
}

// pods/proxy names [scheme:]name[:port] as upstream parses it; exec,
// attach and portforward name the pod alone.
func TestPodConnectName(t *testing.T) {
	nm := Pods(nil, nil).Hooks.(registry.ConnectNamer)
	for _, tc := range []struct {
		name, sub, id, want, err string
	}{
		{line(), "proxy", "web", "web", ""},
		{line(), "proxy", "web:8080", "web", ""},
		{line(), "proxy", "https:web:8443", "web", ""},
		{line(), "proxy", "a:b:c:d", "", `invalid pod request "a:b:c:d"`},
		{line(), "exec", "web:8080", "web:8080", ""},
		{line(), "portforward", "a:b:c:d", "a:b:c:d", ""},
	} {
		got, err := nm.ConnectName(tc.sub, tc.id)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("%s: %s %q: %q, %v; want %q, %q", tc.name, tc.sub, tc.id, got, err, tc.want, tc.err)
		}
	}
}
