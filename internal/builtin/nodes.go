package builtin

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/crdserver/crdserver/internal/builtin/podwarnings"
	"github.com/crdserver/crdserver/internal/registry"
)

// Nodes is the core/v1 nodes resource. No kubelet runs here: a Node is
// what a client registers, with the status it writes (a create keeps
// it, as upstream's strategy does).
func Nodes() *registry.Definition {
	k := kindDef{
		group: "", version: "v1", resource: "nodes", kind: "Node",
		shortNames: []string{"no"}, scope: registry.Cluster, status: true, noGeneration: true,
		statusMetadata: registry.UserMetadata, selectable: []string{"spec.unschedulable"},
	}
	h := kindHooksNoGeneration[corev1.Node, nodeRules]{kindHooks: newKindHooks[corev1.Node](k, nodeRules{})}
	def := k.definition(nodeHooks{h})
	def.Versions[0].Subresources.Other = []registry.OtherSubresource{{
		Name: "proxy", Verbs: []string{"create", "delete", "get", "patch", "update"},
		Kind: &schema.GroupVersionKind{Kind: "NodeProxyOptions"}, Connect: true,
	}}
	return def
}

type nodeHooks struct {
	kindHooksNoGeneration[corev1.Node, nodeRules]
}

var (
	_ registry.CreatePreparer      = nodeHooks{}
	_ registry.FieldLabelRefuser   = nodeHooks{}
	_ registry.FieldLabelConverter = nodeHooks{}
	_ registry.Connecter           = nodeHooks{}
	_ registry.ConnectOptioner     = nodeHooks{}
)

// KeepStatusOnCreate: a kubelet registers its node with its status.
func (nodeHooks) KeepStatusOnCreate() {}

// AdmitCreate is upstream's TaintNodesByCondition admission: a new node
// is tainted not-ready (NoSchedule) until its node controller says
// otherwise, which none does here.
func (h nodeHooks) AdmitCreate(_ context.Context, obj map[string]any) error {
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		obj["spec"] = spec
	}
	taints, _ := spec["taints"].([]any)
	for _, t := range taints {
		if m, _ := t.(map[string]any); m["key"] == corev1.TaintNodeNotReady && m["effect"] == string(corev1.TaintEffectNoSchedule) {
			return nil
		}
	}
	spec["taints"] = append(slices.Clip(taints), map[string]any{"key": corev1.TaintNodeNotReady, "effect": string(corev1.TaintEffectNoSchedule)})
	return nil
}

// Connects: nodes/proxy.
func (nodeHooks) Connects(sub string) bool { return sub == "proxy" }

// ConnectOptions: nodes/proxy's NodeProxyOptions name the path after
// the subresource.
func (nodeHooks) ConnectOptions(_ string, _ url.Values, subpath string) (map[string]any, bool, error) {
	return proxyOptions(subpath), true, nil
}

// ConnectName parses nodes/proxy's [scheme:]name[:port] as upstream does.
func (nodeHooks) ConnectName(_, id string) (string, error) {
	_, name, _, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return "", apierrors.NewBadRequest(fmt.Sprintf("invalid node request %q", id))
	}
	return name, nil
}

// kubeletAddressTypes are upstream's default --kubelet-preferred-address-types.
var kubeletAddressTypes = []corev1.NodeAddressType{corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeInternalIP, corev1.NodeExternalDNS, corev1.NodeExternalIP}

// Connect answers nodes/proxy as upstream answers when no kubelet
// listens: a node without an address of a preferred type is upstream's
// 500, one whose address is not a global unicast IP its 400; any other
// is what dialing a kubelet that does not run gives, a 503.
func (h nodeHooks) Connect(_ context.Context, _ string, obj map[string]any, _ url.Values) (string, []byte, error) {
	return "", nil, h.proxyError(obj)
}

func (h nodeHooks) proxyError(obj map[string]any) error {
	n, _, err := h.Decode(obj)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	host := ""
	for _, t := range kubeletAddressTypes {
		for _, a := range n.Status.Addresses {
			if a.Type == t && host == "" {
				host = a.Address
			}
		}
	}
	if host == "" {
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Message: fmt.Sprintf("no preferred addresses found; known addresses: %v", n.Status.Addresses),
		}}
	}
	if ip := net.ParseIP(host); ip != nil && !ip.IsGlobalUnicast() {
		return apierrors.NewBadRequest("address not allowed")
	}
	port := int(n.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port <= 0 {
		port = 10250
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach service: dial tcp %s: connect: connection refused", net.JoinHostPort(host, fmt.Sprint(port))))
}

// PrepareForCreate keeps the status a create gives, unlike most kinds
// with a status subresource, and drops the removed configSource fields.
func (h nodeHooks) PrepareForCreate(obj map[string]any) {
	h.Default(obj)
	h.rewrite(obj, func(n *corev1.Node) {
		n.Spec.ConfigSource = nil
		n.Status.Config = nil
	})
}

// PrepareForUpdate drops a configSource the stored node did not have.
func (h nodeHooks) PrepareForUpdate(obj, old map[string]any) {
	h.Default(obj)
	was, _, err := h.Decode(old)
	if err != nil || was.Spec.ConfigSource != nil {
		return
	}
	h.rewrite(obj, func(n *corev1.Node) { n.Spec.ConfigSource = nil })
}

// ConvertFieldLabel accepts what upstream's conversion for Nodes does:
// metadata.name and spec.unschedulable.
func (nodeHooks) ConvertFieldLabel(_, label, value string) (string, string, error) {
	switch label {
	case "metadata.name", "spec.unschedulable":
		return label, value, nil
	}
	return "", "", fmt.Errorf("field label not supported: %s", label)
}

// RefuseFieldLabel words the refusal as core/v1's conversions do.
func (nodeHooks) RefuseFieldLabel(label string) string {
	return coreFieldLabels{}.RefuseFieldLabel(label)
}

// ComputedFields gives spec.unschedulable as upstream selects it: "false"
// when unset.
func (h nodeHooks) ComputedFields(obj map[string]any) map[string]string {
	spec, _ := obj["spec"].(map[string]any)
	u, _ := spec["unschedulable"].(bool)
	return map[string]string{"spec.unschedulable": fmt.Sprint(u)}
}

type nodeRules struct{}

// defaults is upstream's: allocatable is the capacity when unset, and
// podCIDR and podCIDRs agree, as upstream's conversion through its
// internal type (podCIDRs alone) leaves them.
func (nodeRules) defaults(n *corev1.Node) {
	if len(n.Spec.PodCIDRs) == 0 && n.Spec.PodCIDR != "" {
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
	}
	if len(n.Spec.PodCIDRs) > 0 {
		n.Spec.PodCIDR = n.Spec.PodCIDRs[0]
	}
	if n.Status.Allocatable == nil && n.Status.Capacity != nil {
		n.Status.Allocatable = n.Status.Capacity
	}
}

var taintEffects = []string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}

func (r nodeRules) validate(n, was *corev1.Node) field.ErrorList {
	errs := r.validateNode(n)
	if was == nil {
		return errs
	}
	return append(errs, r.validateUpdate(n, was)...)
}

// validateNode is upstream's ValidateNode: taints (under
// metadata.taints, as upstream names them), resources and pod CIDRs.
func (nodeRules) validateNode(n *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	if len(n.Spec.Taints) > 0 {
		errs = append(errs, validateTaints(n.Spec.Taints, field.NewPath("metadata", "taints"))...)
	}
	errs = append(errs, validateNodeResources(n)...)
	if len(n.Spec.PodCIDRs) > 0 {
		p := field.NewPath("spec", "podCIDRs")
		for i, c := range n.Spec.PodCIDRs {
			errs = append(errs, validation.IsValidCIDRForLegacyField(p.Index(i), c, true, nil)...)
		}
		if len(n.Spec.PodCIDRs) > 1 {
			dual, err := netutils.IsDualStackCIDRStrings(n.Spec.PodCIDRs)
			if err != nil {
				errs = append(errs, field.InternalError(p, fmt.Errorf("invalid PodCIDRs. failed to check with dual stack with error:%v", err)))
			}
			if !dual || len(n.Spec.PodCIDRs) > 2 {
				errs = append(errs, field.Invalid(p, n.Spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
			}
		}
	}
	return errs
}

func validateNodeResources(n *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name string
		rl   corev1.ResourceList
	}{{"capacity", n.Status.Capacity}, {"allocatable", n.Status.Allocatable}} {
		for _, r := range sortedKeys(list.rl) {
			q := list.rl[r]
			p := field.NewPath("status", list.name, string(r))
			if q.Cmp(resource.Quantity{}) < 0 {
				errs = append(errs, field.Invalid(p, q.String(), apivalidation.IsNegativeErrorMsg))
			}
			if isIntegerQuotaResource(r) && q.MilliValue()%1000 != 0 {
				errs = append(errs, field.Invalid(p, q, "must be an integer"))
			}
		}
	}
	return errs
}

func validateTaints(taints []corev1.Taint, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	unique := map[corev1.TaintEffect]sets.Set[string]{}
	for i, t := range taints {
		ip := p.Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, ip.Child("key"))...)
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) != 0 {
			errs = append(errs, field.Invalid(ip.Child("value"), t.Value, strings.Join(msgs, ";")))
		}
		switch {
		case t.Effect == "":
			errs = append(errs, field.Required(ip.Child("effect"), ""))
		case !slices.Contains(taintEffects, string(t.Effect)):
			errs = append(errs, field.NotSupported(ip.Child("effect"), t.Effect, taintEffects))
		}
		if unique[t.Effect].Has(t.Key) {
			// Upstream's internal Taint, which has no JSON tags.
			e := field.Duplicate(ip, map[string]any{"Key": t.Key, "Value": t.Value, "Effect": t.Effect, "TimeAdded": t.TimeAdded})
			e.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, e)
			continue
		}
		if unique[t.Effect] == nil {
			unique[t.Effect] = sets.New[string]()
		}
		unique[t.Effect].Insert(t.Key)
	}
	return errs
}

// validateUpdate is upstream's ValidateNodeUpdate: pod CIDRs and the
// provider ID set once, no duplicate addresses, externalID kept.
func (r nodeRules) validateUpdate(n, was *corev1.Node) field.ErrorList {
	errs := validateNodeResources(n)
	seen := map[corev1.NodeAddress]bool{}
	for i, a := range n.Status.Addresses {
		if seen[a] {
			errs = append(errs, field.Duplicate(field.NewPath("status", "addresses").Index(i), map[string]any{"Type": a.Type, "Address": a.Address}))
		}
		seen[a] = true
	}
	cp := field.NewPath("spec", "podCIDRs")
	if len(was.Spec.PodCIDRs) > 0 {
		if len(was.Spec.PodCIDRs) != len(n.Spec.PodCIDRs) {
			errs = append(errs, field.Forbidden(cp, "node updates may not change podCIDR except from \"\" to valid"))
		} else {
			for i, c := range was.Spec.PodCIDRs {
				if c != n.Spec.PodCIDRs[i] {
					errs = append(errs, field.Forbidden(cp, "node updates may not change podCIDR except from \"\" to valid"))
				}
			}
		}
	}
	pp := field.NewPath("spec", "providerID")
	if was.Spec.ProviderID != "" && n.Spec.ProviderID != "" && was.Spec.ProviderID != n.Spec.ProviderID {
		errs = append(errs, field.Invalid(pp, nil, "field cannot be modified once set"))
	}
	if was.Spec.ProviderID != "" && n.Spec.ProviderID == "" {
		errs = append(errs, field.Invalid(pp, nil, "field cannot be cleared once set"))
	}
	if len(n.Spec.Taints) > 0 {
		errs = append(errs, validateTaints(n.Spec.Taints, field.NewPath("metadata", "taints"))...)
	}
	if n.Spec.DoNotUseExternalID != was.Spec.DoNotUseExternalID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "externalID"), "may not be updated"))
	}
	return errs
}

// validateStatus: a /status write is checked as upstream's status
// strategy checks it, against the stored node (ValidateStatusUpdate has
// no old object here, so only what needs none).
func (nodeRules) validateStatus(n *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateNodeResources(n)...)
	seen := map[corev1.NodeAddress]bool{}
	for i, a := range n.Status.Addresses {
		if seen[a] {
			errs = append(errs, field.Duplicate(field.NewPath("status", "addresses").Index(i), map[string]any{"Type": a.Type, "Address": a.Address}))
		}
		seen[a] = true
	}
	return errs
}

// warnings are upstream's: the removed configSource, the unused
// externalID, pod CIDRs not in canonical form.
func (nodeRules) warnings(n, _ *corev1.Node, sub string) []string {
	if sub != "" {
		return nil
	}
	var ws []string
	if n.Spec.ConfigSource != nil {
		ws = append(ws, "spec.configSource: the feature is removed")
	}
	if n.Spec.DoNotUseExternalID != "" {
		ws = append(ws, "spec.externalID: this field is deprecated, and is unused by Kubernetes")
	}
	for i, c := range n.Spec.PodCIDRs {
		ws = append(ws, podwarnings.CIDR(field.NewPath("spec", "podCIDRs").Index(i), c)...)
	}
	return ws
}

func (nodeRules) columns() []metav1.TableColumnDefinition {
	info, status := corev1.NodeSystemInfo{}.SwaggerDoc(), corev1.NodeStatus{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Status", Type: "string", Description: "The status of the node"},
		{Name: "Roles", Type: "string", Description: "The roles of the node"},
		ageColumn,
		{Name: "Version", Type: "string", Description: info["kubeletVersion"]},
		{Name: "Internal-IP", Type: "string", Priority: 1, Description: status["addresses"]},
		{Name: "External-IP", Type: "string", Priority: 1, Description: status["addresses"]},
		{Name: "OS-Image", Type: "string", Priority: 1, Description: info["osImage"]},
		{Name: "Kernel-Version", Type: "string", Priority: 1, Description: info["kernelVersion"]},
		{Name: "Container-Runtime", Type: "string", Priority: 1, Description: info["containerRuntimeVersion"]},
	}
}

func (nodeRules) cells(n *corev1.Node) []any {
	var status []string
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			status = []string{string(c.Type)}
		} else {
			status = []string{"Not" + string(c.Type)}
		}
	}
	if len(status) == 0 {
		status = []string{"Unknown"}
	}
	if n.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	roles := sets.New[string]()
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			if role := strings.TrimPrefix(k, "node-role.kubernetes.io/"); role != "" {
				roles.Insert(role)
			}
		case k == "kubernetes.io/role" && v != "":
			roles.Insert(v)
		}
	}
	rolesCell := strings.Join(sets.List(roles), ",")
	if rolesCell == "" {
		rolesCell = "<none>"
	}
	info := n.Status.NodeInfo
	unknown := func(s string) string {
		if s == "" {
			return "<unknown>"
		}
		return s
	}
	kernel := unknown(info.KernelVersion)
	if info.Architecture != "" {
		kernel += " (" + info.Architecture + ")"
	}
	return []any{n.Name, strings.Join(status, ","), rolesCell, age(&n.ObjectMeta), info.KubeletVersion,
		nodeAddress(n, corev1.NodeInternalIP), nodeAddress(n, corev1.NodeExternalIP), unknown(info.OSImage), kernel, unknown(info.ContainerRuntimeVersion)}
}

func nodeAddress(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}
