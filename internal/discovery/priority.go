package discovery

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Priority is an APIService's place among all: discovery lists groups by
// Group, highest first, and a group's versions by Version, highest first.
type Priority struct{ Group, Version int32 }

// CustomPriority is what upstream gives every served version of a CRD:
// the lowest group priority, one version priority for all, so that CRD
// groups follow the built-in ones and their versions sort by name.
var CustomPriority = Priority{Group: 1000, Version: 100}

// builtinPriorities are kube-apiserver's priorities of the built-in
// group/versions crdserver may serve.
var builtinPriorities = map[schema.GroupVersion]Priority{
	{Version: "v1"}:                                             {18000, 1},
	{Group: "apps", Version: "v1"}:                              {17800, 15},
	{Group: "events.k8s.io", Version: "v1"}:                     {17750, 15},
	{Group: "authentication.k8s.io", Version: "v1"}:             {17700, 15},
	{Group: "authorization.k8s.io", Version: "v1"}:              {17600, 15},
	{Group: "autoscaling", Version: "v1"}:                       {17500, 15},
	{Group: "autoscaling", Version: "v2"}:                       {17500, 30},
	{Group: "batch", Version: "v1"}:                             {17400, 15},
	{Group: "certificates.k8s.io", Version: "v1"}:               {17300, 15},
	{Group: "networking.k8s.io", Version: "v1"}:                 {17200, 15},
	{Group: "policy", Version: "v1"}:                            {17100, 15},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:         {17000, 15},
	{Group: "storage.k8s.io", Version: "v1"}:                    {16800, 15},
	{Group: "apiextensions.k8s.io", Version: "v1"}:              {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}:      {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1beta1"}: {16700, 12},
	{Group: "scheduling.k8s.io", Version: "v1"}:                 {16600, 15},
	{Group: "coordination.k8s.io", Version: "v1"}:               {16500, 15},
	{Group: "node.k8s.io", Version: "v1"}:                       {16300, 15},
	{Group: "discovery.k8s.io", Version: "v1"}:                  {16200, 15},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}:      {16100, 21},
	{Group: "resource.k8s.io", Version: "v1"}:                   {16200, 21},
	{Group: "storagemigration.k8s.io", Version: "v1"}:           {15800, 15},
	{Group: "storagemigration.k8s.io", Version: "v1beta1"}:      {15800, 9},
	{Group: "storagemigration.k8s.io", Version: "v1alpha1"}:     {15800, 1},
}

// BuiltinPriority is kube-apiserver's priority of a built-in group/version;
// ok is false for one upstream registers no APIService for.
func BuiltinPriority(gv schema.GroupVersion) (_ Priority, ok bool) {
	p, ok := builtinPriorities[gv]
	return p, ok
}

// aggregatorGroup is kube-aggregator's own group, which it lists first.
const aggregatorGroup = "apiregistration.k8s.io"

// groupOrder is what places a group in /apis: kube-aggregator lists its
// own group first, then the others by their highest group priority. It
// breaks ties by APIService name ("<version>.<group>") in the
// APIGroupList, placing each group where its first APIService falls, and
// by group name in the aggregated document.
type groupOrder struct {
	group    string
	priority int32  // the highest of its versions'
	first    string // the least APIService name among the versions of that priority
}

// orderGroups returns the groups of versionsOf but the core group, in the
// order of the APIGroupList (legacy) and of the aggregated document;
// builtin tells the group/versions that have built-in resources.
func orderGroups(versionsOf map[string][]string, builtin func(schema.GroupVersion) bool) (legacy, aggregated []string) {
	var order []groupOrder
	for g, vs := range versionsOf {
		if g == "" {
			continue
		}
		o := groupOrder{group: g, priority: -1}
		for _, v := range vs {
			gv, p := schema.GroupVersion{Group: g, Version: v}, CustomPriority
			if bp, ok := BuiltinPriority(gv); ok && builtin(gv) {
				p = bp
			}
			name := v + "." + g
			if p.Group > o.priority || p.Group == o.priority && name < o.first {
				o.priority, o.first = p.Group, name
			}
		}
		order = append(order, o)
	}
	sorted := func(tie func(a, b groupOrder) int) []string {
		slices.SortFunc(order, func(a, b groupOrder) int {
			if (a.group == aggregatorGroup) != (b.group == aggregatorGroup) {
				if a.group == aggregatorGroup {
					return -1
				}
				return 1
			}
			if a.priority != b.priority {
				return cmp.Compare(b.priority, a.priority)
			}
			return tie(a, b)
		})
		names := make([]string, len(order))
		for i, o := range order {
			names[i] = o.group
		}
		return names
	}
	legacy = sorted(func(a, b groupOrder) int { return strings.Compare(a.first, b.first) })
	aggregated = sorted(func(a, b groupOrder) int { return strings.Compare(a.group, b.group) })
	return legacy, aggregated
}
