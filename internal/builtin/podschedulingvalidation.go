package builtin

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file holds the pod-level half of upstream's pod spec validation:
// scheduling (affinity, tolerations, spread constraints, gates), DNS,
// host aliases and namespaces, the OS and what it forbids, resource
// claims and overhead. Each function is called from validatePodSpec at
// the place upstream's ValidatePodSpec calls its counterpart, so that the
// causes of a 422 come in upstream's order. The options upstream derives
// from the gates take 1.37.2's defaults: comparison operators in
// tolerations are refused, matchLabelKeys of spread constraints are
// checked as merged into the selector. Those it derives from the old
// object on an update (invalid selectors or token paths an older version
// let through may stay) are not taken: an update is checked as a create.

// validatePodResourceClaims checks the pod's claims: a unique DNS label
// each, and exactly one of a claim or a template named.
func validatePodResourceClaims(claims []corev1.PodResourceClaim, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, c := range claims {
		ip := p.Index(i)
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(ip.Child("name"), ""))
		case seen.Has(c.Name):
			errs = append(errs, field.Duplicate(ip.Child("name"), c.Name))
		default:
			errs = append(errs, dns1123Label(c.Name, ip.Child("name"))...)
			seen.Insert(c.Name)
		}
		if c.ResourceClaimName != nil && c.ResourceClaimTemplateName != nil {
			errs = append(errs, field.Invalid(ip, internalPodResourceClaim(c), "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"))
		}
		if c.ResourceClaimName == nil && c.ResourceClaimTemplateName == nil {
			errs = append(errs, field.Invalid(ip, internalPodResourceClaim(c), "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
		}
		if c.ResourceClaimName != nil {
			errs = append(errs, dnsSubdomain(*c.ResourceClaimName, ip.Child("resourceClaimName"))...)
		}
		if c.ResourceClaimTemplateName != nil {
			errs = append(errs, dnsSubdomain(*c.ResourceClaimTemplateName, ip.Child("resourceClaimTemplateName"))...)
		}
	}
	return errs
}

// internalPodResourceClaim is a claim as upstream quotes it in an error:
// its internal type, whose fields have no JSON names.
type internalPodResourceClaim struct {
	Name                      string
	ResourceClaimName         *string
	ResourceClaimTemplateName *string
}

// validatePodHostNetworkDeps: with the host's network a container port
// has no other host port. A pod template may leave the host port 0 (a
// pod's defaults make it the container port).
func validatePodHostNetworkDeps(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	if !s.HostNetwork {
		return nil
	}
	var errs field.ErrorList
	for i, c := range s.Containers {
		for j, port := range c.Ports {
			if port.HostPort != 0 && port.HostPort != port.ContainerPort {
				errs = append(errs, field.Invalid(p.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"), port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return errs
}

// validateShareProcessNamespace: a shared process namespace and the
// host's are exclusive.
func validateShareProcessNamespace(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	if s.ShareProcessNamespace != nil && *s.ShareProcessNamespace && s.HostPID {
		return field.ErrorList{field.Invalid(p.Child("shareProcessNamespace"), true, "ShareProcessNamespace and HostPID cannot both be enabled")}
	}
	return nil
}

// validateAffinity checks node affinity, pod affinity and pod
// anti-affinity, in that order.
func validateAffinity(a *corev1.Affinity, p *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		np := p.Child("nodeAffinity")
		if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			errs = append(errs, validateNodeSelector(r, np.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		pp := np.Child("preferredDuringSchedulingIgnoredDuringExecution")
		for i, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			if t.Weight <= 0 || t.Weight > 100 {
				errs = append(errs, field.Invalid(pp.Index(i).Child("weight"), t.Weight, "must be in the range 1-100"))
			}
			errs = append(errs, validateNodeSelectorTerm(&t.Preference, pp.Index(i).Child("preference"), false)...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("podAffinity"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("podAntiAffinity"))...)
	}
	return errs
}

// validatePodAffinityTerms checks the required terms, then the weighted
// ones.
func validatePodAffinityTerms(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rp := p.Child("requiredDuringSchedulingIgnoredDuringExecution")
	for i := range required {
		errs = append(errs, validatePodAffinityTerm(&required[i], rp.Index(i))...)
	}
	pp := p.Child("preferredDuringSchedulingIgnoredDuringExecution")
	for i := range preferred {
		w := &preferred[i]
		if w.Weight <= 0 || w.Weight > 100 {
			errs = append(errs, field.Invalid(pp.Index(i).Child("weight"), w.Weight, "must be in the range 1-100"))
		}
		errs = append(errs, validatePodAffinityTerm(&w.PodAffinityTerm, pp.Index(i).Child("podAffinityTerm"))...)
	}
	return errs
}

// strictSelector is how a pod's selectors are checked: label values must
// be valid.
var strictSelector = metav1validation.LabelSelectorValidationOptions{}

// validatePodAffinityTerm checks a term's selectors, namespaces, label
// keys and topology key. Upstream names a bad namespace at the path
// "namespace" (singular).
func validatePodAffinityTerm(t *corev1.PodAffinityTerm, p *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(t.LabelSelector, strictSelector, p.Child("labelSelector"))
	errs = append(errs, metav1validation.ValidateLabelSelector(t.NamespaceSelector, strictSelector, p.Child("namespaceSelector"))...)
	for _, ns := range t.Namespaces {
		for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
			errs = append(errs, field.Invalid(p.Child("namespace"), ns, msg))
		}
	}
	errs = append(errs, validateMatchLabelKeys(p, t.MatchLabelKeys, t.MismatchLabelKeys, t.LabelSelector)...)
	if t.TopologyKey == "" {
		errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
	}
	return append(errs, metav1validation.ValidateLabelName(t.TopologyKey, p.Child("topologyKey"))...)
}

// validateMatchLabelKeys is upstream's check of matchLabelKeys and
// mismatchLabelKeys: label names, only with a selector, a key not in both
// lists, and a matched key not already in the selector. By the time this
// runs, a pod's selector holds the requirements its keys were merged into,
// so the key is found twice; upstream names that error at p.Index(i),
// without the list's name, and so does this.
func validateMatchLabelKeys(p *field.Path, match, mismatch []string, sel *metav1.LabelSelector) field.ErrorList {
	var errs field.ErrorList
	for _, l := range []struct {
		name string
		keys []string
	}{{"matchLabelKeys", match}, {"mismatchLabelKeys", mismatch}} {
		if len(l.keys) == 0 {
			continue
		}
		lp := p.Child(l.name)
		if sel == nil {
			errs = append(errs, field.Forbidden(lp, "must not be specified when labelSelector is not set"))
			continue
		}
		for i, k := range l.keys {
			errs = append(errs, metav1validation.ValidateLabelName(k, lp.Index(i))...)
		}
	}
	if sel != nil {
		index := map[string]int{}
		for i, k := range match {
			index[k] = i
		}
		keys := sets.New[string]()
		for k := range sel.MatchLabels {
			keys.Insert(k)
		}
		for _, e := range sel.MatchExpressions {
			if i, ok := index[e.Key]; ok && keys.Has(e.Key) {
				errs = append(errs, field.Invalid(p.Index(i), e.Key, "exists in both matchLabelKeys and labelSelector"))
			}
			keys.Insert(e.Key)
		}
	}
	mis := sets.New(mismatch...)
	for i, k := range match {
		if mis.Has(k) {
			errs = append(errs, field.Invalid(p.Child("matchLabelKeys").Index(i), k, "exists in both matchLabelKeys and mismatchLabelKeys"))
		}
	}
	return errs
}

// Upstream's limits on a pod's DNS configuration (those of libc's
// resolver).
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

// validatePodDNSConfig checks the DNS configuration: required, with a
// nameserver, for the policy None; at most three nameservers, each an IP;
// at most 32 search domains, 2048 characters together, each a DNS
// subdomain (underscores allowed, one trailing dot ignored); named
// options.
func validatePodDNSConfig(c *corev1.PodDNSConfig, policy corev1.DNSPolicy, p *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if c == nil {
			return field.ErrorList{field.Required(p, "must provide `dnsConfig` when `dnsPolicy` is None")}
		}
		if len(c.Nameservers) == 0 {
			return field.ErrorList{field.Required(p.Child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None")}
		}
	}
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	np := p.Child("nameservers")
	if len(c.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(np, c.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range c.Nameservers {
		errs = append(errs, validation.IsValidIPForLegacyField(np.Index(i), ns, true, nil)...)
	}
	sp := p.Child("searches")
	if len(c.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(sp, c.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(c.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(sp, c.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, s := range c.Searches {
		if s == "." {
			continue
		}
		s = strings.TrimSuffix(s, ".")
		for _, msg := range validation.IsDNS1123SubdomainWithUnderscore(s) {
			errs = append(errs, field.Invalid(sp.Index(i), s, msg))
		}
	}
	for i, o := range c.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(p.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

// validateReadinessGates: each condition type is a qualified name.
func validateReadinessGates(gates []corev1.PodReadinessGate, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, g := range gates {
		errs = append(errs, qualifiedName(string(g.ConditionType), p.Index(i).Child("conditionType"))...)
	}
	return errs
}

// validateSchedulingGates: each gate a qualified name, none twice.
func validateSchedulingGates(gates []corev1.PodSchedulingGate, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, g := range gates {
		errs = append(errs, qualifiedName(g.Name, p.Index(i))...)
		if seen.Has(g.Name) {
			errs = append(errs, field.Duplicate(p.Index(i), g.Name))
		}
		seen.Insert(g.Name)
	}
	return errs
}

// validateTopologySpreadConstraints checks each constraint: a positive
// skew, a topology key, a known action, no other constraint with the same
// key and action, minDomains positive and only with DoNotSchedule, known
// node policies, the match label keys and the selector.
func validateTopologySpreadConstraints(cs []corev1.TopologySpreadConstraint, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cs {
		ip := p.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(ip.Child("maxSkew"), c.MaxSkew, notPositiveMsg))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(ip.Child("topologyKey"), "can not be empty"))
		}
		if c.WhenUnsatisfiable != corev1.DoNotSchedule && c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			errs = append(errs, field.NotSupported(ip.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}))
		}
		for _, o := range cs[i+1:] {
			if o.TopologyKey == c.TopologyKey && o.WhenUnsatisfiable == c.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(ip.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if m := c.MinDomains; m != nil {
			mp := ip.Child("minDomains")
			if *m <= 0 {
				errs = append(errs, field.Invalid(mp, *m, notPositiveMsg))
			}
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				errs = append(errs, field.Invalid(mp, *m, fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		for _, pol := range []struct {
			name string
			v    *corev1.NodeInclusionPolicy
		}{{"nodeAffinityPolicy", c.NodeAffinityPolicy}, {"nodeTaintsPolicy", c.NodeTaintsPolicy}} {
			if pol.v != nil && *pol.v != corev1.NodeInclusionPolicyHonor && *pol.v != corev1.NodeInclusionPolicyIgnore {
				errs = append(errs, field.NotSupported(ip.Child(pol.name), *pol.v, []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}))
			}
		}
		errs = append(errs, validateMatchLabelKeys(ip, c.MatchLabelKeys, nil, c.LabelSelector)...)
		errs = append(errs, metav1validation.ValidateLabelSelector(c.LabelSelector, strictSelector, ip.Child("labelSelector"))...)
	}
	return errs
}

// validatePodHostUsers: a pod in its own user namespace may not share
// the host's network (UserNamespacesHostNetworkSupport is an alpha of
// 1.37), PID or IPC namespace, nor use block devices.
func validatePodHostUsers(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	if s.HostUsers == nil || *s.HostUsers {
		return nil
	}
	var errs field.ErrorList
	if s.HostNetwork {
		errs = append(errs, field.Forbidden(p.Child("hostNetwork"), "when `hostUsers` is false"))
	}
	if s.HostPID {
		errs = append(errs, field.Forbidden(p.Child("HostPID"), "when `hostUsers` is false"))
	}
	if s.HostIPC {
		errs = append(errs, field.Forbidden(p.Child("HostIPC"), "when `hostUsers` is false"))
	}
	visitContainers(s, p, func(c *corev1.Container, cp *field.Path) {
		if len(c.VolumeDevices) > 0 {
			errs = append(errs, field.Forbidden(cp.Child("volumeDevices"), "when `hostUsers` is false"))
		}
	})
	return errs
}

// validatePodHostnameOverride: an overriding hostname is a DNS subdomain
// of at most 64 characters, and neither the FQDN nor the host's network
// is used with it.
func validatePodHostnameOverride(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	if s.HostnameOverride == nil {
		return nil
	}
	hp := p.Child("hostnameOverride")
	var errs field.ErrorList
	if s.SetHostnameAsFQDN != nil && *s.SetHostnameAsFQDN {
		errs = append(errs, field.Forbidden(hp, "may not be specified when setHostnameAsFQDN is true"))
	}
	if s.HostNetwork {
		errs = append(errs, field.Forbidden(hp, "may not be specified when hostNetwork is true"))
	}
	if len(*s.HostnameOverride) > 64 {
		errs = append(errs, field.TooLong(hp, "", 64))
	}
	return append(errs, dnsSubdomain(*s.HostnameOverride, hp)...)
}

// validatePodTolerations checks each toleration: a label name as key (none
// means every key, with Exists), seconds only for NoExecute, the operator
// and its value, the effect. The comparison operators Lt and Gt are an
// alpha of 1.37, refused.
func validatePodTolerations(ts []corev1.Toleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		ip := p.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, ip.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(ip.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(ip.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
				errs = append(errs, field.Invalid(ip.Child("operator"), t.Value, strings.Join(msgs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(ip.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		case corev1.TolerationOpLt, corev1.TolerationOpGt:
			errs = append(errs, field.NotSupported(ip.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists, corev1.TolerationOpLt, corev1.TolerationOpGt}))
		default:
			errs = append(errs, field.NotSupported(ip.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		if t.Effect != "" && t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectPreferNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.NotSupported(ip.Child("effect"), t.Effect, []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
		}
	}
	return errs
}

// validateHostAliases: each alias an IP, each of its names a DNS
// subdomain.
func validateHostAliases(as []corev1.HostAlias, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, a := range as {
		ip := p.Index(i)
		errs = append(errs, validation.IsValidIPForLegacyField(ip.Child("ip"), a.IP, true, nil)...)
		for j, h := range a.Hostnames {
			errs = append(errs, dnsSubdomain(h, ip.Child("hostnames").Index(j))...)
		}
	}
	return errs
}

// validateRuntimeClassName: a set runtime class name is a DNS subdomain.
func validateRuntimeClassName(name *string, p *field.Path) field.ErrorList {
	if name == nil {
		return nil
	}
	return dnsSubdomain(*name, p)
}

// validateOverhead checks the overhead as upstream does: as the limits
// of a container.
func validateOverhead(o corev1.ResourceList, p *field.Path) field.ErrorList {
	if o == nil {
		return nil
	}
	return validateContainerResources(&corev1.ResourceRequirements{Limits: o}, p)
}

// validatePodOS checks the OS's name and, for a known one, the fields
// the other OS's pods alone may set.
func validatePodOS(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	if s.OS == nil {
		return nil
	}
	switch s.OS.Name {
	case "":
		return field.ErrorList{field.Required(p.Child("os", "name"), "")}
	case corev1.Linux:
		return validateLinuxPod(s, p)
	case corev1.Windows:
		return validateWindowsPod(s, p)
	}
	return field.ErrorList{field.NotSupported(p.Child("os"), s.OS.Name, []corev1.OSName{corev1.Linux, corev1.Windows})}
}

// validateLinuxPod: no Windows options in a Linux pod.
func validateLinuxPod(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	const msg = "windows options cannot be set for a linux pod"
	if sc := s.SecurityContext; sc != nil && sc.WindowsOptions != nil {
		errs = append(errs, field.Forbidden(p.Child("securityContext", "windowsOptions"), msg))
	}
	visitContainers(s, p, func(c *corev1.Container, cp *field.Path) {
		if sc := c.SecurityContext; sc != nil && sc.WindowsOptions != nil {
			errs = append(errs, field.Forbidden(cp.Child("securityContext", "windowsOptions"), msg))
		}
	})
	return errs
}

// validateWindowsPod: none of the Linux-only security settings and host
// namespaces in a Windows pod.
func validateWindowsPod(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbid := func(set bool, p *field.Path) {
		if set {
			errs = append(errs, field.Forbidden(p, "cannot be set for a windows pod"))
		}
	}
	if sc := s.SecurityContext; sc != nil {
		sp := p.Child("securityContext")
		forbid(sc.AppArmorProfile != nil, sp.Child("appArmorProfile"))
		forbid(sc.SELinuxOptions != nil, sp.Child("seLinuxOptions"))
		forbid(sc.SeccompProfile != nil, sp.Child("seccompProfile"))
		forbid(sc.FSGroup != nil, sp.Child("fsGroup"))
		forbid(sc.FSGroupChangePolicy != nil, sp.Child("fsGroupChangePolicy"))
		forbid(len(sc.Sysctls) > 0, sp.Child("sysctls"))
		forbid(sc.RunAsUser != nil, sp.Child("runAsUser"))
		forbid(sc.RunAsGroup != nil, sp.Child("runAsGroup"))
		forbid(sc.SupplementalGroups != nil, sp.Child("supplementalGroups"))
		forbid(sc.SupplementalGroupsPolicy != nil, sp.Child("supplementalGroupsPolicy"))
		forbid(sc.SELinuxChangePolicy != nil, sp.Child("seLinuxChangePolicy"))
	}
	forbid(s.HostUsers != nil, p.Child("hostUsers"))
	forbid(s.HostPID, p.Child("hostPID"))
	forbid(s.HostIPC, p.Child("hostIPC"))
	forbid(s.ShareProcessNamespace != nil, p.Child("shareProcessNamespace"))
	visitContainers(s, p, func(c *corev1.Container, cp *field.Path) {
		sc := c.SecurityContext
		if sc == nil {
			return
		}
		sp := cp.Child("securityContext")
		forbid(sc.AppArmorProfile != nil, sp.Child("appArmorProfile"))
		forbid(sc.SELinuxOptions != nil, sp.Child("seLinuxOptions"))
		forbid(sc.SeccompProfile != nil, sp.Child("seccompProfile"))
		forbid(sc.Capabilities != nil, sp.Child("capabilities"))
		forbid(sc.ReadOnlyRootFilesystem != nil, sp.Child("readOnlyRootFilesystem"))
		forbid(sc.Privileged != nil, sp.Child("privileged"))
		forbid(sc.AllowPrivilegeEscalation != nil, sp.Child("allowPrivilegeEscalation"))
		forbid(sc.ProcMount != nil, sp.Child("procMount"))
		forbid(sc.RunAsUser != nil, sp.Child("runAsUser"))
		forbid(sc.RunAsGroup != nil, sp.Child("runAsGroup"))
	})
	return errs
}

// validateSchedulingGatesUpdate: a pod's gates may only be removed.
// Upstream ranges over a map, so with several new gates their order
// varies; crdserver names them in the order they come.
func validateSchedulingGatesUpdate(now, was []corev1.PodSchedulingGate, p *field.Path) field.ErrorList {
	old := sets.New[string]()
	for _, g := range was {
		old.Insert(g.Name)
	}
	var errs field.ErrorList
	last := map[string]int{}
	for i, g := range now {
		last[g.Name] = i
	}
	for i, g := range now {
		if old.Has(g.Name) || last[g.Name] != i {
			continue
		}
		errs = append(errs, field.Forbidden(p.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
	}
	return errs
}

func qualifiedName(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

func dnsSubdomain(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

func dns1123Label(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

// notPositiveMsg is upstream's detail for a number that must be above 0.
const notPositiveMsg = "must be greater than zero"

// mergeMatchLabelKeys is what upstream's pod strategy does to a new pod:
// each matched (mismatched) label key of an affinity term with a selector,
// and each matched key of a spread constraint with one, becomes a
// requirement In (NotIn) the pod's value of the label, when it has the
// label.
func mergeMatchLabelKeys(p *corev1.Pod) {
	merge := func(sel *metav1.LabelSelector, keys []string, op metav1.LabelSelectorOperator) {
		for _, k := range keys {
			if v, ok := p.Labels[k]; ok {
				sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: op, Values: []string{v}})
			}
		}
	}
	term := func(t *corev1.PodAffinityTerm) {
		if t.LabelSelector == nil {
			return
		}
		merge(t.LabelSelector, t.MatchLabelKeys, metav1.LabelSelectorOpIn)
		merge(t.LabelSelector, t.MismatchLabelKeys, metav1.LabelSelectorOpNotIn)
	}
	if a := p.Spec.Affinity; a != nil {
		var terms [][]corev1.PodAffinityTerm
		var weighted [][]corev1.WeightedPodAffinityTerm
		if pa := a.PodAffinity; pa != nil {
			terms = append(terms, pa.RequiredDuringSchedulingIgnoredDuringExecution)
			weighted = append(weighted, pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if pa := a.PodAntiAffinity; pa != nil {
			terms = append(terms, pa.RequiredDuringSchedulingIgnoredDuringExecution)
			weighted = append(weighted, pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		// Upstream merges the weighted terms first, then the required ones;
		// each term is its own, so the order does not show.
		for _, ws := range weighted {
			for i := range ws {
				term(&ws[i].PodAffinityTerm)
			}
		}
		for _, ts := range terms {
			for i := range ts {
				term(&ts[i])
			}
		}
	}
	for i := range p.Spec.TopologySpreadConstraints {
		c := &p.Spec.TopologySpreadConstraints[i]
		if c.LabelSelector != nil {
			merge(c.LabelSelector, c.MatchLabelKeys, metav1.LabelSelectorOpIn)
		}
	}
}

// dropDisabledPodFields clears the fields of a pod spec whose features
// are off by default in 1.37, as upstream's strategies do before
// anything else looks at a pod or template: an emptyDir's mode
// (EmptyDirVolumeMode), the owners of volume files (AtomicWriteVolumeUserFields),
// the scheduling group (GenericWorkload) and the eviction responders
// (EvictionRequestAPI). Upstream keeps one that the stored object uses
// already; crdserver never stored one.
func dropDisabledPodFields(s *corev1.PodSpec) {
	s.SchedulingGroup = nil
	s.EvictionResponders = nil
	for i := range s.Volumes {
		v := &s.Volumes[i].VolumeSource
		switch {
		case v.EmptyDir != nil:
			v.EmptyDir.Mode = nil
		case v.Secret != nil:
			v.Secret.DefaultUser = nil
			dropKeyToPathUsers(v.Secret.Items)
		case v.ConfigMap != nil:
			v.ConfigMap.DefaultUser = nil
			dropKeyToPathUsers(v.ConfigMap.Items)
		case v.DownwardAPI != nil:
			v.DownwardAPI.DefaultUser = nil
			dropDownwardAPIUsers(v.DownwardAPI.Items)
		case v.Projected != nil:
			v.Projected.DefaultUser = nil
			for j := range v.Projected.Sources {
				src := &v.Projected.Sources[j]
				switch {
				case src.Secret != nil:
					dropKeyToPathUsers(src.Secret.Items)
				case src.DownwardAPI != nil:
					dropDownwardAPIUsers(src.DownwardAPI.Items)
				case src.ConfigMap != nil:
					dropKeyToPathUsers(src.ConfigMap.Items)
				case src.ServiceAccountToken != nil:
					src.ServiceAccountToken.User = nil
				case src.ClusterTrustBundle != nil:
					src.ClusterTrustBundle.User = nil
				case src.PodCertificate != nil:
					src.PodCertificate.User = nil
				}
			}
		}
	}
}

func dropKeyToPathUsers(items []corev1.KeyToPath) {
	for i := range items {
		items[i].User = nil
	}
}

func dropDownwardAPIUsers(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		items[i].User = nil
	}
}
