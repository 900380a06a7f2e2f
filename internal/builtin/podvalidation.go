package builtin

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// validatePodSpec checks, with upstream's messages and in its order, the
// parts of a pod's spec users meet: the grace period, volumes (names,
// exactly one source, its fields), containers of each kind (names unique
// across all three, images, ports, environment names, volume mounts, resources,
// pull and termination message policies), the restart and DNS policies,
// the node selector, the service account, node, host and priority class
// names and the active deadline; and the pod-level fields of
// podschedulingvalidation.go: resource claims, pod-level resources
// (podresourcevalidation.go), host network ports,
// affinity, DNS configuration, readiness and scheduling gates, topology
// spread constraints, user namespaces, the hostname override,
// tolerations, host aliases, runtime class, overhead and the OS.
// Security contexts and probes are not checked.
func validatePodSpec(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.TerminationGracePeriodSeconds == nil {
		errs = append(errs, field.Required(p.Child("terminationGracePeriodSeconds"), ""))
	}
	vols, verrs := validateVolumes(s.Volumes, p.Child("volumes"))
	errs = append(errs, verrs...)
	errs = append(errs, validatePodResourceClaims(s.ResourceClaims, p.Child("resourceClaims"))...)
	cp := p.Child("containers")
	if len(s.Containers) == 0 {
		errs = append(errs, field.Required(cp, ""))
	} else {
		names := sets.New[string]()
		for i := range s.Containers {
			c := &s.Containers[i]
			ip := cp.Index(i)
			errs = append(errs, validatePodContainer(c, vols, ip)...)
			if names.Has(c.Name) {
				errs = append(errs, field.Duplicate(ip.Child("name"), c.Name))
			} else {
				names.Insert(c.Name)
			}
			if c.RestartPolicy != nil {
				errs = append(errs, field.Forbidden(ip.Child("restartPolicy"), "may not be set for non-init containers"))
			}
		}
	}
	names := sets.New[string]()
	for _, c := range s.Containers {
		names.Insert(c.Name)
	}
	for i := range s.InitContainers {
		c := &s.InitContainers[i]
		ip := p.Child("initContainers").Index(i)
		errs = append(errs, validatePodContainer(c, vols, ip)...)
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(ip.Child("name"), c.Name))
		} else {
			names.Insert(c.Name)
		}
	}
	for i := range s.EphemeralContainers {
		ec := &s.EphemeralContainers[i]
		ip := p.Child("ephemeralContainers").Index(i)
		c := corev1.Container(ec.EphemeralContainerCommon)
		errs = append(errs, validatePodContainer(&c, vols, ip)...)
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(ip.Child("name"), c.Name))
		} else {
			names.Insert(c.Name)
		}
	}
	errs = append(errs, validatePodResources(s, p)...)
	errs = append(errs, validatePodHostNetworkDeps(s, p)...)
	errs = append(errs, validateEnum(s.RestartPolicy, p.Child("restartPolicy"),
		corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)...)
	errs = append(errs, validateEnum(s.DNSPolicy, p.Child("dnsPolicy"),
		corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone)...)
	errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, p.Child("nodeSelector"))...)
	errs = append(errs, validateShareProcessNamespace(s, p)...)
	errs = append(errs, validateAffinity(s.Affinity, p.Child("affinity"))...)
	errs = append(errs, validatePodDNSConfig(s.DNSConfig, s.DNSPolicy, p.Child("dnsConfig"))...)
	errs = append(errs, validateReadinessGates(s.ReadinessGates, p.Child("readinessGates"))...)
	errs = append(errs, validateSchedulingGates(s.SchedulingGates, p.Child("schedulingGates"))...)
	errs = append(errs, validateTopologySpreadConstraints(s.TopologySpreadConstraints, p.Child("topologySpreadConstraints"))...)
	errs = append(errs, validatePodHostUsers(s, p)...)
	errs = append(errs, validatePodHostnameOverride(s, p)...)
	if s.ServiceAccountName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(s.ServiceAccountName, false) {
			errs = append(errs, field.Invalid(p.Child("serviceAccountName"), s.ServiceAccountName, msg))
		}
	}
	if dep := s.DeprecatedServiceAccount; dep != s.ServiceAccountName { //nolint:staticcheck // upstream keeps the alias in step
		errs = append(errs, field.Invalid(p.Child("deprecatedServiceAccount"), dep, fmt.Sprintf("must be the same as serviceAccountName: %q", s.ServiceAccountName)))
	}
	if s.NodeName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(s.NodeName, false) {
			errs = append(errs, field.Invalid(p.Child("nodeName"), s.NodeName, msg))
		}
	}
	if d := s.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		errs = append(errs, field.Invalid(p.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	for _, h := range []struct {
		v    string
		name string
	}{{s.Hostname, "hostname"}, {s.Subdomain, "subdomain"}} {
		if h.v != "" {
			for _, msg := range validation.IsDNS1123Label(h.v) {
				errs = append(errs, field.Invalid(p.Child(h.name), h.v, msg))
			}
		}
	}
	errs = append(errs, validatePodTolerations(s.Tolerations, p.Child("tolerations"))...)
	errs = append(errs, validateHostAliases(s.HostAliases, p.Child("hostAliases"))...)
	if s.PriorityClassName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(s.PriorityClassName, false) {
			errs = append(errs, field.Invalid(p.Child("priorityClassName"), s.PriorityClassName, msg))
		}
	}
	errs = append(errs, validateRuntimeClassName(s.RuntimeClassName, p.Child("runtimeClassName"))...)
	if s.PreemptionPolicy != nil {
		errs = append(errs, validatePreemptionPolicy(*s.PreemptionPolicy, p.Child("preemptionPolicy"))...)
	}
	errs = append(errs, validateOverhead(s.Overhead, p.Child("overhead"))...)
	errs = append(errs, validatePodOS(s, p)...)
	return errs
}

// validateEnum is upstream's check of a defaulted enum: set, and one of
// supported.
func validateEnum[T ~string](v T, p *field.Path, supported ...T) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	for _, s := range supported {
		if v == s {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(p, v, supported)}
}

// validateVolumes checks the volumes' names (DNS labels, unique) and that
// each has exactly one, valid, source, returning the valid ones by name
// for the containers' mounts.
func validateVolumes(vs []corev1.Volume, p *field.Path) (sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, v := range vs {
		ip := p.Index(i)
		el := validateVolumeSource(&v.VolumeSource, ip)
		if v.Name == "" {
			el = append(el, field.Required(ip.Child("name"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Label(v.Name) {
				el = append(el, field.Invalid(ip.Child("name"), v.Name, msg))
			}
		}
		if names.Has(v.Name) {
			el = append(el, field.Duplicate(ip.Child("name"), v.Name))
		}
		if len(el) == 0 {
			names.Insert(v.Name)
		}
		errs = append(errs, el...)
	}
	return names, errs
}

// volumeSourceFields are the JSON names of a volume's sources, in the
// order upstream checks them (its misspelt downwarAPI included).
var volumeSourceFields = []struct{ json, path string }{
	{"emptyDir", "emptyDir"}, {"hostPath", "hostPath"}, {"gitRepo", "gitRepo"},
	{"gcePersistentDisk", "gcePersistentDisk"}, {"awsElasticBlockStore", "awsElasticBlockStore"},
	{"secret", "secret"}, {"nfs", "nfs"}, {"iscsi", "iscsi"}, {"glusterfs", "glusterfs"},
	{"flocker", "flocker"}, {"persistentVolumeClaim", "persistentVolumeClaim"}, {"rbd", "rbd"},
	{"cinder", "cinder"}, {"cephfs", "cephFS"}, {"quobyte", "quobyte"}, {"downwardAPI", "downwarAPI"},
	{"fc", "fc"}, {"flexVolume", "flexVolume"}, {"configMap", "configMap"}, {"azureFile", "azureFile"},
	{"vsphereVolume", "vsphereVolume"}, {"photonPersistentDisk", "photonPersistentDisk"},
	{"portworxVolume", "portworxVolume"}, {"azureDisk", "azureDisk"}, {"storageos", "storageos"},
	{"projected", "projected"}, {"scaleIO", "scaleIO"}, {"csi", "csi"}, {"ephemeral", "ephemeral"},
	{"image", "image"},
}

// validateVolumeSource checks the fields of a volume's first source
// (podvolumevalidation.go), and refuses a volume with no source, or with
// more than one (each further one named).
func validateVolumeSource(s *corev1.VolumeSource, p *field.Path) field.ErrorList {
	v := reflect.ValueOf(*s)
	t := v.Type()
	set := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		set[name] = !v.Field(i).IsNil()
	}
	errs := validateVolumeSourceFields(s, p)
	n := 0
	for _, f := range volumeSourceFields {
		if !set[f.json] {
			continue
		}
		if n++; n > 1 {
			errs = append(errs, field.Forbidden(p.Child(f.path), "may not specify more than 1 volume type"))
		}
	}
	if n == 0 {
		errs = append(errs, field.Required(p, "must specify a volume type"))
	}
	return errs
}

// validatePodContainer is upstream's check common to every container of
// a pod, as far as crdserver takes it.
func validatePodContainer(c *corev1.Container, vols sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
		}
	}
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	errs = append(errs, validateEnum(c.TerminationMessagePolicy, p.Child("terminationMessagePolicy"),
		corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError)...)
	errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	for i, e := range c.Env {
		ip := p.Child("env").Index(i)
		if e.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
			continue
		}
		for _, msg := range validation.IsRelaxedEnvVarName(e.Name) {
			errs = append(errs, field.Invalid(ip.Child("name"), e.Name, msg))
		}
	}
	mounts := sets.New[string]()
	for i, m := range c.VolumeMounts {
		ip := p.Child("volumeMounts").Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
		}
		if !vols.Has(m.Name) {
			errs = append(errs, field.NotFound(ip.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(ip.Child("mountPath"), ""))
		}
		if mounts.Has(m.MountPath) {
			errs = append(errs, field.Invalid(ip.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mounts.Insert(m.MountPath)
	}
	errs = append(errs, validateEnum(c.ImagePullPolicy, p.Child("imagePullPolicy"),
		corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)...)
	return append(errs, validateContainerResources(&c.Resources, p.Child("resources"))...)
}

// validateContainerResources checks the names and quantities of limits
// and requests, and that a request is at most its limit (equal to it for
// resources that cannot be overcommitted).
func validateContainerResources(r *corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	lp, rp := p.Child("limits"), p.Child("requests")
	for _, name := range slices.Sorted(maps.Keys(r.Limits)) {
		q := r.Limits[name]
		kp := lp.Key(string(name))
		errs = append(errs, validateLimitResourceName(corev1.LimitTypeContainer, name, kp)...)
		errs = append(errs, validateQuantityValue(name, q, kp)...)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		q := r.Requests[name]
		kp := rp.Key(string(name))
		errs = append(errs, validateLimitResourceName(corev1.LimitTypeContainer, name, kp)...)
		errs = append(errs, validateQuantityValue(name, q, kp)...)
		lim, ok := r.Limits[name]
		switch {
		case ok && q.Cmp(lim) != 0 && !overcommitAllowed(name):
			errs = append(errs, field.Invalid(rp, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, lim.String())))
		case ok && q.Cmp(lim) > 0:
			errs = append(errs, field.Invalid(rp, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
		case !ok && !overcommitAllowed(name):
			errs = append(errs, field.Required(lp, "Limit must be set for non overcommitable resources"))
		}
	}
	return errs
}

// validateQuantityValue: not negative, whole for an extended resource.
func validateQuantityValue(name corev1.ResourceName, q resource.Quantity, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Cmp(resource.Quantity{}) < 0 {
		errs = append(errs, field.Invalid(p, q.String(), apivalidation.IsNegativeErrorMsg))
	}
	if isIntegerQuotaResource(name) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(p, q, "must be an integer"))
	}
	return errs
}

// validatePodSpecUpdate is upstream's rule for a pod's spec: nothing may
// change but the containers' images, the active deadline (set, or
// lowered), added tolerations, a negative grace period made 1, and
// removed scheduling gates. The error lists what may change and the
// difference, as upstream's does.
func validatePodSpecUpdate(s, was *corev1.PodSpec) field.ErrorList {
	sp := field.NewPath("spec")
	var errs field.ErrorList
	if was.ActiveDeadlineSeconds != nil {
		ap := sp.Child("activeDeadlineSeconds")
		switch {
		case s.ActiveDeadlineSeconds == nil:
			errs = append(errs, field.Invalid(ap, s.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
		case *s.ActiveDeadlineSeconds > *was.ActiveDeadlineSeconds:
			errs = append(errs, field.Invalid(ap, s.ActiveDeadlineSeconds, "must be less than or equal to previous value"))
		}
	}
	errs = append(errs, validateTolerationsUpdate(s.Tolerations, was.Tolerations, sp.Child("tolerations"))...)
	errs = append(errs, validateSchedulingGatesUpdate(s.SchedulingGates, was.SchedulingGates, sp.Child("schedulingGates"))...)
	munged := s.DeepCopy()
	for i := range munged.Containers {
		if i < len(was.Containers) {
			munged.Containers[i].Image = was.Containers[i].Image
		}
	}
	for i := range munged.InitContainers {
		if i < len(was.InitContainers) {
			munged.InitContainers[i].Image = was.InitContainers[i].Image
		}
	}
	munged.ActiveDeadlineSeconds = was.ActiveDeadlineSeconds
	munged.Tolerations = was.Tolerations
	munged.SchedulingGates = was.SchedulingGates
	if g := was.TerminationGracePeriodSeconds; g != nil && *g < 0 && ptr.Deref(s.TerminationGracePeriodSeconds, 0) == 1 {
		munged.TerminationGracePeriodSeconds = g
	}
	if !apiequality.Semantic.DeepEqual(*munged, *was) {
		errs = append(errs, field.Forbidden(sp, "pod updates may not change fields other than "+
			"`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"+
			"`spec.tolerations` (only additions to existing tolerations),"+
			"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"+
			cmp.Diff(*was, *munged)))
	}
	return errs
}

// validateTolerationsUpdate refuses an update that drops or changes a
// toleration, but for lowering the seconds of a NoExecute one; if none
// is, it checks the tolerations again, as upstream does (so that their
// errors come twice).
func validateTolerationsUpdate(now, was []corev1.Toleration, p *field.Path) field.ErrorList {
	for _, old := range was {
		found := false
		for _, t := range now {
			o := old
			o.TolerationSeconds, t.TolerationSeconds = nil, nil
			if reflect.DeepEqual(o, t) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(p, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return validatePodTolerations(now, p)
}
