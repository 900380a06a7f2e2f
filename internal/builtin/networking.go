package builtin

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"k8s.io/utils/ptr"

	"github.com/crdserver/crdserver/internal/registry"
)

// Ingresses is the networking.k8s.io/v1 ingresses resource: stored, with
// no ingress controller; status is what a client writes to /status.
// Validation covers the rules, paths, backends, hosts, TLS entries and
// class name; the legacy class annotation is not checked. A create that
// names no class gets the default IngressClass among classes, as
// upstream's DefaultIngressClass admission plugin gives it (nil classes:
// none).
func Ingresses(classes IngressClassLister) *registry.Definition {
	k := kindDef{
		group: "networking.k8s.io", version: "v1", resource: "ingresses", kind: "Ingress",
		shortNames: []string{"ing"}, scope: registry.Namespaced, status: true,
		statusMetadata: registry.UserMetadata,
	}
	return k.definition(ingressHooks{kindHooks: newKindHooks[networkingv1.Ingress](k, ingressRules{}), classes: classes})
}

// IngressClassLister lists the metadata of the stored IngressClasses.
type IngressClassLister func(ctx context.Context) ([]metav1.ObjectMeta, error)

// ingressHooks are an Ingress's hooks with the DefaultIngressClass plugin.
type ingressHooks struct {
	kindHooks[networkingv1.Ingress, ingressRules]
	classes IngressClassLister
}

var _ registry.CreateAdmitter = ingressHooks{}

// ingressClassAnnotation is the class annotation Ingresses had before
// spec.ingressClassName; an Ingress that carries it is left alone.
const ingressClassAnnotation = "kubernetes.io/ingress.class"

// AdmitCreate sets spec.ingressClassName, when the Ingress names no class
// by field or annotation, to the default IngressClass if there is one.
func (h ingressHooks) AdmitCreate(ctx context.Context, obj map[string]any) error {
	if h.classes == nil {
		return nil
	}
	spec, _ := obj["spec"].(map[string]any)
	if spec["ingressClassName"] != nil {
		return nil
	}
	md, _ := obj["metadata"].(map[string]any)
	if ann, _ := md["annotations"].(map[string]any); ann != nil {
		if _, ok := ann[ingressClassAnnotation]; ok {
			return nil
		}
	}
	classes, err := h.classes(ctx)
	if err != nil {
		return fmt.Errorf("listing IngressClasses: %w", err)
	}
	name := defaultIngressClass(classes)
	if name == "" {
		return nil
	}
	if spec == nil {
		spec = map[string]any{}
		obj["spec"] = spec
	}
	spec["ingressClassName"] = name
	return nil
}

// defaultIngressClass names the class marked default, or "" when none
// is (defaultClass).
func defaultIngressClass(classes []metav1.ObjectMeta) string {
	return defaultClass(classes, func(m *metav1.ObjectMeta) bool {
		return m.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true"
	})
}

// defaultClass names the class of metas that isDefault marks, or "" when
// none is. Of several, upstream's admission plugins (DefaultIngressClass,
// DefaultStorageClass) take the newest, then the first by name.
func defaultClass(metas []metav1.ObjectMeta, isDefault func(*metav1.ObjectMeta) bool) string {
	var best *metav1.ObjectMeta
	for i := range metas {
		c := &metas[i]
		if !isDefault(c) {
			continue
		}
		if best == nil {
			best = c
			continue
		}
		t, bt := c.CreationTimestamp.UnixNano(), best.CreationTimestamp.UnixNano()
		if t > bt || t == bt && c.Name < best.Name {
			best = c
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}

type ingressRules struct{}

// Upstream's rules for Exact and Prefix paths.
var (
	invalidPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidPathSuffixes  = []string{"/..", "/."}
)

func (ingressRules) defaults(*networkingv1.Ingress) {}

func (ingressRules) validate(ing, was *networkingv1.Ingress) field.ErrorList {
	s, p := &ing.Spec, field.NewPath("spec")
	var errs field.ErrorList
	if len(s.Rules) == 0 && s.DefaultBackend == nil {
		errs = append(errs, field.Invalid(p, s.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if s.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(s.DefaultBackend, p.Child("defaultBackend"))...)
	}
	for i, r := range s.Rules {
		rp := p.Child("rules").Index(i)
		if r.Host != "" {
			if _, err := netip.ParseAddr(r.Host); err == nil {
				errs = append(errs, field.Invalid(rp.Child("host"), r.Host, "must be a DNS name, not an IP address"))
			}
			errs = append(errs, validateHost(r.Host, rp.Child("host"))...)
		}
		if r.HTTP == nil {
			continue
		}
		hp := rp.Child("http", "paths")
		if len(r.HTTP.Paths) == 0 {
			errs = append(errs, field.Required(hp, ""))
		}
		for j := range r.HTTP.Paths {
			errs = append(errs, validateIngressPath(&r.HTTP.Paths[j], hp.Index(j))...)
		}
	}
	// Upstream keeps accepting a bad secret name the stored ingress has.
	keepBadSecrets := was != nil && slices.ContainsFunc(was.Spec.TLS, func(t networkingv1.IngressTLS) bool {
		return t.SecretName != "" && len(apivalidation.NameIsDNSSubdomain(t.SecretName, false)) > 0
	})
	for i, tls := range s.TLS {
		tp := p.Child("tls").Index(i)
		for j, host := range tls.Hosts {
			errs = append(errs, validateHost(host, tp.Child("hosts").Index(j))...)
		}
		if tls.SecretName != "" && !keepBadSecrets {
			for _, msg := range apivalidation.NameIsDNSSubdomain(tls.SecretName, false) {
				errs = append(errs, field.Invalid(tp.Child("secretName"), tls.SecretName, msg))
			}
		}
	}
	if s.IngressClassName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*s.IngressClassName, false) {
			errs = append(errs, field.Invalid(p.Child("ingressClassName"), *s.IngressClassName, msg))
		}
	}
	return errs
}

// validateHost checks a host name, which may start with a wildcard label.
func validateHost(host string, p *field.Path) field.ErrorList {
	check := validation.IsDNS1123Subdomain
	if strings.Contains(host, "*") {
		check = validation.IsWildcardDNS1123Subdomain
	}
	var errs field.ErrorList
	for _, msg := range check(host) {
		errs = append(errs, field.Invalid(p, host, msg))
	}
	return errs
}

func validateIngressPath(path *networkingv1.HTTPIngressPath, p *field.Path) field.ErrorList {
	if path.PathType == nil {
		return field.ErrorList{field.Required(p.Child("pathType"), "pathType must be specified")}
	}
	var errs field.ErrorList
	pp := p.Child("path")
	switch *path.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(pp, path.Path, "must be an absolute path"))
		}
		for _, seq := range invalidPathSequences {
			if strings.Contains(path.Path, seq) {
				errs = append(errs, field.Invalid(pp, path.Path, fmt.Sprintf("must not contain '%s'", seq)))
			}
		}
		for _, suffix := range invalidPathSuffixes {
			if strings.HasSuffix(path.Path, suffix) {
				errs = append(errs, field.Invalid(pp, path.Path, fmt.Sprintf("cannot end with '%s'", suffix)))
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if path.Path != "" && !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(pp, path.Path, "must be an absolute path"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("pathType"), *path.PathType, []string{"Exact", "ImplementationSpecific", "Prefix"}))
	}
	return append(errs, validateIngressBackend(&path.Backend, p.Child("backend"))...)
}

// validateIngressBackend checks a backend as upstream does with its
// RelaxedServiceNameValidation gate on (the default): service names are
// DNS labels.
func validateIngressBackend(b *networkingv1.IngressBackend, p *field.Path) field.ErrorList {
	switch {
	case b.Resource != nil && b.Service != nil:
		return field.ErrorList{field.Invalid(p, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		var errs field.ErrorList
		if b.Resource.Kind == "" {
			errs = append(errs, field.Required(p.Child("resource", "kind"), ""))
		}
		if b.Resource.Name == "" {
			errs = append(errs, field.Required(p.Child("resource", "name"), ""))
		}
		return errs
	case b.Service == nil:
		return field.ErrorList{field.Invalid(p, "", "resource or service backend is required")}
	}
	var errs field.ErrorList
	svc, sp := b.Service, p.Child("service")
	if svc.Name == "" {
		errs = append(errs, field.Required(sp.Child("name"), ""))
	} else {
		for _, msg := range apivalidation.NameIsDNSLabel(svc.Name, false) {
			errs = append(errs, field.Invalid(sp.Child("name"), svc.Name, msg))
		}
	}
	switch port := svc.Port; {
	case port.Name != "" && port.Number != 0:
		errs = append(errs, field.Invalid(p, "", "cannot set both port name & port number"))
	case port.Name != "":
		for _, msg := range validation.IsValidPortName(port.Name) {
			errs = append(errs, field.Invalid(sp.Child("port", "name"), port.Name, msg))
		}
	case port.Number != 0:
		for _, msg := range validation.IsValidPortNum(int(port.Number)) {
			errs = append(errs, field.Invalid(sp.Child("port", "number"), port.Number, msg))
		}
	default:
		errs = append(errs, field.Required(p, "port name or number is required"))
	}
	return errs
}

func (ingressRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Class", Type: "string", Description: "The name of the IngressClass resource that should be used for additional configuration"},
		{Name: "Hosts", Type: "string", Description: "Hosts that incoming requests are matched against before the ingress rule"},
		{Name: "Address", Type: "string", Description: "Address is a list containing ingress points for the load-balancer"},
		{Name: "Ports", Type: "string", Description: "Ports of TLS configurations that open"},
		ageColumn,
	}
}

// loadBalancerWidth is where upstream clips the Address cell.
const loadBalancerWidth = 16

func (ingressRules) cells(ing *networkingv1.Ingress) []any {
	class := "<none>"
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	var hosts []string
	for _, r := range ing.Spec.Rules {
		if len(hosts) == 3 {
			break
		}
		if r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	hostCell := "*"
	if len(hosts) > 0 {
		hostCell = strings.Join(hosts, ",")
		if len(ing.Spec.Rules) > 3 && len(hosts) == 3 {
			hostCell += fmt.Sprintf(" + %d more...", len(ing.Spec.Rules)-3)
		}
	}
	var addrs []string
	for _, lb := range ing.Status.LoadBalancer.Ingress {
		switch {
		case lb.IP != "":
			addrs = append(addrs, lb.IP)
		case lb.Hostname != "":
			addrs = append(addrs, lb.Hostname)
		}
	}
	slices.Sort(addrs)
	addr := strings.Join(slices.Compact(addrs), ",")
	if len(addr) > loadBalancerWidth {
		addr = addr[:loadBalancerWidth-3] + "..."
	}
	ports := "80"
	if len(ing.Spec.TLS) > 0 {
		ports = "80, 443"
	}
	return []any{ing.Name, class, hostCell, addr, ports, age(&ing.ObjectMeta)}
}

// IngressClasses is the networking.k8s.io/v1 ingressclasses resource.
func IngressClasses() *registry.Definition {
	return define[networkingv1.IngressClass](kindDef{
		group: "networking.k8s.io", version: "v1", resource: "ingressclasses", kind: "IngressClass",
		scope: registry.Cluster,
	}, ingressClassRules{})
}

type ingressClassRules struct{}

const maxLenIngressClassController = 250

// defaults: parameters are cluster-scoped unless they say otherwise.
func (ingressClassRules) defaults(ic *networkingv1.IngressClass) {
	if p := ic.Spec.Parameters; p != nil && p.Scope == nil {
		p.Scope = ptr.To(networkingv1.IngressClassParametersReferenceScopeCluster)
	}
}

// validate checks the controller (a domain-prefixed path, immutable) and
// that parameters name a kind, an object and a scope that fits; the kind
// and name's formats are not checked.
func (ingressClassRules) validate(ic, was *networkingv1.IngressClass) field.ErrorList {
	p := field.NewPath("spec")
	var errs field.ErrorList
	if was != nil {
		errs = apivalidation.ValidateImmutableField(ic.Spec.Controller, was.Spec.Controller, p.Child("controller"))
	}
	if len(ic.Spec.Controller) > maxLenIngressClassController {
		errs = append(errs, field.TooLong(p.Child("controller"), "", maxLenIngressClassController))
	}
	errs = append(errs, validation.IsDomainPrefixedPath(p.Child("controller"), ic.Spec.Controller)...)
	if params := ic.Spec.Parameters; params != nil {
		pp := p.Child("parameters")
		if params.Kind == "" {
			errs = append(errs, field.Required(pp.Child("kind"), ""))
		}
		if params.Name == "" {
			errs = append(errs, field.Required(pp.Child("name"), ""))
		}
		errs = append(errs, validateParametersScope(params, pp)...)
	}
	return errs
}

// validateParametersScope: cluster-scoped parameters name no namespace,
// namespaced ones a valid one.
func validateParametersScope(params *networkingv1.IngressClassParametersReference, p *field.Path) field.ErrorList {
	scopes := []string{string(networkingv1.IngressClassParametersReferenceScopeCluster), string(networkingv1.IngressClassParametersReferenceScopeNamespace)}
	switch {
	case params.Scope == nil:
		return field.ErrorList{field.Required(p.Child("scope"), "")}
	case *params.Scope == networkingv1.IngressClassParametersReferenceScopeCluster:
		if params.Namespace != nil {
			return field.ErrorList{field.Forbidden(p.Child("namespace"), "`parameters.scope` is set to 'Cluster'")}
		}
	case *params.Scope == networkingv1.IngressClassParametersReferenceScopeNamespace:
		if params.Namespace == nil {
			return field.ErrorList{field.Required(p.Child("namespace"), "`parameters.scope` is set to 'Namespace'")}
		}
		var errs field.ErrorList
		for _, msg := range apivalidation.ValidateNamespaceName(*params.Namespace, false) {
			errs = append(errs, field.Invalid(p.Child("namespace"), *params.Namespace, msg))
		}
		return errs
	default:
		return field.ErrorList{field.NotSupported(p.Child("scope"), *params.Scope, scopes)}
	}
	return nil
}

func (ingressClassRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Controller", Type: "string", Description: "Controller that is responsible for handling this class"},
		{Name: "Parameters", Type: "string", Description: "A reference to a resource with additional parameters"},
		ageColumn,
	}
}

// defaultIngressClassAnnotation marks the cluster's default class.
const defaultIngressClassAnnotation = "ingressclass.kubernetes.io/is-default-class"

func (ingressClassRules) cells(ic *networkingv1.IngressClass) []any {
	name := ic.Name
	if ic.Annotations[defaultIngressClassAnnotation] == "true" {
		name += " (default)"
	}
	params := "<none>"
	if p := ic.Spec.Parameters; p != nil {
		params = p.Kind
		if p.APIGroup != nil {
			params += "." + *p.APIGroup
		}
		params += "/" + p.Name
	}
	return []any{name, ic.Spec.Controller, params, age(&ic.ObjectMeta)}
}

// NetworkPolicies is the networking.k8s.io/v1 networkpolicies resource:
// stored, as no network plugin enforces them here.
func NetworkPolicies() *registry.Definition {
	return define[networkingv1.NetworkPolicy](kindDef{
		group: "networking.k8s.io", version: "v1", resource: "networkpolicies", kind: "NetworkPolicy",
		shortNames: []string{"netpol"}, scope: registry.Namespaced,
	}, networkPolicyRules{})
}

type networkPolicyRules struct{}

// defaults: ports are TCP, and a policy without policyTypes is an
// Ingress policy, and an Egress one too when it has egress rules.
func (networkPolicyRules) defaults(np *networkingv1.NetworkPolicy) {
	s := &np.Spec
	for _, ports := range portsOf(s.Ingress, s.Egress) {
		for i := range ports {
			if ports[i].Protocol == nil {
				ports[i].Protocol = ptr.To(corev1.ProtocolTCP)
			}
		}
	}
	if len(s.PolicyTypes) == 0 {
		s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(s.Egress) > 0 {
			s.PolicyTypes = append(s.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
}

// portsOf lists the ports of each ingress and egress rule (the rules'
// own slices).
func portsOf(in []networkingv1.NetworkPolicyIngressRule, out []networkingv1.NetworkPolicyEgressRule) [][]networkingv1.NetworkPolicyPort {
	var ports [][]networkingv1.NetworkPolicyPort
	for _, r := range in {
		ports = append(ports, r.Ports)
	}
	for _, r := range out {
		ports = append(ports, r.Ports)
	}
	return ports
}

// validate checks the pod selector, each rule's ports and peers, and the
// policy types, as upstream does with its StrictIPCIDRValidation gate on
// (the default). ipBlocks are a legacy field: a CIDR not in canonical
// form is accepted (and warned of), and an update keeps the CIDRs the
// stored policy has even if they are no longer valid.
func (networkPolicyRules) validate(np, was *networkingv1.NetworkPolicy) field.ErrorList {
	s, p := &np.Spec, field.NewPath("spec")
	var stored []string
	if was != nil {
		stored = policyCIDRs(was)
	}
	errs := metav1validation.ValidateLabelSelector(&s.PodSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("podSelector"))
	for i, r := range s.Ingress {
		errs = append(errs, validateNetworkPolicyRule(r.Ports, r.From, p.Child("ingress").Index(i), "from", stored)...)
	}
	for i, r := range s.Egress {
		errs = append(errs, validateNetworkPolicyRule(r.Ports, r.To, p.Child("egress").Index(i), "to", stored)...)
	}
	types := []string{string(networkingv1.PolicyTypeIngress), string(networkingv1.PolicyTypeEgress)}
	if len(s.PolicyTypes) > len(types) {
		return append(errs, field.Invalid(p.Child("policyTypes"), &s.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, t := range s.PolicyTypes {
		if !slices.Contains(types, string(t)) {
			errs = append(errs, field.NotSupported(p.Child("policyTypes").Index(i), t, types))
		}
	}
	return errs
}

// validateNetworkPolicyRule checks an ingress or egress rule: its ports
// and its peers (under peersName: from or to).
func validateNetworkPolicyRule(ports []networkingv1.NetworkPolicyPort, peers []networkingv1.NetworkPolicyPeer, p *field.Path, peersName string, stored []string) field.ErrorList {
	var errs field.ErrorList
	for j := range ports {
		errs = append(errs, validateNetworkPolicyPort(&ports[j], p.Child("ports").Index(j))...)
	}
	for j := range peers {
		errs = append(errs, validateNetworkPolicyPeer(&peers[j], p.Child(peersName).Index(j), stored)...)
	}
	return errs
}

func validateNetworkPolicyPort(port *networkingv1.NetworkPolicyPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pr := port.Protocol; pr != nil && *pr != corev1.ProtocolTCP && *pr != corev1.ProtocolUDP && *pr != corev1.ProtocolSCTP {
		errs = append(errs, field.NotSupported(p.Child("protocol"), *pr, []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}))
	}
	switch {
	case port.Port == nil:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, "may not be specified when `port` is not specified"))
		}
	case port.Port.Type == intstr.Int:
		for _, msg := range validation.IsValidPortNum(int(port.Port.IntVal)) {
			errs = append(errs, field.Invalid(p.Child("port"), port.Port.IntVal, msg))
		}
		if port.EndPort != nil {
			if *port.EndPort < port.Port.IntVal {
				errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, "must be greater than or equal to `port`"))
			}
			for _, msg := range validation.IsValidPortNum(int(*port.EndPort)) {
				errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, msg))
			}
		}
	default:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, "may not be specified when `port` is non-numeric"))
		}
		for _, msg := range validation.IsValidPortName(port.Port.StrVal) {
			errs = append(errs, field.Invalid(p.Child("port"), port.Port.StrVal, msg))
		}
	}
	return errs
}

func validateNetworkPolicyPeer(peer *networkingv1.NetworkPolicyPeer, p *field.Path, stored []string) field.ErrorList {
	var errs field.ErrorList
	n := 0
	for _, sel := range []struct {
		name string
		sel  *metav1.LabelSelector
	}{{"podSelector", peer.PodSelector}, {"namespaceSelector", peer.NamespaceSelector}} {
		if sel.sel != nil {
			n++
			errs = append(errs, metav1validation.ValidateLabelSelector(sel.sel, metav1validation.LabelSelectorValidationOptions{}, p.Child(sel.name))...)
		}
	}
	if b := peer.IPBlock; b != nil {
		n++
		errs = append(errs, validateIPBlock(b, p.Child("ipBlock"), stored)...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Required(p, "must specify a peer"))
	case n > 1 && peer.IPBlock != nil:
		errs = append(errs, field.Forbidden(p, "may not specify both ipBlock and another peer"))
	}
	return errs
}

func validateIPBlock(b *networkingv1.IPBlock, p *field.Path, stored []string) field.ErrorList {
	if b.CIDR == "" {
		return field.ErrorList{field.Required(p.Child("cidr"), "")}
	}
	errs := validation.IsValidCIDRForLegacyField(p.Child("cidr"), b.CIDR, true, stored)
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil {
		return errs
	}
	cidr = cidr.Masked()
	for i, e := range b.Except {
		ep := p.Child("except").Index(i)
		errs = append(errs, validation.IsValidCIDRForLegacyField(ep, e, true, stored)...)
		except, err := netip.ParsePrefix(e)
		if err != nil {
			continue
		}
		if !cidr.Contains(except.Masked().Addr()) || cidr.Bits() >= except.Bits() {
			errs = append(errs, field.Invalid(ep, e, "must be a strict subset of `cidr`"))
		}
	}
	return errs
}

// policyCIDRs are all the CIDRs of np's ipBlocks.
func policyCIDRs(np *networkingv1.NetworkPolicy) []string {
	var out []string
	add := func(peers []networkingv1.NetworkPolicyPeer) {
		for _, peer := range peers {
			if b := peer.IPBlock; b != nil {
				out = append(append(out, b.CIDR), b.Except...)
			}
		}
	}
	for _, r := range np.Spec.Ingress {
		add(r.From)
	}
	for _, r := range np.Spec.Egress {
		add(r.To)
	}
	return out
}

func (networkPolicyRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, {Name: "Pod-Selector", Type: "string", Description: networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]}, ageColumn}
}

func (networkPolicyRules) cells(np *networkingv1.NetworkPolicy) []any {
	return []any{np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), age(&np.ObjectMeta)}
}
