package managedfields

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/yaml"
)

// upstream replays the steps through kube-apiserver's own field manager
// code on a local copy of the object, as its handlers and the custom
// resource strategies call it: the field manager of the request's version
// (and subresource), then the strategy's PrepareForCreate/PrepareForUpdate.
type upstream struct {
	crd       *apiextensionsv1.CustomResourceDefinition
	types     managedfields.TypeConverter
	converter runtime.ObjectConvertor
	// statusReset are the fields a status write does not own: the status
	// strategy's reset fields.
	statusReset *fieldpath.Set
	// prepareForCreate is the strategy's PrepareForCreate.
	prepareForCreate func(obj map[string]any)
	// decodeDefaults is what decoding a write's object defaults, before
	// the field manager sees it (a built-in's Go defaulting); nil: none.
	decodeDefaults func(obj map[string]any)
	// newObject is the object a create is compared with: for a built-in,
	// a new object of its Go type, as the handler's Creater makes it; nil:
	// an empty unstructured one, as for custom resources.
	newObject func() map[string]any
	obj       *unstructured.Unstructured // nil until created
}

// The custom resource strategy drops the status of a new object.
func dropStatus(obj map[string]any) { delete(obj, "status") }

// The namespace strategy makes a new namespace Active with the kubernetes
// finalizer.
func activeNamespace(obj map[string]any) {
	obj["status"] = map[string]any{"phase": "Active"}
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		obj["spec"] = spec
	}
	spec["finalizers"] = []any{"kubernetes"}
}

func newUpstream(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *upstream {
	t.Helper()
	models, err := openAPIModelsForApply(crd)
	if err != nil {
		t.Fatalf("building the OpenAPI models: %v", err)
	}
	crdTypes, err := managedfields.NewTypeConverter(models, crd.Spec.PreserveUnknownFields)
	if err != nil {
		t.Fatalf("building the type converter: %v", err)
	}
	factory, err := conversion.NewCRConverterFactory(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	safe, _, err := factory.NewConverter(crd)
	if err != nil {
		t.Fatal(err)
	}
	return &upstream{crd: crd, types: withScale{crdTypes}, converter: safe,
		statusReset:      fieldpath.NewSet(fieldpath.MakePathOrDie("metadata"), fieldpath.MakePathOrDie("spec")),
		prepareForCreate: dropStatus}
}

// newNamespaceUpstream replays writes of namespaces: typed with client-go's
// models of the built-in types, reset fields from the namespace
// strategies (status through the resource, spec through /status). The
// crd field only names the group, kind and version.
func newNamespaceUpstream() *upstream {
	return &upstream{
		crd: &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "Namespace"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1"}},
		}},
		types:            applyconfigurations.NewTypeConverter(scheme.Scheme),
		converter:        oneVersion{},
		statusReset:      fieldpath.NewSet(fieldpath.MakePathOrDie("spec")),
		prepareForCreate: activeNamespace,
		decodeDefaults:   decodeNamespace,
		newObject: func() map[string]any {
			u, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.Namespace{})
			u["apiVersion"], u["kind"] = "v1", "Namespace"
			return u
		},
	}
}

// decodeNamespace is kube-apiserver's decoding of a Namespace: the round
// trip through its Go type (a condition's zero lastTransitionTime becomes
// null, which the writer owns, as compat/e2e's builtins-body.txt shows)
// and its defaulting, nameLabel. Metadata stays as it is.
func decodeNamespace(obj map[string]any) {
	if b, err := json.Marshal(obj); err == nil {
		var ns corev1.Namespace
		if json.Unmarshal(b, &ns) == nil {
			if u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&ns); err == nil {
				for k, v := range u {
					if k != "metadata" {
						obj[k] = v
					}
				}
			}
		}
	}
	nameLabel(obj)
}

// nameLabel is a Namespace's defaulting: the kubernetes.io/metadata.name
// label, which kube-apiserver sets as it decodes a write, so that the
// writer owns it (compat/e2e's builtins-body.txt shows kube-apiserver's
// managedFields).
func nameLabel(obj map[string]any) {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if md == nil || name == "" {
		return
	}
	labels, _ := md["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		md["labels"] = labels
	}
	labels["kubernetes.io/metadata.name"] = name
}

// defaults applies u's decodeDefaults to a write's object.
func (u *upstream) defaults(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if u.decodeDefaults != nil {
		u.decodeDefaults(obj.Object)
	}
	return obj
}

// oneVersion converts objects of a resource with one version: not at all.
type oneVersion struct{}

func (oneVersion) Convert(in, out, context any) error {
	return fmt.Errorf("conversion of %T is not supported", in)
}

func (oneVersion) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	return in.DeepCopyObject(), nil
}

func (oneVersion) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// openAPIModelsForApply builds the models the way apiextensions-apiserver's
// buildOpenAPIModelsForApply does: every version's OpenAPI v3 document,
// merged. kube-apiserver merges them with its static spec too, which only
// adds the built-in types; withScale supplies the one the scale
// subresource needs.
func openAPIModelsForApply(crd *apiextensionsv1.CustomResourceDefinition) (map[string]*spec.Schema, error) {
	specs := []*spec3.OpenAPI{{
		Version:    "3.0.0",
		Components: &spec3.Components{Schemas: map[string]*spec.Schema{}},
	}}
	for _, v := range crd.Spec.Versions {
		s, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{})
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	merged, err := builder.MergeSpecsV3(specs...)
	if err != nil {
		return nil, err
	}
	return merged.Components.Schemas, nil
}

// withScale types autoscaling/v1 Scale from client-go's built-in models
// (kube-apiserver's static OpenAPI spec has it) and everything else from
// the CRD's models.
type withScale struct{ managedfields.TypeConverter }

var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// scaleType is autoscaling/v1 Scale as kube-apiserver's models describe
// it; client-go's built-in models leave it out (it has no apply
// configuration). Its metadata is deduced: the field managers strip what
// a scale write could change there.
var scaleType = sync.OnceValues(func() (*typed.Parser, error) {
	return typed.NewParser(`types:
- name: io.k8s.api.autoscaling.v1.Scale
  map:
    fields:
    - {name: apiVersion, type: {scalar: string}}
    - {name: kind, type: {scalar: string}}
    - {name: metadata, type: {namedType: __untyped_deduced_}, default: {}}
    - {name: spec, type: {namedType: io.k8s.api.autoscaling.v1.ScaleSpec}, default: {}}
    - {name: status, type: {namedType: io.k8s.api.autoscaling.v1.ScaleStatus}, default: {}}
- name: io.k8s.api.autoscaling.v1.ScaleSpec
  map:
    fields:
    - {name: replicas, type: {scalar: numeric}}
- name: io.k8s.api.autoscaling.v1.ScaleStatus
  map:
    fields:
    - {name: replicas, type: {scalar: numeric}, default: 0}
    - {name: selector, type: {scalar: string}}
- name: __untyped_atomic_
  scalar: untyped
  list: {elementType: {namedType: __untyped_atomic_}, elementRelationship: atomic}
  map: {elementType: {namedType: __untyped_atomic_}, elementRelationship: atomic}
- name: __untyped_deduced_
  scalar: untyped
  list: {elementType: {namedType: __untyped_atomic_}, elementRelationship: atomic}
  map: {elementType: {namedType: __untyped_deduced_}, elementRelationship: separable}
`)
})

func (c withScale) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if obj.GetObjectKind().GroupVersionKind() == scaleGVK {
		p, err := scaleType()
		if err != nil {
			return nil, err
		}
		return p.Type("io.k8s.api.autoscaling.v1.Scale").FromStructured(obj, opts...)
	}
	return c.TypeConverter.ObjectToTyped(obj, opts...)
}

// creater makes the empty objects the handlers start a create from.
type creater struct{}

func (creater) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	if kind == scaleGVK {
		return &autoscalingv1.Scale{}, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}

// defaulter does nothing: the test CRD has no defaults.
type defaulter struct{}

func (defaulter) Default(runtime.Object) {}

// fieldManager is the field manager of one version's endpoint, as
// customresource_handler.go builds it: reset fields from the strategies,
// the hub the request's version.
func (u *upstream) fieldManager(t *testing.T, version, sub string) *managedfields.FieldManager {
	t.Helper()
	gv := schema.GroupVersion{Group: u.crd.Spec.Group, Version: version}
	kind := gv.WithKind(u.crd.Spec.Names.Kind)
	var reset map[fieldpath.APIVersion]*fieldpath.Set
	switch sub {
	case "":
		reset = map[fieldpath.APIVersion]*fieldpath.Set{
			fieldpath.APIVersion(gv.String()): fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
		}
	case "status":
		reset = map[fieldpath.APIVersion]*fieldpath.Set{}
		for _, v := range u.crd.Spec.Versions {
			av := schema.GroupVersion{Group: u.crd.Spec.Group, Version: v.Name}.String()
			reset[fieldpath.APIVersion(av)] = u.statusReset
		}
	case "scale":
		kind = scaleGVK
	}
	fm, err := managedfields.NewDefaultCRDFieldManager(u.types, u.converter, defaulter{}, creater{}, kind, gv, sub, fieldpath.NewExcludeFilterSetMap(reset))
	if err != nil {
		t.Fatalf("building the field manager: %v", err)
	}
	return fm
}

// live returns the object at the request's version, as the handlers
// read it, or an empty one of that kind before it exists.
func (u *upstream) live(t *testing.T, version string) *unstructured.Unstructured {
	t.Helper()
	gv := schema.GroupVersion{Group: u.crd.Spec.Group, Version: version}
	if u.obj == nil && u.newObject != nil {
		return &unstructured.Unstructured{Object: u.newObject()}
	}
	if u.obj == nil {
		o, _ := creater{}.New(gv.WithKind(u.crd.Spec.Names.Kind))
		return o.(*unstructured.Unstructured)
	}
	out, err := u.converter.ConvertToVersion(u.obj, gv)
	if err != nil {
		t.Fatalf("converting to %s: %v", gv, err)
	}
	return out.(*unstructured.Unstructured)
}

func (u *upstream) do(t *testing.T, s step) error {
	t.Helper()
	manager := s.manager
	if manager == "" {
		manager, _, _ = strings.Cut(s.userAgent, "/")
	}
	live := u.live(t, s.version)
	switch s.op {
	case opCreate:
		obj := u.defaults(decodeYAML(t, s.body))
		obj = u.fieldManager(t, s.version, "").UpdateNoErrors(live, obj, manager).(*unstructured.Unstructured)
		u.prepareForCreate(obj.Object)
		obj.SetUID(types.UID("uid-of-" + obj.GetName()))
		u.obj = obj
	case opUpdate, opStatus:
		obj := live.DeepCopy()
		s.edit(obj.Object)
		obj = u.fieldManager(t, s.version, s.sub()).UpdateNoErrors(live, u.defaults(obj), manager).(*unstructured.Unstructured)
		u.obj = prepareForUpdate(s.sub(), obj, live)
	case opMergePatch, opJSONPatch:
		current, err := json.Marshal(live.Object)
		if err != nil {
			t.Fatal(err)
		}
		var patched []byte
		if s.op == opMergePatch {
			patched, err = jsonpatch.MergePatch(current, []byte(s.body))
		} else {
			var p jsonpatch.Patch
			if p, err = jsonpatch.DecodePatch([]byte(s.body)); err == nil {
				patched, err = p.Apply(current)
			}
		}
		if err != nil {
			t.Fatalf("patching: %v", err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(patched); err != nil {
			t.Fatal(err)
		}
		obj = u.fieldManager(t, s.version, "").UpdateNoErrors(live, u.defaults(obj), manager).(*unstructured.Unstructured)
		u.obj = prepareForUpdate("", obj, live)
	case opApply, opApplyStatus:
		patch := decodeYAML(t, s.body)
		obj, err := u.fieldManager(t, s.version, s.sub()).Apply(live, patch, manager, s.force)
		if err != nil {
			return err
		}
		applied := obj.(*unstructured.Unstructured)
		if u.obj == nil { // the apply created it
			u.prepareForCreate(applied.Object)
			applied.SetUID(types.UID("uid-of-" + applied.GetName()))
			u.obj = applied
			break
		}
		u.obj = prepareForUpdate(s.sub(), applied, live)
	case opScale:
		u.scale(t, s, live, manager)
	default:
		t.Fatalf("unknown op %v", s.op)
	}
	return nil
}

// scale is a merge patch of the Scale, as kubectl scale sends it. It
// follows the custom resource registry's scaleUpdatedObjectInfo:
// the object's entries mapped onto the Scale, the scale endpoint's field
// manager on the Scale, and its entries mapped back.
func (u *upstream) scale(t *testing.T, s step, live *unstructured.Unstructured, manager string) {
	t.Helper()
	gv := live.GroupVersionKind().GroupVersion()
	mappings := managedfields.ResourcePathMappings{}
	for _, v := range u.crd.Spec.Versions {
		av := schema.GroupVersion{Group: u.crd.Spec.Group, Version: v.Name}.String()
		mappings[av] = fieldpath.MakePathOrDie("spec", "replicas")
	}
	handler := managedfields.NewScaleHandler(live.GetManagedFields(), gv, mappings)
	entries, err := handler.ToSubresource()
	if err != nil {
		t.Fatalf("scale entries: %v", err)
	}
	replicas, found, _ := unstructured.NestedInt64(live.Object, "spec", "replicas")
	if !found {
		replicas = math.MinInt32 // as the registry marks replicas not set
	}
	oldScale := &autoscalingv1.Scale{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{Name: live.GetName(), Namespace: live.GetNamespace(), UID: live.GetUID(), ManagedFields: entries},
		Spec:       autoscalingv1.ScaleSpec{Replicas: int32(replicas)},
	}
	newScale := oldScale.DeepCopy() // the merge patch {"spec":{"replicas":N}} applied
	newScale.Spec.Replicas = int32(s.replicas)
	scaled := u.fieldManager(t, s.version, "scale").UpdateNoErrors(oldScale, newScale, manager).(*autoscalingv1.Scale)
	parent, err := handler.ToParent(scaled.ManagedFields)
	if err != nil {
		t.Fatalf("mapping scale entries back: %v", err)
	}
	obj := live.DeepCopy()
	if err := unstructured.SetNestedField(obj.Object, s.replicas, "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	obj.SetManagedFields(parent)
	u.obj = obj
}

// prepareForUpdate is the strategies' PrepareForUpdate: the resource keeps
// the old status; a status write keeps everything of the old object but
// its status and managedFields.
func prepareForUpdate(sub string, obj, old *unstructured.Unstructured) *unstructured.Unstructured {
	if sub == "status" {
		out := old.DeepCopy()
		out.SetManagedFields(obj.GetManagedFields())
		if st, ok := obj.Object["status"]; ok {
			out.Object["status"] = st
		} else {
			delete(out.Object, "status")
		}
		return out
	}
	if st, ok := old.Object["status"]; ok {
		obj.Object["status"] = st
	} else {
		delete(obj.Object, "status")
	}
	return obj
}

func (u *upstream) managedFields() []metav1.ManagedFieldsEntry {
	if u.obj == nil {
		return nil
	}
	return u.obj.GetManagedFields()
}

// syncTimes gives the local copy's entries the times crdserver recorded
// for the same entries, so that what depends on times (the order of the
// entries, which Update entries are the oldest) is decided alike on both
// sides.
func (u *upstream) syncTimes(from []metav1.ManagedFieldsEntry) {
	if u.obj == nil {
		return
	}
	times := map[string]*metav1.Time{}
	for _, e := range from {
		times[entryKey(e)] = e.Time
	}
	mf := u.obj.GetManagedFields()
	for i := range mf {
		if t, ok := times[entryKey(mf[i])]; ok && t != nil && mf[i].Time != nil {
			mf[i].Time = t
		}
	}
	u.obj.SetManagedFields(mf)
}

func entryKey(e metav1.ManagedFieldsEntry) string {
	return fmt.Sprintf("%s|%s|%s|%s", e.Manager, e.Operation, e.APIVersion, e.Subresource)
}

func decodeYAML(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &obj.Object); err != nil {
		t.Fatalf("decoding %q: %v", s, err)
	}
	return obj
}
