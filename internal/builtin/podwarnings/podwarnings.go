// Package podwarnings gives the warnings kube-apiserver adds to a write of
// an object with a pod template (Deployments, Jobs, PodTemplates, ...):
// parts of the template that validation lets through but that do nothing,
// are deprecated, or are likely not what the writer meant. The texts,
// field paths and order are upstream's, as clients (kubectl) print them.
//
// What a template warns of does not depend on the template it replaces:
// the kinds decide whether an update warns at all (upstream's strategies
// warn only when the template, or the spec holding it, changed).
package podwarnings

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// Template returns the warnings for the pod template at path (for
// example spec.template of a Deployment, template of a PodTemplate).
func Template(path *field.Path, t *corev1.PodTemplateSpec) []string {
	if t == nil {
		return nil
	}
	return warn(path, t, false)
}

// Pod returns the warnings for a new pod: a template's, at the pod's own
// paths, but for its AppArmor annotations, which upstream's pod strategy
// warns of as it copies them to fields (before validation).
func Pod(p *corev1.Pod) []string {
	return warn(nil, &corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}, true)
}

func warn(path *field.Path, t *corev1.PodTemplateSpec, pod bool) []string {
	w := &warner{meta: path.Child("metadata"), spec: path.Child("spec"), ann: t.Annotations, pod: pod}
	s := &t.Spec
	w.nodeLabels(s)
	w.topologySpread(s.TopologySpreadConstraints)
	w.deprecatedAnnotations()
	w.volumes(s.Volumes)
	w.hostAliasesAndPullSecrets(s)
	w.fractional(s.Overhead, w.spec.Child("overhead"), corev1.ResourceMemory, corev1.ResourceEphemeralStorage)
	w.containers(s)
	w.ports(s)
	if g := s.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		w.add("%s: must be >= 0; negative values are invalid and will be treated as 1", w.spec.Child("terminationGracePeriodSeconds"))
	}
	w.podAffinity(s.Affinity)
	if s.DNSConfig != nil {
		for i, ns := range s.DNSConfig.Nameservers {
			w.out = append(w.out, IP(w.spec.Child("dnsConfig", "nameservers").Index(i), ns)...)
		}
	}
	for i, a := range s.HostAliases {
		w.out = append(w.out, IP(w.spec.Child("hostAliases").Index(i).Child("ip"), a.IP)...)
	}
	return w.out
}

// warner collects the warnings of one template, in upstream's order.
type warner struct {
	meta, spec *field.Path
	ann        map[string]string
	out        []string
	// pod: the template is a pod's, whose AppArmor annotations are
	// warned of elsewhere.
	pod bool
}

func (w *warner) add(format string, args ...any) {
	w.out = append(w.out, fmt.Sprintf(format, args...))
}

// deprecatedNodeLabels are node labels that no longer mean what a
// selector on them expects, with what to use instead.
var deprecatedNodeLabels = map[string]string{
	"beta.kubernetes.io/arch":                       `deprecated since v1.14; use "kubernetes.io/arch" instead`,
	"beta.kubernetes.io/os":                         `deprecated since v1.14; use "kubernetes.io/os" instead`,
	"failure-domain.beta.kubernetes.io/region":      `deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
	"failure-domain.beta.kubernetes.io/zone":        `deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
	"beta.kubernetes.io/instance-type":              `deprecated since v1.17; use "node.kubernetes.io/instance-type" instead`,
	"app.kubernetes.io/created-by":                  `deprecated since v1.9`,
	"scheduler.alpha.kubernetes.io/preferAvoidPods": `deprecated since v1.22; use Taints and Tolerations instead`,
	"node-role.kubernetes.io/master":                `use "node-role.kubernetes.io/control-plane" instead`,
}

// DeprecatedNodeLabel tells whether key is a deprecated node label, and
// why. RuntimeClasses' node selectors warn of them too.
func DeprecatedNodeLabel(key string) (string, bool) {
	msg, ok := deprecatedNodeLabels[key]
	return msg, ok
}

// sortedKeys are m's keys in order. Upstream walks a selector map in Go's
// random order, so any order is upstream's; a fixed one keeps answers
// and tests stable.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// nodeLabels warns of deprecated node labels in the node selector and
// the node affinity; preferred terms also warn of values that are not
// label values (required terms are refused for those by validation).
func (w *warner) nodeLabels(s *corev1.PodSpec) {
	for _, k := range sortedKeys(s.NodeSelector) {
		if msg, ok := DeprecatedNodeLabel(k); ok {
			w.add("%s: %s", w.spec.Child("nodeSelector").Key(k), msg)
		}
	}
	if s.Affinity == nil || s.Affinity.NodeAffinity == nil {
		return
	}
	na, p := s.Affinity.NodeAffinity, w.spec.Child("affinity", "nodeAffinity")
	if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
		tp := p.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
		for i := range req.NodeSelectorTerms {
			w.nodeSelectorTerm(&req.NodeSelectorTerms[i], false, tp.Index(i))
		}
	}
	pp := p.Child("preferredDuringSchedulingIgnoredDuringExecution")
	for i := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		w.nodeSelectorTerm(&na.PreferredDuringSchedulingIgnoredDuringExecution[i].Preference, true, pp.Index(i).Child("preference"))
	}
}

func (w *warner) nodeSelectorTerm(t *corev1.NodeSelectorTerm, values bool, p *field.Path) {
	for i, e := range t.MatchExpressions {
		ep := p.Child("matchExpressions").Index(i)
		if msg, ok := DeprecatedNodeLabel(e.Key); ok {
			w.add("%s: %s is %s", ep.Child("key"), e.Key, msg)
		}
		if !values {
			continue
		}
		for j, v := range e.Values {
			for _, msg := range validation.IsValidLabelValue(v) {
				w.add("%s: %s is invalid, %s", ep.Child("values").Index(j), v, msg)
			}
		}
	}
}

const nullSelector = "a null labelSelector results in matching no pod"

func (w *warner) topologySpread(cs []corev1.TopologySpreadConstraint) {
	for i, c := range cs {
		p := w.spec.Child("topologySpreadConstraints").Index(i)
		if msg, ok := DeprecatedNodeLabel(c.TopologyKey); ok {
			w.add("%s: %s is %s", p.Child("topologyKey"), c.TopologyKey, msg)
		}
		if c.LabelSelector == nil {
			w.add("%s: %s", p.Child("labelSelector"), nullSelector)
		}
	}
}

// deprecatedAnnotations are pod annotations that stopped working once a
// field took their place, in the order upstream checks them.
var deprecatedAnnotations = []struct{ key, msg string }{
	{"scheduler.alpha.kubernetes.io/critical-pod", `non-functional in v1.16+; use the "priorityClassName" field instead`},
	{"security.alpha.kubernetes.io/sysctls", `non-functional in v1.11+; use the "sysctls" field instead`},
	{"security.alpha.kubernetes.io/unsafe-sysctls", `non-functional in v1.11+; use the "sysctls" field instead`},
}

func (w *warner) deprecatedAnnotations() {
	for _, a := range deprecatedAnnotations {
		if _, ok := w.ann[a.key]; ok {
			w.add("%s: %s", w.meta.Child("annotations").Key(a.key), a.msg)
		}
	}
}

// oldVolumes are the in-tree volume types that are deprecated or no
// longer work, with when, as upstream words them.
var oldVolumes = []struct {
	field, msg string
	set        func(*corev1.VolumeSource) bool
}{
	{"photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+", func(v *corev1.VolumeSource) bool { return v.PhotonPersistentDisk != nil }},
	// The GitRepoVolumeDriver gate is off, and locked so, since v1.36.
	{"gitRepo", "deprecated in v1.11, and disabled by default in v1.33+", func(v *corev1.VolumeSource) bool { return v.GitRepo != nil }},
	{"scaleIO", "deprecated in v1.16, non-functional in v1.22+", func(v *corev1.VolumeSource) bool { return v.ScaleIO != nil }},
	{"flocker", "deprecated in v1.22, non-functional in v1.25+", func(v *corev1.VolumeSource) bool { return v.Flocker != nil }},
	{"storageOS", "deprecated in v1.22, non-functional in v1.25+", func(v *corev1.VolumeSource) bool { return v.StorageOS != nil }},
	{"quobyte", "deprecated in v1.22, non-functional in v1.25+", func(v *corev1.VolumeSource) bool { return v.Quobyte != nil }},
	{"glusterfs", "deprecated in v1.25, non-functional in v1.26+", func(v *corev1.VolumeSource) bool { return v.Glusterfs != nil }},
	{"cephfs", "deprecated in v1.28, non-functional in v1.31+", func(v *corev1.VolumeSource) bool { return v.CephFS != nil }},
	{"rbd", "deprecated in v1.28, non-functional in v1.31+", func(v *corev1.VolumeSource) bool { return v.RBD != nil }},
}

func (w *warner) volumes(vs []corev1.Volume) {
	for i := range vs {
		v, p := &vs[i].VolumeSource, w.spec.Child("volumes").Index(i)
		// Validation allows one type a volume, so the order among
		// these does not show.
		for _, old := range oldVolumes {
			if old.set(v) {
				w.add("%s: %s", p.Child(old.field), old.msg)
			}
		}
		if v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil {
			w.out = append(w.out, ClaimSpec(p.Child("ephemeral", "volumeClaimTemplate", "spec"), &v.Ephemeral.VolumeClaimTemplate.Spec)...)
		}
	}
	w.out = append(w.out, overlappingPaths(vs)...)
}

// ClaimSpec warns of storage quantities in a claim's resources that are
// not a whole number of bytes; path is the claim spec's.
func ClaimSpec(path *field.Path, s *corev1.PersistentVolumeClaimSpec) []string {
	var out []string
	for _, kind := range []string{"requests", "limits"} {
		list := s.Resources.Requests
		if kind == "limits" {
			list = s.Resources.Limits
		}
		if q, ok := list[corev1.ResourceStorage]; ok && fractionalBytes(q) {
			out = append(out, fractionalMessage(path.Child("resources", kind).Key(string(corev1.ResourceStorage)), q))
		}
	}
	return out
}

func fractionalBytes(q resource.Quantity) bool { return q.MilliValue()%1000 != 0 }

func fractionalMessage(p *field.Path, q resource.Quantity) string {
	return fmt.Sprintf("%s: fractional byte value %q is invalid, must be an integer", p, q.String())
}

// fractional warns of the byte quantities among names in list that are
// not whole.
func (w *warner) fractional(list corev1.ResourceList, p *field.Path, names ...corev1.ResourceName) {
	for _, n := range names {
		if q, ok := list[n]; ok && fractionalBytes(q) {
			w.out = append(w.out, fractionalMessage(p.Key(string(n)), q))
		}
	}
}

// hostAliasesAndPullSecrets warns of host aliases repeating an IP and of
// image pull secrets repeating a name or without one.
func (w *warner) hostAliasesAndPullSecrets(s *corev1.PodSpec) {
	seen := map[string]bool{}
	for i, a := range s.HostAliases {
		if seen[a.IP] {
			w.add("%s: duplicate ip %q", w.spec.Child("hostAliases").Index(i).Child("ip"), a.IP)
		}
		seen[a.IP] = true
	}
	seen = map[string]bool{}
	for i, r := range s.ImagePullSecrets {
		if seen[r.Name] {
			w.add("%s: duplicate name %q", w.spec.Child("imagePullSecrets").Index(i).Child("name"), r.Name)
		}
		seen[r.Name] = true
	}
	for i, r := range s.ImagePullSecrets {
		if r.Name == "" {
			w.add("%s: invalid empty name %q", w.spec.Child("imagePullSecrets").Index(i).Child("name"), r.Name)
		}
	}
}

// container is one of a template's containers, with its path.
type container struct {
	c *corev1.Container
	p *field.Path
}

// allContainers are the init, regular and ephemeral containers, in that
// order.
func (w *warner) allContainers(s *corev1.PodSpec) []container {
	var out []container
	for i := range s.InitContainers {
		out = append(out, container{&s.InitContainers[i], w.spec.Child("initContainers").Index(i)})
	}
	for i := range s.Containers {
		out = append(out, container{&s.Containers[i], w.spec.Child("containers").Index(i)})
	}
	for i := range s.EphemeralContainers {
		c := corev1.Container(s.EphemeralContainers[i].EphemeralContainerCommon)
		out = append(out, container{&c, w.spec.Child("ephemeralContainers").Index(i)})
	}
	return out
}

const (
	seccompNote  = `non-functional in v1.27+; use the "seccompProfile" field instead`
	appArmorNote = `deprecated since v1.30; use the "appArmorProfile" field instead`
)

// containers warns of the seccomp and AppArmor annotations that a field
// replaced, then, container by container, of annotations naming it,
// fractional byte quantities and environment variables hiding an earlier
// one of the same name.
func (w *warner) containers(s *corev1.PodSpec) {
	var podAppArmor *corev1.AppArmorProfile
	if psc := s.SecurityContext; psc == nil || psc.SeccompProfile == nil {
		w.seccompAnnotation(corev1.SeccompPodAnnotationKey)
	}
	if psc := s.SecurityContext; psc != nil {
		podAppArmor = psc.AppArmorProfile
	}
	for _, c := range w.allContainers(s) {
		sc := c.c.SecurityContext
		if sc == nil || sc.SeccompProfile == nil {
			w.seccompAnnotation(corev1.SeccompContainerAnnotationKeyPrefix + c.c.Name)
		}
		if !w.pod && (sc == nil || sc.AppArmorProfile == nil) {
			key := corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + c.c.Name
			// An annotation saying what the pod's profile says already
			// is harmless.
			if v, ok := w.ann[key]; ok && !sameAppArmor(podAppArmor, appArmorOfAnnotation(v)) {
				w.add("%s: %s", w.meta.Child("annotations").Key(key), appArmorNote)
			}
		}
		w.fractional(c.c.Resources.Limits, c.p.Child("resources", "limits"), corev1.ResourceMemory)
		w.fractional(c.c.Resources.Requests, c.p.Child("resources", "requests"), corev1.ResourceMemory)
		w.fractional(c.c.Resources.Limits, c.p.Child("resources", "limits"), corev1.ResourceEphemeralStorage)
		w.fractional(c.c.Resources.Requests, c.p.Child("resources", "requests"), corev1.ResourceEphemeralStorage)
		w.env(c)
	}
}

func (w *warner) seccompAnnotation(key string) {
	if _, ok := w.ann[key]; ok {
		w.add("%s: %s", w.meta.Child("annotations").Key(key), seccompNote)
	}
}

// appArmorOfAnnotation is the profile field an AppArmor annotation value
// stands for, nil for a value that names none.
func appArmorOfAnnotation(v string) *corev1.AppArmorProfile {
	switch {
	case v == corev1.DeprecatedAppArmorBetaProfileNameUnconfined:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	case v == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	case strings.HasPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix) && len(v) > len(corev1.DeprecatedAppArmorBetaProfileNamePrefix):
		name := strings.TrimPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix)
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
	}
	return nil
}

func sameAppArmor(a, b *corev1.AppArmorProfile) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Type == b.Type && ptrEqual(a.LocalhostProfile, b.LocalhostProfile)
}

func ptrEqual(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// env warns of a variable that repeats an earlier name without building
// on its value ("$(NAME)..."): apply's merge keeps one of the two only.
func (w *warner) env(c container) {
	seen := map[string]bool{}
	for i, e := range c.c.Env {
		if !seen[e.Name] {
			seen[e.Name] = true
			continue
		}
		ref := "$(" + e.Name + ")"
		if e.ValueFrom != nil || e.Value == ref || !strings.Contains(e.Value, ref) {
			w.add("%s: hides previous definition of %q, which may be dropped when using apply", c.p.Child("env").Index(i), e.Name)
		}
	}
}

// port is a container port with its path.
type port struct {
	p    *field.Path
	port corev1.ContainerPort
}

// ports warns of host IPs without a host port and of container ports
// that clash, by number and protocol across all containers, then of port
// names used twice.
func (w *warner) ports(s *corev1.PodSpec) {
	cs := w.allContainers(s)
	byNumber := map[string][]port{}
	for _, c := range cs {
		for i, cp := range c.c.Ports {
			p := c.p.Child("ports").Index(i)
			if cp.HostIP != "" && cp.HostPort == 0 {
				w.add("%s: hostIP set without hostPort: {Name:%s HostPort:%d ContainerPort:%d Protocol:%s HostIP:%s}",
					p, cp.Name, cp.HostPort, cp.ContainerPort, cp.Protocol, cp.HostIP)
			}
			key := fmt.Sprintf("%d/%s", cp.ContainerPort, cp.Protocol)
			for _, other := range byNumber[key] {
				o := other.port
				switch {
				case cp.HostIP == o.HostIP && cp.HostPort == o.HostPort:
					w.add("%s: duplicate port definition with %s", p, other.p)
				case cp.HostPort == 0 || o.HostPort == 0:
					w.add("%s: overlapping port definition with %s", p, other.p)
				case cp.HostPort == o.HostPort && (cp.HostIP == "") != (o.HostIP == ""):
					// One listens on every address, the other on one.
					w.add("%s: dangerously ambiguous port definition with %s", p, other.p)
				}
			}
			byNumber[key] = append(byNumber[key], port{p, cp})
		}
	}
	byName := map[string]*field.Path{}
	for _, c := range cs {
		for i, cp := range c.c.Ports {
			if cp.Name == "" {
				continue
			}
			p := c.p.Child("ports").Index(i)
			if other, ok := byName[cp.Name]; ok {
				w.add("%s: duplicate port name %q with %s, services and probes that select ports by name will use %s", p, cp.Name, other, other)
				continue
			}
			byName[cp.Name] = p
		}
	}
}

// podAffinity warns of pod (anti-)affinity terms without a label
// selector, which match no pod.
func (w *warner) podAffinity(a *corev1.Affinity) {
	if a == nil {
		return
	}
	terms := func(p *field.Path, required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) {
		for i, t := range required {
			if t.LabelSelector == nil {
				w.add("%s: %s", p.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i).Child("labelSelector"), nullSelector)
			}
		}
		for i, t := range preferred {
			if t.PodAffinityTerm.LabelSelector == nil {
				w.add("%s: %s", p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i).Child("podAffinityTerm", "labelSelector"), nullSelector)
			}
		}
	}
	if pa := a.PodAffinity; pa != nil {
		terms(w.spec.Child("affinity", "podAffinity"), pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		terms(w.spec.Child("affinity", "podAntiAffinity"), pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
}

// IP warns of an IP address in a form upstream accepts only for old
// objects' sake (leading zeros, IPv4 in IPv6) or not in canonical form.
// A value that is no address at all gives none: validation answers it.
func IP(p *field.Path, value string) []string {
	if netutils.ParseIPSloppy(value) == nil {
		return nil
	}
	return validation.GetWarningsForIP(p, value)
}

// CIDR is IP for a CIDR, which also warns of bits set past the prefix.
func CIDR(p *field.Path, value string) []string {
	if _, _, err := netutils.ParseCIDRSloppy(value); err != nil {
		return nil
	}
	return validation.GetWarningsForCIDR(p, value)
}
