package builtin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// PodStore is what the pods' subresources write through.
type PodStore interface {
	// UpdatePod stores namespace/name as change leaves it, at the
	// revision read (again on a conflict), without recording a field
	// manager, as upstream's binding and eviction write. change's error
	// stops it and is returned; a missing pod is apierrors.IsNotFound.
	UpdatePod(ctx context.Context, namespace, name string, change func(*corev1.Pod) error) error
	// DeletePod deletes namespace/name as a client's delete with opts
	// does.
	DeletePod(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions) error
	DisruptionBudgets(ctx context.Context, namespace string) ([]policyv1.PodDisruptionBudget, error)
}

// podSubresources are the subresources of pods beyond status, as
// upstream's discovery lists them.
var podSubresources = []registry.OtherSubresource{
	{Name: "attach", Verbs: []string{"create", "get"}, Kind: &schema.GroupVersionKind{Version: "v1", Kind: "PodAttachOptions"}, AuthorizeCreate: true},
	{Name: "binding", Verbs: []string{"create"}, Kind: &schema.GroupVersionKind{Version: "v1", Kind: "Binding"}},
	{Name: "ephemeralcontainers", Verbs: []string{"get", "patch", "update"}},
	{Name: "eviction", Verbs: []string{"create"}, Kind: &schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}},
	{Name: "exec", Verbs: []string{"create", "get"}, Kind: &schema.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}, AuthorizeCreate: true},
	{Name: "log", Verbs: []string{"get"}},
	{Name: "portforward", Verbs: []string{"create", "get"}, Kind: &schema.GroupVersionKind{Version: "v1", Kind: "PodPortForwardOptions"}, AuthorizeCreate: true},
	{Name: "proxy", Verbs: []string{"create", "delete", "get", "patch", "update"}, Kind: &schema.GroupVersionKind{Version: "v1", Kind: "PodProxyOptions"}},
	{Name: "resize", Verbs: []string{"get", "patch", "update"}},
}

// Bindings is the legacy core v1 bindings resource: a create binds the
// pod the Binding names, as pods/binding does.
func Bindings(pods *registry.Definition) *registry.Definition {
	h, _ := pods.Hooks.(podHooks)
	return &registry.Definition{
		Resource: "bindings", Singular: "binding", Kind: "Binding", ListKind: "BindingList",
		Scope:    registry.Namespaced,
		Verbs:    []string{"create"},
		Versions: []registry.Version{{Name: "v1", Served: true, Storage: true}},
		Hooks:    legacyBindingHooks{stored: newStored[corev1.Binding]("Binding", "v1"), pods: h},
	}
}

type legacyBindingHooks struct {
	stored[corev1.Binding]
	noGeneration
	pods podHooks
}

var _ registry.Creator = legacyBindingHooks{}

func (h legacyBindingHooks) Create(ctx context.Context, obj map[string]any) (map[string]any, error) {
	var b corev1.Binding
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &b); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return h.pods.bind(ctx, b.Namespace, &b)
}

var (
	_ registry.SubresourceCreator = podHooks{}
	_ registry.Connecter          = podHooks{}
	_ registry.ConnectOptioner    = podHooks{}
	_ registry.ConnectNamer       = podHooks{}
	_ registry.SubresourceUpdater = podHooks{}
)

// successStatus is the answer of a binding or an eviction.
func successStatus() map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Status", "metadata": map[string]any{}, "status": metav1.StatusSuccess, "code": int64(http.StatusCreated)}
}

func (podHooks) NewSubresourceProtobuf(sub string) registry.ProtoMessage {
	switch sub {
	case "binding":
		return &corev1.Binding{}
	case "eviction":
		return &policyv1.Eviction{}
	}
	return nil
}

// CreateSubresource serves pods/binding and pods/eviction.
func (h podHooks) CreateSubresource(ctx context.Context, sub string, parent, body map[string]any) (map[string]any, error) {
	ns, _ := nested(parent, "metadata", "namespace").(string)
	name, _ := nested(parent, "metadata", "name").(string)
	switch sub {
	case "binding":
		var b corev1.Binding
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(body, &b); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if b.Name != name {
			return nil, apierrors.NewBadRequest("name in URL does not match name in Binding object")
		}
		return h.bind(ctx, ns, &b)
	case "eviction":
		var e policyv1.Eviction
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(body, &e); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if e.Name != name {
			return nil, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
		}
		p, _, err := h.Decode(parent)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		return h.evict(ctx, p, &e)
	}
	return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
}

// bind assigns the pod to the binding's node, as upstream's scheduler
// does through pods/binding: the target is a node by name; a pod being
// deleted, already on a node or gated is a conflict. The pod gets the
// binding's annotations and its PodScheduled condition.
func (h podHooks) bind(ctx context.Context, ns string, b *corev1.Binding) (map[string]any, error) {
	var errs field.ErrorList
	if k := b.Target.Kind; k != "" && k != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), k, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
	} else if b.Target.Kind == "" || b.Target.Kind == "Node" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(b.Target.Name, false) {
			errs = append(errs, field.Invalid(field.NewPath("target", "name"), b.Target.Name, msg))
		}
	}
	if len(errs) > 0 {
		return nil, codec.UnknownError(errs.ToAggregate().Error())
	}
	if h.store == nil {
		return nil, codec.UnknownError("pods cannot be bound here")
	}
	err := h.store.UpdatePod(ctx, ns, b.Name, func(p *corev1.Pod) error {
		if b.UID != "" && p.UID != b.UID {
			return apierrors.NewConflict(corev1.Resource("pods"), b.Name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", b.UID, p.UID))
		}
		if b.ResourceVersion != "" && p.ResourceVersion != b.ResourceVersion {
			return apierrors.NewConflict(corev1.Resource("pods"), b.Name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", b.ResourceVersion, p.ResourceVersion))
		}
		var refuse error
		switch {
		case p.DeletionTimestamp != nil:
			refuse = fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", p.Name)
		case p.Spec.NodeName != "":
			refuse = fmt.Errorf("pod %v is already assigned to node %q", p.Name, p.Spec.NodeName)
		case len(p.Spec.SchedulingGates) != 0:
			refuse = fmt.Errorf("pod %v has non-empty .spec.schedulingGates", p.Name)
		}
		if refuse != nil {
			return apierrors.NewConflict(corev1.Resource("pods/binding"), b.Name, refuse)
		}
		if registry.DryRun(ctx) {
			return errDryRun
		}
		p.Spec.NodeName = b.Target.Name
		p.Status.NominatedNodeName = ""
		for k, v := range b.Annotations {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[k] = v
		}
		setPodCondition(&p.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
		return nil
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return nil, err
	}
	return successStatus(), nil
}

// errDryRun ends the change of a dry run once its checks passed: nothing
// is stored.
var errDryRun = errors.New("dry run")

// setPodCondition sets c among the status's conditions, as upstream's
// helper does: a new or changed one moves its transition time to now.
func setPodCondition(s *corev1.PodStatus, c corev1.PodCondition) {
	c.LastTransitionTime = metav1.NewTime(time.Now().Truncate(time.Second))
	for i, old := range s.Conditions {
		if old.Type == c.Type {
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			s.Conditions[i] = c
			return
		}
	}
	s.Conditions = append(s.Conditions, c)
}

// evict is upstream's eviction: a pod not running (pending, finished or
// being deleted), or one no disruption budget selects, is marked a
// disruption target and deleted with the eviction's options; a running
// pod a budget selects is refused as the budget allows no disruption
// (crdserver's budgets allow none, as no controller counts their pods).
func (h podHooks) evict(ctx context.Context, pod *corev1.Pod, e *policyv1.Eviction) (map[string]any, error) {
	if h.store == nil {
		return nil, codec.UnknownError("pods cannot be evicted here")
	}
	ns := pod.Namespace
	opts := &metav1.DeleteOptions{}
	if e.DeleteOptions != nil {
		opts = e.DeleteOptions.DeepCopy()
	}
	if registry.DryRun(ctx) {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	ignorePDB := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed ||
		pod.Status.Phase == corev1.PodPending || pod.DeletionTimestamp != nil
	if !ignorePDB {
		pdbs, err := h.store.DisruptionBudgets(ctx, ns)
		if err != nil {
			return nil, err
		}
		var matching []policyv1.PodDisruptionBudget
		for _, pdb := range pdbs {
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
				continue
			}
			matching = append(matching, pdb)
		}
		switch {
		case len(matching) > 1:
			return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
				Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}}
		case len(matching) == 1:
			if err := checkDisruptionBudget(pod, &matching[0]); err != nil {
				return nil, err
			}
		}
	}
	if len(opts.DryRun) == 0 {
		if err := h.store.UpdatePod(ctx, ns, e.Name, func(p *corev1.Pod) error {
			setPodCondition(&p.Status, corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting",
			})
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if err := h.store.DeletePod(ctx, ns, e.Name, opts); err != nil {
		return nil, err
	}
	return successStatus(), nil
}

// checkDisruptionBudget is upstream's check of a budget before an
// eviction: one not yet processed, or allowing no disruption, refuses
// it with a 429.
func checkDisruptionBudget(pod *corev1.Pod, pdb *policyv1.PodDisruptionBudget) error {
	if !podReady(pod) && pdb.Spec.UnhealthyPodEvictionPolicy != nil && *pdb.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow {
		return nil
	}
	if !podReady(pod) && pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0 {
		return nil
	}
	tooMany := func(retry int, cause string) error {
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", retry)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: cause})
		return err
	}
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return tooMany(10, fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdb.Name))
	}
	if pdb.Status.DisruptionsAllowed > 0 {
		return nil
	}
	msg := fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", pdb.Name)
	if pdb.Status.CurrentHealthy <= pdb.Status.DesiredHealthy {
		msg = fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)
	}
	return tooMany(0, msg)
}

func podReady(p *corev1.Pod) bool { return hasCondition(p, corev1.PodReady) }

// Connects: a pod's log, exec, attach, portforward and proxy, which
// upstream forwards to the pod's kubelet or address.
func (podHooks) Connects(sub string) bool {
	switch sub {
	case "log", "exec", "attach", "portforward", "proxy":
		return true
	}
	return false
}

// ConnectOptions: exec, attach, portforward and proxy take the options
// upstream admits them with; a pod's log is read, not connected to.
func (podHooks) ConnectOptions(sub string, query url.Values, subpath string) (map[string]any, bool, error) {
	switch sub {
	case "exec":
		return execOptions(query, true), true, nil
	case "attach":
		return execOptions(query, false), true, nil
	case "portforward":
		opts, err := portForwardOptions(query)
		return opts, true, err
	case "proxy":
		return proxyOptions(subpath), true, nil
	}
	return nil, false, nil
}

// ConnectName parses pods/proxy's [scheme:]name[:port] as upstream does;
// the other subresources name the pod alone.
func (podHooks) ConnectName(sub, id string) (string, error) {
	if sub != "proxy" {
		return id, nil
	}
	_, name, _, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return "", apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q", id))
	}
	return name, nil
}

// Connect answers as kube-apiserver does with no kubelet to forward to:
// a pod on no node has no log to stream (a 204) and nothing to exec in,
// attach to or forward to (a 400); a pod on a node names one this
// server does not know; a pod is proxied to only at a pod IP.
func (h podHooks) Connect(_ context.Context, sub string, parent map[string]any, query url.Values) (string, []byte, error) {
	p, _, err := h.Decode(parent)
	if err != nil {
		return "", nil, apierrors.NewInternalError(err)
	}
	if sub == "proxy" {
		ip := ""
		if len(p.Status.PodIPs) > 0 {
			ip = p.Status.PodIPs[0].IP
		}
		if a := net.ParseIP(ip); a == nil || !a.IsGlobalUnicast() {
			return "", nil, apierrors.NewBadRequest("address not allowed")
		}
		return "", nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for pod %q", p.Name))
	}
	if sub != "portforward" {
		if err := containerOf(p, query.Get("container")); err != nil {
			return "", nil, err
		}
	}
	if p.Spec.NodeName == "" {
		if sub == "log" {
			return "", nil, nil // upstream's 204: nothing to stream
		}
		return "", nil, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", p.Name))
	}
	// Upstream looks the node up and words its absence with the pods'
	// resource.
	return "", nil, apierrors.NewNotFound(corev1.Resource("pods"), p.Spec.NodeName)
}

// containerOf is upstream's check of the container a request names: one
// of the pod's, or none when the pod has exactly one.
func containerOf(p *corev1.Pod, name string) error {
	if name == "" {
		switch len(p.Spec.Containers) {
		case 1:
			return nil
		case 0:
			return apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", p.Name))
		}
		var names []string
		for _, c := range p.Spec.InitContainers {
			names = append(names, c.Name)
		}
		for _, c := range p.Spec.Containers {
			names = append(names, c.Name)
		}
		for _, c := range p.Spec.EphemeralContainers {
			names = append(names, c.Name)
		}
		return apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: [%s]", p.Name, strings.Join(names, " ")))
	}
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			if c.Name == name {
				return nil
			}
		}
	}
	for _, c := range p.Spec.EphemeralContainers {
		if c.Name == name {
			return nil
		}
	}
	return apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, p.Name))
}

// UpdateSubresource serves pods/resize (prepareResize) and
// pods/ephemeralcontainers (prepareEphemeralContainers), as upstream's
// strategies for them keep a write once its fields are recorded: its
// managedFields name what it changed, even where the subresource drops
// it (upstream resets no fields through either).
func (podHooks) Updates(sub string) bool { return sub == "resize" || sub == "ephemeralcontainers" }

func (h podHooks) UpdateSubresource(sub string, obj, old map[string]any) map[string]any {
	switch sub {
	case "resize":
		return h.prepareResize(obj, old)
	case "ephemeralcontainers":
		return h.prepareEphemeralContainers(obj, old)
	}
	return obj
}

// prepareEphemeralContainers is upstream's ephemeral containers strategy:
// of the pod written, the ephemeral containers are kept (defaulted, as
// mutating admission may have added one); the rest of the spec, the
// status and the metadata of statusResetMetadata are old's.
func (h podHooks) prepareEphemeralContainers(obj, old map[string]any) map[string]any {
	was := codec.DeepCopy(old)
	spec, _ := was["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	if ec, ok := nested(obj, "spec", "ephemeralContainers").([]any); ok {
		spec["ephemeralContainers"] = ec
	} else {
		delete(spec, "ephemeralContainers")
	}
	next := map[string]any{"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": statusResetMetadata(obj, old), "spec": spec}
	if st, ok := was["status"]; ok {
		next["status"] = st
	}
	h.rewrite(next, func(p *corev1.Pod) {
		for i := range p.Spec.EphemeralContainers {
			c := corev1.Container(p.Spec.EphemeralContainers[i].EphemeralContainerCommon)
			defaultContainer(&c)
			p.Spec.EphemeralContainers[i].EphemeralContainerCommon = corev1.EphemeralContainerCommon(c)
		}
	})
	return next
}

// statusResetMetadata is obj's metadata with the members upstream's
// ResetObjectMetaForStatus takes from old (labels, annotations,
// finalizers, owner references, deletionTimestamp, generation and
// selfLink): a write through a pod's resize or ephemeralcontainers keeps
// the others, its managedFields among them.
func statusResetMetadata(obj, old map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	md = maps.Clone(md)
	if md == nil {
		md = map[string]any{}
	}
	omd, _ := old["metadata"].(map[string]any)
	reset := map[string]any{}
	for _, k := range []string{"labels", "annotations", "finalizers", "ownerReferences", "deletionTimestamp", "generation", "selfLink"} {
		delete(md, k)
		if v, ok := omd[k]; ok {
			reset[k] = v
		}
	}
	maps.Copy(md, codec.DeepCopy(reset))
	return md
}

// ValidateSubresourceUpdate checks a write to pods/resize
// (validatePodResize) or pods/ephemeralcontainers
// (validateEphemeralContainersUpdate).
func (h podHooks) ValidateSubresourceUpdate(sub string, obj, old map[string]any) field.ErrorList {
	p, was, err := h.decodeUpdate(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	if sub == "resize" {
		return validatePodResize(p, was)
	}
	return validateEphemeralContainersUpdate(p, was)
}

// validateEphemeralContainersUpdate is upstream's
// ValidatePodEphemeralContainersUpdate: a static (mirror) pod is refused
// alone; otherwise the pod as a whole is checked, and that no ephemeral
// container is removed or changed, a change shown as the unified diff of
// the container before and after as upstream's internal type encodes it
// (goNamesJSON).
func validateEphemeralContainersUpdate(p, was *corev1.Pod) field.ErrorList {
	if _, ok := was.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	errs := validatePodMetadataAndSpec(p)
	now := map[string]corev1.EphemeralContainer{}
	for _, c := range p.Spec.EphemeralContainers {
		now[c.Name] = c
	}
	ep := field.NewPath("spec", "ephemeralContainers")
	for _, c := range was.Spec.EphemeralContainers {
		n, ok := now[c.Name]
		if !ok {
			errs = append(errs, field.Forbidden(ep, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", c.Name)))
			continue
		}
		if !apiequality.Semantic.DeepEqual(c, n) {
			d := specDiffRaw(goNamesJSON(reflect.ValueOf(c)), goNamesJSON(reflect.ValueOf(n)))
			errs = append(errs, field.Forbidden(ep, fmt.Sprintf("existing ephemeral containers %q may not be changed\n%s", c.Name, d)))
		}
	}
	return errs
}
