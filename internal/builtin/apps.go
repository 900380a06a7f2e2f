package builtin

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/crdserver/crdserver/internal/registry"
)

// Deployments, ReplicaSets, StatefulSets and DaemonSets are stored
// objects: crdserver is not a cluster, so no controller acts on them and
// no pods appear; their status is whatever a client writes to /status.
// They are served with upstream's defaults for what a user reads back,
// its validation of the selector, the replica count and the strategy,
// and the basics of the pod template (containers, names, images, restart
// policy); the rest of upstream's pod validation is not done. The
// ControllerRevisions their controllers would write are those clients
// write (controllerrevisions.go).

// Deployments is the apps/v1 deployments resource.
func Deployments() *registry.Definition {
	return appsDefinition("deployments", "Deployment", "deploy", true, deploymentHooks{typedV1("Deployment", defaultDeployment)})
}

// ReplicaSets is the apps/v1 replicasets resource.
func ReplicaSets() *registry.Definition {
	return appsDefinition("replicasets", "ReplicaSet", "rs", true, replicaSetHooks{typedV1("ReplicaSet", defaultReplicaSet)})
}

// StatefulSets is the apps/v1 statefulsets resource.
func StatefulSets() *registry.Definition {
	return appsDefinition("statefulsets", "StatefulSet", "sts", true, statefulSetHooks{typedV1("StatefulSet", defaultStatefulSet)})
}

// DaemonSets is the apps/v1 daemonsets resource (no scale subresource:
// a DaemonSet runs one pod per node).
func DaemonSets() *registry.Definition {
	return appsDefinition("daemonsets", "DaemonSet", "ds", false, daemonSetHooks{typedV1("DaemonSet", defaultDaemonSet)})
}

func appsDefinition(resource, kind, short string, scale bool, hooks any) *registry.Definition {
	sub := registry.Subresources{Status: true, StatusMetadata: registry.UserMetadata}
	if kind == "Deployment" {
		// Upstream's status strategy of Deployments resets their labels.
		sub.StatusMetadata = []string{"annotations", "finalizers", "ownerReferences"}
	}
	if scale {
		// The Scale's selector is spec.selector in its string form, as
		// upstream's scale subresources of these kinds give it.
		sub.Scale = &registry.Scale{
			SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas",
			LabelSelectorPath: ".spec.selector", LabelSelectorObject: true,
		}
	}
	return &registry.Definition{
		Group:      "apps",
		Resource:   resource,
		Singular:   strings.ToLower(kind),
		Kind:       kind,
		ListKind:   kind + "List",
		ShortNames: []string{short},
		Categories: []string{"all"},
		Scope:      registry.Namespaced,
		Versions:   []registry.Version{{Name: "v1", Served: true, Storage: true, Subresources: sub}},
		Hooks:      hooks,
	}
}

// appsHooks is what the four kinds share: typed decoding, patches,
// protobuf bodies, the kind's defaults and an empty status on create.
type appsHooks[T any] struct {
	Typed[T]
	defaults func(*T)
}

func (appsHooks[T]) PatchSchema() any { return *new(T) }

// AllowUnconditionalUpdate: as upstream's strategies, a PUT may omit
// metadata.resourceVersion.
func (appsHooks[T]) AllowUnconditionalUpdate() bool { return true }

func (appsHooks[T]) NewProtobuf() registry.ProtoMessage {
	return any(new(T)).(registry.ProtoMessage)
}

// Default implements registry.Defaulter: the round trip through T with
// the kind's defaults, before the writer's fields are recorded, so that
// the writer owns them (a Deployment's strategy, its pod template's
// defaults), as upstream's field manager records them.
func (h appsHooks[T]) Default(obj map[string]any) { h.rewrite(obj, h.defaults) }

// PrepareForCreate defaults obj again (mutating admission may have changed
// it since Default); the status starts as the Go type's empty one, as
// upstream's strategies reset it after the field manager (a StatefulSet
// answers replicas: 0).
func (h appsHooks[T]) PrepareForCreate(obj map[string]any) {
	delete(obj, "status")
	h.Default(obj)
}

func (h appsHooks[T]) PrepareForUpdate(obj, _ map[string]any) { h.Default(obj) }

func typedV1[T any](kind string, defaults func(*T)) appsHooks[T] {
	return appsHooks[T]{Typed[T]{Kind: kind, Version: "v1"}, defaults}
}

// ---- defaults (upstream's apps/v1 and core/v1 defaulters) ----

func defaultDeployment(d *appsv1.Deployment) {
	s := &d.Spec
	setDefault(&s.Replicas, 1)
	if s.Strategy.Type == "" {
		s.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if s.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if s.Strategy.RollingUpdate == nil {
			s.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if s.Strategy.RollingUpdate.MaxUnavailable == nil {
			s.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("25%"))
		}
		if s.Strategy.RollingUpdate.MaxSurge == nil {
			s.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("25%"))
		}
	}
	setDefault(&s.RevisionHistoryLimit, 10)
	setDefault(&s.ProgressDeadlineSeconds, 600)
	defaultPodTemplate(&s.Template)
}

func defaultReplicaSet(rs *appsv1.ReplicaSet) {
	setDefault(&rs.Spec.Replicas, 1)
	defaultPodTemplate(&rs.Spec.Template)
}

func defaultStatefulSet(ss *appsv1.StatefulSet) {
	s := &ss.Spec
	if s.PodManagementPolicy == "" {
		s.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if s.UpdateStrategy.RollingUpdate == nil {
			s.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if ru := s.UpdateStrategy.RollingUpdate; s.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil {
		setDefault(&ru.Partition, 0)
		// MaxUnavailableStatefulSet is on by default since 1.37.
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}
	}
	if s.PersistentVolumeClaimRetentionPolicy == nil {
		s.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if p := s.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted == "" {
		p.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if p := s.PersistentVolumeClaimRetentionPolicy; p.WhenScaled == "" {
		p.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	setDefault(&s.Replicas, 1)
	setDefault(&s.RevisionHistoryLimit, 10)
	defaultPodTemplate(&s.Template)
	// Each claim template is a PersistentVolumeClaim with its defaults,
	// and, as upstream's conversion writes it out, its apiVersion and
	// kind.
	for i := range s.VolumeClaimTemplates {
		c := &s.VolumeClaimTemplates[i]
		c.APIVersion, c.Kind = "v1", "PersistentVolumeClaim"
		if c.Spec.VolumeMode == nil {
			c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		}
		if c.Status.Phase == "" {
			c.Status.Phase = corev1.ClaimPending
		}
	}
}

func defaultDaemonSet(ds *appsv1.DaemonSet) {
	s := &ds.Spec
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if s.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if s.UpdateStrategy.RollingUpdate == nil {
			s.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if s.UpdateStrategy.RollingUpdate.MaxUnavailable == nil {
			s.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}
		if s.UpdateStrategy.RollingUpdate.MaxSurge == nil {
			s.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
		}
	}
	setDefault(&s.RevisionHistoryLimit, 10)
	defaultPodTemplate(&s.Template)
}

func setDefault(p **int32, v int32) {
	if *p == nil {
		*p = ptr.To(v)
	}
}

// defaultPodTemplate applies the core/v1 pod defaults a user sees in
// `kubectl get -o yaml` of a workload, once the fields of features that
// are off are dropped.
func defaultPodTemplate(t *corev1.PodTemplateSpec) {
	s := &t.Spec
	dropDisabledPodFields(s)
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			defaultContainer(&cs[i])
		}
	}
	for i := range s.Volumes {
		defaultVolume(&s.Volumes[i])
	}
}

// defaultVolume applies upstream's volume defaults: a volume with no
// source is an emptyDir; secret, configMap, downwardAPI and projected
// volumes get mode 0644, a projected token an hour's lifetime, a host
// path the unset type, a field reference version v1, an ephemeral
// volume's claim the Filesystem mode, an image the pull policy its tag
// gives (as a container's).
func defaultVolume(v *corev1.Volume) {
	if reflect.ValueOf(v.VolumeSource).IsZero() {
		v.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	mode := func(m **int32, def int32) {
		if *m == nil {
			*m = ptr.To(def)
		}
	}
	if s := v.Secret; s != nil {
		mode(&s.DefaultMode, corev1.SecretVolumeSourceDefaultMode)
	}
	if s := v.ConfigMap; s != nil {
		mode(&s.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if s := v.DownwardAPI; s != nil {
		mode(&s.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode)
		defaultDownwardAPIFiles(s.Items)
	}
	if s := v.Projected; s != nil {
		mode(&s.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
		for i := range s.Sources {
			src := &s.Sources[i]
			if t := src.ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				t.ExpirationSeconds = ptr.To[int64](3600)
			}
			if d := src.DownwardAPI; d != nil {
				defaultDownwardAPIFiles(d.Items)
			}
		}
	}
	if s := v.HostPath; s != nil && s.Type == nil {
		s.Type = ptr.To(corev1.HostPathUnset)
	}
	if e := v.Ephemeral; e != nil && e.VolumeClaimTemplate != nil && e.VolumeClaimTemplate.Spec.VolumeMode == nil {
		e.VolumeClaimTemplate.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	if s := v.Image; s != nil && s.PullPolicy == "" {
		s.PullPolicy = corev1.PullIfNotPresent
		if s.Reference != "" {
			s.PullPolicy = pullPolicy(s.Reference)
		}
	}
}

func defaultDownwardAPIFiles(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		if f := items[i].FieldRef; f != nil && f.APIVersion == "" {
			f.APIVersion = "v1"
		}
	}
}

// defaultProbe applies upstream's probe defaults: a timeout of 1s, a
// period of 10s, thresholds of 1 success and 3 failures, and its
// handler's.
func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
	if g := p.GRPC; g != nil && g.Service == nil {
		g.Service = ptr.To("")
	}
}

// defaultHTTPGet: path "/", scheme HTTP.
func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func defaultContainer(c *corev1.Container) {
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicy(c.Image)
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	if l := c.Lifecycle; l != nil {
		for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
}

// pullPolicy is upstream's default: Always for an image tagged latest or
// not tagged at all, IfNotPresent for other tags and for digests.
func pullPolicy(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	name := image[strings.LastIndex(image, "/")+1:]
	if i := strings.LastIndex(name, ":"); i < 0 || name[i+1:] == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// ---- validation (upstream's messages and field paths) ----

func validateDeploymentSpec(s *appsv1.DeploymentSpec, p *field.Path) field.ErrorList {
	errs := nonNegative(s.Replicas, p.Child("replicas"))
	errs = append(errs, validateSelector(s.Selector, &s.Template, "deployment", p)...)
	errs = append(errs, validateDeploymentStrategy(&s.Strategy, p.Child("strategy"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.MinReadySeconds), p.Child("minReadySeconds"))...)
	errs = append(errs, nonNegative(s.RevisionHistoryLimit, p.Child("revisionHistoryLimit"))...)
	if s.ProgressDeadlineSeconds != nil {
		errs = append(errs, nonNegative(s.ProgressDeadlineSeconds, p.Child("progressDeadlineSeconds"))...)
		if *s.ProgressDeadlineSeconds <= s.MinReadySeconds {
			errs = append(errs, field.Invalid(p.Child("progressDeadlineSeconds"), s.ProgressDeadlineSeconds, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateDeploymentStrategy(s *appsv1.DeploymentStrategy, p *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(p.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")}
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		ru, rp := s.RollingUpdate, p.Child("rollingUpdate")
		if ru == nil || ru.MaxUnavailable == nil || ru.MaxSurge == nil {
			return nil // defaulted before validation
		}
		errs := append(intOrPercent(*ru.MaxUnavailable, rp.Child("maxUnavailable")), intOrPercent(*ru.MaxSurge, rp.Child("maxSurge"))...)
		if intOrPercentValue(*ru.MaxUnavailable) == 0 && intOrPercentValue(*ru.MaxSurge) == 0 {
			errs = append(errs, field.Invalid(rp.Child("maxUnavailable"), *ru.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
		}
		if v, pct := percent(*ru.MaxUnavailable); pct && v > 100 {
			errs = append(errs, field.Invalid(rp.Child("maxUnavailable"), *ru.MaxUnavailable, "must not be greater than 100%"))
		}
		return errs
	default:
		return field.ErrorList{field.NotSupported(p, *s, []string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)})}
	}
	return nil
}

func intOrPercent(v intstr.IntOrString, p *field.Path) field.ErrorList {
	if v.Type == intstr.String {
		var errs field.ErrorList
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(p, v, msg))
		}
		return errs
	}
	return apivalidation.ValidateNonnegativeField(int64(v.IntValue()), p)
}

// percent returns a valid percentage's number.
func percent(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String || len(validation.IsValidPercent(v.StrVal)) != 0 {
		return 0, false
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	return n, true
}

func intOrPercentValue(v intstr.IntOrString) int {
	if n, ok := percent(v); ok {
		return n
	}
	return v.IntValue()
}

func validateReplicaSetSpec(s *appsv1.ReplicaSetSpec, p *field.Path) field.ErrorList {
	errs := nonNegative(s.Replicas, p.Child("replicas"))
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.MinReadySeconds), p.Child("minReadySeconds"))...)
	// Upstream's ReplicaSet validation says "deployment" here too.
	return append(errs, validateSelector(s.Selector, &s.Template, "deployment", p)...)
}

// statefulSetTemplate is the template as upstream validates a
// StatefulSet's: without the hostname and subdomain its controller sets,
// and with a volume of each claim template (before the template's own,
// which a claim's name replaces), so that mounts may name them.
func statefulSetTemplate(s *appsv1.StatefulSetSpec) *corev1.PodTemplateSpec {
	t := &s.Template
	if t.Spec.Subdomain == "" && t.Spec.Hostname == "" && len(s.VolumeClaimTemplates) == 0 {
		return t
	}
	t = t.DeepCopy()
	t.Spec.Subdomain, t.Spec.Hostname = "", ""
	if len(s.VolumeClaimTemplates) == 0 {
		return t
	}
	claims := sets.New[string]()
	var vols []corev1.Volume
	for _, c := range s.VolumeClaimTemplates {
		if claims.Has(c.Name) {
			continue
		}
		claims.Insert(c.Name)
		vols = append(vols, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name},
		}})
	}
	for _, v := range t.Spec.Volumes {
		if !claims.Has(v.Name) {
			vols = append(vols, v)
		}
	}
	t.Spec.Volumes = vols
	return t
}

func validateStatefulSetSpec(s *appsv1.StatefulSetSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch s.PodManagementPolicy {
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(p.Child("podManagementPolicy"), s.PodManagementPolicy, "must be 'OrderedReady' or 'Parallel'"))
	}
	switch s.UpdateStrategy.Type {
	case appsv1.RollingUpdateStatefulSetStrategyType:
	case appsv1.OnDeleteStatefulSetStrategyType:
		if s.UpdateStrategy.RollingUpdate != nil {
			errs = append(errs, field.Invalid(p.Child("updateStrategy", "rollingUpdate"), s.UpdateStrategy.RollingUpdate, "only allowed for updateStrategy 'RollingUpdate'"))
		}
	default:
		errs = append(errs, field.Invalid(p.Child("updateStrategy"), s.UpdateStrategy, "must be 'RollingUpdate' or 'OnDelete'"))
	}
	errs = append(errs, nonNegative(s.Replicas, p.Child("replicas"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.MinReadySeconds), p.Child("minReadySeconds"))...)
	if s.ServiceName != "" {
		for _, msg := range validation.IsDNS1123Label(s.ServiceName) {
			errs = append(errs, field.Invalid(p.Child("serviceName"), s.ServiceName, msg))
		}
	}
	return append(errs, validateSelector(s.Selector, statefulSetTemplate(s), "statefulset", p)...)
}

func validateDaemonSetSpec(s *appsv1.DaemonSetSpec, p *field.Path) field.ErrorList {
	errs := validateSelector(s.Selector, &s.Template, "daemonset", p)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.MinReadySeconds), p.Child("minReadySeconds"))...)
	return append(errs, nonNegative(s.RevisionHistoryLimit, p.Child("revisionHistoryLimit"))...)
}

func nonNegative(v *int32, p *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	return apivalidation.ValidateNonnegativeField(int64(*v), p)
}

// validateSelector checks the selector (required, valid, not empty), that
// it selects the template's labels, and the template.
func validateSelector(sel *metav1.LabelSelector, t *corev1.PodTemplateSpec, kind string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case sel == nil && kind != "daemonset":
		// Upstream's DaemonSet validation has no such rule: a missing
		// selector shows as one that does not match the template.
		errs = append(errs, field.Required(p.Child("selector"), ""))
	case sel != nil:
		errs = append(errs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
		if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(p.Child("selector"), sel, "empty selector is invalid for "+kind))
		}
	}
	tp := p.Child("template")
	if selector, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		errs = append(errs, field.Invalid(p.Child("selector"), sel, "invalid label selector"))
	} else if !selector.Empty() && !selector.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(tp.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, metav1validation.ValidateLabels(t.Labels, tp.Child("metadata", "labels"))...)
	errs = append(errs, validatePodSpec(&t.Spec, tp.Child("spec"))...)
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		what := map[string]string{"deployment": "ReplicaSet", "statefulset": "StatefulSet", "daemonset": "DaemonSet"}[kind]
		errs = append(errs, field.Forbidden(tp.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in "+what+" is not Supported"))
	}
	return errs
}

// validateContainerPorts checks one container's ports: a name, when set,
// is a valid port name used once in the container (another container may
// reuse it); the container port is set and in range, as is a host port
// when set; the protocol is one upstream supports.
func validateContainerPorts(ports []corev1.ContainerPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		pp := p.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(pp.Child("name"), port.Name, msg))
				}
			} else if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(pp.Child("containerPort"), ""))
		} else {
			errs = append(errs, validatePort(port.ContainerPort, pp.Child("containerPort"))...)
		}
		if port.HostPort != 0 {
			errs = append(errs, validatePort(port.HostPort, pp.Child("hostPort"))...)
		}
		errs = append(errs, validateProtocol(string(port.Protocol), pp.Child("protocol"))...)
	}
	return errs
}

func immutableSelector(sel, old *metav1.LabelSelector) field.ErrorList {
	return apivalidation.ValidateImmutableField(sel, old, field.NewPath("spec", "selector"))
}

// ---- Table columns (upstream's printers, wide columns at priority 1) ----

var (
	containersColumn = metav1.TableColumnDefinition{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."}
	imagesColumn     = metav1.TableColumnDefinition{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."}
	ageColumn        = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
	nameColumn       = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
	readyColumn      = metav1.TableColumnDefinition{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"}
)

func intColumn(name, desc string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: "integer", Description: desc}
}

// containerCells joins the template's container names and images.
func containerCells(t *corev1.PodTemplateSpec) (string, string) {
	names := make([]string, len(t.Spec.Containers))
	images := make([]string, len(t.Spec.Containers))
	for i, c := range t.Spec.Containers {
		names[i], images[i] = c.Name, c.Image
	}
	return strings.Join(names, ","), strings.Join(images, ",")
}

func age(m *metav1.ObjectMeta) string {
	return metatable.ConvertToHumanReadableDateType(m.CreationTimestamp)
}

func selectorCell(sel *metav1.LabelSelector) string {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return "<invalid>"
	}
	return s.String()
}

func ratio(ready int32, desired *int32) string {
	return fmt.Sprintf("%d/%d", ready, ptr.Deref(desired, 0))
}

// ---- the hooks of each kind ----

// pair decodes an update's object and the stored one.
func (h appsHooks[T]) pair(obj, old map[string]any) (*T, *T, error) {
	t, _, err := h.Decode(obj)
	if err != nil {
		return nil, nil, err
	}
	o, _, err := h.Decode(old)
	return t, o, err
}

type deploymentHooks struct{ appsHooks[appsv1.Deployment] }

var (
	_ registry.CreatePreparer  = deploymentHooks{}
	_ registry.UpdatePreparer  = deploymentHooks{}
	_ registry.Validator       = deploymentHooks{}
	_ registry.StatusValidator = deploymentHooks{}
	_ registry.StrategicMerger = deploymentHooks{}
	_ registry.Protobuf        = deploymentHooks{}
	_ registry.TypeChecker     = deploymentHooks{}
	_ registry.UnknownFielder  = deploymentHooks{}
	_ registry.TablePrinter    = deploymentHooks{}
	_ registry.Defaulter       = deploymentHooks{}
)

func (h deploymentHooks) Validate(obj map[string]any) field.ErrorList {
	d, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateDeploymentSpec(&d.Spec, field.NewPath("spec"))
}

func (h deploymentHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	d, o, err := h.pair(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return append(validateDeploymentSpec(&d.Spec, field.NewPath("spec")), immutableSelector(d.Spec.Selector, o.Spec.Selector)...)
}

func (h deploymentHooks) ValidateStatusUpdate(obj, _ map[string]any) field.ErrorList {
	d, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	s, p := d.Status, field.NewPath("status")
	errs := apivalidation.ValidateNonnegativeField(s.ObservedGeneration, p.Child("observedGeneration"))
	errs = append(errs, nonNegatives(p, []string{"replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"},
		s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, s.UnavailableReplicas)...)
	return append(errs, replicaBounds(s.Replicas, s.ReadyReplicas, s.AvailableReplicas, p)...)
}

// nonNegatives checks that each named count under p is not negative.
func nonNegatives(p *field.Path, names []string, values ...int32) field.ErrorList {
	var errs field.ErrorList
	for i, v := range values {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(v), p.Child(names[i]))...)
	}
	return errs
}

// replicaBounds is upstream's check that no count exceeds status.replicas
// and available replicas are ready.
func replicaBounds(replicas, ready, available int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ready > replicas {
		errs = append(errs, field.Invalid(p.Child("readyReplicas"), ready, "cannot be greater than status.replicas"))
	}
	if available > replicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), available, "cannot be greater than status.replicas"))
	}
	if available > ready {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), available, "cannot be greater than readyReplicas"))
	}
	return errs
}

func (deploymentHooks) TableColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn, readyColumn,
		{Name: "Up-to-date", Type: "string", Description: appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]},
		{Name: "Available", Type: "string", Description: appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]},
		ageColumn, containersColumn, imagesColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]},
	}
}

func (h deploymentHooks) TableRow(obj map[string]any) []any {
	d, _, _ := h.Decode(obj)
	if d == nil {
		d = &appsv1.Deployment{}
	}
	names, images := containerCells(&d.Spec.Template)
	return []any{d.Name, ratio(d.Status.ReadyReplicas, d.Spec.Replicas), int64(d.Status.UpdatedReplicas), int64(d.Status.AvailableReplicas),
		age(&d.ObjectMeta), names, images, selectorCell(d.Spec.Selector)}
}

type replicaSetHooks struct{ appsHooks[appsv1.ReplicaSet] }

var (
	_ registry.CreatePreparer  = replicaSetHooks{}
	_ registry.UpdatePreparer  = replicaSetHooks{}
	_ registry.Validator       = replicaSetHooks{}
	_ registry.StatusValidator = replicaSetHooks{}
	_ registry.TablePrinter    = replicaSetHooks{}
)

func (h replicaSetHooks) Validate(obj map[string]any) field.ErrorList {
	rs, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateReplicaSetSpec(&rs.Spec, field.NewPath("spec"))
}

func (h replicaSetHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	rs, o, err := h.pair(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return append(validateReplicaSetSpec(&rs.Spec, field.NewPath("spec")), immutableSelector(rs.Spec.Selector, o.Spec.Selector)...)
}

func (h replicaSetHooks) ValidateStatusUpdate(obj, _ map[string]any) field.ErrorList {
	rs, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	s, p := rs.Status, field.NewPath("status")
	errs := nonNegatives(p, []string{"replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas"},
		s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas)
	errs = append(errs, apivalidation.ValidateNonnegativeField(s.ObservedGeneration, p.Child("observedGeneration"))...)
	if s.FullyLabeledReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("fullyLabeledReplicas"), s.FullyLabeledReplicas, "cannot be greater than status.replicas"))
	}
	return append(errs, replicaBounds(s.Replicas, s.ReadyReplicas, s.AvailableReplicas, p)...)
}

func (replicaSetHooks) TableColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		intColumn("Desired", appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
		intColumn("Current", appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
		intColumn("Ready", appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
		ageColumn, containersColumn, imagesColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"]},
	}
}

func (h replicaSetHooks) TableRow(obj map[string]any) []any {
	rs, _, _ := h.Decode(obj)
	if rs == nil {
		rs = &appsv1.ReplicaSet{}
	}
	names, images := containerCells(&rs.Spec.Template)
	return []any{rs.Name, int64(ptr.Deref(rs.Spec.Replicas, 0)), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
		age(&rs.ObjectMeta), names, images, metav1.FormatLabelSelector(rs.Spec.Selector)}
}

type statefulSetHooks struct{ appsHooks[appsv1.StatefulSet] }

var (
	_ registry.CreatePreparer = statefulSetHooks{}
	_ registry.UpdatePreparer = statefulSetHooks{}
	_ registry.Validator      = statefulSetHooks{}
	_ registry.NameValidator  = statefulSetHooks{}
	_ registry.TablePrinter   = statefulSetHooks{}
)

// ValidateName: StatefulSet names are DNS labels (they name pods and
// their host names).
func (statefulSetHooks) ValidateName(name string, prefix bool) []string {
	return apivalidation.NameIsDNSLabel(name, prefix)
}

func (h statefulSetHooks) Validate(obj map[string]any) field.ErrorList {
	ss, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateStatefulSetSpec(&ss.Spec, field.NewPath("spec"))
}

func (h statefulSetHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	ss, o, err := h.pair(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	p := field.NewPath("spec")
	errs := append(validateStatefulSetSpec(&ss.Spec, p), immutableSelector(ss.Spec.Selector, o.Spec.Selector)...)
	errs = append(errs, apivalidation.ValidateImmutableField(ss.Spec.VolumeClaimTemplates, o.Spec.VolumeClaimTemplates, p.Child("volumeClaimTemplates"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(ss.Spec.ServiceName, o.Spec.ServiceName, p.Child("serviceName"))...)
	return append(errs, apivalidation.ValidateImmutableField(ss.Spec.PodManagementPolicy, o.Spec.PodManagementPolicy, p.Child("podManagementPolicy"))...)
}

func (statefulSetHooks) TableColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, readyColumn, ageColumn, containersColumn, imagesColumn}
}

func (h statefulSetHooks) TableRow(obj map[string]any) []any {
	ss, _, _ := h.Decode(obj)
	if ss == nil {
		ss = &appsv1.StatefulSet{}
	}
	names, images := containerCells(&ss.Spec.Template)
	return []any{ss.Name, ratio(ss.Status.ReadyReplicas, ss.Spec.Replicas), age(&ss.ObjectMeta), names, images}
}

type daemonSetHooks struct{ appsHooks[appsv1.DaemonSet] }

var (
	_ registry.CreatePreparer = daemonSetHooks{}
	_ registry.UpdatePreparer = daemonSetHooks{}
	_ registry.Validator      = daemonSetHooks{}
	_ registry.TablePrinter   = daemonSetHooks{}
)

// templateGeneration is the annotation apps/v1 carries a DaemonSet's
// template generation in (upstream's internal spec.templateGeneration).
const templateGeneration = "deprecated.daemonset.template.generation"

// Default: upstream's apps/v1 form of a DaemonSet always carries its
// template generation, 0 for a body without one, which its field manager
// sees before the strategy sets the real one: the writer of a body without
// it owns the annotation.
func (h daemonSetHooks) Default(obj map[string]any) {
	h.appsHooks.Default(obj)
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	if _, ok := ann[templateGeneration]; !ok {
		setAnnotation(obj, templateGeneration, "0")
	}
}

// PrepareForCreate: as upstream's strategy, a DaemonSet starts at template
// generation 1.
func (h daemonSetHooks) PrepareForCreate(obj map[string]any) {
	h.appsHooks.PrepareForCreate(obj)
	setAnnotation(obj, templateGeneration, "1")
}

// PrepareForUpdate keeps old's template generation, which a client does
// not set, and counts one more when the pod template changes, as
// upstream's strategy does.
func (h daemonSetHooks) PrepareForUpdate(obj, old map[string]any) {
	h.appsHooks.PrepareForUpdate(obj, old)
	oldMD, _ := old["metadata"].(map[string]any)
	oldAnn, _ := oldMD["annotations"].(map[string]any)
	was, _ := oldAnn[templateGeneration].(string)
	gen, _ := strconv.ParseInt(was, 10, 64)
	if ds, o, err := h.pair(obj, old); err == nil && !apiequality.Semantic.DeepEqual(ds.Spec.Template, o.Spec.Template) {
		gen++
	}
	setAnnotation(obj, templateGeneration, strconv.FormatInt(gen, 10))
}

// setAnnotation sets one of obj's annotations.
func setAnnotation(obj map[string]any, key, value string) {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		md["annotations"] = ann
	}
	ann[key] = value
}

func (h daemonSetHooks) Validate(obj map[string]any) field.ErrorList {
	ds, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateDaemonSetSpec(&ds.Spec, field.NewPath("spec"))
}

func (h daemonSetHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	ds, o, err := h.pair(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return append(immutableSelector(ds.Spec.Selector, o.Spec.Selector), validateDaemonSetSpec(&ds.Spec, field.NewPath("spec"))...)
}

func (daemonSetHooks) TableColumns() []metav1.TableColumnDefinition {
	st := appsv1.DaemonSetStatus{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn,
		intColumn("Desired", st["desiredNumberScheduled"]),
		intColumn("Current", st["currentNumberScheduled"]),
		intColumn("Ready", st["numberReady"]),
		intColumn("Up-to-date", st["updatedNumberScheduled"]),
		intColumn("Available", st["numberAvailable"]),
		{Name: "Node Selector", Type: "string", Description: corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]},
		ageColumn, containersColumn, imagesColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"]},
	}
}

func (h daemonSetHooks) TableRow(obj map[string]any) []any {
	ds, _, _ := h.Decode(obj)
	if ds == nil {
		ds = &appsv1.DaemonSet{}
	}
	s := ds.Status
	names, images := containerCells(&ds.Spec.Template)
	return []any{ds.Name, int64(s.DesiredNumberScheduled), int64(s.CurrentNumberScheduled), int64(s.NumberReady), int64(s.UpdatedNumberScheduled), int64(s.NumberAvailable),
		labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector), age(&ds.ObjectMeta), names, images, metav1.FormatLabelSelector(ds.Spec.Selector)}
}
