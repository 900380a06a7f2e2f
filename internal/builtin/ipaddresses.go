package builtin

import (
	"net/netip"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// IPAddresses is the networking.k8s.io/v1 ipaddresses resource: one
// object an address, named by it. The cluster IP allocator writes one for
// each address a Service holds (ClusterIPs.record), under the resource's
// own keys, so they are served as any object; a client may write one to
// keep an address from Services.
func IPAddresses() *registry.Definition {
	k := kindDef{
		group: "networking.k8s.io", version: "v1", resource: "ipaddresses", kind: "IPAddress",
		shortNames: []string{"ip"}, scope: registry.Cluster, noGeneration: true,
	}
	return k.definition(ipAddressHooks{kindHooksNoGeneration[networkingv1.IPAddress, ipAddressRules]{kindHooks: newKindHooks[networkingv1.IPAddress](k, ipAddressRules{})}})
}

type ipAddressHooks struct {
	kindHooksNoGeneration[networkingv1.IPAddress, ipAddressRules]
}

var _ registry.NameValidator = ipAddressHooks{}

// ValidateName: an IPAddress is named by its address, in canonical form.
func (ipAddressHooks) ValidateName(name string, _ bool) []string {
	var msgs []string
	for _, err := range validation.IsValidIP(&field.Path{}, name) {
		msgs = append(msgs, err.Detail)
	}
	return msgs
}

type ipAddressRules struct{}

func (ipAddressRules) defaults(*networkingv1.IPAddress) {}

// validate checks the parent reference (required, then immutable).
func (ipAddressRules) validate(ip, was *networkingv1.IPAddress) field.ErrorList {
	p := field.NewPath("spec", "parentRef")
	if was != nil {
		if !equalPtr(ip.Spec.ParentRef, was.Spec.ParentRef) {
			// Upstream's message shows its internal value, which prints
			// as null.
			return field.ErrorList{field.Invalid(p, nil, "field is immutable")}
		}
		return nil
	}
	ref := ip.Spec.ParentRef
	if ref == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if ref.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Group) {
			errs = append(errs, field.Invalid(p.Child("group"), ref.Group, msg))
		}
	}
	errs = append(errs, requiredPathSegment(ref.Resource, p.Child("resource"))...)
	// Upstream's declarative rules list the namespace before the name.
	if ref.Namespace != "" {
		for _, msg := range content.IsPathSegmentName(ref.Namespace) {
			errs = append(errs, field.Invalid(p.Child("namespace"), ref.Namespace, msg))
		}
	}
	return append(errs, requiredPathSegment(ref.Name, p.Child("name"))...)
}

func requiredPathSegment(v string, p *field.Path) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range content.IsPathSegmentName(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

// columns are upstream's: it declares two, and its rows have the age as
// a third cell.
func (ipAddressRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "ParentRef", Type: "string", Description: networkingv1.IPAddressSpec{}.SwaggerDoc()["parentRef"]},
	}
}

func (ipAddressRules) cells(ip *networkingv1.IPAddress) []any {
	parent := "<none>"
	if ref := ip.Spec.ParentRef; ref != nil {
		parent = strings.ToLower(schema.GroupResource{Group: ref.Group, Resource: ref.Resource}.String())
		if ref.Namespace != "" {
			parent += "/" + ref.Namespace
		}
		parent += "/" + ref.Name
	}
	return []any{ip.Name, parent, age(&ip.ObjectMeta)}
}

// ServiceCIDRs is the networking.k8s.io/v1 servicecidrs resource, with
// its status. The server keeps the default one, named "kubernetes", for
// --service-cluster-ip-range (DefaultServiceCIDR); others are stored, but
// crdserver allocates cluster IPs from the default range alone.
func ServiceCIDRs() *registry.Definition {
	return define[networkingv1.ServiceCIDR](kindDef{
		group: "networking.k8s.io", version: "v1", resource: "servicecidrs", kind: "ServiceCIDR",
		scope: registry.Cluster, noGeneration: true, status: true,
	}, serviceCIDRRules{})
}

type serviceCIDRRules struct{}

func (serviceCIDRRules) defaults(*networkingv1.ServiceCIDR) {}

// validate checks the CIDRs: one or two, valid, one of each family; an
// update keeps them, but may add one of the other family to a single one.
func (serviceCIDRRules) validate(c, was *networkingv1.ServiceCIDR) field.ErrorList {
	p := field.NewPath("spec", "cidrs")
	if was == nil {
		return validateServiceCIDRs(c.Spec.CIDRs, p)
	}
	cidrs, old := c.Spec.CIDRs, was.Spec.CIDRs
	const immutable = "field is immutable"
	switch {
	case len(cidrs) == len(old):
		var errs field.ErrorList
		for i := range old {
			if cidrs[i] != old[i] {
				errs = append(errs, field.Invalid(p.Index(i), cidrs[i], immutable))
			}
		}
		return errs
	case len(old) == 1 && len(cidrs) == 2:
		var errs field.ErrorList
		if cidrs[0] != old[0] {
			errs = append(errs, field.Invalid(p.Index(0), cidrs[0], immutable))
		}
		return append(errs, validateServiceCIDRs(cidrs, p)...)
	}
	return field.ErrorList{field.Invalid(p, cidrs, immutable)}
}

func validateServiceCIDRs(cidrs []string, p *field.Path) field.ErrorList {
	switch {
	case len(cidrs) == 0:
		return field.ErrorList{field.Required(p, "at least one CIDR required")}
	case len(cidrs) > 2:
		// Upstream's value is its internal spec, whose field has no JSON
		// name of its own.
		type internalSpec struct{ CIDRs []string }
		return field.ErrorList{field.Invalid(p, internalSpec{cidrs}, "may only hold up to 2 values")}
	}
	var errs field.ErrorList
	for i, c := range cidrs {
		errs = append(errs, validation.IsValidCIDR(p.Index(i), c)...)
	}
	if len(cidrs) == 2 {
		a, errA := netip.ParsePrefix(cidrs[0])
		b, errB := netip.ParsePrefix(cidrs[1])
		if errA == nil && errB == nil && a.Addr().Is4() == b.Addr().Is4() {
			errs = append(errs, field.Invalid(p, cidrs, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
		}
	}
	return errs
}

func (serviceCIDRRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "CIDRs", Type: "string", Description: networkingv1.ServiceCIDRSpec{}.SwaggerDoc()["cidrs"]},
		ageColumn,
	}
}

func (serviceCIDRRules) cells(c *networkingv1.ServiceCIDR) []any {
	return []any{c.Name, strings.Join(c.Spec.CIDRs, ","), age(&c.ObjectMeta)}
}

// DefaultServiceCIDRName names the default ServiceCIDR.
const DefaultServiceCIDRName = "kubernetes"

// DefaultServiceCIDR is the ServiceCIDR upstream's kube-apiserver keeps
// for its service cluster IP range, ready.
func DefaultServiceCIDR(cidr string) networkingv1.ServiceCIDR {
	return networkingv1.ServiceCIDR{
		TypeMeta:   metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "ServiceCIDR"},
		ObjectMeta: metav1.ObjectMeta{Name: DefaultServiceCIDRName},
		Spec:       networkingv1.ServiceCIDRSpec{CIDRs: []string{cidr}},
	}
}

// DefaultServiceCIDRReady is the condition upstream's default ServiceCIDR
// controller applies to the default one.
func DefaultServiceCIDRReady(now metav1.Time) metav1.Condition {
	return metav1.Condition{
		Type:               networkingv1.ServiceCIDRConditionReady,
		Status:             metav1.ConditionTrue,
		LastTransitionTime: now,
		Message:            "Kubernetes default Service CIDR is ready",
	}
}
