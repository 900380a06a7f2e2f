// Package rbac runs upstream's RBAC authorizer
// (k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac, wired to listers as
// kube-apiserver wires it) on the objects of crdserver's RBAC matrix
// (test/e2e/testdata/rbac) with upstream's own bootstrap policy, and
// requires its decisions to be those crdserver gave, which the e2e test
// keeps in decisions.txt. It also requires crdserver's bootstrap policy
// to be upstream's, object for object.
//
//	cd compat && go test ./rbac
package rbac

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/union"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	upstream "k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
	"sigs.k8s.io/yaml"

	"github.com/crdserver/crdserver/internal/rbac/bootstrap"
	"github.com/crdserver/crdserver/test/rbacmatrix"
)

// testdata is crdserver's e2e test data.
var testdata = filepath.Join("..", "..", "test", "e2e", "testdata", "rbac")

// objects are the RBAC objects an upstream server would hold: its
// bootstrap policy, then policy.yaml's, with aggregated ClusterRoles
// filled as its aggregation controller fills them.
type objects struct {
	roles               []*rbacv1.Role
	clusterRoles        []*rbacv1.ClusterRole
	roleBindings        []*rbacv1.RoleBinding
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
}

func load(t *testing.T) objects {
	t.Helper()
	var o objects
	for _, r := range bootstrappolicy.ClusterRoles() {
		o.clusterRoles = append(o.clusterRoles, &r)
	}
	for _, b := range bootstrappolicy.ClusterRoleBindings() {
		o.clusterRoleBindings = append(o.clusterRoleBindings, &b)
	}
	data, err := os.ReadFile(filepath.Join(testdata, "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw map[string]any
		if err := d.Decode(&raw); err != nil {
			break
		}
		b, _ := yaml.Marshal(raw)
		decode := func(into any) {
			if err := yaml.UnmarshalStrict(b, into); err != nil {
				t.Fatal(err)
			}
		}
		switch raw["kind"] {
		case "Role":
			r := new(rbacv1.Role)
			decode(r)
			o.roles = append(o.roles, r)
		case "ClusterRole":
			r := new(rbacv1.ClusterRole)
			decode(r)
			o.clusterRoles = append(o.clusterRoles, r)
		case "RoleBinding":
			r := new(rbacv1.RoleBinding)
			decode(r)
			defaultSubjects(r.Subjects)
			o.roleBindings = append(o.roleBindings, r)
		case "ClusterRoleBinding":
			r := new(rbacv1.ClusterRoleBinding)
			decode(r)
			defaultSubjects(r.Subjects)
			o.clusterRoleBindings = append(o.clusterRoleBindings, r)
		}
	}
	aggregate(o.clusterRoles)
	return o
}

// defaultSubjects sets what upstream's v1 defaulting sets.
func defaultSubjects(subjects []rbacv1.Subject) {
	for i := range subjects {
		if subjects[i].Kind != rbacv1.ServiceAccountKind && subjects[i].APIGroup == "" {
			subjects[i].APIGroup = rbacv1.GroupName
		}
	}
}

// aggregate fills aggregated ClusterRoles as upstream's controller does,
// until nothing changes (admin aggregates edit, which aggregates view).
func aggregate(roles []*rbacv1.ClusterRole) {
	slices.SortFunc(roles, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	for changed := true; changed; {
		changed = false
		for _, target := range roles {
			if target.AggregationRule == nil {
				continue
			}
			rules := []rbacv1.PolicyRule{}
			for _, sel := range target.AggregationRule.ClusterRoleSelectors {
				s, err := metav1.LabelSelectorAsSelector(&sel)
				if err != nil {
					panic(err)
				}
				for _, r := range roles {
					if r.Name == target.Name || !s.Matches(labels.Set(r.Labels)) {
						continue
					}
					for _, rule := range r.Rules {
						if !slices.ContainsFunc(rules, func(x rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(x, rule) }) {
							rules = append(rules, rule)
						}
					}
				}
			}
			if !equality.Semantic.DeepEqual(rules, target.Rules) {
				target.Rules = rules
				changed = true
			}
		}
	}
}

// authorizer is upstream's RBAC authorizer over listers of o, as
// kube-apiserver builds it from its informers.
func (o objects) authorizer(t *testing.T) *upstream.RBACAuthorizer {
	t.Helper()
	index := func(objs ...any) cache.Indexer {
		ix := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		for _, obj := range objs {
			if err := ix.Add(obj); err != nil {
				t.Fatal(err)
			}
		}
		return ix
	}
	return upstream.New(
		&upstream.RoleGetter{Lister: rbaclisters.NewRoleLister(index(anys(o.roles)...))},
		&upstream.RoleBindingLister{Lister: rbaclisters.NewRoleBindingLister(index(anys(o.roleBindings)...))},
		&upstream.ClusterRoleGetter{Lister: rbaclisters.NewClusterRoleLister(index(anys(o.clusterRoles)...))},
		&upstream.ClusterRoleBindingLister{Lister: rbaclisters.NewClusterRoleBindingLister(index(anys(o.clusterRoleBindings)...))},
	)
}

func anys[T any](s []T) []any {
	out := make([]any, len(s))
	for i := range s {
		out[i] = s[i]
	}
	return out
}

// TestMatrixMatchesUpstream: upstream's authorizer decides every case of
// the matrix as crdserver did (decisions.txt), denial reasons included.
func TestMatrixMatchesUpstream(t *testing.T) {
	// kube-apiserver asks RBAC through its chain of authorizers, which
	// names it in the reason of a denial.
	z, err := union.New(union.NamedAuthorizer{AuthorizerName: "rbac", Authorizer: load(t).authorizer(t)})
	if err != nil {
		t.Fatal(err)
	}
	cases, err := rbacmatrix.Load(filepath.Join(testdata, "matrix.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cases {
		a := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: c.User, Groups: c.Groups}, Verb: c.Verb, Path: c.Path}
		if c.ResourceRequest {
			a = authorizer.AttributesRecord{User: a.User, Verb: c.Verb, Namespace: c.Namespace, APIGroup: c.Group, APIVersion: "*",
				Resource: c.Resource, Subresource: c.Subresource, Name: c.Name, ResourceRequest: true}
		}
		d, reason, _ := z.Authorize(context.Background(), a)
		got = append(got, c.Line(d == authorizer.DecisionAllow, reason))
	}
	want, err := os.ReadFile(filepath.Join(testdata, "decisions.txt"))
	if err != nil {
		t.Fatal(err)
	}
	wantLines := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	if len(got) != len(wantLines) {
		t.Fatalf("upstream made %d decisions, decisions.txt has %d", len(got), len(wantLines))
	}
	differ := 0
	for i := range got {
		if got[i] != wantLines[i] {
			differ++
			if differ <= 20 {
				t.Errorf("decision %d:\nupstream  %s\ncrdserver %s", i+1, got[i], wantLines[i])
			}
		}
	}
	if differ > 0 {
		t.Errorf("%d of %d decisions differ", differ, len(got))
	}
}

// TestBootstrapPolicyIsUpstreams: every default ClusterRole,
// ClusterRoleBinding, Role and RoleBinding crdserver creates is upstream's
// (what kube-apiserver's RBAC post-start hook stores: the cluster-wide
// policy, the controllers' roles and bindings, and the namespaced roles),
// with the same rules, aggregation, subjects, labels and annotations, and
// none of upstream's is missing.
func TestBootstrapPolicyIsUpstreams(t *testing.T) {
	compareBootstrap(t, "clusterrole",
		append(bootstrappolicy.ClusterRoles(), bootstrappolicy.ControllerRoles()...), bootstrap.ClusterRoles(),
		func(r rbacv1.ClusterRole) string { return r.Name })
	compareBootstrap(t, "clusterrolebinding",
		append(bootstrappolicy.ClusterRoleBindings(), bootstrappolicy.ControllerRoleBindings()...), bootstrap.ClusterRoleBindings(),
		func(b rbacv1.ClusterRoleBinding) string { return b.Name })
	var upRoles []rbacv1.Role
	for _, rs := range bootstrappolicy.NamespaceRoles() {
		upRoles = append(upRoles, rs...)
	}
	compareBootstrap(t, "role", upRoles, bootstrap.Roles(),
		func(r rbacv1.Role) string { return r.Namespace + "/" + r.Name })
	var upBindings []rbacv1.RoleBinding
	for _, bs := range bootstrappolicy.NamespaceRoleBindings() {
		upBindings = append(upBindings, bs...)
	}
	compareBootstrap(t, "rolebinding", upBindings, bootstrap.RoleBindings(),
		func(b rbacv1.RoleBinding) string { return b.Namespace + "/" + b.Name })
}

// compareBootstrap reports each of ours that is not upstream's alike, and
// each of upstream's we lack.
func compareBootstrap[T any](t *testing.T, kind string, upstream, ours []T, name func(T) string) {
	t.Helper()
	up := map[string]T{}
	for _, o := range upstream {
		up[name(o)] = o
	}
	seen := map[string]bool{}
	for _, o := range ours {
		n := name(o)
		seen[n] = true
		u, ok := up[n]
		if !ok {
			t.Errorf("%s %s is not upstream's", kind, n)
			continue
		}
		if !equality.Semantic.DeepEqual(o, u) {
			a, _ := yaml.Marshal(o)
			b, _ := yaml.Marshal(u)
			t.Errorf("%s %s:\ncrdserver:\n%s\nupstream:\n%s", kind, n, a, b)
		}
	}
	for n := range up {
		if !seen[n] {
			t.Errorf("upstream's %s %s is missing", kind, n)
		}
	}
}
