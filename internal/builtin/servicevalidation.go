package builtin

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// validateService checks a Service's spec as upstream's validation does,
// rule by rule in upstream's order, so that a request breaking several
// rules lists the same errors in the same order. old is the stored
// Service on an update, nil on a create.
func validateService(svc, old *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	if old != nil {
		errs = append(errs, validateServiceTransitions(svc, old)...)
	}
	spec := &svc.Spec
	p := field.NewPath("spec")
	if mode, ok := svc.Annotations[corev1.AnnotationTopologyMode]; ok {
		if hints, ok := svc.Annotations[corev1.DeprecatedAnnotationTopologyAwareHints]; ok && hints != mode {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations").Key(corev1.AnnotationTopologyMode), mode,
				fmt.Sprintf("must match annotations[%s] when both are specified", corev1.DeprecatedAnnotationTopologyAwareHints)))
		}
	}
	headless := isHeadless(svc)
	if len(spec.Ports) == 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(p.Child("ports"), ""))
	}
	errs = append(errs, validateServiceTypeFields(svc, p)...)
	names := map[string]bool{}
	for i := range spec.Ports {
		errs = append(errs, validateServicePort(&spec.Ports[i], len(spec.Ports) > 1, names, p.Child("ports").Index(i))...)
	}
	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabels(spec.Selector, p.Child("selector"))...)
	}
	errs = append(errs, validateSessionAffinity(spec, p)...)
	errs = append(errs, validateClusterIPFields(svc, old)...)
	var kept []string
	if old != nil {
		kept = old.Spec.ExternalIPs
	}
	for i, ip := range spec.ExternalIPs {
		ipPath := p.Child("externalIPs").Index(i)
		if ipErrs := validation.IsValidIPForLegacyField(ipPath, ip, true, kept); len(ipErrs) > 0 {
			errs = append(errs, ipErrs...)
		} else {
			errs = append(errs, validateExternalIP(ip, ipPath)...)
		}
	}
	switch {
	case spec.Type == "":
		errs = append(errs, field.Required(p.Child("type"), ""))
	case !slices.Contains(serviceTypes, string(spec.Type)):
		errs = append(errs, field.NotSupported(p.Child("type"), spec.Type, serviceTypes))
	}
	errs = append(errs, validateServiceNodePorts(spec, p)...)
	errs = append(errs, validateSourceRanges(svc, old)...)
	if spec.AllocateLoadBalancerNodePorts != nil && spec.Type != corev1.ServiceTypeLoadBalancer {
		errs = append(errs, field.Forbidden(p.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		// Upstream names the field without its spec parent.
		errs = append(errs, field.Required(field.NewPath("allocateLoadBalancerNodePorts"), ""))
	}
	errs = append(errs, validateLoadBalancerClass(svc, nil)...)
	errs = append(errs, validateTrafficPolicies(spec, p)...)
	return errs
}

// validateServiceTransitions are the rules of an update alone: the
// cluster IPs and IP families a Service holds, its load balancer class
// and its health check node port do not change.
func validateServiceTransitions(svc, old *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	if svc.Spec.Type != corev1.ServiceTypeExternalName && old.Spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, validateClusterIPsKept(svc, old)...)
		errs = append(errs, validateIPFamiliesKept(svc, old)...)
	}
	errs = append(errs, validateLoadBalancerClass(svc, old)...)
	if needsHealthCheckSpec(&old.Spec) && needsHealthCheckSpec(&svc.Spec) && svc.Spec.HealthCheckNodePort != old.Spec.HealthCheckNodePort {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "healthCheckNodePort"), "field is immutable"))
	}
	return errs
}

// validateServiceTypeFields checks what a type rules out: a node port or
// load balancer that is headless; an ExternalName with cluster IPs or IP
// families, or without a DNS name (which may end in a dot).
func validateServiceTypeFields(svc *corev1.Service, p *field.Path) field.ErrorList {
	spec := &svc.Spec
	switch spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		if isHeadless(svc) {
			return field.ErrorList{field.Invalid(p.Child("clusterIPs").Index(0), spec.ClusterIPs[0], fmt.Sprintf("may not be set to 'None' for %s services", spec.Type))}
		}
	case corev1.ServiceTypeExternalName:
		var errs field.ErrorList
		if len(spec.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(p.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(spec.IPFamilies) > 0 {
			errs = append(errs, field.Forbidden(p.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if spec.IPFamilyPolicy != nil {
			errs = append(errs, field.Forbidden(p.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		name := strings.TrimSuffix(spec.ExternalName, ".")
		if name == "" {
			return append(errs, field.Required(p.Child("externalName"), ""))
		}
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(p.Child("externalName"), name, msg))
		}
		return errs
	}
	return nil
}

// validateServicePort checks one port: its name (required when there are
// several, a DNS label, unique), number, protocol, target port and
// application protocol.
func validateServicePort(sp *corev1.ServicePort, nameRequired bool, names map[string]bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case sp.Name == "" && nameRequired:
		errs = append(errs, field.Required(p.Child("name"), ""))
	case sp.Name != "":
		for _, msg := range validation.IsDNS1123Label(sp.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), sp.Name, msg))
		}
		if names[sp.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), sp.Name))
		}
		names[sp.Name] = true
	}
	errs = append(errs, validatePort(sp.Port, p.Child("port"))...)
	errs = append(errs, validateProtocol(string(sp.Protocol), p.Child("protocol"))...)
	errs = append(errs, validatePortNumOrName(sp.TargetPort, p.Child("targetPort"))...)
	if sp.AppProtocol != nil {
		for _, msg := range validation.IsQualifiedName(*sp.AppProtocol) {
			errs = append(errs, field.Invalid(p.Child("appProtocol"), *sp.AppProtocol, msg))
		}
	}
	return errs
}

// validatePortNumOrName checks a port given by number or by name.
func validatePortNumOrName(port intstr.IntOrString, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port.Type == intstr.String {
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(p, port.StrVal, msg))
		}
		return errs
	}
	for _, msg := range validation.IsValidPortNum(port.IntValue()) {
		errs = append(errs, field.Invalid(p, port.IntValue(), msg))
	}
	return errs
}

// maxClientIPAffinitySeconds is upstream's longest ClientIP affinity, a day.
const maxClientIPAffinitySeconds = 86400

var sessionAffinities = []string{string(corev1.ServiceAffinityClientIP), string(corev1.ServiceAffinityNone)}

// validateSessionAffinity checks the affinity and its configuration: a
// ClientIP affinity has a timeout in (0, 86400], None has none.
func validateSessionAffinity(spec *corev1.ServiceSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case spec.SessionAffinity == "":
		errs = append(errs, field.Required(p.Child("sessionAffinity"), ""))
	case !slices.Contains(sessionAffinities, string(spec.SessionAffinity)):
		errs = append(errs, field.NotSupported(p.Child("sessionAffinity"), spec.SessionAffinity, sessionAffinities))
	}
	cp := p.Child("sessionAffinityConfig")
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityClientIP:
		why := fmt.Sprintf("when session affinity type is %s", corev1.ServiceAffinityClientIP)
		cfg := spec.SessionAffinityConfig
		switch {
		case cfg == nil:
			errs = append(errs, field.Required(cp, why))
		case cfg.ClientIP == nil:
			errs = append(errs, field.Required(cp.Child("clientIP"), why))
		case cfg.ClientIP.TimeoutSeconds == nil:
			errs = append(errs, field.Required(cp.Child("clientIP", "timeoutSeconds"), why))
		case *cfg.ClientIP.TimeoutSeconds <= 0 || *cfg.ClientIP.TimeoutSeconds > maxClientIPAffinitySeconds:
			errs = append(errs, field.Invalid(cp.Child("clientIP", "timeoutSeconds"), cfg.ClientIP.TimeoutSeconds,
				fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPAffinitySeconds)))
		}
	case corev1.ServiceAffinityNone:
		if spec.SessionAffinityConfig != nil {
			errs = append(errs, field.Forbidden(cp, fmt.Sprintf("must not be set when session affinity is %s", corev1.ServiceAffinityNone)))
		}
	}
	return errs
}

var (
	ipFamilies        = []string{string(corev1.IPv4Protocol), string(corev1.IPv6Protocol)}
	ipFamilyPolicies  = []string{string(corev1.IPFamilyPolicyPreferDualStack), string(corev1.IPFamilyPolicyRequireDualStack), string(corev1.IPFamilyPolicySingleStack)}
	trafficPolicies   = []string{string(corev1.ServiceExternalTrafficPolicyCluster), string(corev1.ServiceExternalTrafficPolicyLocal)}
	trafficDistrTypes = []string{corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone, corev1.ServiceTrafficDistributionPreferSameNode}
)

// validateClusterIPFields checks clusterIP against clusterIPs, the IP
// families and their policy, and that the cluster IPs are valid, at most
// one of each family and of the families the Service names.
func validateClusterIPFields(svc, old *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var errs field.ErrorList
	ipsPath := field.NewPath("spec", "clusterIPs")
	switch {
	case spec.ClusterIP != "" && len(spec.ClusterIPs) == 0:
		errs = append(errs, field.Required(ipsPath, ""))
	case spec.ClusterIP != "" && spec.ClusterIPs[0] != spec.ClusterIP:
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "first value must match `clusterIP`"))
	case spec.ClusterIP == "" && len(spec.ClusterIPs) > 0:
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}
	seen := map[corev1.IPFamily]bool{}
	for i, fam := range spec.IPFamilies {
		fp := field.NewPath("spec", "ipFamilies").Index(i)
		if !slices.Contains(ipFamilies, string(fam)) {
			errs = append(errs, field.NotSupported(fp, fam, ipFamilies))
		}
		if seen[fam] {
			errs = append(errs, field.Duplicate(fp, fam))
		}
		seen[fam] = true
	}
	if pol := spec.IPFamilyPolicy; pol != nil && !slices.Contains(ipFamilyPolicies, string(*pol)) {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "ipFamilyPolicy"), pol, ipFamilyPolicies))
	}
	var kept []string
	if old != nil {
		kept = old.Spec.ClusterIPs
	}
	invalid := false
	for i, ip := range spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(spec.ClusterIPs) > 1 {
				invalid = true
				errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		ipErrs := validation.IsValidIPForLegacyField(ipsPath.Index(i), ip, true, kept)
		invalid = invalid || len(ipErrs) > 0
		errs = append(errs, ipErrs...)
	}
	if len(spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	// Invalid addresses would make the checks below say more wrong things.
	if invalid {
		return errs
	}
	if len(spec.ClusterIPs) > 1 {
		if dual, err := netutils.IsDualStackIPStrings(spec.ClusterIPs); err != nil || !dual {
			errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "may specify no more than one IP for each IP family"))
		}
	}
	if isHeadless(svc) {
		return errs
	}
	for i, ip := range spec.ClusterIPs {
		if i >= len(spec.IPFamilies) {
			break
		}
		v6 := netutils.IsIPv6String(ip)
		switch {
		case spec.IPFamilies[i] == corev1.IPv4Protocol && v6:
			errs = append(errs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an IPv4 value as indicated by `ipFamilies[%v]`", i)))
		case spec.IPFamilies[i] == corev1.IPv6Protocol && !v6:
			errs = append(errs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an IPv6 value as indicated by `ipFamilies[%v]`", i)))
		}
	}
	return errs
}

// validateClusterIPsKept: an update keeps the cluster IPs it has, but may
// add a secondary one or release it (then single-stack).
func validateClusterIPsKept(svc, old *corev1.Service) field.ErrorList {
	if isHeadless(svc) && isHeadless(old) {
		return nil
	}
	ips, was := svc.Spec.ClusterIPs, old.Spec.ClusterIPs
	p := field.NewPath("spec", "clusterIPs")
	var errs field.ErrorList
	switch {
	case len(was) == len(ips):
		for i := range was {
			if was[i] != ips[i] {
				errs = append(errs, field.Invalid(p.Index(i), ips, "may not change once set"))
			}
		}
	case len(was) > len(ips):
		if len(ips) == 0 {
			errs = append(errs, field.Invalid(p.Index(0), ips, "primary clusterIP can not be unset"))
		} else if ips[0] != was[0] {
			errs = append(errs, field.Invalid(p.Index(0), ips, "may not change once set"))
		}
		if len(ips) == 1 && !singleStack(svc) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), svc.Spec.IPFamilyPolicy, "must be set to 'SingleStack' when releasing the secondary clusterIP"))
		}
	default:
		if len(was) > 0 && ips[0] != was[0] {
			errs = append(errs, field.Invalid(p.Index(0), ips, "may not change once set"))
		}
	}
	return errs
}

// validateIPFamiliesKept: the same for the IP families, which a
// headless Service, or one becoming or ceasing to be headless, may change.
func validateIPFamiliesKept(svc, old *corev1.Service) field.ErrorList {
	if isHeadless(svc) || isHeadless(old) {
		return nil
	}
	fams, was := svc.Spec.IPFamilies, old.Spec.IPFamilies
	p := field.NewPath("spec", "ipFamilies").Index(0)
	var errs field.ErrorList
	switch {
	case len(was) == len(fams):
		for i := range was {
			if was[i] != fams[i] {
				errs = append(errs, field.Invalid(p, fams, "may not change once set"))
			}
		}
	case len(was) > len(fams):
		if len(svc.Spec.ClusterIPs) == 0 {
			errs = append(errs, field.Invalid(p, fams, "primary ipFamily can not be unset"))
		}
		if len(fams) > 0 && fams[0] != was[0] {
			errs = append(errs, field.Invalid(p, svc.Spec.ClusterIPs, "may not change once set"))
		}
		if len(fams) == 1 && !singleStack(svc) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), svc.Spec.IPFamilyPolicy, "must be set to 'SingleStack' when releasing the secondary ipFamily"))
		}
	default:
		if len(was) > 0 && len(fams) > 0 && fams[0] != was[0] {
			errs = append(errs, field.Invalid(p, svc.Spec.ClusterIPs, "may not change once set"))
		}
	}
	return errs
}

// validateExternalIP refuses the addresses no Service can be reached at
// from outside: unspecified, loopback and link-local ones, as upstream
// checks them (as endpoint addresses, which crdserver's own check lets be
// loopback).
func validateExternalIP(ip string, p *field.Path) field.ErrorList {
	return validateReachableIP(ip, p, false)
}

// validateServiceNodePorts: a ClusterIP Service has no node ports, and no
// two ports share a node port, or a port, of one protocol.
func validateServiceNodePorts(spec *corev1.ServiceSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Type == corev1.ServiceTypeClusterIP {
		for i, port := range spec.Ports {
			if port.NodePort != 0 {
				errs = append(errs, field.Forbidden(p.Child("ports").Index(i).Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
		}
	}
	type key struct {
		proto corev1.Protocol
		port  int32
	}
	nodePorts := map[key]bool{}
	for i, port := range spec.Ports {
		if port.NodePort == 0 {
			continue
		}
		k := key{port.Protocol, port.NodePort}
		if nodePorts[k] {
			errs = append(errs, field.Duplicate(p.Child("ports").Index(i).Child("nodePort"), port.NodePort))
		}
		nodePorts[k] = true
	}
	ports := map[key]bool{}
	for i, port := range spec.Ports {
		k := key{port.Protocol, port.Port}
		if ports[k] {
			errs = append(errs, duplicatePort(p.Child("ports").Index(i), port))
		}
		ports[k] = true
	}
	return errs
}

// duplicatePort is upstream's error for a port and protocol used twice.
// Its value is upstream's internal ServicePort holding the two, which has
// no JSON tags: the message shows its Go field names.
func duplicatePort(p *field.Path, port corev1.ServicePort) *field.Error {
	type internalServicePort struct {
		Name        string
		Protocol    corev1.Protocol
		AppProtocol *string
		Port        int32
		TargetPort  intstr.IntOrString
		NodePort    int32
	}
	return field.Duplicate(p, internalServicePort{Protocol: port.Protocol, Port: port.Port})
}

// validateLoadBalancerClass: only a load balancer has a class, a
// qualified name, which it keeps (old non-nil on an update).
func validateLoadBalancerClass(svc, old *corev1.Service) field.ErrorList {
	p := field.NewPath("spec", "loadBalancerClass")
	lb := svc.Spec.Type == corev1.ServiceTypeLoadBalancer
	class := svc.Spec.LoadBalancerClass
	if old != nil {
		if lb && old.Spec.Type == corev1.ServiceTypeLoadBalancer && !equalPtr(class, old.Spec.LoadBalancerClass) {
			return field.ErrorList{field.Invalid(p, class, "may not change once set")}
		}
		return nil
	}
	switch {
	case class == nil:
		return nil
	case !lb:
		return field.ErrorList{field.Forbidden(p, "may only be used when `type` is 'LoadBalancer'")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(*class) {
		errs = append(errs, field.Invalid(p, *class, msg))
	}
	return errs
}

func equalPtr[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// validateTrafficPolicies checks the external traffic policy (only for a
// Service reachable from outside), the health check node port (only, and
// always, for a load balancer with a Local policy), the internal traffic
// policy and the traffic distribution.
func validateTrafficPolicies(spec *corev1.ServiceSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	etp := p.Child("externalTrafficPolicy")
	switch {
	case !externallyAccessible(spec):
		if spec.ExternalTrafficPolicy != "" {
			errs = append(errs, field.Invalid(etp, spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
		}
	case spec.ExternalTrafficPolicy == "":
		errs = append(errs, field.Required(etp, ""))
	case !slices.Contains(trafficPolicies, string(spec.ExternalTrafficPolicy)):
		errs = append(errs, field.NotSupported(etp, spec.ExternalTrafficPolicy, trafficPolicies))
	}
	hc := p.Child("healthCheckNodePort")
	switch {
	case !needsHealthCheckSpec(spec):
		if spec.HealthCheckNodePort != 0 {
			errs = append(errs, field.Invalid(hc, spec.HealthCheckNodePort, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
		}
	case spec.HealthCheckNodePort == 0:
		errs = append(errs, field.Required(hc, ""))
	default:
		errs = append(errs, validatePort(spec.HealthCheckNodePort, hc)...)
	}
	itp := p.Child("internalTrafficPolicy")
	switch {
	case spec.InternalTrafficPolicy == nil:
		if spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeClusterIP {
			errs = append(errs, field.Required(itp, ""))
		}
	case !slices.Contains(internalTrafficPolicies, string(*spec.InternalTrafficPolicy)):
		errs = append(errs, field.NotSupported(itp, *spec.InternalTrafficPolicy, internalTrafficPolicies))
	}
	if td := spec.TrafficDistribution; td != nil && !slices.Contains(trafficDistrTypes, *td) {
		errs = append(errs, field.NotSupported(p.Child("trafficDistribution"), *td, trafficDistrTypes))
	}
	return errs
}

var internalTrafficPolicies = []string{string(corev1.ServiceInternalTrafficPolicyCluster), string(corev1.ServiceInternalTrafficPolicyLocal)}

func isHeadless(svc *corev1.Service) bool {
	return len(svc.Spec.ClusterIPs) == 1 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

func singleStack(svc *corev1.Service) bool {
	return svc.Spec.IPFamilyPolicy != nil && *svc.Spec.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack
}

// externallyAccessible: a node port, a load balancer, or external IPs.
func externallyAccessible(spec *corev1.ServiceSpec) bool {
	return spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeNodePort ||
		spec.Type == corev1.ServiceTypeClusterIP && len(spec.ExternalIPs) > 0
}

func needsHealthCheckSpec(spec *corev1.ServiceSpec) bool {
	return spec.Type == corev1.ServiceTypeLoadBalancer && spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}
