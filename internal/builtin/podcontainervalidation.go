package builtin

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file holds upstream's checks of a container's own fields that
// validatePodContainer and validatePodSpec call in upstream's order: the
// environment, volume mounts and devices, the resize policy, lifecycle
// handlers, probes, the container restart policies, what init and
// ephemeral containers may not have. Upstream's 1.37.2 default feature
// gates apply: container restart rules (and the RestartAllContainers
// action) are on; stop signals, gRPC probe modes, HTTP/2 probes and bind
// mount options are off (their fields are dropped before validation,
// podcontainerfields.go).

// validateContainerEnv checks each variable's name (relaxed: any printable
// ASCII but '=') and, when set, its one source.
func validateContainerEnv(env []corev1.EnvVar, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range env {
		ip := p.Index(i)
		if e.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(ip.Child("name"), e.Name, msg))
			}
		}
		errs = append(errs, validateEnvValueFrom(e, ip.Child("valueFrom"))...)
	}
	return errs
}

// envFieldPaths are the pod fields a variable may take from fieldRef
// without a subscript.
var envFieldPaths = sets.New("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
	"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")

// envResourcePaths are the container resources resourceFieldRef may name
// (and any hugepages- one).
var envResourcePaths = sets.New("limits.cpu", "limits.memory", "limits.ephemeral-storage",
	"requests.cpu", "requests.memory", "requests.ephemeral-storage")

func validateEnvValueFrom(e corev1.EnvVar, p *field.Path) field.ErrorList {
	vf := e.ValueFrom
	if vf == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	if vf.FieldRef != nil {
		n++
		errs = append(errs, validateEnvFieldRef(vf.FieldRef, p.Child("fieldRef"))...)
	}
	if vf.ResourceFieldRef != nil {
		n++
		errs = append(errs, validateEnvResourceFieldRef(vf.ResourceFieldRef, p.Child("resourceFieldRef"))...)
	}
	if r := vf.ConfigMapKeyRef; r != nil {
		n++
		errs = append(errs, validateEnvKeyRef(r.Name, r.Key, p.Child("configMapKeyRef"))...)
	}
	if r := vf.SecretKeyRef; r != nil {
		n++
		errs = append(errs, validateEnvKeyRef(r.Name, r.Key, p.Child("secretKeyRef"))...)
	}
	if r := vf.FileKeyRef; r != nil {
		n++
		errs = append(errs, validateEnvFileKeyRef(r, p.Child("fileKeyRef"))...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(p, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case e.Value != "":
		errs = append(errs, field.Invalid(p, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(p, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// validateEnvFieldRef: version v1, and a supported path, or labels or
// annotations with a qualified key as subscript.
func validateEnvFieldRef(f *corev1.ObjectFieldSelector, p *field.Path) field.ErrorList {
	if f.APIVersion == "" {
		return field.ErrorList{field.Required(p.Child("apiVersion"), "")}
	}
	if f.FieldPath == "" {
		return field.ErrorList{field.Required(p.Child("fieldPath"), "")}
	}
	internal, err := downwardFieldLabel(f.APIVersion, f.FieldPath)
	if err != nil {
		return field.ErrorList{field.Invalid(p.Child("fieldPath"), f.FieldPath, fmt.Sprintf("error converting fieldPath: %v", err))}
	}
	fp, sub, ok := splitSubscriptedPath(internal)
	if !ok {
		if !envFieldPaths.Has(fp) {
			return field.ErrorList{field.NotSupported(p.Child("fieldPath"), fp, sets.List(envFieldPaths))}
		}
		return nil
	}
	var errs field.ErrorList
	switch fp {
	case "metadata.annotations":
		sub = strings.ToLower(sub)
	case "metadata.labels":
	default:
		return field.ErrorList{field.Invalid(p, fp, "does not support subscript")}
	}
	for _, msg := range validation.IsQualifiedName(sub) {
		errs = append(errs, field.Invalid(p, sub, msg))
	}
	return errs
}

// downwardFieldLabel is upstream's conversion of a v1 downward API path
// to its internal one (spec.host is the old name of spec.nodeName).
func downwardFieldLabel(version, label string) (string, error) {
	if version != "v1" {
		return "", fmt.Errorf("unsupported pod version: %s", version)
	}
	if fp, _, ok := splitSubscriptedPath(label); ok {
		if fp == "metadata.annotations" || fp == "metadata.labels" {
			return label, nil
		}
		return "", fmt.Errorf("field label does not support subscript: %s", label)
	}
	switch label {
	case "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
		"spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
		"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs":
		return label, nil
	case "spec.host":
		return "spec.nodeName", nil
	}
	return "", fmt.Errorf("field label not supported: %s", label)
}

// splitSubscriptedPath splits "metadata.labels['key']" into its path and
// key; ok is false for a path with no subscript.
func splitSubscriptedPath(fp string) (string, string, bool) {
	s, found := strings.CutSuffix(fp, "']")
	if !found {
		return fp, "", false
	}
	base, sub, found := strings.Cut(s, "['")
	if !found || base == "" {
		return fp, "", false
	}
	return base, sub, true
}

// validateEnvResourceFieldRef: a supported resource and, for it, a
// supported divisor.
func validateEnvResourceFieldRef(r *corev1.ResourceFieldSelector, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case r.Resource == "":
		errs = append(errs, field.Required(p.Child("resource"), ""))
	case !envResourcePaths.Has(r.Resource) && !strings.HasPrefix(r.Resource, "requests.hugepages-") &&
		!strings.HasPrefix(r.Resource, "limits.hugepages-"):
		errs = append(errs, field.NotSupported(p.Child("resource"), r.Resource, sets.List(envResourcePaths)))
	}
	return append(errs, validateResourceDivisor(r.Resource, r.Divisor, p)...)
}

// validateEnvKeyRef is the check of a configMapKeyRef or secretKeyRef: a
// DNS subdomain name (an empty one is only reported as invalid), a key
// of a config map's charset.
func validateEnvKeyRef(name, key string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(p.Child("name"), name, msg))
	}
	if key == "" {
		errs = append(errs, field.Required(p.Child("key"), ""))
	} else {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(p.Child("key"), key, msg))
		}
	}
	return errs
}

func validateEnvFileKeyRef(r *corev1.FileKeySelector, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.Key == "" {
		errs = append(errs, field.Required(p.Child("key"), ""))
	} else {
		for _, msg := range validation.IsRelaxedEnvVarName(r.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), r.Key, msg))
		}
	}
	if r.VolumeName == "" {
		errs = append(errs, field.Required(p.Child("volumeName"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Label(r.VolumeName) {
			errs = append(errs, field.Invalid(p.Child("volumeName"), r.VolumeName, msg))
		}
	}
	if r.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	} else {
		errs = append(errs, noBacksteps(r.Path, p.Child("path"))...)
	}
	return errs
}

// validateFileKeyRefVolumes: a variable read from a file names a volume
// of the pod, an emptyDir.
func validateFileKeyRefVolumes(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	sources := map[string]*corev1.VolumeSource{}
	for i := range s.Volumes {
		sources[s.Volumes[i].Name] = &s.Volumes[i].VolumeSource
	}
	visitContainers(s, p, func(c *corev1.Container, cp *field.Path) {
		for j, e := range c.Env {
			if e.ValueFrom == nil || e.ValueFrom.FileKeyRef == nil {
				continue
			}
			name := e.ValueFrom.FileKeyRef.VolumeName
			vp := cp.Child("env").Index(j).Child("valueFrom", "fileKeyRef", "volumeName")
			switch src, ok := sources[name]; {
			case !ok:
				errs = append(errs, field.NotFound(vp, name))
			case src.EmptyDir == nil:
				errs = append(errs, field.Invalid(vp, name, "referenced volume must be of type emptyDir"))
			}
		}
	})
	return errs
}

// validateContainerEnvFrom: a relaxed prefix, exactly one of configMapRef
// and secretRef (the count's error is on the list, as upstream's is).
func validateContainerEnvFrom(from []corev1.EnvFromSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ef := range from {
		ip := p.Index(i)
		if ef.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(ef.Prefix) {
				errs = append(errs, field.Invalid(ip.Child("prefix"), ef.Prefix, msg))
			}
		}
		n := 0
		if r := ef.ConfigMapRef; r != nil {
			n++
			errs = append(errs, validateEnvSourceName(r.Name, ip.Child("configMapRef", "name"))...)
		}
		if r := ef.SecretRef; r != nil {
			n++
			errs = append(errs, validateEnvSourceName(r.Name, ip.Child("secretRef", "name"))...)
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(p, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(p, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

func validateEnvSourceName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, true) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// validateContainerVolumeMounts checks each mount: a known volume, a
// unique path, no clash with the volume devices, relative subpaths
// without backsteps, the propagation (Bidirectional only when
// privileged) and recursive read-only mode. Upstream reports the subpath
// and mode errors at the list's path, not the mount's; so does this.
func validateContainerVolumeMounts(c *corev1.Container, vols sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	mounts := sets.New[string]()
	devices := pathsByName(c.VolumeDevices, func(d corev1.VolumeDevice) (string, string) { return d.Name, d.DevicePath })
	for i, m := range c.VolumeMounts {
		ip := p.Index(i)
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
		if _, ok := devices[m.Name]; ok {
			errs = append(errs, field.Invalid(ip.Child("name"), m.Name, "must not already exist in volumeDevices"))
		}
		if slices.Contains(slices.Collect(maps.Values(devices)), m.MountPath) {
			errs = append(errs, field.Invalid(ip.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
		}
		if m.SubPath != "" {
			errs = append(errs, localDescendingPath(m.SubPath, p.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(ip.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, localDescendingPath(m.SubPathExpr, p.Child("subPathExpr"))...)
		}
		if mp := m.MountPropagation; mp != nil {
			pp := p.Child("mountPropagation")
			modes := []corev1.MountPropagationMode{corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone}
			if !sets.New(modes...).Has(*mp) {
				errs = append(errs, field.NotSupported(pp, *mp, modes))
			}
			sc := c.SecurityContext
			if *mp == corev1.MountPropagationBidirectional && (sc == nil || sc.Privileged == nil || !*sc.Privileged) {
				errs = append(errs, field.Forbidden(pp, "Bidirectional mount propagation is available only to privileged containers"))
			}
		}
		errs = append(errs, validateRecursiveReadOnly(m, p.Child("recursiveReadOnly"))...)
	}
	return errs
}

func validateRecursiveReadOnly(m corev1.VolumeMount, p *field.Path) field.ErrorList {
	if m.RecursiveReadOnly == nil {
		return nil
	}
	var errs field.ErrorList
	switch *m.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyDisabled:
	case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
		if !m.ReadOnly {
			errs = append(errs, field.Forbidden(p, "may only be specified when readOnly is true"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
			errs = append(errs, field.Forbidden(p, "may only be specified when mountPropagation is None or not specified"))
		}
	default:
		errs = append(errs, field.NotSupported(p, *m.RecursiveReadOnly, []corev1.RecursiveReadOnlyMode{
			corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible}))
	}
	return errs
}

// validateContainerVolumeDevices checks each block device: a unique name
// of a known persistentVolumeClaim or ephemeral volume, a unique path
// without backsteps, no clash with the volume mounts.
func validateContainerVolumeDevices(c *corev1.Container, s *corev1.PodSpec, vols sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths, names := sets.New[string](), sets.New[string]()
	mounts := pathsByName(c.VolumeMounts, func(m corev1.VolumeMount) (string, string) { return m.Name, m.MountPath })
	for i, d := range c.VolumeDevices {
		ip := p.Index(i)
		matched, claim := vols.Has(d.Name), false
		if matched {
			for _, v := range s.Volumes {
				if v.Name == d.Name {
					claim = v.PersistentVolumeClaim != nil || v.Ephemeral != nil
				}
			}
		}
		if d.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
		}
		if names.Has(d.Name) {
			errs = append(errs, field.Invalid(ip.Child("name"), d.Name, "must be unique"))
		}
		if matched && !claim {
			errs = append(errs, field.Invalid(ip.Child("name"), d.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if !matched {
			errs = append(errs, field.NotFound(ip.Child("name"), d.Name))
		}
		if d.DevicePath == "" {
			errs = append(errs, field.Required(ip.Child("devicePath"), ""))
		}
		if paths.Has(d.DevicePath) {
			errs = append(errs, field.Invalid(ip.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		if d.DevicePath != "" && len(noBacksteps(d.DevicePath, nil)) > 0 {
			errs = append(errs, field.Invalid(ip.Child("devicePath"), d.DevicePath, "can not contain backsteps ('..')"))
		} else {
			paths.Insert(d.DevicePath)
		}
		if _, ok := mounts[d.Name]; ok {
			errs = append(errs, field.Invalid(ip.Child("name"), d.Name, "must not already exist in volumeMounts"))
		}
		if slices.Contains(slices.Collect(maps.Values(mounts)), d.DevicePath) {
			errs = append(errs, field.Invalid(ip.Child("devicePath"), d.DevicePath, "must not already exist as a path in volumeMounts"))
		}
		if d.Name != "" {
			names.Insert(d.Name)
		}
	}
	return errs
}

// pathsByName maps the names of mounts or devices to their paths, the
// last one of a name winning, as upstream's clash checks see them.
func pathsByName[T any](items []T, f func(T) (string, string)) map[string]string {
	m := map[string]string{}
	for _, it := range items {
		name, p := f(it)
		m[name] = p
	}
	return m
}

// validateResizePolicy: cpu and memory once each, a known restart
// policy, NotRequired only when the pod never restarts. Upstream reports
// the name and policy errors at the list's path.
func validateResizePolicy(rp []corev1.ContainerResizePolicy, podRestart corev1.RestartPolicy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[corev1.ResourceName]()
	for i, r := range rp {
		if seen.Has(r.ResourceName) {
			errs = append(errs, field.Duplicate(p.Index(i), r.ResourceName))
		}
		seen.Insert(r.ResourceName)
		switch r.ResourceName {
		case corev1.ResourceCPU, corev1.ResourceMemory:
		case "":
			errs = append(errs, field.Required(p, ""))
		default:
			errs = append(errs, field.NotSupported(p, r.ResourceName, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}))
		}
		switch r.RestartPolicy {
		case corev1.NotRequired, corev1.RestartContainer:
		case "":
			errs = append(errs, field.Required(p, ""))
		default:
			errs = append(errs, field.NotSupported(p, r.RestartPolicy, []corev1.ResourceResizeRestartPolicy{corev1.NotRequired, corev1.RestartContainer}))
		}
		if podRestart == corev1.RestartPolicyNever && r.RestartPolicy != corev1.NotRequired {
			errs = append(errs, field.Invalid(p, r.RestartPolicy, "must be 'NotRequired' when pod `restartPolicy` is 'Never'"))
		}
	}
	return errs
}

// validateRegularContainer is upstream's check of what only regular
// containers (and sidecars) may have: lifecycle handlers, probes, and
// the container restart policy with its rules.
func validateRegularContainer(c *corev1.Container, s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Lifecycle != nil {
		errs = append(errs, validateLifecycle(c.Lifecycle, s.TerminationGracePeriodSeconds, p.Child("lifecycle"))...)
	}
	errs = append(errs, validateProbes(c, s.TerminationGracePeriodSeconds, p)...)
	return append(errs, validateContainerRestartPolicy(c.RestartPolicy, c.RestartPolicyRules, p)...)
}

// validateInitContainerRestartPolicy: an init container's restart policy
// is checked with its rules, but for Always (a sidecar), whose rules are
// checked as a regular container's.
func validateInitContainerRestartPolicy(c *corev1.Container, p *field.Path) field.ErrorList {
	if c.RestartPolicy == nil {
		if len(c.RestartPolicyRules) > 0 {
			return field.ErrorList{field.Required(p.Child("restartPolicy"), "must specify restartPolicy when restart rules are used")}
		}
		return nil
	}
	return validateContainerRestartPolicy(c.RestartPolicy, c.RestartPolicyRules, p)
}

// validateInitContainer is the rest of upstream's init container check at
// p, in the list at list: host ports unique within it (upstream checks
// each init container alone, as the first of a list, so that a clash is
// reported at index 0 of the list; so does this), lifecycle and probes
// only for a sidecar (restartPolicy Always), no RestartContainer resize
// of a non-sidecar.
func validateInitContainer(c *corev1.Container, s *corev1.PodSpec, list, p *field.Path) field.ErrorList {
	errs := checkHostPortConflicts([]corev1.Container{*c}, list)
	sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
	if sidecar {
		if c.Lifecycle != nil {
			errs = append(errs, validateLifecycle(c.Lifecycle, s.TerminationGracePeriodSeconds, p.Child("lifecycle"))...)
		}
		errs = append(errs, validateProbes(c, s.TerminationGracePeriodSeconds, p)...)
	} else {
		const msg = "may not be set for init containers without restartPolicy=Always"
		if c.Lifecycle != nil {
			errs = append(errs, field.Forbidden(p.Child("lifecycle"), msg))
		}
		if c.LivenessProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("livenessProbe"), msg))
		}
		if c.ReadinessProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("readinessProbe"), msg))
		}
		if c.StartupProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("startupProbe"), msg))
		}
		for j, r := range c.ResizePolicy {
			if r.RestartPolicy == corev1.RestartContainer {
				errs = append(errs, field.Invalid(p.Child("resizePolicy").Index(j).Child("restartPolicy"), r.RestartPolicy, "must not be set to 'RestartContainer' for non-sidecar initContainers"))
			}
		}
	}
	return errs
}

var (
	containerRestartPolicies = []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways,
		corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure}
	restartRuleActions = []corev1.ContainerRestartRuleAction{corev1.ContainerRestartRuleActionRestart,
		corev1.ContainerRestartRuleActionRestartAllContainers}
	restartRuleOperators = []corev1.ContainerRestartRuleOnExitCodesOperator{corev1.ContainerRestartRuleOnExitCodesOpIn,
		corev1.ContainerRestartRuleOnExitCodesOpNotIn}
)

// validateContainerRestartPolicy: a known policy, set when there are
// rules; at most 20 rules, each with a known action and exit codes (a
// known operator, at most 255 values).
func validateContainerRestartPolicy(policy *corev1.ContainerRestartPolicy, rules []corev1.ContainerRestartRule, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	pp := p.Child("restartPolicy")
	switch {
	case policy == nil && len(rules) == 0:
		return nil
	case policy == nil:
		errs = append(errs, field.Required(pp, "must specify restartPolicy when restart rules are used"))
	case !sets.New(containerRestartPolicies...).Has(*policy):
		errs = append(errs, field.NotSupported(pp, *policy, containerRestartPolicies))
	}
	rp := p.Child("restartPolicyRules")
	if len(rules) > 20 {
		errs = append(errs, field.TooMany(rp, len(rules), 20))
	}
	for i, r := range rules {
		ip := rp.Index(i)
		if !sets.New(restartRuleActions...).Has(r.Action) {
			errs = append(errs, field.NotSupported(ip.Child("action"), r.Action, restartRuleActions))
		}
		if r.ExitCodes == nil {
			errs = append(errs, field.Required(ip.Child("exitCodes"), "must be specified"))
			continue
		}
		ep := ip.Child("exitCodes")
		if !sets.New(restartRuleOperators...).Has(r.ExitCodes.Operator) {
			errs = append(errs, field.NotSupported(ep.Child("operator"), r.ExitCodes.Operator, restartRuleOperators))
		}
		if len(r.ExitCodes.Values) > 255 {
			errs = append(errs, field.TooMany(ep.Child("values"), len(r.ExitCodes.Values), 255))
		}
	}
	return errs
}

// checkHostPortConflicts refuses a host port (with its protocol and IP)
// used twice among containers.
func checkHostPortConflicts(cs []corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, c := range cs {
		for j, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen.Has(key) {
				errs = append(errs, field.Duplicate(p.Index(i).Child("ports").Index(j).Child("hostPort"), key))
			}
			seen.Insert(key)
		}
	}
	return errs
}

// validateProbes checks the liveness, readiness and startup probes:
// liveness and startup need one success, readiness may not have its own
// grace period.
func validateProbes(c *corev1.Container, grace *int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pr := c.LivenessProbe; pr != nil {
		pp := p.Child("livenessProbe")
		errs = append(errs, validateProbe(pr, grace, pp)...)
		if pr.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(pp.Child("successThreshold"), pr.SuccessThreshold, "must be 1"))
		}
	}
	if pr := c.ReadinessProbe; pr != nil {
		pp := p.Child("readinessProbe")
		errs = append(errs, validateProbe(pr, grace, pp)...)
		if pr.TerminationGracePeriodSeconds != nil {
			errs = append(errs, field.Invalid(pp.Child("terminationGracePeriodSeconds"), pr.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if pr := c.StartupProbe; pr != nil {
		pp := p.Child("startupProbe")
		errs = append(errs, validateProbe(pr, grace, pp)...)
		if pr.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(pp.Child("successThreshold"), pr.SuccessThreshold, "must be 1"))
		}
	}
	return errs
}

func validateProbe(pr *corev1.Probe, grace *int64, p *field.Path) field.ErrorList {
	h := pr.ProbeHandler
	errs := validateHandler(handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, grpc: h.GRPC}, grace, p)
	for _, f := range []struct {
		v    int32
		name string
	}{
		{pr.InitialDelaySeconds, "initialDelaySeconds"}, {pr.TimeoutSeconds, "timeoutSeconds"},
		{pr.PeriodSeconds, "periodSeconds"}, {pr.SuccessThreshold, "successThreshold"},
		{pr.FailureThreshold, "failureThreshold"},
	} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(f.v), p.Child(f.name))...)
	}
	if g := pr.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

// validateLifecycle checks the postStart and preStop handlers. The stop
// signal is not checked: its feature gate is off in 1.37.2.
func validateLifecycle(l *corev1.Lifecycle, grace *int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, h := range []struct {
		h    *corev1.LifecycleHandler
		name string
	}{{l.PostStart, "postStart"}, {l.PreStop, "preStop"}} {
		if h.h != nil {
			errs = append(errs, validateHandler(handler{exec: h.h.Exec, httpGet: h.h.HTTPGet, tcpSocket: h.h.TCPSocket, sleep: h.h.Sleep}, grace, p.Child(h.name))...)
		}
	}
	return errs
}

// handler is what a probe's and a lifecycle hook's handlers have in
// common; a probe has no sleep, a hook no grpc.
type handler struct {
	exec      *corev1.ExecAction
	httpGet   *corev1.HTTPGetAction
	tcpSocket *corev1.TCPSocketAction
	grpc      *corev1.GRPCAction
	sleep     *corev1.SleepAction
}

// validateHandler: exactly one handler, the first one set checked and
// each further one refused.
func validateHandler(h handler, grace *int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	one := func(set bool, name string, check func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(p.Child(name), "may not specify more than 1 handler type"))
			return
		}
		n++
		errs = append(errs, check(p.Child(name))...)
	}
	one(h.exec != nil, "exec", func(p *field.Path) field.ErrorList {
		if len(h.exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("command"), "")}
		}
		return nil
	})
	one(h.httpGet != nil, "httpGet", func(p *field.Path) field.ErrorList { return validateHTTPGetAction(h.httpGet, p) })
	one(h.tcpSocket != nil, "tcpSocket", func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(h.tcpSocket.Port, p.Child("port"))
	})
	one(h.grpc != nil, "grpc", func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(intstr.FromInt32(h.grpc.Port), p.Child("port"))
	})
	one(h.sleep != nil, "sleep", func(p *field.Path) field.ErrorList {
		if s := h.sleep.Seconds; grace != nil && (s < 0 || s > *grace) {
			return field.ErrorList{field.Invalid(p, s, fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *grace))}
		}
		return nil
	})
	if n == 0 {
		errs = append(errs, field.Required(p, "must specify a handler type"))
	}
	return errs
}

func validateHTTPGetAction(h *corev1.HTTPGetAction, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	errs = append(errs, validatePortNumOrName(h.Port, p.Child("port"))...)
	if h.Scheme != corev1.URISchemeHTTP && h.Scheme != corev1.URISchemeHTTPS {
		errs = append(errs, field.NotSupported(p.Child("scheme"), h.Scheme, []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}))
	}
	for _, hd := range h.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(hd.Name) {
			errs = append(errs, field.Invalid(p.Child("httpHeaders"), hd.Name, msg))
		}
	}
	return errs
}

// validatePodContainerImages is upstream's check of a pod's (not a
// template's) regular and init containers: an image without surrounding
// whitespace. Ephemeral containers are checked with the others of their
// kind (validateContainerImageSpace).
func validatePodContainerImages(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range s.Containers {
		errs = append(errs, validateContainerImageSpace(&s.Containers[i], p.Child("containers").Index(i))...)
	}
	for i := range s.InitContainers {
		errs = append(errs, validateContainerImageSpace(&s.InitContainers[i], p.Child("initContainers").Index(i))...)
	}
	return errs
}

func validateContainerImageSpace(c *corev1.Container, p *field.Path) field.ErrorList {
	if len(c.Image) != len(strings.TrimSpace(c.Image)) {
		return field.ErrorList{field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace")}
	}
	return nil
}

// ephemeralContainerFields are the fields an ephemeral container may set:
// none that would make it part of the pod's service (ports, probes,
// lifecycle, resources, restart and resize policies).
var ephemeralContainerFields = sets.New("Name", "Image", "Command", "Args", "WorkingDir", "EnvFrom", "Env",
	"VolumeMounts", "VolumeDevices", "TerminationMessagePath", "TerminationMessagePolicy", "ImagePullPolicy",
	"SecurityContext", "Stdin", "StdinOnce", "TTY")

// validateEphemeralContainer is the rest of upstream's check of an
// ephemeral container: its target is a regular or init container, it
// sets only the allowed fields, and its volume mounts no subpaths.
func validateEphemeralContainer(ec *corev1.EphemeralContainer, s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t := ec.TargetContainerName; t != "" && !slices.ContainsFunc(s.Containers, func(c corev1.Container) bool { return c.Name == t }) &&
		!slices.ContainsFunc(s.InitContainers, func(c corev1.Container) bool { return c.Name == t }) {
		errs = append(errs, field.NotFound(p.Child("targetContainerName"), t))
	}
	v := reflect.ValueOf(ec.EphemeralContainerCommon)
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		if !ephemeralContainerFields.Has(name) && !v.Field(i).IsZero() {
			errs = append(errs, field.Forbidden(p.Child(strings.ToLower(name[:1])+name[1:]), "cannot be set for an Ephemeral Container"))
		}
	}
	for i, m := range ec.VolumeMounts {
		mp := p.Child("volumeMounts").Index(i)
		if m.SubPath != "" {
			errs = append(errs, field.Forbidden(mp.Child("subPath"), "cannot be set for an Ephemeral Container"))
		}
		if m.SubPathExpr != "" {
			errs = append(errs, field.Forbidden(mp.Child("subPathExpr"), "cannot be set for an Ephemeral Container"))
		}
	}
	return errs
}
