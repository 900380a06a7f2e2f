package flowcontrol_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/flowcontrol"
	"github.com/crdserver/crdserver/internal/request"
)

// bootstrapClassifier is compiled from upstream's configuration, as a
// fresh server stores it.
func bootstrapClassifier() *flowcontrol.Classifier {
	schemas, levels := builtin.BootstrapFlowSchemas(), builtin.BootstrapPriorityLevels()
	for i := range schemas {
		schemas[i].UID = types.UID("fs-" + schemas[i].Name)
	}
	for i := range levels {
		levels[i].UID = types.UID("pl-" + levels[i].Name)
	}
	return flowcontrol.New(schemas, levels, flowcontrol.Mandatory{})
}

// Upstream's configuration classifies requests as upstream documents it.
func TestBootstrapClassification(t *testing.T) {
	c := bootstrapClassifier()
	for _, tc := range []struct {
		user   *authn.User
		info   *request.Info
		schema string
	}{
		{&authn.User{Name: "admin", Groups: []string{authn.Masters, authn.Authenticated}}, &request.Info{IsResourceRequest: true, Verb: "list", Resource: "pods"}, "exempt"},
		{nil, &request.Info{Verb: "get", Path: "/readyz"}, "probes"},
		{&authn.User{Name: "system:kube-scheduler", Groups: []string{authn.Authenticated}}, &request.Info{IsResourceRequest: true, Verb: "update", APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: "kube-system"}, "system-leader-election"},
		{&authn.User{Name: "system:node:n1", Groups: []string{"system:nodes", authn.Authenticated}}, &request.Info{IsResourceRequest: true, Verb: "patch", Resource: "nodes", Subresource: "status"}, "system-node-high"},
		{&authn.User{Name: "system:node:n1", Groups: []string{"system:nodes", authn.Authenticated}}, &request.Info{IsResourceRequest: true, Verb: "get", Resource: "secrets", Namespace: "a"}, "system-nodes"},
		{&authn.User{Name: "system:serviceaccount:kube-system:gc", Groups: []string{"system:serviceaccounts", authn.Authenticated}}, &request.Info{IsResourceRequest: true, Verb: "list", Resource: "pods"}, "kube-system-service-accounts"},
		{&authn.User{Name: "system:serviceaccount:default:app", Groups: []string{"system:serviceaccounts", authn.Authenticated}}, &request.Info{IsResourceRequest: true, Verb: "list", Resource: "pods", Namespace: "default"}, "service-accounts"},
		{&authn.User{Name: "alice", Groups: []string{authn.Authenticated}}, &request.Info{IsResourceRequest: true, Verb: "get", Resource: "pods", Namespace: "default"}, "global-default"},
	} {
		got, ok := c.Classify(tc.user, tc.info)
		if !ok || got.FlowSchema != tc.schema || got.FlowSchemaUID != "fs-"+tc.schema {
			t.Errorf("%v %+v: classified as %+v, want %s", tc.user, tc.info, got, tc.schema)
		}
	}
}

// A user's request is matched against every schema but catch-all before
// global-default takes it: the most a request pays.
func BenchmarkClassifyBootstrap(b *testing.B) {
	c := bootstrapClassifier()
	u := &authn.User{Name: "alice", Groups: []string{"developers", authn.Authenticated}}
	info := &request.Info{IsResourceRequest: true, Verb: "list", Resource: "configmaps", Namespace: "default"}
	b.ReportAllocs()
	for b.Loop() {
		c.Classify(u, info)
	}
}
