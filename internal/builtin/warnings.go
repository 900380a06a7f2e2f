package builtin

import (
	"crypto/tls"
	"fmt"
	"maps"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/crdserver/crdserver/internal/builtin/podwarnings"
	"github.com/crdserver/crdserver/internal/registry"
)

// The warnings upstream's strategies give a write that passed validation
// (registry.Warner), kind by kind. Kinds whose strategies give none
// (ConfigMaps, Events, Leases, Namespaces, RBAC, ...) have no Warnings.

// The kinds with warnings of their own (the others warn through
// kindHooks and their rules).
var _ = []registry.Warner{
	deploymentHooks{}, replicaSetHooks{}, statefulSetHooks{}, daemonSetHooks{}, podTemplateHooks{}, jobHooks{},
	serviceHooks{}, endpointsHooks{}, endpointSliceHooks{}, secretHooks{}, serviceAccountHooks{},
	webhookConfigHooks[admissionregistrationv1.MutatingWebhookConfiguration]{},
	policyHooks{}, bindingHooks{}, mutatingPolicyHooks{}, mutatingBindingHooks{},
}

// warnRules are rules whose strategy warns: was is nil on a create, sub
// "" or "status".
type warnRules[T any] interface {
	warnings(now, was *T, sub string) []string
}

// Warnings implements registry.Warner for the kinds whose rules warn.
func (h kindHooks[T, R]) Warnings(obj, old map[string]any, sub string) []string {
	wr, ok := any(h.rules).(warnRules[T])
	if !ok {
		return nil
	}
	now, was, ok := h.decodeWrite(obj, old)
	if !ok {
		return nil
	}
	return wr.warnings(now, was, sub)
}

// decodeWrite decodes a write's object and, on an update, the stored one
// (was is nil on a create). ok is false if either does not decode, which
// the handler refused before warnings are asked for.
func (ty Typed[T]) decodeWrite(obj, old map[string]any) (now, was *T, ok bool) {
	now, _, err := ty.Decode(obj)
	if err != nil {
		return nil, nil, false
	}
	if old == nil {
		return now, nil, true
	}
	was, _, err = ty.Decode(old)
	return now, was, err == nil
}

// podNameWarnings: the kinds whose names go into their pods' names and
// host names warn, on create, of a name that is not a DNS label.
func podNameWarnings(name string) []string {
	msgs := validation.IsDNS1123Label(name)
	if len(msgs) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs)}
}

var specTemplate = field.NewPath("spec", "template")

// specWarnings follow upstream's workload strategies: a create warns of
// the spec (after the name, for kinds whose names go into their pods'
// names), an update only if it changed the spec (moved the generation),
// so that writes leaving the spec alone do not repeat the warnings. was
// is nil on a create.
func specWarnings(now, was *metav1.ObjectMeta, podNames bool, spec func() []string) []string {
	switch {
	case was == nil && podNames:
		return append(podNameWarnings(now.Name), spec()...)
	case was == nil || now.Generation != was.Generation:
		return spec()
	}
	return nil
}

// withMeta are the pointers to the Go types of kinds, which give their
// metadata.
type withMeta[T any] interface {
	*T
	GetObjectMeta() metav1.Object
}

// metaOf is t's metadata, nil for nil (was on a create).
func metaOf[T any, P withMeta[T]](t *T) *metav1.ObjectMeta {
	if t == nil {
		return nil
	}
	m, _ := P(t).GetObjectMeta().(*metav1.ObjectMeta)
	return m
}

// ---- apps ----

func (h deploymentHooks) Warnings(obj, old map[string]any, sub string) []string {
	d, was, ok := h.decodeWrite(obj, old)
	if !ok || sub == "status" {
		return nil
	}
	return specWarnings(metaOf(d), metaOf(was), true, func() []string { return podwarnings.Template(specTemplate, &d.Spec.Template) })
}

func (h replicaSetHooks) Warnings(obj, old map[string]any, sub string) []string {
	rs, was, ok := h.decodeWrite(obj, old)
	if !ok || sub == "status" {
		return nil
	}
	return specWarnings(metaOf(rs), metaOf(was), true, func() []string { return podwarnings.Template(specTemplate, &rs.Spec.Template) })
}

var volumeClaimTemplates = field.NewPath("spec", "volumeClaimTemplates")

// Warnings of a StatefulSet: its template's, then, on every write, its
// claim templates' and a negative revision history limit's. Upstream's
// path to a claim template's spec says "Spec" on an update, kept here
// for the same text.
func (h statefulSetHooks) Warnings(obj, old map[string]any, sub string) []string {
	ss, was, ok := h.decodeWrite(obj, old)
	if !ok || sub == "status" {
		return nil
	}
	out := specWarnings(metaOf(ss), metaOf(was), false, func() []string { return podwarnings.Template(specTemplate, &ss.Spec.Template) })
	for i := range ss.Spec.VolumeClaimTemplates {
		p := volumeClaimTemplates.Index(i)
		if was != nil {
			p = p.Child("Spec")
		}
		out = append(out, podwarnings.ClaimSpec(p, &ss.Spec.VolumeClaimTemplates[i].Spec)...)
	}
	if l := ss.Spec.RevisionHistoryLimit; l != nil && *l < 0 {
		out = append(out, "spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended")
	}
	return out
}

// Warnings of a DaemonSet: its template's, on an update only when the
// template generation moved (upstream's strategy counts it apart from
// metadata.generation, which other spec changes move too).
func (h daemonSetHooks) Warnings(obj, old map[string]any, sub string) []string {
	ds, was, ok := h.decodeWrite(obj, old)
	if !ok || sub == "status" || was != nil && ds.Annotations[templateGeneration] == was.Annotations[templateGeneration] {
		return nil
	}
	return podwarnings.Template(specTemplate, &ds.Spec.Template)
}

var podTemplateTemplate = field.NewPath("template")

func (h podTemplateHooks) Warnings(obj, old map[string]any, sub string) []string {
	pt, was, ok := h.decodeWrite(obj, old)
	if !ok || sub == "status" {
		return nil
	}
	return specWarnings(metaOf(pt), metaOf(was), false, func() []string { return podwarnings.Template(podTemplateTemplate, &pt.Template) })
}

// ---- batch ----

// Indexed Jobs past these sizes may not be tracked completely.
const (
	indexedCompletionsSoftLimit = 100_000
	indexedParallelismSoftLimit = 10_000
)

// jobSpecWarnings are the warnings of the Job spec at p: an Indexed Job
// too large to track, then its pod template's.
func jobSpecWarnings(p *field.Path, s *batchv1.JobSpec) []string {
	var out []string
	if ptr.Deref(s.CompletionMode, "") == batchv1.IndexedCompletion &&
		ptr.Deref(s.Completions, 0) > indexedCompletionsSoftLimit && ptr.Deref(s.Parallelism, 0) > indexedParallelismSoftLimit {
		out = append(out, fmt.Sprintf("%s: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes fail", p))
	}
	return append(out, podwarnings.Template(p.Child("template"), &s.Template)...)
}

var jobSpec = field.NewPath("spec")

func (jobRules) warnings(j, was *batchv1.Job, sub string) []string {
	if sub == "status" {
		return nil
	}
	return specWarnings(metaOf(j), metaOf(was), true, func() []string { return jobSpecWarnings(jobSpec, &j.Spec) })
}

var cronJobSpec = field.NewPath("spec", "jobTemplate", "spec")

// warnings of a CronJob: its Job template's and, on an update, a time
// zone in the schedule, which only a CronJob stored with one may keep
// (upstream's text names spec.spec.schedule).
func (cronJobRules) warnings(cj, was *batchv1.CronJob, sub string) []string {
	if sub == "status" {
		return nil
	}
	out := specWarnings(metaOf(cj), metaOf(was), true, func() []string { return jobSpecWarnings(cronJobSpec, &cj.Spec.JobTemplate.Spec) })
	if was != nil && strings.Contains(cj.Spec.Schedule, "TZ") {
		out = append(out, "cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details")
	}
	return out
}

// ---- core, discovery, networking ----

// Warnings of a Service: of fields its type ignores, deprecated fields
// and annotations, and addresses not in canonical form; of a status
// write, its load balancers' addresses.
func (h serviceHooks) Warnings(obj, _ map[string]any, sub string) []string {
	svc, _, err := h.Decode(obj)
	if err != nil {
		return nil
	}
	if sub == "status" {
		return loadBalancerWarnings(svc.Status.LoadBalancer.Ingress)
	}
	var out []string
	if _, ok := svc.Annotations[corev1.DeprecatedAnnotationTopologyAwareHints]; ok {
		out = append(out, fmt.Sprintf("annotation %s is deprecated, please use %s instead", corev1.DeprecatedAnnotationTopologyAwareHints, corev1.AnnotationTopologyMode))
	}
	s, p := &svc.Spec, field.NewPath("spec")
	if s.ClusterIP != "" && s.ClusterIP != corev1.ClusterIPNone {
		for i, ip := range s.ClusterIPs {
			out = append(out, podwarnings.IP(p.Child("clusterIPs").Index(i), ip)...)
		}
	}
	headless := s.Type == corev1.ServiceTypeClusterIP && s.ClusterIP == corev1.ClusterIPNone
	if headless {
		if s.LoadBalancerIP != "" {
			out = append(out, "spec.loadBalancerIP is ignored for headless services")
		}
		if len(s.ExternalIPs) > 0 {
			out = append(out, "spec.externalIPs is ignored for headless services")
		}
		if s.SessionAffinity != corev1.ServiceAffinityNone {
			out = append(out, "spec.SessionAffinity is ignored for headless services")
		}
	}
	for i, ip := range s.ExternalIPs {
		out = append(out, podwarnings.IP(p.Child("externalIPs").Index(i), ip)...)
	}
	if len(s.ExternalIPs) > 0 && !headless && s.Type != corev1.ServiceTypeExternalName {
		out = append(out, "spec.externalIPs is deprecated and may no longer be implemented in some clusters")
	}
	if s.LoadBalancerIP != "" {
		out = append(out, podwarnings.IP(p.Child("loadBalancerIP"), s.LoadBalancerIP)...)
	}
	for i, cidr := range s.LoadBalancerSourceRanges {
		out = append(out, podwarnings.CIDR(p.Child("loadBalancerSourceRanges").Index(i), cidr)...)
	}
	if s.Type == corev1.ServiceTypeExternalName && len(s.ExternalIPs) > 0 {
		out = append(out, fmt.Sprintf("spec.externalIPs is ignored when spec.type is %q", corev1.ServiceTypeExternalName))
	}
	if s.Type != corev1.ServiceTypeExternalName && s.ExternalName != "" {
		out = append(out, fmt.Sprintf("spec.externalName is ignored when spec.type is not %q", corev1.ServiceTypeExternalName))
	}
	if ptr.Deref(s.TrafficDistribution, "") == corev1.ServiceTrafficDistributionPreferClose {
		out = append(out, fmt.Sprintf("spec.trafficDistribution: %q is deprecated; use %q", corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone))
	}
	return out
}

var loadBalancerIngress = field.NewPath("status", "loadBalancer", "ingress")

// loadBalancerWarnings warn of a Service's or an Ingress's load balancer
// addresses not in canonical form (upstream's path names the entry, not
// its ip).
func loadBalancerWarnings[I corev1.LoadBalancerIngress | networkingv1.IngressLoadBalancerIngress](lbs []I) []string {
	var out []string
	for i, lb := range lbs {
		var ip string
		switch lb := any(lb).(type) {
		case corev1.LoadBalancerIngress:
			ip = lb.IP
		case networkingv1.IngressLoadBalancerIngress:
			ip = lb.IP
		}
		if ip != "" {
			out = append(out, podwarnings.IP(loadBalancerIngress.Index(i), ip)...)
		}
	}
	return out
}

// Labels by which upstream's controllers mark the Endpoints and
// EndpointSlices they write; upstream trusts their addresses.
const (
	endpointsManagedBy         = "endpoints.kubernetes.io/managed-by"
	endpointsController        = "endpoint-controller"
	endpointSliceController    = "endpointslice-controller.k8s.io"
	endpointSliceMirroringCtrl = "endpointslicemirroring-controller.k8s.io"
)

// Warnings of Endpoints: addresses not in canonical form.
func (h endpointsHooks) Warnings(obj, _ map[string]any, sub string) []string {
	ep, _, err := h.Decode(obj)
	if err != nil || ep.Labels[endpointsManagedBy] == endpointsController {
		return nil
	}
	var out []string
	for i, s := range ep.Subsets {
		p := field.NewPath("subsets").Index(i)
		for j, a := range s.Addresses {
			out = append(out, podwarnings.IP(p.Child("addresses").Index(j).Child("ip"), a.IP)...)
		}
		for j, a := range s.NotReadyAddresses {
			out = append(out, podwarnings.IP(p.Child("notReadyAddresses").Index(j).Child("ip"), a.IP)...)
		}
	}
	return out
}

// Warnings of an EndpointSlice: on create, the deprecated FQDN address
// type (upstream's path says spec.addressType); always, addresses not in
// canonical form.
func (h endpointSliceHooks) Warnings(obj, old map[string]any, sub string) []string {
	eps, _, err := h.Decode(obj)
	if err != nil {
		return nil
	}
	var out []string
	if old == nil && eps.AddressType == discoveryv1.AddressTypeFQDN {
		out = append(out, "spec.addressType: FQDN endpoints are deprecated")
	}
	switch eps.Labels[discoveryv1.LabelManagedBy] {
	case endpointSliceController, endpointSliceMirroringCtrl:
		return out
	}
	for i, e := range eps.Endpoints {
		for j, a := range e.Addresses {
			out = append(out, podwarnings.IP(field.NewPath("endpoints").Index(i).Child("addresses").Index(j), a)...)
		}
	}
	return out
}

// Warnings of a TLS Secret whose key and certificate do not make a pair,
// in the words of Go's TLS package.
func (h secretHooks) Warnings(obj, _ map[string]any, _ string) []string {
	s, _, err := h.Decode(obj)
	if err != nil || s.Type != corev1.SecretTypeTLS {
		return nil
	}
	if _, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); err != nil {
		return []string{err.Error()}
	}
	return nil
}

// enforceMountableSecrets is the ServiceAccount annotation that limits
// the Secrets its pods may mount.
const enforceMountableSecrets = "kubernetes.io/enforce-mountable-secrets"

// Warnings of a ServiceAccount that newly carries the deprecated
// enforce-mountable-secrets annotation.
func (h serviceAccountHooks) Warnings(obj, old map[string]any, _ string) []string {
	if _, had := annotations(old)[enforceMountableSecrets]; had {
		return nil
	}
	if _, has := annotations(obj)[enforceMountableSecrets]; !has {
		return nil
	}
	return []string{"metadata.annotations[" + enforceMountableSecrets + "]: deprecated in v1.32+; prefer separate namespaces to isolate access to mounted secrets"}
}

// annotations are obj's annotations (nil for a nil obj).
func annotations(obj map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	return ann
}

// quotaResources are the resources whose requests and limits a quota
// may both cap, in the order upstream compares them.
var quotaResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceStorage, corev1.ResourceEphemeralStorage}

// warnings of a ResourceQuota, on create only: a cap on requests above
// the cap on limits of the same resource (cpu and memory requests may
// be capped by their bare names).
func (resourceQuotaRules) warnings(q, was *corev1.ResourceQuota, _ string) []string {
	if was != nil {
		return nil
	}
	var out []string
	for _, r := range quotaResources {
		reqName := "requests." + r
		req, ok := q.Spec.Hard[reqName]
		if !ok && (r == corev1.ResourceCPU || r == corev1.ResourceMemory) {
			req, ok = q.Spec.Hard[r]
			reqName = r
		}
		limName := "limits." + r
		if lim, limOK := q.Spec.Hard[limName]; ok && limOK && req.Cmp(lim) > 0 {
			out = append(out, fmt.Sprintf("ResourceQuota %s (%s) should be less than %s (%s)", reqName, req.String(), limName, lim.String()))
		}
	}
	return out
}

// warnings of a NetworkPolicy: its ipBlocks' CIDRs that are ambiguous or
// not in canonical form.
func (networkPolicyRules) warnings(np, _ *networkingv1.NetworkPolicy, _ string) []string {
	var out []string
	block := func(p *field.Path, b *networkingv1.IPBlock) {
		if b == nil {
			return
		}
		out = append(out, podwarnings.CIDR(p.Child("cidr"), b.CIDR)...)
		for k, e := range b.Except {
			out = append(out, podwarnings.CIDR(p.Child("except").Index(k), e)...)
		}
	}
	for i, r := range np.Spec.Ingress {
		for j, peer := range r.From {
			block(field.NewPath("spec", "ingress").Index(i).Child("from").Index(j).Child("ipBlock"), peer.IPBlock)
		}
	}
	for i, r := range np.Spec.Egress {
		for j, peer := range r.To {
			block(field.NewPath("spec", "egress").Index(i).Child("to").Index(j).Child("ipBlock"), peer.IPBlock)
		}
	}
	return out
}

// warnings of an Ingress: on create, the deprecated class annotation
// without the field; of a status write, its load balancers' addresses.
func (ingressRules) warnings(ing, was *networkingv1.Ingress, sub string) []string {
	switch {
	case sub == "status":
		return loadBalancerWarnings(ing.Status.LoadBalancer.Ingress)
	case was != nil:
		return nil
	}
	if _, ok := ing.Annotations[ingressClassAnnotation]; ok && ing.Spec.IngressClassName == nil {
		return []string{fmt.Sprintf("annotation %q is deprecated, please use 'spec.ingressClassName' instead", ingressClassAnnotation)}
	}
	return nil
}

// warnings of a RuntimeClass: deprecated node labels in its scheduling
// node selector, once each (upstream's path names the selector only).
func (runtimeClassRules) warnings(rc, _ *nodev1.RuntimeClass, _ string) []string {
	if rc.Scheduling == nil {
		return nil
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(rc.Scheduling.NodeSelector)) {
		if msg, ok := podwarnings.DeprecatedNodeLabel(k); ok {
			out = append(out, "scheduling.nodeSelector: "+msg)
		}
	}
	return out
}

// ---- admission configuration ----

// staticSuffix ends the names reserved for admission configuration
// kube-apiserver reads from files.
const staticSuffix = ".static.k8s.io"

// staticNameErrors refuse the create of an admission configuration with
// a name kept for static configuration.
func staticNameErrors(obj map[string]any) field.ErrorList {
	if name := objectName(obj); strings.HasSuffix(name, staticSuffix) {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), name, staticNameMessage)}
	}
	return nil
}

var staticNameMessage = fmt.Sprintf("names ending with %q are reserved for static manifest-based configurations and cannot be managed via the API", staticSuffix)

// staticNameWarnings: an update of an admission configuration whose name
// has the reserved suffix (stored before the name was kept) warns.
func staticNameWarnings(obj, old map[string]any) []string {
	if name := objectName(obj); old != nil && strings.HasSuffix(name, staticSuffix) {
		return []string{"metadata.name: " + staticNameMessage}
	}
	return nil
}

func (policyHooks) Warnings(obj, old map[string]any, _ string) []string {
	return staticNameWarnings(obj, old)
}

func (bindingHooks) Warnings(obj, old map[string]any, _ string) []string {
	return staticNameWarnings(obj, old)
}

func (mutatingPolicyHooks) Warnings(obj, old map[string]any, _ string) []string {
	return staticNameWarnings(obj, old)
}

func (mutatingBindingHooks) Warnings(obj, old map[string]any, _ string) []string {
	return staticNameWarnings(obj, old)
}

// unreachableByWebhooks are the resources admission webhooks are never
// called for (reviews that are not stored: calling out for them could
// lock a cluster up).
var unreachableByWebhooks = []schema.GroupResource{
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"},
	{Group: "authentication.k8s.io", Resource: "tokenreviews"},
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"},
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
}

// Warnings of a webhook configuration: after the reserved name's on an
// update, each rule naming, without wildcards, resources webhooks are
// never called for (each once, in the rule's order).
func (h webhookConfigHooks[T]) Warnings(obj, old map[string]any, _ string) []string {
	out := staticNameWarnings(obj, old)
	hooks, err := h.webhooks(obj)
	if err != nil {
		return out
	}
	for i, wh := range hooks {
		for j, r := range wh.Rules {
			if slices.Contains(r.APIGroups, "*") || slices.Contains(r.Resources, "*") {
				continue
			}
			var named []schema.GroupResource
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					gr := schema.GroupResource{Group: g, Resource: res}
					if slices.Contains(unreachableByWebhooks, gr) && !slices.Contains(named, gr) {
						named = append(named, gr)
					}
				}
			}
			for _, gr := range named {
				out = append(out, fmt.Sprintf("webhooks[%d].rules[%d]: %s is excluded from admission webhooks; this rule will have no effect", i, j, gr))
			}
		}
	}
	return out
}
