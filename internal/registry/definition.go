// Package registry holds the resource definitions the server serves and the
// routing table built from them. Built-in resources and CRDs are described the
// same way; the table is immutable and swapped atomically when CRDs change.
package registry

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Scope is where objects of a resource live.
type Scope string

const (
	Namespaced Scope = "Namespaced"
	Cluster    Scope = "Cluster"
)

// Definition describes one resource (group + plural) in every version it has.
// A Definition is immutable once published in a Table.
type Definition struct {
	Group      string
	Resource   string // plural, lower case
	Singular   string
	Kind       string
	ListKind   string
	ShortNames []string
	Categories []string
	Scope      Scope

	// Versions in the order the definition lists them. Exactly one has Storage.
	Versions []Version

	// Hooks adds behaviour beyond the schema; nil for plain custom resources.
	// The handler type-asserts it for the optional hook interfaces in hooks.go.
	Hooks any

	// PreserveUnknownFields is a CRD's spec.preserveUnknownFields (set only
	// through the legacy v1beta1 API): its objects are not pruned beyond
	// metadata, and its schemas may be non-structural.
	PreserveUnknownFields bool

	// Terminating refuses creates (the CRD is being deleted).
	Terminating bool

	// CreateOnUpdate: a PUT of an object that does not exist creates it,
	// as the upstream strategies of a few built-ins allow (leases,
	// endpoints, events, limit ranges, services, runtime classes and
	// RBAC's roles and bindings: `kubectl replace` creates them). Custom
	// resources and the other built-ins answer NotFound.
	CreateOnUpdate bool

	// SchemaRevision is the revision at which the schemas last changed.
	// Objects stored at or before it may predate the storage version's
	// schema, so reads prune and default them; later objects were pruned
	// and defaulted when written.
	SchemaRevision int64

	// Conversion is how objects move between versions; nil is the None
	// strategy.
	Conversion *Conversion
	// Converter is the definition's compiled converter, built once when
	// the definition is (its concrete type belongs to the conversion
	// package); nil converts with the None strategy.
	Converter any
	// FieldTypes are the definition's server-side apply types (the apply
	// package's), built lazily and shared by definitions whose schemas
	// did not change; nil builds them per request.
	FieldTypes any

	// Verbs, when set, are the verbs discovery and OpenAPI advertise for the
	// resource, for built-ins that serve fewer than a custom resource
	// (namespaces have no deletecollection). Nil means the custom-resource set.
	Verbs []string

	// StoredAs, when set, names another resource whose storage this one
	// serves: one key prefix and one watch cache for both, objects always
	// in the other resource's form (events.k8s.io events are stored as
	// core/v1 events, as upstream stores them). The definition's Hooks
	// must implement VersionConverter, converting between its versions
	// and that form; StoredAs.Version is its storage version's name as
	// ToStorage and FromStorage see it. Whatever walks every object of
	// every resource (namespace deletion, garbage collection, storage
	// migration, object counts) walks the other resource's definition
	// and skips this one.
	StoredAs *StoredAs

	// HashedStorageVersion, when set, is the version discovery's
	// storageVersionHash names instead of the storage version's: the one
	// kube-apiserver stores at and publishes the hash of, where crdserver
	// stores at another (CRDs: apiextensions.k8s.io/v1beta1). Clients only
	// compare hashes across reads, to notice a change.
	HashedStorageVersion string
}

// StoredAs names the resource, and its version, whose storage a
// definition serves.
type StoredAs struct {
	Group, Resource, Version string
}

// StorageGroupResource is the resource whose storage d's objects are in:
// StoredAs's, or d's own.
func (d *Definition) StorageGroupResource() schema.GroupResource {
	if d.StoredAs != nil {
		return schema.GroupResource{Group: d.StoredAs.Group, Resource: d.StoredAs.Resource}
	}
	return d.GroupResource()
}

// StorageAPIVersion is the apiVersion of d's stored objects ("v1",
// "group/v1"); "" when d has no storage version.
func (d *Definition) StorageAPIVersion() string {
	if d.StoredAs != nil {
		return APIVersion(d.StoredAs.Group, d.StoredAs.Version)
	}
	if sv := d.StorageVersion(); sv != nil {
		return APIVersion(d.Group, sv.Name)
	}
	return ""
}

// APIVersion joins a group and version as apiVersion does: the core
// group's versions stand alone.
func APIVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

// Conversion is a CRD's spec.conversion with the Webhook strategy.
type Conversion struct {
	// URL or Service (exactly one) and CABundle are the webhook's
	// clientConfig.
	URL      string
	Service  *ServiceReference
	CABundle []byte
	// ReviewVersions is conversionReviewVersions, in order of preference.
	ReviewVersions []string
}

// ServiceReference is a webhook's clientConfig.service.
type ServiceReference struct {
	Namespace, Name, Path string
	Port                  int32
}

// Version is one version of a resource.
type Version struct {
	Name       string
	Served     bool
	Storage    bool
	Deprecated bool
	// DeprecationWarning overrides the default deprecation warning.
	DeprecationWarning string
	// RemovedRelease is the Kubernetes release that no longer serves a
	// deprecated version ("1.22"), for the audit annotation and metric
	// upstream records on each request to it; empty when none is set.
	RemovedRelease string

	Subresources Subresources
	// PrinterColumns are the Table columns besides NAME (and AGE when no
	// columns are declared).
	PrinterColumns []PrinterColumn

	// Schema is the compiled structural schema, nil when the version has none
	// (built-ins without one, x-kubernetes-preserve-unknown-fields roots).
	// Its concrete type belongs to the schema package; the handler calls it
	// through the interfaces in hooks.go.
	Schema any
	// OpenAPISchema is the raw openAPIV3Schema as JSON, for /openapi.
	OpenAPISchema []byte
	// NonStructural marks an OpenAPISchema that breaks the structural
	// rules (accepted only through the legacy v1beta1 CRD API): it
	// validates objects but is not published, as upstream publishes such
	// versions without a schema.
	NonStructural bool
	// SelectableFields are the fields (without the leading dot, e.g.
	// "spec.color") field selectors may use besides metadata.name and
	// metadata.namespace.
	SelectableFields []string
}

// Subresources says which subresources a version serves.
type Subresources struct {
	Status bool
	// StatusMetadata lists the metadata a write through the status
	// subresource takes from the request, of labels, annotations,
	// finalizers and ownerReferences: the status strategies of most of
	// upstream's built-ins reset the spec alone (all four), a
	// Deployment's its labels too. Empty, a status write changes the
	// status alone, as a custom resource's does.
	StatusMetadata []string
	Scale          *Scale
	// Other lists subresources beyond status and scale that a built-in
	// serves through its hooks (namespaces/finalize), for discovery and
	// OpenAPI. They read and write the resource's own kind.
	Other []OtherSubresource
}

// OtherSubresource is a built-in subresource and the verbs it serves.
type OtherSubresource struct {
	Name  string
	Verbs []string
	// Kind, when set, is what the subresource takes and answers instead of
	// the resource's own kind (serviceaccounts/token: an
	// authentication.k8s.io/v1 TokenRequest), for discovery and OpenAPI.
	Kind *schema.GroupVersionKind
	// Connect marks a connect subresource (nodes/proxy), which a
	// Connecter or a Proxier serves for every verb; the OpenAPI
	// documents leave it out.
	Connect bool
	// AuthorizeCreate marks a connect subresource that a request of any
	// verb reaches only if its user may create it too, checked once the
	// request is admitted (upstream's pods/exec, attach and portforward,
	// which a websocket reaches with a GET).
	AuthorizeCreate bool
}

// UserMetadata is the metadata a client sets and a status write of most
// built-ins keeps (Subresources.StatusMetadata). It must not be modified.
var UserMetadata = []string{"labels", "annotations", "finalizers", "ownerReferences"}

// Scale maps the scale subresource onto the object (JSON paths like ".spec.replicas").
type Scale struct {
	SpecReplicasPath   string
	StatusReplicasPath string
	LabelSelectorPath  string
	// LabelSelectorObject says the selector path holds a metav1.LabelSelector
	// (a built-in's spec.selector), which the Scale gives in its string
	// form; a CRD's path holds the string itself.
	LabelSelectorObject bool
	// LabelSelectorSet says the selector path holds a map of labels (a
	// ReplicationController's spec.selector), given in its string form.
	LabelSelectorSet bool
}

// PrinterColumn is one additionalPrinterColumns entry.
type PrinterColumn struct {
	Name        string
	Type        string
	Format      string
	Description string
	Priority    int32
	JSONPath    string
	// Declared is the type the Table announces when it is not Type, by
	// which the cells are rendered: a built-in's Age is a "string" that
	// holds a date's age.
	Declared string
}

// AgeColumn is the Age column upstream prints for custom resources
// without printer columns and Scales.
var AgeColumn = PrinterColumn{
	Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp",
	Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"],
}

// BuiltinAgeColumn is the Age column of upstream's printers of
// built-ins: an age, declared a string.
var BuiltinAgeColumn = PrinterColumn{
	Name: "Age", Type: "date", Declared: "string", JSONPath: ".metadata.creationTimestamp",
	Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"],
}

// FieldTypesIfSame returns d's FieldTypes when next's would be the same:
// the same kind, versions and schemas, pruned alike. It is nil when d is.
func (d *Definition) FieldTypesIfSame(next *Definition) any {
	if d == nil || d.Kind != next.Kind || d.Group != next.Group || d.PreserveUnknownFields != next.PreserveUnknownFields ||
		len(d.Versions) != len(next.Versions) {
		return nil
	}
	for i := range d.Versions {
		a, b := &d.Versions[i], &next.Versions[i]
		if a.Name != b.Name || a.NonStructural != b.NonStructural || string(a.OpenAPISchema) != string(b.OpenAPISchema) {
			return nil
		}
	}
	return d.FieldTypes
}

// Namespaced reports whether objects live in namespaces.
func (d *Definition) Namespaced() bool { return d.Scope == Namespaced }

// Custom reports whether d is a custom resource's (a CRD's): built-ins
// have Hooks, custom resources none. Where upstream's unstructured custom
// resources and typed built-ins answer differently, this tells which.
func (d *Definition) Custom() bool { return d.Hooks == nil }

// GroupResource returns the definition's group and resource.
func (d *Definition) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: d.Group, Resource: d.Resource}
}

// StorageVersion returns the version objects are stored in.
func (d *Definition) StorageVersion() *Version {
	for i := range d.Versions {
		if d.Versions[i].Storage {
			return &d.Versions[i]
		}
	}
	return nil
}

// Version returns the named version, served or not; nil when d is nil or
// has no such version.
func (d *Definition) Version(name string) *Version {
	if d == nil {
		return nil
	}
	for i := range d.Versions {
		if d.Versions[i].Name == name {
			return &d.Versions[i]
		}
	}
	return nil
}

// ServedVersion returns the named version if it is served.
func (d *Definition) ServedVersion(name string) (*Version, bool) {
	for i := range d.Versions {
		if d.Versions[i].Name == name && d.Versions[i].Served {
			return &d.Versions[i], true
		}
	}
	return nil, false
}

// SelectableFields returns the selectable fields of every version (their
// values are extracted once per stored object, whatever version is read).
func (d *Definition) SelectableFields() []string {
	var out []string
	for _, v := range d.Versions {
		for _, f := range v.SelectableFields {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}
