package flowcontrol

import (
	"fmt"
	"runtime"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/request"
)

func line() string {
	_, _, l, _ := runtime.Caller(1)
	return fmt.Sprintf("line %d", l)
}

func flowSchema(name, level string, precedence int32, rules ...flowcontrolv1.PolicyRulesWithSubjects) flowcontrolv1.FlowSchema {
	return flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         precedence, Rules: rules,
		},
	}
}

func level(name string, typ flowcontrolv1.PriorityLevelEnablement) flowcontrolv1.PriorityLevelConfiguration {
	return flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       flowcontrolv1.PriorityLevelConfigurationSpec{Type: typ},
	}
}

var (
	everything = flowcontrolv1.PolicyRulesWithSubjects{
		Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "system:authenticated"}}, {Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "system:unauthenticated"}}},
		ResourceRules:    []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
		NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
	}
	mandatory = Mandatory{
		FlowSchemas:    []flowcontrolv1.FlowSchema{withoutUID(flowSchema("catch-all", "catch-all", 10000, everything))},
		PriorityLevels: []flowcontrolv1.PriorityLevelConfiguration{withoutUIDLevel(level("catch-all", flowcontrolv1.PriorityLevelEnablementLimited))},
	}
)

func withoutUID(fs flowcontrolv1.FlowSchema) flowcontrolv1.FlowSchema { fs.UID = ""; return fs }
func withoutUIDLevel(pl flowcontrolv1.PriorityLevelConfiguration) flowcontrolv1.PriorityLevelConfiguration {
	pl.UID = ""
	return pl
}

func testClassifier() *Classifier {
	users := flowcontrolv1.PolicyRulesWithSubjects{
		Subjects: []flowcontrolv1.Subject{
			{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "alice"}},
			{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: "ci", Name: "*"}},
			{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: "ops", Name: "bot"}},
		},
		ResourceRules: []flowcontrolv1.ResourcePolicyRule{
			{Verbs: []string{"get", "list"}, APIGroups: []string{"", "apps"}, Resources: []string{"pods", "deployments/scale"}, Namespaces: []string{"team"}},
			{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"nodes"}, ClusterScope: true},
		},
		NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics", "/debug/*"}}},
	}
	admins := flowcontrolv1.PolicyRulesWithSubjects{
		Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "system:masters"}}},
		NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
		ResourceRules:    []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
	}
	return New(
		[]flowcontrolv1.FlowSchema{
			flowSchema("users", "workload", 500, users),
			flowSchema("admins", "exempt", 1, admins),
			// Same precedence as users: the name decides.
			flowSchema("a-users", "workload", 500, flowcontrolv1.PolicyRulesWithSubjects{
				Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "carol"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}}},
			}),
			// Its level does not exist: never matched.
			flowSchema("dangling", "missing", 2, everything),
			flowSchema("global", "workload", 9000, everything),
		},
		[]flowcontrolv1.PriorityLevelConfiguration{level("workload", flowcontrolv1.PriorityLevelEnablementLimited), level("exempt", flowcontrolv1.PriorityLevelEnablementExempt)},
		mandatory,
	)
}

func TestClassify(t *testing.T) {
	c := testClassifier()
	user := func(name string, groups ...string) *authn.User {
		return &authn.User{Name: name, Groups: append(groups, authn.Authenticated)}
	}
	res := func(verb, group, resource, sub, ns string) *request.Info {
		return &request.Info{IsResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns}
	}
	path := func(verb, p string) *request.Info { return &request.Info{Verb: verb, Path: p} }
	for _, tc := range []struct {
		line string
		u    *authn.User
		info *request.Info
		want string // schema/level
	}{
		{line(), user("root", authn.Masters), res("delete", "", "pods", "", "x"), "admins/exempt"},
		{line(), user("alice"), res("get", "", "pods", "", "team"), "users/workload"},
		{line(), user("alice"), res("get", "", "pods", "", "other"), "global/workload"},
		{line(), user("alice"), res("get", "", "pods", "log", "team"), "global/workload"},
		{line(), user("alice"), res("list", "apps", "deployments", "scale", "team"), "users/workload"},
		{line(), user("alice"), res("list", "apps", "deployments", "", "team"), "global/workload"},
		{line(), user("alice"), res("delete", "", "pods", "", "team"), "global/workload"},
		{line(), user("alice"), res("patch", "x.io", "nodes", "", ""), "users/workload"},
		{line(), user("alice"), res("patch", "x.io", "nodes", "", "team"), "global/workload"},
		{line(), user("system:serviceaccount:ci:builder"), res("get", "", "pods", "", "team"), "users/workload"},
		{line(), user("system:serviceaccount:cix:builder"), res("get", "", "pods", "", "team"), "global/workload"},
		{line(), user("system:serviceaccount:ops:bot"), path("get", "/metrics"), "users/workload"},
		{line(), user("system:serviceaccount:ops:bot2"), path("get", "/metrics"), "global/workload"},
		// A path matches what is below it, with or without "*".
		{line(), user("alice"), path("get", "/metrics/slis"), "users/workload"},
		{line(), user("alice"), path("get", "/debug/pprof"), "users/workload"},
		{line(), user("alice"), path("get", "/debug"), "global/workload"},
		{line(), user("alice"), path("post", "/metrics"), "global/workload"},
		{line(), user("carol"), res("get", "", "pods", "", "team"), "a-users/workload"},
		{line(), nil, path("get", "/version"), "global/workload"},
	} {
		got, ok := c.Classify(tc.u, tc.info)
		if s := got.FlowSchema + "/" + got.PriorityLevel; !ok || s != tc.want {
			t.Errorf("%s: classified as %s (%v), want %s", tc.line, s, ok, tc.want)
		}
		if got.FlowSchemaUID != "uid-"+got.FlowSchema || got.PriorityLevelUID != "uid-"+got.PriorityLevel {
			t.Errorf("%s: uids %q %q", tc.line, got.FlowSchemaUID, got.PriorityLevelUID)
		}
	}
}

// Without a matching schema, the imagined catch-all (no uid) is used.
func TestClassifyImaginedCatchAll(t *testing.T) {
	c := New(nil, nil, mandatory)
	got, ok := c.Classify(&authn.User{Name: "x", Groups: []string{"weird"}}, &request.Info{Verb: "get", Path: "/"})
	if !ok || got.FlowSchema != "catch-all" || got.PriorityLevel != "catch-all" || got.FlowSchemaUID != "" {
		t.Errorf("got %+v %v", got, ok)
	}
}

// A request pays well under a microsecond, and allocates nothing, to be
// classified against upstream's bootstrap configuration's size.
func BenchmarkClassify(b *testing.B) {
	c := testClassifier()
	u := &authn.User{Name: "system:serviceaccount:default:app", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default", authn.Authenticated}}
	info := &request.Info{IsResourceRequest: true, Verb: "list", Resource: "configmaps", Namespace: "default"}
	b.ReportAllocs()
	for b.Loop() {
		c.Classify(u, info)
	}
}

// Each level's nominal seats are its share of the server's, rounded up.
func TestNominalSeats(t *testing.T) {
	limited := func(name string, shares int32) flowcontrolv1.PriorityLevelConfiguration {
		pl := level(name, flowcontrolv1.PriorityLevelEnablementLimited)
		pl.Spec.Limited = &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: &shares}
		return pl
	}
	exempt := level("exempt", flowcontrolv1.PriorityLevelEnablementExempt)
	c := New(nil, []flowcontrolv1.PriorityLevelConfiguration{limited("a", 20), limited("b", 40), exempt}, Mandatory{
		PriorityLevels: []flowcontrolv1.PriorityLevelConfiguration{limited("catch-all", 5)},
	})
	got := c.NominalSeats(600)
	want := []LevelSeats{{"a", 185}, {"b", 370}, {"catch-all", 47}, {"exempt", 0}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
