package audit

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authz"
)

// line names a table case with the line it is written on.
func line() string {
	_, _, l, _ := runtime.Caller(1)
	return fmt.Sprintf("line %d", l)
}

const testPolicy = `
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: ["system:kube-proxy"]
  verbs: ["watch"]
- level: None
  userGroups: ["system:nodes"]
  verbs: ["get"]
  resources:
  - group: ""
    resources: ["nodes"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["pods/log", "pods/status"]
- level: Request
  resources:
  - group: "apps"
    resources: ["deployments/*"]
- level: Request
  resources:
  - group: "*"
    resources: ["*/scale"]
- level: Metadata
  resources:
  - group: ""
    resources: ["configmaps"]
    resourceNames: ["controller-leader"]
  omitStages: [ResponseComplete]
- level: None
  namespaces: ["kube-system"]
- level: Metadata
  nonResourceURLs: ["/healthz*", "/version"]
- level: None
  nonResourceURLs: ["*"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["secrets"]
  users: ["secret-reader"]
  omitManagedFields: false
- level: RequestResponse
`

func TestDecide(t *testing.T) {
	p, err := ParsePolicy([]byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	alice := &authn.User{Name: "alice", Groups: []string{"devs", authn.Authenticated}}
	res := func(u *authn.User, verb, group, resource, sub, ns, name string) authz.Attributes {
		return authz.Attributes{User: u, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name, ResourceRequest: true}
	}
	path := func(u *authn.User, p string) authz.Attributes {
		return authz.Attributes{User: u, Verb: "get", Path: p}
	}
	for _, tc := range []struct {
		name  string
		attrs authz.Attributes
		want  Level
		omit  []Stage
	}{
		{line(), res(&authn.User{Name: "system:kube-proxy"}, "watch", "", "endpoints", "", "", ""), LevelNone, []Stage{StageRequestReceived}},
		{line(), res(&authn.User{Name: "system:kube-proxy"}, "list", "", "endpoints", "", "", ""), LevelRequestResponse, []Stage{StageRequestReceived}},
		{line(), res(&authn.User{Name: "n1", Groups: []string{"system:nodes"}}, "get", "", "nodes", "", "", "n1"), LevelNone, []Stage{StageRequestReceived}},
		{line(), res(&authn.User{Name: "n1", Groups: []string{"system:nodes"}}, "update", "", "nodes", "", "", "n1"), LevelRequestResponse, []Stage{StageRequestReceived}},
		// Subresources: exact, resource/*, */subresource.
		{line(), res(alice, "get", "", "pods", "log", "default", "p"), LevelRequestResponse, []Stage{StageRequestReceived}},
		{line(), res(alice, "update", "apps", "deployments", "status", "default", "d"), LevelRequest, []Stage{StageRequestReceived}},
		{line(), res(alice, "update", "apps", "deployments", "", "default", "d"), LevelRequest, []Stage{StageRequestReceived}},
		{line(), res(alice, "update", "example.com", "widgets", "scale", "default", "w"), LevelRequest, []Stage{StageRequestReceived}},
		// resourceNames narrow a resource; rule omitStages add to the policy's.
		{line(), res(alice, "update", "", "configmaps", "", "default", "controller-leader"), LevelMetadata, []Stage{StageRequestReceived, StageResponseComplete}},
		{line(), res(alice, "update", "", "configmaps", "", "default", "other"), LevelRequestResponse, []Stage{StageRequestReceived}},
		// Namespaces.
		{line(), res(alice, "create", "", "configmaps", "", "kube-system", "x"), LevelNone, []Stage{StageRequestReceived}},
		// Non-resource URLs: prefix, exact, and resource rules never match them.
		{line(), path(alice, "/healthz/etcd"), LevelMetadata, []Stage{StageRequestReceived}},
		{line(), path(alice, "/version"), LevelMetadata, []Stage{StageRequestReceived}},
		{line(), path(alice, "/openapi/v2"), LevelNone, []Stage{StageRequestReceived}},
		// Secrets: capped at Metadata by a catch-all rule, logged in full
		// only where a rule names them.
		{line(), res(alice, "get", "", "secrets", "", "default", "s"), LevelMetadata, []Stage{StageRequestReceived}},
		{line(), res(&authn.User{Name: "secret-reader"}, "get", "", "secrets", "", "default", "s"), LevelRequestResponse, []Stage{StageRequestReceived}},
		// A secrets resource in another group is not core secrets.
		{line(), res(alice, "get", "example.com", "secrets", "", "default", "s"), LevelRequestResponse, []Stage{StageRequestReceived}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := p.Decide(tc.attrs)
			if d.Level != tc.want {
				t.Errorf("level %s, want %s", d.Level, tc.want)
			}
			if fmt.Sprint(d.OmitStages) != fmt.Sprint(tc.omit) {
				t.Errorf("omitStages %v, want %v", d.OmitStages, tc.omit)
			}
		})
	}
}

func TestDecideOmitManagedFields(t *testing.T) {
	p, err := ParsePolicy([]byte(`
apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
rules:
- level: Request
  verbs: [create]
  omitManagedFields: false
- level: Request
`))
	if err != nil {
		t.Fatal(err)
	}
	u := &authn.User{Name: "u"}
	if d := p.Decide(authz.Attributes{User: u, Verb: "create", Resource: "configmaps", ResourceRequest: true}); d.OmitManagedFields {
		t.Error("a rule's omitManagedFields: false did not override the policy's true")
	}
	if d := p.Decide(authz.Attributes{User: u, Verb: "update", Resource: "configmaps", ResourceRequest: true}); !d.OmitManagedFields {
		t.Error("the policy's omitManagedFields: true did not apply to a rule without its own")
	}
}

func TestParsePolicyErrors(t *testing.T) {
	for _, tc := range []struct {
		name, policy, want string
	}{
		{line(), "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]", "want apiVersion audit.k8s.io/v1"},
		{line(), "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []", "at least one rule"},
		{line(), "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Everything}]", `rules[0].level: unsupported value "Everything"`},
		{line(), "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, verb: [get]}]", "unknown field"},
		{line(), "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Done]\nrules: [{level: None}]", `omitStages: unsupported stage "Done"`},
		{line(), "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [/x], namespaces: [a]}]", "both regular resources and non-resource URLs"},
		{line(), "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, resources: [{resourceNames: [a]}]}]", "resourceNames require resources"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePolicy([]byte(tc.policy))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(testPolicy))
	f.Add([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy(data)
		if err != nil {
			return
		}
		// Whatever parses decides without panicking.
		p.Decide(authz.Attributes{User: &authn.User{Name: "u"}, Verb: "get", Resource: "secrets", Subresource: "x", ResourceRequest: true})
		p.Decide(authz.Attributes{Verb: "get", Path: "/healthz"})
	})
}
