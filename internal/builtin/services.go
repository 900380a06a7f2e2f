package builtin

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/crdserver/crdserver/internal/registry"
)

// Services, Endpoints and EndpointSlices are stored objects here, as in a
// kube-apiserver without a cluster: nothing runs behind them. They exist so
// that webhooks (conversion, admission) can be registered by Service, as
// upstream's manifests do, and be resolved through them (see the webhook
// package). Validation covers what resolution relies on: types, ports,
// addresses.
//
// Cluster IPs are allocated from a range (see ClusterIPs), node ports
// from another (see NodePorts). Not done (yet): load balancers, dual stack, allocation when an
// update turns an ExternalName Service into another type, upstream's
// computed Table columns of Endpoints and EndpointSlices.

// Services is the core v1 services resource; ips allocates cluster IPs
// (nil: a Service keeps the cluster IP its client sent), ports node ports
// (nil: a Service keeps the node ports its client sent).
func Services(ips *ClusterIPs, ports *NodePorts) *registry.Definition {
	return &registry.Definition{
		Resource:   "services",
		Singular:   "service",
		Kind:       "Service",
		ListKind:   "ServiceList",
		ShortNames: []string{"svc"},
		Categories: []string{"all"},
		Scope:      registry.Namespaced,

		CreateOnUpdate: true,
		Versions: []registry.Version{{
			Name: "v1", Served: true, Storage: true,
			Subresources: registry.Subresources{Status: true, StatusMetadata: registry.UserMetadata},
			// As upstream's field label conversion of services.
			SelectableFields: []string{"spec.clusterIP", "spec.type"},
		}},
		Hooks: serviceHooks{Typed: Typed[corev1.Service]{Kind: "Service", Version: "v1"}, ips: ips, ports: ports},
	}
}

// Endpoints is the core v1 endpoints resource.
func Endpoints() *registry.Definition {
	return &registry.Definition{
		Resource:   "endpoints",
		Singular:   "endpoints",
		Kind:       "Endpoints",
		ListKind:   "EndpointsList",
		ShortNames: []string{"ep"},
		Scope:      registry.Namespaced,

		CreateOnUpdate: true,
		Versions: []registry.Version{withLifecycle(registry.Version{Name: "v1", Served: true, Storage: true},
			&corev1.Endpoints{}, corev1.SchemeGroupVersion.WithKind("Endpoints"))},
		Hooks: endpointsHooks{stored: newStored[corev1.Endpoints]("Endpoints", "v1")},
	}
}

// EndpointSlices is the discovery.k8s.io/v1 endpointslices resource.
func EndpointSlices() *registry.Definition {
	return &registry.Definition{
		Group:    "discovery.k8s.io",
		Resource: "endpointslices",
		Singular: "endpointslice",
		Kind:     "EndpointSlice",
		ListKind: "EndpointSliceList",
		Scope:    registry.Namespaced,
		Versions: []registry.Version{{
			Name: "v1", Served: true, Storage: true,
		}},
		Hooks: endpointSliceHooks{newStored[discoveryv1.EndpointSlice]("EndpointSlice", "v1")},
	}
}

type serviceHooks struct {
	Typed[corev1.Service]
	coreFieldLabels
	ips   *ClusterIPs
	ports *NodePorts
}

// AllowUnconditionalUpdate: as upstream's strategy, a PUT may omit
// metadata.resourceVersion.
func (serviceHooks) AllowUnconditionalUpdate() bool { return true }

// ReturnDeletedObject: as upstream's store, a delete answers with the
// Service.
func (serviceHooks) ReturnDeletedObject() {}

var (
	_ registry.CreatePreparer  = serviceHooks{}
	_ registry.UpdatePreparer  = serviceHooks{}
	_ registry.Validator       = serviceHooks{}
	_ registry.StatusValidator = serviceHooks{}
	_ registry.StrategicMerger = serviceHooks{}
	_ registry.Protobuf        = serviceHooks{}
	_ registry.TypeChecker     = serviceHooks{}
	_ registry.UnknownFielder  = serviceHooks{}
	_ registry.NoGeneration    = serviceHooks{}
	_ registry.NameValidator   = serviceHooks{}
	_ registry.Allocator       = serviceHooks{}
	_ registry.UpdateAllocator = serviceHooks{}
	_ registry.TablePrinter    = serviceHooks{}
)

func (serviceHooks) PatchSchema() any                   { return corev1.Service{} }
func (serviceHooks) NewProtobuf() registry.ProtoMessage { return &corev1.Service{} }
func (serviceHooks) NoGeneration()                      {}

// ValidateName: Service names are DNS-1035 labels (they become DNS names).
func (serviceHooks) ValidateName(name string, prefix bool) []string {
	return apivalidation.NameIsDNS1035Label(name, prefix)
}

func (h serviceHooks) PrepareForCreate(obj map[string]any) {
	h.Default(obj)
	obj["status"] = map[string]any{"loadBalancer": map[string]any{}}
	// A client that names clusterIP alone (an old one) means clusterIPs
	// too; one that names both has them checked against each other.
	spec := mapField(obj, "spec")
	if ip, _ := spec["clusterIP"].(string); ip != "" && spec["clusterIPs"] == nil {
		spec["clusterIPs"] = []any{ip}
	}
}

func (h serviceHooks) PrepareForUpdate(obj, old map[string]any) {
	h.trim(obj)
	// A write that leaves the cluster IP out keeps the allocated one, as
	// upstream's (kubectl replace of a manifest without it); one that
	// names the same cluster IP keeps the rest of the allocation (its
	// clusterIPs and IP families) when it leaves that out.
	spec, oldSpec := mapField(obj, "spec"), mapField(old, "spec")
	if spec["type"] != string(corev1.ServiceTypeExternalName) {
		if v, ok := oldSpec["clusterIP"]; ok && spec["clusterIP"] == nil {
			spec["clusterIP"] = v
		}
		if v, ok := oldSpec["clusterIPs"]; ok && spec["clusterIPs"] == nil && oldSpec["type"] != string(corev1.ServiceTypeExternalName) {
			spec["clusterIPs"] = v
		}
		if spec["clusterIP"] == oldSpec["clusterIP"] {
			for _, k := range []string{"ipFamilies", "ipFamilyPolicy"} {
				if v, ok := oldSpec[k]; ok && spec[k] == nil {
					spec[k] = v
				}
			}
		}
	}
	normalizeClusterIPs(spec, oldSpec)
	patchNodePorts(spec, oldSpec)
	dropTypeDependentFields(obj, oldSpec)
	defaultService(obj)
}

// dropTypeDependentFields clears, on a change of type, what the old type
// needed and the new one does not, as upstream's strategy does — each
// only when the update left it as it was (one the client changed is
// validation's to refuse): cluster IPs and IP families going to
// ExternalName, a load balancer's class and node port switch, the
// external traffic policy of a Service no longer reachable from outside,
// and the load balancer status of what is no longer one. (Node ports and
// the health check node port: patchNodePorts.)
func dropTypeDependentFields(obj, oldSpec map[string]any) {
	spec := mapField(obj, "spec")
	same := func(k string) bool { return reflect.DeepEqual(spec[k], oldSpec[k]) }
	extName := string(corev1.ServiceTypeExternalName)
	if oldSpec["type"] != extName && spec["type"] == extName {
		if same("clusterIP") && same("clusterIPs") {
			delete(spec, "clusterIP")
			delete(spec, "clusterIPs")
		}
		for _, k := range []string{"ipFamilies", "ipFamilyPolicy"} {
			if same(k) {
				delete(spec, k)
			}
		}
	}
	lb := string(corev1.ServiceTypeLoadBalancer)
	if oldSpec["type"] == lb && spec["type"] != lb {
		if spec["allocateLoadBalancerNodePorts"] != nil && same("allocateLoadBalancerNodePorts") {
			delete(spec, "allocateLoadBalancerNodePorts")
		}
		if same("loadBalancerClass") {
			delete(spec, "loadBalancerClass")
		}
	}
	if externallyReachable(oldSpec) && !externallyReachable(spec) && same("externalTrafficPolicy") {
		delete(spec, "externalTrafficPolicy")
	}
	if spec["type"] != lb {
		if status, ok := obj["status"].(map[string]any); ok {
			status["loadBalancer"] = map[string]any{}
		}
	}
}

// externallyReachable is externallyAccessible for a Service's spec as
// decoded into a map.
func externallyReachable(spec map[string]any) bool {
	ips, _ := spec["externalIPs"].([]any)
	switch spec["type"] {
	case string(corev1.ServiceTypeLoadBalancer), string(corev1.ServiceTypeNodePort):
		return true
	case string(corev1.ServiceTypeClusterIP), nil, "":
		return len(ips) > 0
	}
	return false
}

// normalizeClusterIPs keeps clusterIPs in step with a clusterIP an update
// changes while it leaves clusterIPs as they were: cleared with it, or
// the new address alone. Other changes are validation's to judge.
func normalizeClusterIPs(spec, oldSpec map[string]any) {
	ip, _ := spec["clusterIP"].(string)
	was, _ := oldSpec["clusterIP"].(string)
	if ip == was || !reflect.DeepEqual(spec["clusterIPs"], oldSpec["clusterIPs"]) {
		return
	}
	if ip == "" {
		delete(spec, "clusterIPs")
		return
	}
	spec["clusterIPs"] = []any{ip}
}

// Allocate implements registry.Allocator: the cluster IP, then the node
// ports, as upstream.
func (h serviceHooks) Allocate(ctx context.Context, obj map[string]any) (func(), error) {
	undoIP, undoPorts := func() {}, func() {}
	if h.ips != nil {
		var err error
		if undoIP, err = h.ips.AllocateService(ctx, obj); err != nil {
			return nil, err
		}
	}
	if h.ports != nil {
		var err error
		if undoPorts, err = h.ports.AllocateService(ctx, obj); err != nil {
			undoIP()
			return nil, err
		}
	}
	return func() { undoPorts(); undoIP() }, nil
}

// AllocateDryRun implements registry.DryRunAllocator.
func (h serviceHooks) AllocateDryRun(ctx context.Context, obj map[string]any) error {
	if h.ips != nil {
		if err := h.ips.PreviewService(ctx, obj); err != nil {
			return err
		}
	}
	if h.ports != nil {
		return h.ports.PreviewService(ctx, obj)
	}
	return nil
}

// AllocateUpdate implements registry.UpdateAllocator: node ports an
// update adds are reserved, those it drops freed once it is stored.
func (h serviceHooks) AllocateUpdate(ctx context.Context, obj, old map[string]any, dry bool) (commit, undo func(), err error) {
	if h.ports == nil {
		return func() {}, func() {}, nil
	}
	return h.ports.UpdateService(ctx, obj, old, dry)
}

// Release implements registry.Allocator.
func (h serviceHooks) Release(ctx context.Context, obj map[string]any) {
	if h.ports != nil {
		h.ports.ReleaseService(ctx, obj)
	}
	ip, _ := mapField(obj, "spec")["clusterIP"].(string)
	if h.ips == nil || ip == "" || ip == corev1.ClusterIPNone {
		return
	}
	md := mapField(obj, "metadata")
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	h.ips.Release(ctx, ip, ns, name)
}

// Default applies upstream's defaults of a Service.
func (h serviceHooks) Default(obj map[string]any) {
	h.trim(obj)
	defaultService(obj)
}

// Default applies upstream's defaults of an Endpoints.
func (h endpointsHooks) Default(obj map[string]any) {
	h.trim(obj)
	defaultEndpoints(obj)
}

// Default applies upstream's defaults of an EndpointSlice.
func (h endpointSliceHooks) Default(obj map[string]any) {
	h.trim(obj)
	defaultEndpointSlice(obj)
}

// defaultService applies upstream's defaults for what resolution reads:
// the type, protocols and target ports, session affinity, the internal and
// external traffic policies and a load balancer's node ports.
func defaultService(obj map[string]any) {
	spec := mapField(obj, "spec")
	if spec["type"] == nil || spec["type"] == "" {
		spec["type"] = string(corev1.ServiceTypeClusterIP)
	}
	if spec["sessionAffinity"] == nil || spec["sessionAffinity"] == "" {
		spec["sessionAffinity"] = string(corev1.ServiceAffinityNone)
	}
	// No affinity has no configuration; a ClientIP one lasts three hours
	// unless told otherwise.
	switch spec["sessionAffinity"] {
	case string(corev1.ServiceAffinityNone):
		delete(spec, "sessionAffinityConfig")
	case string(corev1.ServiceAffinityClientIP):
		cfg, _ := spec["sessionAffinityConfig"].(map[string]any)
		clientIP, _ := cfg["clientIP"].(map[string]any)
		if clientIP["timeoutSeconds"] == nil {
			spec["sessionAffinityConfig"] = map[string]any{"clientIP": map[string]any{"timeoutSeconds": int64(corev1.DefaultClientIPServiceAffinitySeconds)}}
		}
	}
	// Every type but ExternalName routes inside the cluster. Upstream
	// stores an ExternalName's policy but never shows it: it is dropped.
	if spec["type"] == string(corev1.ServiceTypeExternalName) {
		if p, _ := spec["internalTrafficPolicy"].(string); slices.Contains(internalTrafficPolicies, p) {
			delete(spec, "internalTrafficPolicy")
		}
	} else if spec["internalTrafficPolicy"] == nil {
		spec["internalTrafficPolicy"] = string(corev1.ServiceInternalTrafficPolicyCluster)
	}
	// A Service reachable from outside (a node port, a load balancer,
	// external IPs) routes to every endpoint of the cluster, and a load
	// balancer gets node ports.
	typ := spec["type"]
	externalIPs, _ := spec["externalIPs"].([]any)
	external := typ == string(corev1.ServiceTypeNodePort) || typ == string(corev1.ServiceTypeLoadBalancer) ||
		typ == string(corev1.ServiceTypeClusterIP) && len(externalIPs) > 0
	if external && (spec["externalTrafficPolicy"] == nil || spec["externalTrafficPolicy"] == "") {
		spec["externalTrafficPolicy"] = string(corev1.ServiceExternalTrafficPolicyCluster)
	}
	if typ == string(corev1.ServiceTypeLoadBalancer) && spec["allocateLoadBalancerNodePorts"] == nil {
		spec["allocateLoadBalancerNodePorts"] = true
	}
	if typ == string(corev1.ServiceTypeLoadBalancer) {
		// A load balancer's ingress points with an IP default to its mode.
		status, _ := obj["status"].(map[string]any)
		lb, _ := status["loadBalancer"].(map[string]any)
		ingress, _ := lb["ingress"].([]any)
		for _, in := range ingress {
			if in, ok := in.(map[string]any); ok && in["ip"] != nil && in["ip"] != "" && in["ipMode"] == nil {
				in["ipMode"] = string(corev1.LoadBalancerIPModeVIP)
			}
		}
	}
	ports, _ := spec["ports"].([]any)
	for _, p := range ports {
		pm, ok := p.(map[string]any)
		if !ok {
			continue
		}
		if pm["protocol"] == nil || pm["protocol"] == "" {
			pm["protocol"] = string(corev1.ProtocolTCP)
		}
		if tp := pm["targetPort"]; tp == nil || tp == "" || tp == int64(0) {
			pm["targetPort"] = pm["port"]
		}
	}
}

func (h serviceHooks) Validate(obj map[string]any) field.ErrorList {
	svc, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateService(svc, nil)
}

func (h serviceHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	svc, _, err1 := h.Decode(obj)
	was, _, err2 := h.Decode(old)
	if err := errors.Join(err1, err2); err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateService(svc, was)
}

// ValidateStatusUpdate checks the load balancer's status as upstream's
// status strategy does: only a LoadBalancer has ingress points; each one's
// IP is valid (strictly, unless stored already) with its mode, its
// hostname a DNS name and no IP.
func (h serviceHooks) ValidateStatusUpdate(obj, old map[string]any) field.ErrorList {
	svc, _, err1 := h.Decode(obj)
	was, _, err2 := h.Decode(old)
	if err := errors.Join(err1, err2); err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	p := field.NewPath("status", "loadBalancer", "ingress")
	ingress := svc.Status.LoadBalancer.Ingress
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer && len(ingress) > 0 {
		return field.ErrorList{field.Forbidden(p, "may only be used when `spec.type` is 'LoadBalancer'")}
	}
	var kept []string
	for _, in := range was.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			kept = append(kept, in.IP)
		}
	}
	var errs field.ErrorList
	for i, in := range ingress {
		ip := p.Index(i)
		if in.IP != "" {
			errs = append(errs, validation.IsValidIPForLegacyField(ip.Child("ip"), in.IP, true, kept)...)
		}
		switch {
		case in.IPMode == nil && in.IP != "":
			errs = append(errs, field.Required(ip.Child("ipMode"), "must be specified when `ip` is set"))
		case in.IPMode != nil && in.IP == "":
			errs = append(errs, field.Forbidden(ip.Child("ipMode"), "may not be specified when `ip` is not set"))
		case in.IPMode != nil && *in.IPMode != corev1.LoadBalancerIPModeVIP && *in.IPMode != corev1.LoadBalancerIPModeProxy:
			errs = append(errs, field.NotSupported(ip.Child("ipMode"), in.IPMode, []string{string(corev1.LoadBalancerIPModeProxy), string(corev1.LoadBalancerIPModeVIP)}))
		}
		if in.Hostname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(in.Hostname) {
				errs = append(errs, field.Invalid(ip.Child("hostname"), in.Hostname, msg))
			}
			if netutils.ParseIPSloppy(in.Hostname) != nil {
				errs = append(errs, field.Invalid(ip.Child("hostname"), in.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

func (serviceHooks) TableColumns() []metav1.TableColumnDefinition {
	doc := corev1.ServiceSpec{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Type", Type: "string", Description: doc["type"]},
		{Name: "Cluster-IP", Type: "string", Description: doc["clusterIP"]},
		{Name: "External-IP", Type: "string", Description: doc["externalIPs"]},
		{Name: "Port(s)", Type: "string", Description: doc["ports"]},
		ageColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: doc["selector"]},
	}
}

// TableRow gives upstream's cells: the first cluster IP, the external
// addresses by type, the ports as port[:nodePort]/protocol.
func (h serviceHooks) TableRow(obj map[string]any) []any {
	svc, _, _ := h.Decode(obj)
	if svc == nil {
		svc = &corev1.Service{}
	}
	clusterIP := "<none>"
	if len(svc.Spec.ClusterIPs) > 0 {
		clusterIP = svc.Spec.ClusterIPs[0]
	} else if svc.Spec.ClusterIP != "" {
		clusterIP = svc.Spec.ClusterIP // stored without an allocator
	}
	ports := make([]string, len(svc.Spec.Ports))
	for i, p := range svc.Spec.Ports {
		ports[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.NodePort > 0 {
			ports[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		}
	}
	portCell := strings.Join(ports, ",")
	if portCell == "" {
		portCell = "<none>"
	}
	return []any{svc.Name, string(svc.Spec.Type), clusterIP, externalIPs(svc), portCell, age(&svc.ObjectMeta), labels.FormatLabels(svc.Spec.Selector)}
}

func externalIPs(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(svc.Spec.ExternalIPs) > 0 {
			return strings.Join(svc.Spec.ExternalIPs, ",")
		}
		return "<none>"
	case corev1.ServiceTypeLoadBalancer:
		var ips []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				ips = append(ips, in.IP)
			} else if in.Hostname != "" {
				ips = append(ips, in.Hostname)
			}
		}
		slices.Sort(ips)
		ips = append(slices.Compact(ips), svc.Spec.ExternalIPs...)
		if len(ips) == 0 {
			return "<pending>"
		}
		return strings.Join(ips, ",")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return "<unknown>"
}

var serviceTypes = []string{string(corev1.ServiceTypeClusterIP), string(corev1.ServiceTypeExternalName), string(corev1.ServiceTypeLoadBalancer), string(corev1.ServiceTypeNodePort)}

// validateSourceRanges checks a load balancer's source ranges as
// upstream does, under its field path's Go name
// (spec.LoadBalancerSourceRanges): only a LoadBalancer has them, and each,
// spaces around it dropped, is a CIDR with no bits set beyond its prefix
// unless the stored Service has it already. Without them, the legacy
// annotation's comma-separated ranges are checked alike when it changed.
func validateSourceRanges(svc, old *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	notLB := svc.Spec.Type != corev1.ServiceTypeLoadBalancer
	if ranges := svc.Spec.LoadBalancerSourceRanges; len(ranges) > 0 {
		p := field.NewPath("spec", "LoadBalancerSourceRanges")
		if notLB {
			errs = append(errs, field.Forbidden(p, "may only be used when `type` is 'LoadBalancer'"))
		}
		var kept []string
		if old != nil {
			for _, r := range old.Spec.LoadBalancerSourceRanges {
				kept = append(kept, strings.TrimSpace(r))
			}
		}
		for i, r := range ranges {
			errs = append(errs, validation.IsValidCIDRForLegacyField(p.Index(i), strings.TrimSpace(r), true, kept)...)
		}
		return errs
	}
	val, ok := svc.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey]
	if !ok {
		return nil
	}
	p := field.NewPath("metadata", "annotations").Key(corev1.AnnotationLoadBalancerSourceRangesKey)
	if notLB {
		errs = append(errs, field.Forbidden(p, "may only be used when `type` is 'LoadBalancer'"))
	}
	if old != nil && old.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey] == val {
		return errs
	}
	if val = strings.TrimSpace(val); val != "" {
		for _, r := range strings.Split(val, ",") {
			errs = append(errs, validation.IsValidCIDRForLegacyField(p, strings.TrimSpace(r), true, nil)...)
		}
	}
	return errs
}

var protocols = []string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}

func validatePort(port int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidPortNum(int(port)) {
		errs = append(errs, field.Invalid(p, port, msg))
	}
	return errs
}

func validateProtocol(proto string, p *field.Path) field.ErrorList {
	switch proto {
	case "":
		return field.ErrorList{field.Required(p, "")}
	case string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP):
		return nil
	}
	return field.ErrorList{field.NotSupported(p, proto, protocols)}
}

// endpointsHooks are the stored hooks (typed checks, strategic merge,
// protobuf, unconditional updates) with the protocol defaults; Endpoints
// keep no generation.
type endpointsHooks struct {
	stored[corev1.Endpoints]
	noGeneration
}

var (
	_ registry.Validator    = endpointsHooks{}
	_ registry.NoGeneration = endpointsHooks{}
)

func (h endpointsHooks) PrepareForCreate(obj map[string]any) { h.Default(obj) }

func (h endpointsHooks) PrepareForUpdate(obj, old map[string]any) { h.Default(obj) }

func defaultEndpoints(obj map[string]any) {
	subsets, _ := obj["subsets"].([]any)
	for _, s := range subsets {
		sm, _ := s.(map[string]any)
		ports, _ := sm["ports"].([]any)
		for _, p := range ports {
			if pm, ok := p.(map[string]any); ok && (pm["protocol"] == nil || pm["protocol"] == "") {
				pm["protocol"] = string(corev1.ProtocolTCP)
			}
		}
	}
}

func (h endpointsHooks) Validate(obj map[string]any) field.ErrorList {
	eps, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	var errs field.ErrorList
	for i, ss := range eps.Subsets {
		sp := field.NewPath("subsets").Index(i)
		for j, a := range ss.Addresses {
			errs = append(errs, validateIP(a.IP, sp.Child("addresses").Index(j).Child("ip"))...)
		}
		for j, a := range ss.NotReadyAddresses {
			errs = append(errs, validateIP(a.IP, sp.Child("notReadyAddresses").Index(j).Child("ip"))...)
		}
		for j, port := range ss.Ports {
			pp := sp.Child("ports").Index(j)
			if len(ss.Ports) > 1 && port.Name == "" {
				errs = append(errs, field.Required(pp.Child("name"), ""))
			} else if port.Name != "" {
				for _, msg := range validation.IsDNS1123Label(port.Name) {
					errs = append(errs, field.Invalid(pp.Child("name"), port.Name, msg))
				}
			}
			errs = append(errs, validatePort(port.Port, pp.Child("port"))...)
			errs = append(errs, validateProtocol(string(port.Protocol), pp.Child("protocol"))...)
		}
	}
	return errs
}

func (h endpointsHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	return h.Validate(obj)
}

// validateIP checks an Endpoints address as upstream does: strictly (no
// leading zeros, no IPv4-mapped IPv6 address), then as an endpoint's.
func validateIP(ip string, p *field.Path) field.ErrorList {
	return append(validation.IsValidIPForLegacyField(p, ip, true, nil), validateEndpointIP(ip, p)...)
}

// validateEndpointIP refuses the addresses no endpoint has: unspecified
// and link-local ones, and (read as leniently as upstream reads them here)
// what is no IP at all. Unlike upstream, a loopback address is allowed:
// a crdserver has no nodes, and the webhooks its Services name (admission,
// conversion) run beside it, often in the test process on 127.0.0.1.
func validateEndpointIP(ip string, p *field.Path) field.ErrorList {
	return validateReachableIP(ip, p, true)
}

// validateReachableIP is upstream's check of an endpoint's or external
// address, loopback ones refused unless loopback.
func validateReachableIP(ip string, p *field.Path, loopback bool) field.ErrorList {
	addr := netutils.ParseIPSloppy(ip)
	if addr == nil {
		return field.ErrorList{field.Invalid(p, ip, "must be a valid IP address")}
	}
	var errs field.ErrorList
	if addr.IsUnspecified() {
		errs = append(errs, field.Invalid(p, ip, fmt.Sprintf("may not be unspecified (%v)", ip)))
	}
	if addr.IsLoopback() && !loopback {
		errs = append(errs, field.Invalid(p, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if addr.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(p, ip, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if addr.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(p, ip, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

// validateSliceAddress checks an EndpointSlice's IP address as upstream
// does: an IPv4 one strictly as a legacy field, an IPv6 one in canonical
// form, then that it is of the slice's type (named at the list's path)
// and an endpoint's.
func validateSliceAddress(t discoveryv1.AddressType, a string, list *field.Path, i int) field.ErrorList {
	p := list.Index(i)
	var errs field.ErrorList
	if t == discoveryv1.AddressTypeIPv4 {
		errs = validation.IsValidIPForLegacyField(p, a, true, nil)
	} else {
		errs = validation.IsValidIP(p, a)
	}
	if len(errs) > 0 {
		return errs
	}
	if want4 := t == discoveryv1.AddressTypeIPv4; want4 != netutils.IsIPv4String(a) {
		errs = append(errs, field.Invalid(list, a, "must be an "+string(t)+" address"))
	}
	return append(errs, validateEndpointIP(a, p)...)
}

// endpointSliceHooks are the stored hooks with the protocol defaults.
type endpointSliceHooks struct {
	stored[discoveryv1.EndpointSlice]
}

var _ registry.Validator = endpointSliceHooks{}

func (h endpointSliceHooks) PrepareForCreate(obj map[string]any) { h.Default(obj) }

func (h endpointSliceHooks) PrepareForUpdate(obj, old map[string]any) { h.Default(obj) }

// defaultEndpointSlice gives each port upstream's defaults: protocol TCP,
// and the empty name (that of a Service's unnamed port) when it has none.
func defaultEndpointSlice(obj map[string]any) {
	ports, _ := obj["ports"].([]any)
	for _, p := range ports {
		pm, ok := p.(map[string]any)
		if !ok {
			continue
		}
		if pm["protocol"] == nil || pm["protocol"] == "" {
			pm["protocol"] = string(corev1.ProtocolTCP)
		}
		if pm["name"] == nil {
			pm["name"] = ""
		}
	}
}

var addressTypes = []string{string(discoveryv1.AddressTypeFQDN), string(discoveryv1.AddressTypeIPv4), string(discoveryv1.AddressTypeIPv6)}

func (h endpointSliceHooks) Validate(obj map[string]any) field.ErrorList {
	s, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	var errs field.ErrorList
	switch s.AddressType {
	case "":
		errs = append(errs, field.Required(field.NewPath("addressType"), ""))
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("addressType"), s.AddressType, addressTypes))
	}
	for i, ep := range s.Endpoints {
		ap := field.NewPath("endpoints").Index(i).Child("addresses")
		switch {
		case len(ep.Addresses) == 0:
			errs = append(errs, field.Required(ap, "must contain at least 1 address"))
		case len(ep.Addresses) > 100:
			errs = append(errs, field.TooMany(ap, len(ep.Addresses), 100))
		}
		for j, a := range ep.Addresses {
			switch s.AddressType {
			case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
				errs = append(errs, validateSliceAddress(s.AddressType, a, ap, j)...)
			case discoveryv1.AddressTypeFQDN:
				for _, msg := range validation.IsFullyQualifiedDomainName(ap.Index(j), a) {
					errs = append(errs, msg)
				}
			}
		}
	}
	for i, port := range s.Ports {
		pp := field.NewPath("ports").Index(i)
		if port.Port != nil {
			errs = append(errs, validatePort(*port.Port, pp.Child("port"))...)
		}
		if port.Protocol != nil {
			errs = append(errs, validateProtocol(string(*port.Protocol), pp.Child("protocol"))...)
		}
		if port.Name != nil && *port.Name != "" {
			for _, msg := range validation.IsDNS1123Label(*port.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), *port.Name, msg))
			}
		}
	}
	return errs
}

func (h endpointSliceHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	errs := h.Validate(obj)
	s, _, err1 := h.Decode(obj)
	was, _, err2 := h.Decode(old)
	if err1 == nil && err2 == nil && s.AddressType != was.AddressType {
		errs = append(errs, field.Invalid(field.NewPath("addressType"), s.AddressType, "field is immutable"))
	}
	return errs
}

// mapField returns obj[key] as a map, creating it when absent.
func mapField(obj map[string]any, key string) map[string]any {
	m, ok := obj[key].(map[string]any)
	if !ok {
		m = map[string]any{}
		obj[key] = m
	}
	return m
}
