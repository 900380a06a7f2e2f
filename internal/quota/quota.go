// Package quota is what ResourceQuotas count and how a create is charged
// against them, as upstream's quota evaluators and admission plugin do,
// for the resources crdserver serves: every namespaced resource counts
// as count/<resource>.<group>; ConfigMaps, Secrets, Services,
// ResourceQuotas and ReplicationControllers also under their legacy
// names, and Services' node ports and load balancers. Pods count as
// objects (pods, count/pods; upstream's pods leaves out finished ones,
// here every pod counts); what their containers request (compute) and
// volume claims (not served) use is always 0. The server reads and
// writes the quotas (internal/server); this package only computes.
package quota

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// legacyNames are the unqualified names object counts have besides
// count/<resource>.
var legacyNames = map[schema.GroupResource]corev1.ResourceName{
	{Resource: "configmaps"}:             corev1.ResourceConfigMaps,
	{Resource: "secrets"}:                corev1.ResourceSecrets,
	{Resource: "services"}:               corev1.ResourceServices,
	{Resource: "resourcequotas"}:         corev1.ResourceQuotas,
	{Resource: "replicationcontrollers"}: corev1.ResourceReplicationControllers,
	{Resource: "persistentvolumeclaims"}: corev1.ResourcePersistentVolumeClaims,
	{Resource: "pods"}:                   corev1.ResourcePods,
}

// CountName is the name a quota counts objects of gr under.
func CountName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName("count/" + gr.Resource)
	}
	return corev1.ResourceName("count/" + gr.Resource + "." + gr.Group)
}

// Usage is what one object of gr (obj, as stored) counts for.
func Usage(gr schema.GroupResource, obj map[string]any) corev1.ResourceList {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	u := corev1.ResourceList{CountName(gr): one}
	if name, ok := legacyNames[gr]; ok {
		u[name] = one
	}
	if gr == (schema.GroupResource{Resource: "services"}) {
		lb, ports := serviceUsage(obj)
		u[corev1.ResourceServicesLoadBalancers] = *resource.NewQuantity(lb, resource.DecimalSI)
		u[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
	}
	return u
}

// serviceUsage is a Service's load balancers (1 for its type) and node
// ports: every port of a NodePort Service, and of a LoadBalancer one
// unless it asks for none (spec.allocateLoadBalancerNodePorts false).
func serviceUsage(obj map[string]any) (lb, nodePorts int64) {
	spec, _ := obj["spec"].(map[string]any)
	ports, _ := spec["ports"].([]any)
	switch spec["type"] {
	case string(corev1.ServiceTypeNodePort):
		return 0, int64(len(ports))
	case string(corev1.ServiceTypeLoadBalancer):
		if allocate, ok := spec["allocateLoadBalancerNodePorts"].(bool); ok && !allocate {
			return 1, 0
		}
		return 1, int64(len(ports))
	}
	return 0, 0
}

// Evaluates reports how a quota's hard name is counted here: counted
// (true, gr) when objects of gr are counted; zero (false) for what only
// pods and volume claims use; ok false when nothing counts it (upstream
// leaves such a name's usage as it was). served says whether a resource
// is served.
func Evaluates(name corev1.ResourceName, served func(schema.GroupResource) bool) (gr schema.GroupResource, counted, ok bool) {
	for g, legacy := range legacyNames {
		if name == legacy {
			return g, served(g), true
		}
	}
	switch name {
	case corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers:
		return schema.GroupResource{Resource: "services"}, true, true
	}
	if rest, isCount := strings.CutPrefix(string(name), "count/"); isCount {
		res, group, _ := strings.Cut(rest, ".")
		gr := schema.GroupResource{Group: group, Resource: res}
		if !served(gr) {
			// What upstream counts but is not served here (pods,
			// claims) counts 0; any other resource not served, nothing.
			_, legacy := legacyNames[gr]
			return gr, false, legacy
		}
		return gr, true, true
	}
	return schema.GroupResource{}, false, podOrClaimResource(name)
}

// podOrClaimResource reports whether upstream's pod or claim evaluators
// count name: compute, storage, huge pages, extended requests.
func podOrClaimResource(name corev1.ResourceName) bool {
	s := string(name)
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourceRequestsCPU,
		corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsCPU,
		corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage, corev1.ResourceRequestsStorage:
		return true
	}
	return strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix) ||
		strings.Contains(s, ".storageclass.storage.k8s.io/") ||
		strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) && strings.Contains(s, "/")
}

// Scoped reports whether q has scopes: they select pods or claims by
// what is not counted here, so a scoped quota counts nothing.
func Scoped(q *corev1.ResourceQuota) bool {
	return len(q.Spec.Scopes) > 0 || q.Spec.ScopeSelector != nil && len(q.Spec.ScopeSelector.MatchExpressions) > 0
}

// UpdateUsage is what an update of an object of gr from old to obj
// counts for beyond what old did: a Service that becomes a NodePort or
// LoadBalancer one, or gains ports, as upstream's service evaluator
// charges updates; object counts are charged on create only (nil).
func UpdateUsage(gr schema.GroupResource, obj, old map[string]any) corev1.ResourceList {
	if gr != (schema.GroupResource{Resource: "services"}) {
		return nil
	}
	before := Usage(gr, old)
	u := corev1.ResourceList{}
	for name, v := range Usage(gr, obj) {
		v.Sub(before[name])
		if v.Sign() > 0 {
			u[name] = v
		}
	}
	return u
}

// Charge is q's status.used once a write with usage u is charged to it:
// nil when q limits none of u's names (in its status: a quota not yet
// counted limits nothing) or u adds nothing to them. err, worded as
// upstream's admission words it, refuses the write: a limited name
// without a usage yet, or one the write would take past its hard limit.
func Charge(q *corev1.ResourceQuota, u corev1.ResourceList) (used corev1.ResourceList, err error) {
	if Scoped(q) {
		return nil, nil
	}
	var names, charged []corev1.ResourceName
	for name, v := range u {
		if _, limited := q.Status.Hard[name]; limited {
			names = append(names, name)
			if !v.IsZero() {
				charged = append(charged, name)
			}
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if _, known := q.Status.Used[name]; !known {
			parts := make([]string, len(names))
			for i, n := range names {
				parts[i] = string(n)
			}
			return nil, fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, strings.Join(parts, ","))
		}
	}
	if len(charged) == 0 {
		return nil, nil
	}
	slices.Sort(charged)
	used = corev1.ResourceList{}
	for name, v := range q.Status.Used {
		used[name] = v.DeepCopy()
	}
	var over []corev1.ResourceName
	for _, name := range charged {
		next := used[name].DeepCopy()
		next.Add(u[name])
		used[name] = next
		if next.Cmp(q.Status.Hard[name]) > 0 {
			over = append(over, name)
		}
	}
	if len(over) > 0 {
		return nil, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
			q.Name, list(over, u), list(over, q.Status.Used), list(over, q.Status.Hard))
	}
	return used, nil
}

// list words the named amounts of l as upstream's messages do:
// name=amount, comma-separated, leaving out names l lacks.
func list(names []corev1.ResourceName, l corev1.ResourceList) string {
	var parts []string
	for _, name := range names {
		if v, ok := l[name]; ok {
			parts = append(parts, string(name)+"="+v.String())
		}
	}
	return strings.Join(parts, ",")
}

// Counter counts a namespace's objects for the quota controller.
type Counter interface {
	// Served reports whether gr is served.
	Served(gr schema.GroupResource) bool
	// Count is how many objects of gr namespace holds.
	Count(ctx context.Context, gr schema.GroupResource, namespace string) (int64, error)
	// Services are namespace's Services, as stored.
	Services(ctx context.Context, namespace string) ([]map[string]any, error)
}

// Status is q's status counted again, as upstream's quota controller
// counts it: hard is the spec's; each hard name something counts is
// counted, the others keep the usage they had.
func Status(ctx context.Context, q *corev1.ResourceQuota, c Counter) (corev1.ResourceQuotaStatus, error) {
	st := corev1.ResourceQuotaStatus{Hard: corev1.ResourceList{}, Used: corev1.ResourceList{}}
	for name, v := range q.Spec.Hard {
		st.Hard[name] = v.DeepCopy()
		if v, ok := q.Status.Used[name]; ok {
			st.Used[name] = v.DeepCopy()
		}
	}
	var services []map[string]any // read once, for node ports and load balancers
	for name := range q.Spec.Hard {
		gr, counts, ok := Evaluates(name, c.Served)
		switch {
		case !ok:
			continue
		case !counts || Scoped(q):
			st.Used[name] = *resource.NewQuantity(0, resource.DecimalSI)
			continue
		}
		var n int64
		switch name {
		case corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers:
			if services == nil {
				var err error
				if services, err = c.Services(ctx, q.Namespace); err != nil {
					return st, err
				}
			}
			for _, svc := range services {
				lb, ports := serviceUsage(svc)
				if name == corev1.ResourceServicesLoadBalancers {
					n += lb
				} else {
					n += ports
				}
			}
		default:
			var err error
			if n, err = c.Count(ctx, gr, q.Namespace); err != nil {
				return st, err
			}
		}
		st.Used[name] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return st, nil
}

// Resources are the resources q counts the objects of.
func Resources(q *corev1.ResourceQuota, served func(schema.GroupResource) bool) []schema.GroupResource {
	var out []schema.GroupResource
	if Scoped(q) {
		return nil
	}
	for name := range q.Spec.Hard {
		if gr, counts, ok := Evaluates(name, served); ok && counts && !slices.Contains(out, gr) {
			out = append(out, gr)
		}
	}
	return out
}

// Equal reports whether two lists hold the same names and amounts.
func Equal(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, v := range a {
		w, ok := b[name]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// Counted reports whether q's status has been counted for its hard
// limits as they are: the same hard list, and a usage for every name
// something counts.
func Counted(q *corev1.ResourceQuota, served func(schema.GroupResource) bool) bool {
	if !Equal(q.Spec.Hard, q.Status.Hard) {
		return false
	}
	for name := range q.Spec.Hard {
		if _, _, ok := Evaluates(name, served); ok {
			if _, has := q.Status.Used[name]; !has {
				return false
			}
		}
	}
	return true
}
