package builtin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/crdserver/crdserver/internal/builtin/podwarnings"
	"github.com/crdserver/crdserver/internal/registry"
)

// Pods is the core v1 pods resource as kube-apiserver serves it without a
// kubelet or scheduler: a pod is stored with upstream's defaults and what
// its default admission plugins add (ServiceAccount, Priority,
// DefaultTolerationSeconds), its status is Pending with its QoS class
// until a client writes /status, and a pod bound to a node stays, marked
// deleted, for its grace period's sake until deleted with a grace period
// of 0, as nothing on the node confirms it stopped. src reads the service
// accounts and priority classes the plugins look up.
func Pods(src PodAdmissionSource, store PodStore) *registry.Definition {
	k := kindDef{
		version: "v1", resource: "pods", kind: "Pod",
		shortNames: []string{"po"}, categories: []string{"all"}, scope: registry.Namespaced,
		status: true, statusMetadata: []string{"labels", "annotations", "finalizers"},
		selectable: []string{
			"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
			"spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName",
		},
	}
	h := podHooks{kindHooks: newKindHooks[corev1.Pod](k, podRules{}), src: src, store: store, suffix: func() string { return utilrand.String(5) }}
	def := k.definition(h)
	def.Versions[0].Subresources.Other = podSubresources
	return def
}

// PodAdmissionSource reads what upstream's pod admission plugins read.
type PodAdmissionSource interface {
	// ServiceAccount returns namespace/name, or an error that is
	// apierrors.IsNotFound when there is none.
	ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	PriorityClasses(ctx context.Context) ([]schedulingv1.PriorityClass, error)
	// LimitRanges are namespace's LimitRanges, by name.
	LimitRanges(ctx context.Context, namespace string) ([]corev1.LimitRange, error)
	// RuntimeClass returns the named class as of now, or an error that
	// is apierrors.IsNotFound when there is none.
	RuntimeClass(ctx context.Context, name string) (*nodev1.RuntimeClass, error)
	// Node returns the named node, or an error that is
	// apierrors.IsNotFound when there is none.
	Node(ctx context.Context, name string) (*corev1.Node, error)
}

// podHooks are a pod's hooks: the kind's rules, the admission plugins and
// the pod strategy's graceful deletion.
type podHooks struct {
	kindHooks[corev1.Pod, podRules]
	coreFieldLabels
	src   PodAdmissionSource
	store PodStore
	// suffix names a new service account token volume
	// (kube-api-access-<suffix>), as upstream's name generator does.
	suffix func() string
}

var (
	_ registry.CreateAdmitter       = podHooks{}
	_ registry.FieldComputer        = podHooks{}
	_ registry.FieldLabelConverter  = podHooks{}
	_ registry.GracefulDeleter      = podHooks{}
	_ registry.ReturnsDeletedObject = podHooks{}
	_ registry.StatusUpdatePreparer = podHooks{}
	_ registry.PrepareWarner        = podHooks{}
)

// ReturnDeletedObject: as upstream's pod store, a delete answers with the
// pod.
func (podHooks) ReturnDeletedObject() {}

// warnings are upstream's WarningsOnCreate of a pod: a name that is no
// DNS label, then its spec's. Upstream warns of no update.
func (podRules) warnings(now, was *corev1.Pod, sub string) []string {
	if was != nil || sub != "" {
		return nil
	}
	var out []string
	if msgs := validation.IsDNS1123Label(now.Name); len(msgs) > 0 {
		out = append(out, fmt.Sprintf("metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
	}
	return append(out, podwarnings.Pod(now)...)
}

// PrepareWarnings are the warnings of the AppArmor annotations
// PrepareForCreate copies to fields.
func (h podHooks) PrepareWarnings(obj map[string]any) []string {
	p, _, err := h.Decode(obj)
	if err != nil {
		return nil
	}
	return appArmorAnnotationWarnings(p)
}

// PrepareForCreate is upstream's strategy: the status a new pod has is
// phase Pending and the QoS class its resources give; the match label
// keys of its affinity terms and spread constraints are merged into
// their selectors, and its own resources are completed from its
// containers'.
func (h podHooks) PrepareForCreate(obj map[string]any) {
	h.kindHooks.PrepareForCreate(obj)
	h.rewrite(obj, func(p *corev1.Pod) {
		syncAppArmorAnnotations(p)
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
		if len(p.Spec.SchedulingGates) > 0 {
			p.Status.Conditions = []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonSchedulingGated, Message: "Scheduling is blocked due to non-empty scheduling gates",
				LastTransitionTime: metav1.Now(),
			}}
		}
		mergeMatchLabelKeys(p)
		defaultPodLevelResources(&p.Spec)
		p.Status.QOSClass = podQOS(p)
	})
}

// PrepareForUpdate defaults again and keeps what upstream's Priority and
// DefaultTolerationSeconds plugins give an update: the old priority and
// preemption policy when the new pod leaves them out, the two default
// tolerations when it drops them; and, as upstream's strategy, the old
// pod-level resources when the new pod has none.
func (h podHooks) PrepareForUpdate(obj, old map[string]any) {
	h.kindHooks.PrepareForUpdate(obj, old)
	was, _, err := h.Decode(old)
	if err != nil {
		return
	}
	h.rewrite(obj, func(p *corev1.Pod) {
		if p.Spec.Priority == nil {
			p.Spec.Priority = was.Spec.Priority
		}
		if p.Spec.PreemptionPolicy == nil {
			p.Spec.PreemptionPolicy = was.Spec.PreemptionPolicy
		}
		if p.Spec.Resources == nil {
			p.Spec.Resources = was.Spec.Resources
		}
		addDefaultTolerations(&p.Spec)
	})
}

// PrepareForStatusUpdate keeps the QoS class and observed generations a
// status write leaves out, as upstream's status strategy does.
func (h podHooks) PrepareForStatusUpdate(obj, old map[string]any) {
	was, _, err := h.Decode(old)
	if err != nil {
		return
	}
	h.rewrite(obj, func(p *corev1.Pod) {
		if p.Status.QOSClass == "" {
			p.Status.QOSClass = was.Status.QOSClass
		}
		if p.Status.ObservedGeneration == 0 {
			p.Status.ObservedGeneration = was.Status.ObservedGeneration
		}
		olds := map[corev1.PodConditionType][]int64{}
		for _, c := range was.Status.Conditions {
			olds[c.Type] = append(olds[c.Type], c.ObservedGeneration)
		}
		for i, c := range p.Status.Conditions {
			var g int64
			if gs := olds[c.Type]; len(gs) > 0 {
				g, olds[c.Type] = gs[0], gs[1:]
			}
			if c.ObservedGeneration == 0 {
				p.Status.Conditions[i].ObservedGeneration = g
			}
		}
	})
}

// AdmitCreate is what upstream's default mutating admission plugins do to
// a new pod, in their order: LimitRanger (each of the namespace's
// LimitRanges' container defaults), ServiceAccount (the account, default
// "default", must exist; its token volume is mounted in every container
// unless automounting is off; its image pull secrets are the pod's when
// the pod has none), Priority (from the named class, or the global
// default class, else 0), DefaultTolerationSeconds and RuntimeClass (the
// named class must exist; its overhead and scheduling constraints become
// the pod's); then the validating half of LimitRanger. (RuntimeClass's
// runs after the pod is validated, as upstream's: CheckCreateAdmission.)
func (h podHooks) AdmitCreate(ctx context.Context, obj map[string]any) error {
	if h.src == nil {
		return nil
	}
	p, _, err := h.Decode(obj)
	if err != nil {
		return nil // CheckType refused it
	}
	ranges, err := h.defaultFromLimitRanges(ctx, p)
	if err != nil {
		return err
	}
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
		if err := h.admitServiceAccount(ctx, p.Namespace, p); err != nil {
			return err
		}
	}
	if err := h.admitPriority(ctx, p); err != nil {
		return err
	}
	addDefaultTolerations(&p.Spec)
	rc, err := h.runtimeClassFor(ctx, p)
	if err != nil {
		return err
	}
	if err := admitRuntimeClass(p, rc); err != nil {
		return err
	}
	// Upstream checks in its validating phase, after every mutation.
	if err := checkLimitRanges(ranges, p); err != nil {
		return err
	}
	h.rewrite(obj, func(t *corev1.Pod) { t.Spec = p.Spec })
	if a := p.Annotations[limitRangerAnnotation]; a != "" {
		md, _ := obj["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
			md["annotations"] = ann
		}
		ann[limitRangerAnnotation] = a
	}
	return nil
}

// limitRangerAnnotation records what upstream's LimitRanger set.
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// defaultFromLimitRanges is the mutating half of upstream's LimitRanger:
// the LimitRanges of p's namespace, whose container defaults it gives p.
func (h podHooks) defaultFromLimitRanges(ctx context.Context, p *corev1.Pod) ([]corev1.LimitRange, error) {
	ranges, err := h.src.LimitRanges(ctx, p.Namespace)
	if err != nil {
		return nil, fmt.Errorf("listing LimitRanges: %w", err)
	}
	for i := range ranges {
		applyLimitRange(&ranges[i], p)
	}
	return ranges, nil
}

// checkLimitRanges is the validating half of upstream's LimitRanger: p
// within each range's minimums, maximums and ratios.
func checkLimitRanges(ranges []corev1.LimitRange, p *corev1.Pod) error {
	for i := range ranges {
		if err := checkLimitRange(&ranges[i], p); err != nil {
			return err
		}
	}
	return nil
}

// applyLimitRange is upstream's LimitRanger defaulting of a new pod: each
// container's limits and requests it lacks are the range's Container
// defaults, and the annotation says which it set (checkLimitRange checks
// the range's minimums, maximums and ratios).
func applyLimitRange(lr *corev1.LimitRange, p *corev1.Pod) {
	def := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, l := range lr.Spec.Limits {
		if l.Type != corev1.LimitTypeContainer {
			continue
		}
		for k, v := range l.DefaultRequest {
			def.Requests[k] = v.DeepCopy()
		}
		for k, v := range l.Default {
			def.Limits[k] = v.DeepCopy()
		}
	}
	var notes []string
	merge := func(c *corev1.Container, kind string) {
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		var reqs, lims []string
		for k, v := range def.Limits {
			if _, ok := c.Resources.Limits[k]; !ok {
				c.Resources.Limits[k] = v.DeepCopy()
				lims = append(lims, string(k))
			}
		}
		for k, v := range def.Requests {
			if _, ok := c.Resources.Requests[k]; !ok {
				c.Resources.Requests[k] = v.DeepCopy()
				reqs = append(reqs, string(k))
			}
		}
		if len(reqs) > 0 {
			slices.Sort(reqs)
			notes = append(notes, strings.Join(reqs, ", ")+" request for "+kind+" "+c.Name)
		}
		if len(lims) > 0 {
			slices.Sort(lims)
			notes = append(notes, strings.Join(lims, ", ")+" limit for "+kind+" "+c.Name)
		}
	}
	for i := range p.Spec.Containers {
		merge(&p.Spec.Containers[i], "container")
	}
	for i := range p.Spec.InitContainers {
		merge(&p.Spec.InitContainers[i], "init container")
	}
	if len(notes) > 0 {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[limitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
	}
}

// defaultServiceAccount is the account a pod naming none runs as.
const defaultServiceAccount = "default"

// Upstream's service account token volume and where it is mounted.
const (
	serviceAccountVolumePrefix = "kube-api-access-"
	serviceAccountMountPath    = "/var/run/secrets/kubernetes.io/serviceaccount"
	// boundTokenExpirationSeconds is the token's requested lifetime,
	// upstream's WarnOnlyBoundTokenExpirationSeconds.
	boundTokenExpirationSeconds = 60*60 + 7
)

func (h podHooks) admitServiceAccount(ctx context.Context, ns string, p *corev1.Pod) error {
	if p.Spec.ServiceAccountName == "" {
		p.Spec.ServiceAccountName = defaultServiceAccount
		p.Spec.DeprecatedServiceAccount = defaultServiceAccount //nolint:staticcheck // kept in step, as upstream does
	}
	sa, err := h.serviceAccount(ctx, ns, p.Spec.ServiceAccountName)
	if err != nil {
		return fmt.Errorf("error looking up service account %s/%s: %w", ns, p.Spec.ServiceAccountName, err)
	}
	if automount(sa, p) {
		h.mountServiceAccountToken(&p.Spec)
	}
	if len(p.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		p.Spec.ImagePullSecrets = make([]corev1.LocalObjectReference, len(sa.ImagePullSecrets))
		for i, s := range sa.ImagePullSecrets {
			p.Spec.ImagePullSecrets[i].Name = s.Name
		}
	}
	return nil
}

// serviceAccount looks namespace/name up; the default account, which the
// service account controller creates beside a new namespace, is looked
// up ten times over about a second and a half before it is missing, as
// upstream's plugin does.
func (h podHooks) serviceAccount(ctx context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	attempts := 1
	if name == defaultServiceAccount {
		attempts = 10
	}
	for i := 0; ; i++ {
		sa, err := h.src.ServiceAccount(ctx, ns, name)
		if err == nil {
			return sa, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
		if i+1 >= attempts {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(150 * time.Millisecond):
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccount"), name)
}

func automount(sa *corev1.ServiceAccount, p *corev1.Pod) bool {
	if p.Spec.AutomountServiceAccountToken != nil {
		return *p.Spec.AutomountServiceAccountToken
	}
	return ptr.Deref(sa.AutomountServiceAccountToken, true)
}

// mountServiceAccountToken mounts the token volume (the pod's own
// kube-api-access- volume, else a new one) in every init and regular
// container that mounts nothing at the token's path, adding the volume
// when a container needs it.
func (h podHooks) mountServiceAccountToken(s *corev1.PodSpec) {
	name := ""
	for _, v := range s.Volumes {
		if strings.HasPrefix(v.Name, serviceAccountVolumePrefix) {
			name = v.Name
			break
		}
	}
	has := name != ""
	if !has {
		name = serviceAccountVolumePrefix + h.suffix()
	}
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: serviceAccountMountPath}
	needed := false
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			if !mountsAt(cs[i].VolumeMounts, serviceAccountMountPath) {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	if !has && needed {
		s.Volumes = append(s.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: tokenVolumeSource()}})
	}
}

func mountsAt(ms []corev1.VolumeMount, path string) bool {
	for _, m := range ms {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// tokenVolumeSource is the projected volume upstream mounts: a bound
// token, the cluster's CA and the pod's namespace.
func tokenVolumeSource() *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](corev1.ProjectedVolumeSourceDefaultMode),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](boundTokenExpirationSeconds)}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: RootCAConfigMap},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}
}

// admitPriority sets the priority (and preemption policy) of the pod's
// class, or of the global default class when it names none (the lowest
// of several), else 0 and PreemptLowerPriority. A value the pod gives
// must be the computed one.
func (h podHooks) admitPriority(ctx context.Context, p *corev1.Pod) error {
	classes, err := h.src.PriorityClasses(ctx)
	if err != nil {
		return fmt.Errorf("listing PriorityClasses: %w", err)
	}
	var pc *schedulingv1.PriorityClass
	if name := p.Spec.PriorityClassName; name != "" {
		for i := range classes {
			if classes[i].Name == name {
				pc = &classes[i]
			}
		}
		if pc == nil {
			return fmt.Errorf("no PriorityClass with name %v was found", name)
		}
	} else {
		for i := range classes {
			if c := &classes[i]; c.GlobalDefault && (pc == nil || c.Value < pc.Value) {
				pc = c
			}
		}
	}
	value, policy := int32(0), ptr.To(corev1.PreemptLowerPriority)
	if pc != nil {
		p.Spec.PriorityClassName, value, policy = pc.Name, pc.Value, pc.PreemptionPolicy
	}
	if p.Spec.Priority != nil && *p.Spec.Priority != value {
		return fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *p.Spec.Priority, value)
	}
	p.Spec.Priority = &value
	if policy != nil {
		if p.Spec.PreemptionPolicy != nil && *p.Spec.PreemptionPolicy != *policy {
			return fmt.Errorf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *p.Spec.PreemptionPolicy, *policy)
		}
		p.Spec.PreemptionPolicy = ptr.To(*policy)
	}
	return nil
}

// defaultTolerationSeconds is how long a pod tolerates a node that is
// not ready or unreachable, upstream's default for both.
const defaultTolerationSeconds = 300

// addDefaultTolerations adds upstream's two NoExecute tolerations, each
// unless the pod tolerates its taint already (a toleration with no key
// or no effect tolerates it).
func addDefaultTolerations(s *corev1.PodSpec) {
	tolerates := func(key string) bool {
		for _, t := range s.Tolerations {
			if (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
				return true
			}
		}
		return false
	}
	notReady, unreachable := tolerates(corev1.TaintNodeNotReady), tolerates(corev1.TaintNodeUnreachable)
	for _, add := range []struct {
		key string
		has bool
	}{{corev1.TaintNodeNotReady, notReady}, {corev1.TaintNodeUnreachable, unreachable}} {
		if !add.has {
			s.Tolerations = append(s.Tolerations, corev1.Toleration{
				Key: add.key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
				TolerationSeconds: ptr.To[int64](defaultTolerationSeconds),
			})
		}
	}
}

// GracePeriod is upstream's pod strategy: the period asked for, else
// the pod's terminationGracePeriodSeconds; 0 for a pod on no node or one
// that has finished; 1 for a negative one.
func (h podHooks) GracePeriod(obj map[string]any, opts *metav1.DeleteOptions) int64 {
	p, _, err := h.Decode(obj)
	if err != nil {
		return 0
	}
	var period int64
	if opts.GracePeriodSeconds != nil {
		period = *opts.GracePeriodSeconds
	} else if p.Spec.TerminationGracePeriodSeconds != nil {
		period = *p.Spec.TerminationGracePeriodSeconds
	}
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		period = 0
	}
	if period < 0 {
		period = 1
	}
	return period
}

// ComputedFields gives the selectable fields that are no path of the
// stored pod: spec.hostNetwork ("false" when absent), status.podIP (the
// first of status.podIPs) and status.podIPs, which upstream accepts as
// a label but never sets: only an empty value selects a pod by it.
func (podHooks) ComputedFields(obj map[string]any) map[string]string {
	host, _ := nested(obj, "spec", "hostNetwork").(bool)
	ip := ""
	if ips, _ := nested(obj, "status", "podIPs").([]any); len(ips) > 0 {
		if m, ok := ips[0].(map[string]any); ok {
			ip, _ = m["ip"].(string)
		}
	}
	return map[string]string{"spec.hostNetwork": strconv.FormatBool(host), "status.podIP": ip, "status.podIPs": ""}
}

// ConvertFieldLabel selects the legacy spec.host as spec.nodeName, as
// upstream's conversion does; other labels are the resource's own.
func (podHooks) ConvertFieldLabel(_, label, value string) (string, string, error) {
	if label == "spec.host" {
		return "spec.nodeName", value, nil
	}
	return label, value, nil
}

// podQOS is upstream's QoS class of a pod: from the pod-level resources
// when set, else from each init and regular container's; Burstable as
// soon as one is, or when they differ.
func podQOS(p *corev1.Pod) corev1.PodQOSClass {
	if podLevelResourcesSet(&p.Spec) {
		return requirementsQOS(p.Spec.Resources)
	}
	var qos corev1.PodQOSClass
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			c := requirementsQOS(&cs[i].Resources)
			switch {
			case c == corev1.PodQOSBurstable:
				return c
			case qos == "":
				qos = c
			case qos != c:
				return corev1.PodQOSBurstable
			}
		}
	}
	if qos == "" {
		return corev1.PodQOSBestEffort
	}
	return qos
}

func requirementsQOS(r *corev1.ResourceRequirements) corev1.PodQOSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	var qos corev1.PodQOSClass
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := r.Requests[name], r.Limits[name]
		c := corev1.PodQOSGuaranteed
		if !req.Equal(lim) {
			return corev1.PodQOSBurstable
		} else if req.IsZero() {
			c = corev1.PodQOSBestEffort
		}
		if qos == "" {
			qos = c
		} else if qos != c {
			return corev1.PodQOSBurstable
		}
	}
	return qos
}

type podRules struct{}

// defaults are upstream's v1 defaults of a pod: the pod spec's (as a
// template's), then those of a pod alone: requests default to limits,
// service links are on, a negative grace period is 1, host network ports
// default their host port.
func (podRules) podSpecPath() []string { return []string{"spec"} }

func (podRules) defaults(p *corev1.Pod) {
	t := corev1.PodTemplateSpec{Spec: p.Spec}
	defaultPodTemplate(&t)
	p.Spec = t.Spec
	s := &p.Spec
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = s.DeprecatedServiceAccount //nolint:staticcheck // the alias upstream keeps in step
	}
	s.DeprecatedServiceAccount = s.ServiceAccountName //nolint:staticcheck
	if g := s.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		s.TerminationGracePeriodSeconds = ptr.To[int64](1)
	}
	for _, cs := range [][]corev1.Container{s.Containers, s.InitContainers} {
		for i := range cs {
			r := &cs[i].Resources
			if r.Limits == nil {
				continue
			}
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			for k, v := range r.Limits {
				if _, ok := r.Requests[k]; !ok {
					r.Requests[k] = v.DeepCopy()
				}
			}
		}
	}
	if s.EnableServiceLinks == nil {
		s.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
	if s.HostNetwork {
		for _, cs := range [][]corev1.Container{s.Containers, s.InitContainers} {
			for i := range cs {
				for j := range cs[i].Ports {
					if cs[i].Ports[j].HostPort == 0 {
						cs[i].Ports[j].HostPort = cs[i].Ports[j].ContainerPort
					}
				}
			}
		}
	}
	for i := range s.EphemeralContainers {
		c := corev1.Container(s.EphemeralContainers[i].EphemeralContainerCommon)
		defaultContainer(&c)
		s.EphemeralContainers[i].EphemeralContainerCommon = corev1.EphemeralContainerCommon(c)
	}
}

func (podRules) validate(p, was *corev1.Pod) field.ErrorList {
	sp := field.NewPath("spec")
	errs := validatePodMetadataAndSpec(p)
	if was == nil {
		if len(p.Spec.EphemeralContainers) > 0 {
			errs = append(errs, field.Forbidden(sp.Child("ephemeralContainers"), "cannot be set on create"))
		}
		errs = append(errs, validatePodSecurityAnnotationsMatch(p.Annotations, &p.Spec, sp)...)
	}
	if was != nil {
		errs = append(errs, validatePodSpecUpdate(&p.Spec, &was.Spec)...)
	}
	return errs
}

// validatePodMetadataAndSpec is what upstream checks of a pod, whichever
// way it is written: its annotations and its spec.
func validatePodMetadataAndSpec(p *corev1.Pod) field.ErrorList {
	sp := field.NewPath("spec")
	errs := validatePodSecurityAnnotations(p.Annotations, &p.Spec, field.NewPath("metadata", "annotations"))
	errs = append(errs, validatePodSpec(&p.Spec, sp)...)
	return append(errs, validatePodContainerImages(&p.Spec, sp)...)
}

func (podRules) columns() []metav1.TableColumnDefinition {
	status, spec := corev1.PodStatus{}.SwaggerDoc(), corev1.PodSpec{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
		{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
		{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."},
		ageColumn,
		{Name: "IP", Type: "string", Priority: 1, Description: status["podIP"]},
		{Name: "Node", Type: "string", Priority: 1, Description: spec["nodeName"]},
		{Name: "Nominated Node", Type: "string", Priority: 1, Description: status["nominatedNodeName"]},
		{Name: "Readiness Gates", Type: "string", Priority: 1, Description: spec["readinessGates"]},
	}
}

func (podRules) cells(p *corev1.Pod) []any {
	ready, status, restarts := podSummary(p)
	ip := "<none>"
	if len(p.Status.PodIPs) > 0 && p.Status.PodIPs[0].IP != "" {
		ip = p.Status.PodIPs[0].IP
	}
	node, nominated := orNone(p.Spec.NodeName), orNone(p.Status.NominatedNodeName)
	gates := "<none>"
	if len(p.Spec.ReadinessGates) > 0 {
		n := 0
		for _, g := range p.Spec.ReadinessGates {
			for _, c := range p.Status.Conditions {
				if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
					n++
					break
				}
			}
		}
		gates = fmt.Sprintf("%d/%d", n, len(p.Spec.ReadinessGates))
	}
	return []any{p.Name, ready, status, restarts, age(&p.ObjectMeta), ip, node, nominated, gates}
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// restartable reports whether c is a sidecar: an init container that
// restarts always.
func restartable(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// podSummary is upstream's READY, STATUS and RESTARTS of a pod, from its
// containers' statuses as a kubelet reports them.
func podSummary(p *corev1.Pod) (ready, reason, restarts string) {
	total, readyN, count, sidecarCount := len(p.Spec.Containers), 0, 0, 0
	var last, sidecarLast metav1.Time
	reason = string(p.Status.Phase)
	if p.Status.Reason != "" {
		reason = p.Status.Reason
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}
	inits := map[string]*corev1.Container{}
	for i := range p.Spec.InitContainers {
		inits[p.Spec.InitContainers[i].Name] = &p.Spec.InitContainers[i]
		if restartable(&p.Spec.InitContainers[i]) {
			total++
		}
	}
	later := func(t *metav1.Time, s corev1.ContainerStatus) {
		if term := s.LastTerminationState.Terminated; term != nil && t.Before(&term.FinishedAt) {
			*t = term.FinishedAt
		}
	}
	initializing := false
	for i, s := range p.Status.InitContainerStatuses {
		count += int(s.RestartCount)
		later(&last, s)
		sidecar := restartable(inits[s.Name])
		if sidecar {
			sidecarCount += int(s.RestartCount)
			later(&sidecarLast, s)
		}
		term := s.State.Terminated
		switch {
		case term != nil && term.ExitCode == 0:
			continue
		case sidecar && s.Started != nil && *s.Started:
			if s.Ready {
				readyN++
			}
			continue
		case term != nil:
			switch {
			case term.Reason != "":
				reason = "Init:" + term.Reason
			case term.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", term.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", term.ExitCode)
			}
		case s.State.Waiting != nil && s.State.Waiting.Reason != "" && s.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + s.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing || conditionTrue(p, corev1.PodInitialized) {
		count, last = sidecarCount, sidecarLast
		running, errorReason := false, ""
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			s := p.Status.ContainerStatuses[i]
			count += int(s.RestartCount)
			later(&last, s)
			switch term := s.State.Terminated; {
			case s.State.Waiting != nil && s.State.Waiting.Reason != "":
				reason = s.State.Waiting.Reason
			case term != nil:
				switch {
				case term.Reason != "":
					reason = term.Reason
				case term.Signal != 0:
					reason = fmt.Sprintf("Signal:%d", term.Signal)
				default:
					reason = fmt.Sprintf("ExitCode:%d", term.ExitCode)
				}
				if term.ExitCode != 0 {
					errorReason = reason
				}
			case s.Ready && s.State.Running != nil:
				running = true
				readyN++
			}
		}
		if reason == "Completed" {
			switch {
			case running && hasCondition(p, corev1.PodReady):
				reason = "Running"
			case errorReason != "":
				reason = errorReason
			case running:
				reason = "NotReady"
			}
		}
	}
	terminal := p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
	if p.DeletionTimestamp != nil && p.Status.Reason == "NodeLost" {
		reason = "Unknown"
	} else if p.DeletionTimestamp != nil && !terminal {
		reason = "Terminating"
	}
	restarts = strconv.Itoa(count)
	if count != 0 && !last.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", count, age(&metav1.ObjectMeta{CreationTimestamp: last}))
	}
	return fmt.Sprintf("%d/%d", readyN, total), reason, restarts
}

func conditionTrue(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasCondition(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
