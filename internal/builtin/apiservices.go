package builtin

import (
	"fmt"
	"slices"
	"time"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/crdserver/crdserver/internal/discovery"
	"github.com/crdserver/crdserver/internal/registry"
)

// APIServices are stored objects that describe every group/version the
// server serves, as kube-apiserver's aggregator keeps one per local
// group/version (its autoregister and crdregistration controllers): all
// are Local and Available. crdserver aggregates no other servers, so an
// APIService naming a Service is stored but not proxied to.

// AutomanagedLabel marks the APIServices the server keeps: "onstart" for
// built-in group/versions, "true" for those of CRDs.
const AutomanagedLabel = "kube-aggregator.kubernetes.io/automanaged"

// APIServices is the apiregistration.k8s.io/v1 apiservices resource.
func APIServices() *registry.Definition {
	return &registry.Definition{
		Group:      "apiregistration.k8s.io",
		Resource:   "apiservices",
		Singular:   "apiservice",
		Kind:       "APIService",
		ListKind:   "APIServiceList",
		Categories: []string{"api-extensions"},
		Scope:      registry.Cluster,
		Versions: []registry.Version{{
			Name: "v1", Served: true, Storage: true,
			Subresources: registry.Subresources{Status: true},
		}},
		Hooks: apiServiceHooks{Typed[apiregistrationv1.APIService]{Kind: "APIService", Version: "v1"}},
	}
}

type apiServiceHooks struct {
	Typed[apiregistrationv1.APIService]
}

var (
	_ registry.CreatePreparer  = apiServiceHooks{}
	_ registry.UpdatePreparer  = apiServiceHooks{}
	_ registry.Validator       = apiServiceHooks{}
	_ registry.StrategicMerger = apiServiceHooks{}
	_ registry.Protobuf        = apiServiceHooks{}
	_ registry.TypeChecker     = apiServiceHooks{}
	_ registry.UnknownFielder  = apiServiceHooks{}
	_ registry.NoGeneration    = apiServiceHooks{}
	_ registry.TablePrinter    = apiServiceHooks{}
	_ registry.NameValidator   = apiServiceHooks{}

	_ registry.StatusValidator      = apiServiceHooks{}
	_ registry.DuplicateErrorKeeper = apiServiceHooks{}
)

// KeepDuplicateErrors: upstream's APIService strategy runs no declarative
// validation, so an update lists each metadata error once per check.
func (apiServiceHooks) KeepDuplicateErrors() {}

// ValidateName: "v1." (the core group's) is a valid name; Validate checks
// that the name is version.group.
func (apiServiceHooks) ValidateName(name string, prefix bool) []string {
	return path.ValidatePathSegmentName(name, prefix)
}

func (apiServiceHooks) PatchSchema() any                   { return apiregistrationv1.APIService{} }
func (apiServiceHooks) NewProtobuf() registry.ProtoMessage { return &apiregistrationv1.APIService{} }
func (apiServiceHooks) NoGeneration()                      {}

// PrepareForCreate starts the status empty, but for a Local APIService
// (one naming no Service), which kube-apiserver answers as Available
// already; the server's availability loop keeps it so (server package).
func (h apiServiceHooks) PrepareForCreate(obj map[string]any) {
	h.trim(obj)
	status := map[string]any{}
	if spec, _ := obj["spec"].(map[string]any); spec["service"] == nil {
		status["conditions"] = []any{LocalAvailable(time.Now())}
	}
	obj["status"] = status
}

// LocalAvailable is the Available condition of a Local APIService, since
// t.
func LocalAvailable(t time.Time) map[string]any {
	return map[string]any{
		"type": string(apiregistrationv1.Available), "status": string(apiregistrationv1.ConditionTrue),
		"lastTransitionTime": t.UTC().Format(time.RFC3339),
		"reason":             "Local", "message": "Local APIServices are always available",
	}
}

func (h apiServiceHooks) PrepareForUpdate(obj, _ map[string]any) { h.trim(obj) }

// Validate checks what the name and the routing rely on, in upstream's
// words: the name is version.group, and a Local APIService has no CA.
func (h apiServiceHooks) Validate(obj map[string]any) field.ErrorList {
	a, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	var errs field.ErrorList
	if want := a.Spec.Version + "." + a.Spec.Group; a.Name != want {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), a.Name, versionGroupMsg(want)))
	}
	return append(errs, validateAPIServiceSpec(a)...)
}

// ValidateUpdate checks the metadata twice more than the generic update
// checks do, as upstream's strategy does (its update's checks, then its
// create's, the name's version.group among them), with no step that
// lists alike errors once: an invalid label is listed four times.
func (h apiServiceHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	a, was, err := h.decodeUpdate(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	p := field.NewPath("metadata")
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&a.ObjectMeta, &was.ObjectMeta, p)
	errs = append(errs, apimachineryvalidation.ValidateObjectMeta(&a.ObjectMeta, false, versionGroupName(a), p)...)
	return append(errs, validateAPIServiceSpec(a)...)
}

// ValidateStatusUpdate checks the metadata's update once more and the
// conditions' statuses, as upstream's status strategy does.
func (h apiServiceHooks) ValidateStatusUpdate(obj, old map[string]any) field.ErrorList {
	a, was, err := h.decodeUpdate(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&a.ObjectMeta, &was.ObjectMeta, field.NewPath("metadata"))
	statuses := []string{string(apiregistrationv1.ConditionTrue), string(apiregistrationv1.ConditionFalse), string(apiregistrationv1.ConditionUnknown)}
	for i, c := range a.Status.Conditions {
		if !slices.Contains(statuses, string(c.Status)) {
			errs = append(errs, field.NotSupported(field.NewPath("status", "conditions").Index(i).Child("status"), c.Status, statuses))
		}
	}
	return errs
}

func (h apiServiceHooks) decodeUpdate(obj, old map[string]any) (*apiregistrationv1.APIService, *apiregistrationv1.APIService, error) {
	a, _, err := h.Decode(obj)
	if err != nil {
		return nil, nil, err
	}
	was, _, err := h.Decode(old)
	return a, was, err
}

// versionGroupName validates an APIService's name: a path segment, and
// its spec's version.group.
func versionGroupName(a *apiregistrationv1.APIService) apimachineryvalidation.ValidateNameFunc {
	return func(name string, prefix bool) []string {
		if msgs := path.ValidatePathSegmentName(name, prefix); len(msgs) > 0 {
			return msgs
		}
		if want := a.Spec.Version + "." + a.Spec.Group; name != want {
			return []string{versionGroupMsg(want)}
		}
		return nil
	}
}

func versionGroupMsg(want string) string {
	return fmt.Sprintf("must be `spec.version+\".\"+spec.group`: %q", want)
}

func validateAPIServiceSpec(a *apiregistrationv1.APIService) field.ErrorList {
	var errs field.ErrorList
	if a.Spec.Group == "" && a.Spec.Version != "v1" {
		errs = append(errs, field.Required(field.NewPath("spec", "group"), "only v1 may have an empty group and it better be legacy kube"))
	}
	if a.Spec.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(a.Spec.Group) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "group"), a.Spec.Group, msg))
		}
	}
	for _, msg := range validation.IsDNS1035Label(a.Spec.Version) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "version"), a.Spec.Version, msg))
	}
	if a.Spec.GroupPriorityMinimum <= 0 || a.Spec.GroupPriorityMinimum > 20000 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "groupPriorityMinimum"), a.Spec.GroupPriorityMinimum, "must be positive and less than 20000"))
	}
	if a.Spec.VersionPriority <= 0 || a.Spec.VersionPriority > 1000 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "versionPriority"), a.Spec.VersionPriority, "must be positive and less than 1000"))
	}
	if a.Spec.Service == nil && len(a.Spec.CABundle) > 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "caBundle"), fmt.Sprintf("%d bytes", len(a.Spec.CABundle)), "local APIServices may not have a caBundle"))
	}
	return errs
}

func (apiServiceHooks) TableColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Service", Type: "string", Description: "The reference to the service that hosts this API endpoint."},
		{Name: "Available", Type: "string", Description: "Whether this service is available."},
		ageColumn,
	}
}

func (h apiServiceHooks) TableRow(obj map[string]any) []any {
	a, _, _ := h.Decode(obj)
	if a == nil {
		a = &apiregistrationv1.APIService{}
	}
	service := "Local"
	if s := a.Spec.Service; s != nil {
		service = s.Namespace + "/" + s.Name
	}
	available := string(apiregistrationv1.ConditionUnknown)
	for _, c := range a.Status.Conditions {
		if c.Type != apiregistrationv1.Available {
			continue
		}
		available = string(c.Status)
		if c.Status != apiregistrationv1.ConditionTrue && c.Reason != "" {
			available = fmt.Sprintf("%s (%s)", c.Status, c.Reason)
		}
	}
	return []any{a.Name, service, available, age(&a.ObjectMeta)}
}

// NewAPIService returns the stored APIService of a group/version the
// server serves (custom: a CRD's), or nil when upstream would have none.
func NewAPIService(gv schema.GroupVersion, custom bool, now time.Time) map[string]any {
	prio, label := discovery.CustomPriority, "true"
	if !custom {
		var ok bool
		if prio, ok = discovery.BuiltinPriority(gv); !ok {
			return nil
		}
		label = "onstart"
	}
	a := &apiregistrationv1.APIService{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              gv.Version + "." + gv.Group,
			UID:               uuid.NewUUID(),
			CreationTimestamp: metav1.NewTime(now),
			Labels:            map[string]string{AutomanagedLabel: label},
		},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: gv.Group, Version: gv.Version,
			GroupPriorityMinimum: prio.Group, VersionPriority: prio.Version,
		},
		Status: apiregistrationv1.APIServiceStatus{Conditions: []apiregistrationv1.APIServiceCondition{{
			Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now),
			Reason:             "Local", Message: "Local APIServices are always available",
		}}},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	if err != nil {
		panic(err) // a Go value of a registered type always converts
	}
	return obj
}
