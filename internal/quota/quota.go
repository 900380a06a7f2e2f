// Package quota is what ResourceQuotas count and how a write is charged
// against them, as upstream's quota evaluators and admission plugin do,
// for the resources crdserver serves: every namespaced resource counts
// as count/<resource>.<group>; ConfigMaps, Secrets, Services,
// ResourceQuotas and ReplicationControllers also under their legacy
// names, and Services' node ports and load balancers. Pods count under
// count/pods, and while live (not finished, not deleted past their grace
// period) under pods and their compute: requests and limits of cpu,
// memory and ephemeral storage, huge pages and extended resources, summed
// over containers, sidecars and init containers as the scheduler sums
// them, with pod-level resources and overhead. Claims count under
// persistentvolumeclaims and requests.storage, also per storage class.
// A quota's scopes select pods (Terminating, BestEffort, PriorityClass,
// CrossNamespacePodAffinity and their opposites) or claims
// (VolumeAttributesClass); a scoped quota counts nothing else. The
// server reads and writes the quotas (internal/server); this package
// only computes.
package quota

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

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

var (
	podsGR     = schema.GroupResource{Resource: "pods"}
	claimsGR   = schema.GroupResource{Resource: "persistentvolumeclaims"}
	servicesGR = schema.GroupResource{Resource: "services"}
)

// object is an object of gr a quota may count, decoded once: pods and
// claims into their types, which their evaluators read.
type object struct {
	gr    schema.GroupResource
	raw   map[string]any
	pod   *corev1.Pod
	claim *corev1.PersistentVolumeClaim
}

// decode reads obj (as stored) as an object of gr.
func decode(gr schema.GroupResource, obj map[string]any) (*object, error) {
	o := &object{gr: gr, raw: obj}
	var into any
	switch gr {
	case podsGR:
		o.pod = &corev1.Pod{}
		into = o.pod
	case claimsGR:
		o.claim = &corev1.PersistentVolumeClaim{}
		into = o.claim
	default:
		return o, nil
	}
	b, err := json.Marshal(obj)
	if err == nil {
		err = json.Unmarshal(b, into)
	}
	if err != nil {
		return nil, fmt.Errorf("reading a %s for quota: %w", gr.Resource, err)
	}
	return o, nil
}

// usage is what the object counts for at now.
func (o *object) usage(now time.Time) corev1.ResourceList {
	switch {
	case o.pod != nil:
		return podUsage(o.pod, now)
	case o.claim != nil:
		return claimUsage(o.claim)
	}
	one := *resource.NewQuantity(1, resource.DecimalSI)
	u := corev1.ResourceList{CountName(o.gr): one}
	if name, ok := legacyNames[o.gr]; ok {
		u[name] = one
	}
	if o.gr == servicesGR {
		lb, ports := serviceUsage(o.raw)
		u[corev1.ResourceServicesLoadBalancers] = *resource.NewQuantity(lb, resource.DecimalSI)
		u[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
	}
	return u
}

// Usage is what one object of gr (obj, as stored) counts for at now.
func Usage(gr schema.GroupResource, obj map[string]any, now time.Time) (corev1.ResourceList, error) {
	o, err := decode(gr, obj)
	if err != nil {
		return nil, err
	}
	return o.usage(now), nil
}

// counts reports whether the evaluator of gr counts name.
func counts(gr schema.GroupResource, name corev1.ResourceName) bool {
	switch gr {
	case podsGR:
		return podCounts(name)
	case claimsGR:
		return claimCounts(name)
	case servicesGR:
		if name == corev1.ResourceServicesNodePorts || name == corev1.ResourceServicesLoadBalancers {
			return true
		}
	}
	return name == CountName(gr) || legacyNames[gr] == name && name != ""
}

// matching are the names of l the evaluator of gr counts, sorted.
func matching(gr schema.GroupResource, l corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for name := range l {
		if counts(gr, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// selectors are q's scopes, as requirements that the scope holds, then
// its scope selector's.
func selectors(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, scope := range q.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: scope, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		out = append(out, q.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// inScope reports whether the object is in every scope of sels: pods by
// the pod scopes, claims by VolumeAttributesClass; any other object is in
// no scope.
func (o *object) inScope(sels []corev1.ScopedResourceSelectorRequirement) (bool, error) {
	for _, sel := range sels {
		var ok bool
		var err error
		switch {
		case o.pod != nil:
			ok, err = podMatchesScope(o.pod, sel)
		case o.claim != nil:
			ok, err = claimMatchesScope(o.claim, sel)
		}
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// matches reports whether q counts the object: it limits (in its
// status) something the object's evaluator counts, and the object is in
// its scopes.
func (o *object) matches(q *corev1.ResourceQuota) (bool, error) {
	if len(matching(o.gr, q.Status.Hard)) == 0 {
		return false, nil
	}
	return o.inScope(selectors(q))
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

// owner is the resource whose evaluator counts name; ok false when none
// does.
func owner(name corev1.ResourceName) (gr schema.GroupResource, ok bool) {
	switch {
	case podCounts(name):
		return podsGR, true
	case claimCounts(name):
		return claimsGR, true
	case name == corev1.ResourceServicesNodePorts, name == corev1.ResourceServicesLoadBalancers:
		return servicesGR, true
	}
	for g, legacy := range legacyNames {
		if name == legacy {
			return g, true
		}
	}
	if rest, isCount := strings.CutPrefix(string(name), "count/"); isCount {
		res, group, _ := strings.Cut(rest, ".")
		return schema.GroupResource{Group: group, Resource: res}, true
	}
	return schema.GroupResource{}, false
}

// Evaluates reports how a quota's hard name is counted here: counted
// (true, gr) when objects of gr are counted; zero (false) for what
// upstream counts but is not served; ok false when nothing counts it
// (upstream leaves such a name's usage as it was). served says whether a
// resource is served.
func Evaluates(name corev1.ResourceName, served func(schema.GroupResource) bool) (gr schema.GroupResource, counted, ok bool) {
	gr, ok = owner(name)
	if !ok {
		return gr, false, false
	}
	if served(gr) {
		return gr, true, true
	}
	// A count/ name of a resource upstream has no evaluator for, not
	// served, counts nothing; the others 0.
	_, legacy := legacyNames[gr]
	return gr, false, legacy || gr == podsGR || gr == claimsGR || gr == servicesGR || !strings.HasPrefix(string(name), "count/")
}

// Charges reports whether admission may charge writes of subresource sub
// ("" for the object) of gr: of the object always; of a status only a
// claim's; a pod's resize.
func Charges(gr schema.GroupResource, sub string) bool {
	return sub == "" || sub == "status" && gr == claimsGR || sub == "resize" && gr == podsGR
}

// Write is a create, or an update, of one object as quota admission
// charges it.
type Write struct {
	obj, old *object // old nil for a create
	status   bool    // a write of the status: charged, never refused for a limit
	now      time.Time
}

// NewWrite reads a write of obj, of resource gr (an update from old of
// subresource sub, "" for the object; old nil for a create), made at
// now. It returns nil when upstream's admission does not charge the
// write: updates are charged for Services and claims, and for pods
// whose Terminating scope changes or that are resized; of subresources
// only a claim's status and a pod's resize.
func NewWrite(gr schema.GroupResource, sub string, obj, old map[string]any, now time.Time) (*Write, error) {
	if !Charges(gr, sub) || sub != "" && old == nil {
		return nil, nil
	}
	w := &Write{now: now, status: sub == "status"}
	var err error
	if w.obj, err = decode(gr, obj); err != nil {
		return nil, err
	}
	if old == nil {
		return w, nil
	}
	if w.old, err = decode(gr, old); err != nil {
		return nil, err
	}
	switch gr {
	case servicesGR, claimsGR:
		return w, nil
	case podsGR:
		if sub == "resize" || terminating(w.obj.pod) != terminating(w.old.pod) {
			return w, nil
		}
	}
	return nil, nil
}

// Check is what refuses the write before any quota is charged, as
// upstream's admission checks every quota that counts the object
// first: a pod a quota of cpu or memory cannot count (it does not say
// how much it asks for), or a quota not yet counted for what it limits.
func Check(q *corev1.ResourceQuota, w *Write) error {
	match, err := w.obj.matches(q)
	if err != nil || !match {
		return err
	}
	limited := matching(w.obj.gr, q.Status.Hard)
	if w.obj.pod != nil {
		if err := podConstraints(w.obj.pod, limited); err != nil {
			return fmt.Errorf("failed quota: %s: %w", q.Name, err)
		}
	}
	for _, name := range limited {
		if _, ok := q.Status.Used[name]; !ok {
			names := make([]string, len(limited))
			for i, n := range limited {
				names[i] = string(n)
			}
			return fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, strings.Join(names, ","))
		}
	}
	return nil
}

// Charge is q's status.used once w is charged to it: nil when q does not
// count the object or the write adds nothing it limits (an update is
// charged what it adds, unless the object was out of q's scope before).
// err, worded as upstream's admission words it, refuses the write: Check
// fails, or the write (not of a status) would take what q limits past
// its hard limit.
func Charge(q *corev1.ResourceQuota, w *Write) (used corev1.ResourceList, err error) {
	if err := Check(q, w); err != nil {
		return nil, err
	}
	if match, _ := w.obj.matches(q); !match {
		return nil, nil
	}
	u := w.obj.usage(w.now)
	var negative []string
	for name, v := range u {
		if v.Sign() < 0 {
			negative = append(negative, string(name))
		}
	}
	if len(negative) > 0 {
		slices.Sort(negative)
		return nil, fmt.Errorf("quota usage is negative for resource(s): %s", strings.Join(negative, ","))
	}
	if w.old != nil {
		if was, err := w.old.matches(q); err != nil {
			return nil, err
		} else if was {
			before := w.old.usage(w.now)
			for name, v := range u {
				v = v.DeepCopy()
				v.Sub(before[name])
				u[name] = v
			}
		}
	}
	var charged []corev1.ResourceName
	for name, v := range u {
		if _, limited := q.Status.Hard[name]; limited && v.Sign() > 0 {
			charged = append(charged, name)
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
	if len(over) > 0 && !w.status {
		return nil, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
			q.Name, list(over, u), list(over, q.Status.Used), list(over, q.Status.Hard))
	}
	return used, nil
}

// Counter reads a namespace's objects for the quota controller.
type Counter interface {
	// Served reports whether gr is served.
	Served(gr schema.GroupResource) bool
	// Count is how many objects of gr namespace holds.
	Count(ctx context.Context, gr schema.GroupResource, namespace string) (int64, error)
	// List are namespace's objects of gr, as stored.
	List(ctx context.Context, gr schema.GroupResource, namespace string) ([]map[string]any, error)
}

// Status is q's status counted again at now, as upstream's quota
// controller counts it: hard is the spec's; each hard name something
// counts is counted (over the objects in q's scopes), the others keep
// the usage they had.
func Status(ctx context.Context, q *corev1.ResourceQuota, c Counter, now time.Time) (corev1.ResourceQuotaStatus, error) {
	st := corev1.ResourceQuotaStatus{Hard: corev1.ResourceList{}, Used: corev1.ResourceList{}}
	for name, v := range q.Spec.Hard {
		st.Hard[name] = v.DeepCopy()
		if v, ok := q.Status.Used[name]; ok {
			st.Used[name] = v.DeepCopy()
		}
	}
	sels := selectors(q)
	byOwner := map[schema.GroupResource][]corev1.ResourceName{}
	for name := range q.Spec.Hard {
		gr, counted, ok := Evaluates(name, c.Served)
		if !ok {
			continue
		}
		st.Used[name] = resource.Quantity{Format: resource.DecimalSI}
		if counted {
			byOwner[gr] = append(byOwner[gr], name)
		}
	}
	for gr, names := range byOwner {
		switch {
		case gr == podsGR || gr == claimsGR:
		case len(sels) > 0:
			continue // objects of other kinds are in no scope
		case gr == servicesGR && slices.ContainsFunc(names, func(n corev1.ResourceName) bool {
			return n == corev1.ResourceServicesNodePorts || n == corev1.ResourceServicesLoadBalancers
		}):
		default:
			n, err := c.Count(ctx, gr, q.Namespace)
			if err != nil {
				return st, err
			}
			for _, name := range names {
				st.Used[name] = *resource.NewQuantity(n, resource.DecimalSI)
			}
			continue
		}
		objs, err := c.List(ctx, gr, q.Namespace)
		if err != nil {
			return st, err
		}
		for _, raw := range objs {
			o, err := decode(gr, raw)
			if err != nil {
				return st, err
			}
			if in, err := o.inScope(sels); err != nil || !in {
				continue
			}
			u := o.usage(now)
			for _, name := range names {
				if v, ok := u[name]; ok {
					sum := st.Used[name]
					sum.Add(v)
					st.Used[name] = sum
				}
			}
		}
	}
	return st, nil
}

// Resources are the resources q counts the objects of: with scopes, pods
// and claims only.
func Resources(q *corev1.ResourceQuota, served func(schema.GroupResource) bool) []schema.GroupResource {
	var out []schema.GroupResource
	for name := range q.Spec.Hard {
		gr, counted, ok := Evaluates(name, served)
		if !ok || !counted || slices.Contains(out, gr) || len(selectors(q)) > 0 && gr != podsGR && gr != claimsGR {
			continue
		}
		out = append(out, gr)
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
