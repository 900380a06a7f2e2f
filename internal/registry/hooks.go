package registry

import (
	"context"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The optional behaviour a built-in resource adds beyond its schema. A
// Definition's Hooks value implements any subset; the handler type-asserts
// for each at the step where it applies.

// CreatePreparer resets or fills fields on create (status, defaults that
// belong to the server).
type CreatePreparer interface {
	PrepareForCreate(obj map[string]any)
}

// RequestPreparer fills, on create, what upstream's strategy takes from
// the request rather than the body: certificatesigningrequests record
// who asked (authn.UserFrom(ctx)). It runs after CreatePreparer.
type RequestPreparer interface {
	PrepareForCreateIn(ctx context.Context, obj map[string]any)
}

// CreateAdmitter is one of upstream's compiled-in mutating admission
// plugins that acts on creates of the resource (DefaultIngressClass). It
// runs where upstream runs them: after the writer's fields are recorded,
// so that what it sets is no one's, and before mutating admission policies
// and webhooks, which see its change. obj is in the request's version. Its
// error is refused as upstream's admission refuses (a 403).
type CreateAdmitter interface {
	AdmitCreate(ctx context.Context, obj map[string]any) error
}

// CreateAdmissionChecker is the validating half of one of upstream's
// compiled-in admission plugins (RuntimeClass's check of a pod's
// overhead). It runs where upstream runs it: after the object is
// validated, before validating admission policies and webhooks. obj is
// in the hooks' version. Its error is refused as a 403.
type CreateAdmissionChecker interface {
	CheckCreateAdmission(ctx context.Context, obj map[string]any) error
}

// UpdateAdmitter is, for updates, what CreateAdmitter is for creates:
// upstream's compiled-in mutating admission plugins acting on a write
// through sub ("" for the object itself; pods/resize: LimitRanger's
// container defaults), after the writer's fields are recorded and before
// mutating admission policies and webhooks. obj is in the request's
// version, old the stored object. An error that is a Status is the
// answer, any other is refused as a 403.
type UpdateAdmitter interface {
	AdmitUpdate(ctx context.Context, sub string, obj, old map[string]any) error
}

// UpdateAdmissionChecker is, for updates, what CreateAdmissionChecker is
// for creates: the validating half of upstream's compiled-in admission
// plugins (pods/resize: LimitRanger's ranges, the node a bound pod runs
// on), after the object is validated and before validating admission
// policies and webhooks. obj and old are in the hooks' version. Errors
// as UpdateAdmitter's.
type UpdateAdmissionChecker interface {
	CheckUpdateAdmission(ctx context.Context, sub string, obj, old map[string]any) error
}

// UpdatePreparer carries fields a client may not change through the main
// resource (for example status) from old to obj.
type UpdatePreparer interface {
	PrepareForUpdate(obj, old map[string]any)
}

// StatusUpdatePreparer fills defaults a write through the status
// subresource must not leave out (a CRD's storedVersions).
type StatusUpdatePreparer interface {
	PrepareForStatusUpdate(obj, old map[string]any)
}

// Validator validates an object beyond its schema and metadata.
type Validator interface {
	Validate(obj map[string]any) field.ErrorList
	ValidateUpdate(obj, old map[string]any) field.ErrorList
}

// Defaulter applies the defaults upstream's decoding of a built-in applies
// (its Go type's defaulting and conversion) to an object a client wrote,
// before the writer's fields are recorded: upstream's field manager sees
// the defaulted object, so the writer owns what defaulting added. It runs
// on creates, updates and patches, after the schema's own defaulting.
type Defaulter interface {
	Default(obj map[string]any)
}

// Zeroer gives, for a built-in with a Go type, the object upstream's field
// manager compares a create with: a new object of that type as it
// encodes, where every struct field that is not a pointer is present ({}
// when empty) and a slice without omitempty is null. A create's writer
// owns only what its object changes from that one: not the "." of a
// struct the zero object has already (f:spec of a Deployment), nor a
// field left as the zero object has it (an Event's deprecatedSource: {}).
// The object is shared and must not be modified.
type Zeroer interface {
	ZeroObject() map[string]any
}

// DeleteChecker refuses the delete of particular objects, before it reads
// them: upstream's NamespaceLifecycle admission keeps default, kube-system
// and kube-public. The error is the client's answer (a 403).
type DeleteChecker interface {
	CheckDelete(name string) error
}

// Finalizer marks resources whose first delete is their own, as upstream's
// storage of namespaces and CRDs overrides its generic delete: it checks
// the preconditions in the resource's words (PreconditionFailed) and only
// marks the object: the handler sets deletionTimestamp (no grace period,
// no new generation) and MarkDeleting the rest (a namespace's phase and
// the garbage collector's finalizers it takes from opts; a CRD's cleanup
// finalizer and Terminating condition). A later delete answers with the
// object as it is while Pending (a namespace's spec.finalizers), else is
// the generic one (metadata.finalizers keep the object).
type Finalizer interface {
	Pending(obj map[string]any) bool
	MarkDeleting(obj map[string]any, opts *metav1.DeleteOptions)
	// PreconditionFailed is the conflict of a precondition on field
	// ("UID" or "ResourceVersion") that the object name does not meet:
	// want is the precondition's value, have the object's.
	PreconditionFailed(name, field, want, have string) error
}

// StrategicMerger marks a resource with a Go type, so that strategic merge
// patches apply. PatchSchema returns a zero value of the Go type.
type StrategicMerger interface {
	PatchSchema() any
}

// SubresourceUpdater serves a built-in's own subresources beyond status
// and scale (pods/resize and pods/ephemeralcontainers, a CSR's approval,
// a namespace's finalize). A PUT or patch through one writes the whole
// object until the write is prepared for storage: its fields are
// recorded (less the subresource's reset fields: FieldResetter) and
// mutating admission sees it so, as upstream's strategies keep such a
// write to what it may change only in PrepareForUpdate. UpdateSubresource
// is that step: obj, the write, kept to what subresource name may change
// of old, the stored object (obj may be changed and returned). Updates
// says which subresources it serves: a PUT or patch of any other is
// refused, never written whole.
type SubresourceUpdater interface {
	Updates(subresource string) bool
	UpdateSubresource(name string, obj, old map[string]any) map[string]any
}

// FieldResetter names the fields a write through the resource ("") or a
// subresource ("status", or a built-in's own) leaves as they were, or
// that its strategy sets, each a path of field names: a write does not
// own them, as upstream's strategy's reset fields (a CSR's spec and
// status on the main resource, its spec and conditions through /status,
// its spec and certificate through /approval). Nil leaves the generic
// ones: the status on the main resource, the spec (and the metadata not
// kept) through /status.
type FieldResetter interface {
	ResetFields(subresource string) [][]string
}

// Creator answers creates without storing anything: the reviews
// (TokenReview, SubjectAccessReview, SelfSubjectReview) compute their
// status from the request and the caller (authn.UserFrom(ctx)) and return
// the object that answers. As upstream's review storage does, such a
// create skips object-metadata rules (a review needs no name) and the
// namespace's existence; Validator, when the hooks have it, still runs,
// and so does admission. Its definition's Verbs should be just "create".
type Creator interface {
	Create(ctx context.Context, obj map[string]any) (map[string]any, error)
}

// Reader serves the reads of a resource whose objects are made on each
// request rather than stored: componentstatuses, which upstream probes
// every time it is read. Get answers a name it does not know with the
// resource's NotFound; List gives every object, which the handler then
// selects by label and field. Its definition's Verbs should be "get" and
// "list".
type Reader interface {
	Get(ctx context.Context, name string) (map[string]any, error)
	List(ctx context.Context) ([]map[string]any, error)
}

// SubresourceCreator serves a create on a subresource that takes and
// answers another kind than the resource's (serviceaccounts/token: a
// TokenRequest). parent is the stored object the request names; body is
// the decoded request body. Nothing is stored unless the hook stores it.
// The subresource must be listed in Subresources.Other with verb "create".
type SubresourceCreator interface {
	CreateSubresource(ctx context.Context, subresource string, parent, body map[string]any) (map[string]any, error)
	// NewSubresourceProtobuf returns an empty value of the kind the
	// subresource takes, for protobuf request bodies; nil when it has none.
	NewSubresourceProtobuf(subresource string) ProtoMessage
}

// WriteChecker refuses writes for what they would grant rather than for
// their shape: RBAC's escalation prevention, which upstream's storage runs
// before validation. old is the stored object on update, nil on create.
// ctx carries the writer and the request. The error is the client's
// answer (a 403).
type WriteChecker interface {
	CheckWrite(ctx context.Context, obj, old map[string]any) error
}

// NoGeneration marks resources that do not track metadata.generation.
type NoGeneration interface {
	NoGeneration()
}

// GenerationOnChange marks resources whose metadata.generation starts at
// their first spec change (CSIDrivers): a create has none, each update
// that changes the spec adds one.
type GenerationOnChange interface {
	GenerationOnChange()
}

// DuplicateErrorKeeper marks the built-ins whose upstream validation lists
// an error as often as its checks find it: CRDs and APIServices, whose
// strategies run no declarative validation. Every other built-in's
// strategy does, and that step lists each error once (an error is its
// field, type, value and detail): the metadata an update checks twice, or
// a field a rule checks twice, fails once.
type DuplicateErrorKeeper interface {
	KeepDuplicateErrors()
}

// ReturnsDeletedObject marks resources whose delete answers with the
// deleted object rather than a Status (namespaces, services, service
// accounts, pod templates, CSI nodes: upstream's stores that say so).
type ReturnsDeletedObject interface {
	ReturnDeletedObject()
}

// FieldLabelRefuser words the refusal of a field selector on a field the
// resource does not select by, where the resource's upstream field label
// conversion words it its own way (a Job's "field label \"x\" not
// supported for Job").
type FieldLabelRefuser interface {
	RefuseFieldLabel(label string) string
}

// InvalidKinder names the kind a 422 says is invalid when it is not the
// resource's own: upstream validates events.k8s.io Events as core Events
// ("Event \"x\" is invalid").
type InvalidKinder interface {
	InvalidKind() schema.GroupKind
}

// OrphansByDefault marks resources whose delete without a propagation
// policy orphans the object's dependents, as upstream's batch/v1 Jobs do
// for backward compatibility: the object gets the orphan finalizer and
// waits for the garbage collector. Every other resource deletes its
// dependents in the background. The method returns the warning a delete
// that leaves the policy to that default is answered with.
type OrphansByDefault interface {
	OrphanDependentsByDefault() (warning string)
}

// Warner gives the warnings upstream's strategy for the resource gives
// a write that passed validation (its WarningsOnCreate and
// WarningsOnUpdate): old is nil for a create, sub the subresource
// written ("", "status", or "scale", which upstream writes through the
// resource's own strategy and so warns of as an update).
type Warner interface {
	Warnings(obj, old map[string]any, sub string) []string
}

// PrepareWarner gives the warnings upstream's strategy adds as it
// prepares a create, before validation (a pod's AppArmor annotations it
// copies to the containers' fields): they are given whether or not the
// object then passes validation. obj is the object before
// PrepareForCreate.
type PrepareWarner interface {
	PrepareWarnings(obj map[string]any) []string
}

// NameValidator replaces the default name rule (DNS subdomain).
type NameValidator interface {
	ValidateName(name string, prefix bool) []string
}

// CreateNameValidator gives the name rule of a create when it depends on
// the object created (a CRD is named <plural>.<group>). It is checked
// where the name's own rule is, among the checks of metadata.
type CreateNameValidator interface {
	CreateNameValidator(obj map[string]any) func(name string, prefix bool) []string
}

// Protobuf marks a built-in with a generated Go type, so that protobuf
// request bodies (kubectl and client-go send them for built-in kinds)
// decode. NewProtobuf returns a new, empty object of that type.
type Protobuf interface {
	NewProtobuf() ProtoMessage
}

// ProtoMessage is what generated Kubernetes types implement.
type ProtoMessage interface {
	Unmarshal(data []byte) error
}

// StatusValidator validates writes to /status instead of ValidateUpdate.
type StatusValidator interface {
	ValidateStatusUpdate(obj, old map[string]any) field.ErrorList
}

// SubresourceValidator validates writes to a subresource of its own
// (OtherSubresource: a CSR's /approval) instead of ValidateUpdate, as
// upstream's strategy for that subresource validates them.
type SubresourceValidator interface {
	ValidateSubresourceUpdate(name string, obj, old map[string]any) field.ErrorList
}

// TypeChecker refuses request bodies whose fields have the wrong JSON type
// for the resource's Go type (a 400, as upstream's typed decoding gives).
type TypeChecker interface {
	CheckType(obj map[string]any) error
}

// UnknownFielder lists the fields of a request body the resource's Go type
// does not have, as upstream's strict decoding words them.
type UnknownFielder interface {
	UnknownFields(obj map[string]any) []string
}

// StrictDecoder reports a JSON request body's strict decoding errors
// (unknown and duplicate fields) as upstream's typed decoder words and
// orders them: in the order the body has them. The handler prefers it to
// UnknownFielder for JSON bodies. decoded reports that the body decoded
// into the Go type, with no field of the wrong type: TypeChecker then has
// nothing to add.
type StrictDecoder interface {
	StrictErrors(body []byte) (problems []string, decoded bool)
}

// TablePrinter renders a resource's Table itself, for columns a JSONPath
// cannot express.
type TablePrinter interface {
	TableColumns() []metav1.TableColumnDefinition
	TableRow(obj map[string]any) []any
}

// StatusOnCreateKeeper marks a resource with a status subresource whose
// create keeps the status it is given (nodes: a kubelet registers its
// node with its status), where others drop it.
type StatusOnCreateKeeper interface {
	KeepStatusOnCreate()
}

// ListTablePrinter is a TablePrinter whose rows in a list's Table depend
// on the whole list (the "(default)" StorageClass): TableListRow returns
// the row function for the listed objs. A single object, and a watch
// event, is printed by TableRow alone.
type ListTablePrinter interface {
	TableListRow(objs []map[string]any) func(obj map[string]any) []any
}

// TableListSorter is a TablePrinter whose list's Table orders its rows
// itself (FlowSchemas, in the order they are matched) rather than as
// listed. The JSON list keeps storage's order.
type TableListSorter interface {
	SortTableList(objs []map[string]any)
}

// FieldComputer gives the values of selectable fields that are not a path
// in the object (events' "source": the source component, else the
// reporting component). Version.SelectableFields lists them too; those it
// does not return are read by path.
type FieldComputer interface {
	ComputedFields(obj map[string]any) map[string]string
}

// Schema is a version's compiled structural schema, as the handler uses it
// (Version.Schema holds one, or nil). Implementations are immutable and
// safe for concurrent use; they are built once per CRD version.
type Schema interface {
	// Prune removes fields the schema does not specify and returns their
	// paths (e.g. "spec.foo"), for fieldValidation.
	Prune(obj map[string]any) []string
	// Default fills defaults, removing nulls where the schema is not
	// nullable.
	Default(obj map[string]any)
	// Validate checks obj against the schema.
	Validate(obj map[string]any) field.ErrorList
	// ValidateUpdate checks obj, ratcheting: errors in values unchanged
	// from old are dropped.
	ValidateUpdate(obj, old map[string]any) field.ErrorList
	// ValidateStatusUpdate checks a write to the status subresource:
	// obj's status only, with the status schema as the root, ratcheting.
	ValidateStatusUpdate(obj, old map[string]any) field.ErrorList
	// ValidateRules runs the x-kubernetes-validations rules on obj (old
	// is the stored object on update, else nil) after the other checks
	// found prior: when one of those makes the rules meaningless (a wrong
	// type, a missing required field, a value too long), the rules are not
	// run and one error says so. Failures in values unchanged from old
	// come back as warnings, not errors (ratcheting).
	ValidateRules(ctx context.Context, obj, old map[string]any, prior field.ErrorList) (errs field.ErrorList, warnings []string)
}

// UnconditionalUpdater says whether a resource's PUT may omit
// metadata.resourceVersion (last write wins), as its upstream strategy's
// AllowUnconditionalUpdate does: most built-ins may, but leases, pod
// disruption budgets, runtime classes and CSI nodes may not. Resources
// without it (custom resources and CRDs) may not: an update without it
// would silently overwrite another client's write.
type UnconditionalUpdater interface {
	AllowUnconditionalUpdate() bool
}

// VersionConverter converts the objects of a built-in served in versions
// whose Go types differ (apiextensions.k8s.io v1beta1 and v1 CRDs). The
// handler converts a request body to the storage version right after
// decoding (and defaulting) it, so that every other hook sees the storage
// version only, and converts stored objects back for the answer.
type VersionConverter interface {
	// ToStorage converts obj, a request body of the named version, to the
	// storage version.
	ToStorage(obj map[string]any, version string) (map[string]any, error)
	// FromStorage converts obj, a stored object, to the named version. It
	// may modify obj. Stored objects always convert.
	FromStorage(obj map[string]any, version string) map[string]any
}

// VersionTyped gives, for a built-in whose versions have different Go
// types, the value whose TypeChecker, UnknownFielder, StrategicMerger and
// Protobuf apply to request bodies of a version (the definition's Hooks
// for the storage version).
type VersionTyped interface {
	TypedIn(version string) any
}

// VersionValidator is a Validator whose rules depend on the version the
// client wrote in: a CRD written through apiextensions.k8s.io/v1beta1 may
// keep what v1 refuses. The handler prefers it to Validator. obj and old
// are in the storage version.
type VersionValidator interface {
	ValidateIn(version string, obj map[string]any) field.ErrorList
	ValidateUpdateIn(version string, obj, old map[string]any) field.ErrorList
}

// Allocator reserves what an object holds besides its own key (a
// Service's cluster IP), shared with other objects of the resource.
// Allocate runs on create once the object passed validation and
// admission, just before it is stored: it fills obj's allocated fields
// and returns undo, which frees them when the store then fails. Release
// frees what a deleted object held.
type Allocator interface {
	Allocate(ctx context.Context, obj map[string]any) (undo func(), err error)
	Release(ctx context.Context, obj map[string]any)
}

// UpdateAllocator is an Allocator whose objects' updates may reserve more
// (a Service's node ports when it becomes a NodePort) or hold less.
// AllocateUpdate runs on an update once obj passed validation and
// admission, before it is stored, each attempt anew: it fills obj's
// allocated fields and reserves them (with dry, only fills and checks);
// commit frees what old held and obj no longer does, once obj is stored;
// undo frees what it reserved, when obj is not.
type UpdateAllocator interface {
	AllocateUpdate(ctx context.Context, obj, old map[string]any, dry bool) (commit, undo func(), err error)
}

// DryRunAllocator fills, for a dry-run create, what Allocate would (a
// Service's clusterIPs and IP families), and fails where it would,
// reserving nothing.
type DryRunAllocator interface {
	AllocateDryRun(ctx context.Context, obj map[string]any) error
}

// FieldLabelConverter maps the field selector labels of a resource's
// version to the selectable fields of its stored objects, as upstream's
// field label conversion functions do (events.k8s.io's regarding.name is
// core's involvedObject.name). An error refuses the selector (a 400 with
// its text); a label it returns must be a selectable field.
type FieldLabelConverter interface {
	ConvertFieldLabel(version, label, value string) (string, string, error)
}

// Expiring marks resources whose objects the storage deletes TTL after
// their last write (events, as upstream's --event-ttl): every create and
// update stores the object with that TTL. Storage that cannot expire
// keys (storage.Expirer) keeps them.
type Expiring interface {
	TTL() time.Duration
}

// GracefulDeleter marks resources whose objects are deleted gracefully,
// as upstream's pod strategy does: GracePeriod is the period a first
// delete with opts gives obj, 0 to delete it at once. The handler marks
// the object deleted (deletionTimestamp now plus the period, the period
// as deletionGracePeriodSeconds, a new generation); one marked with a
// period stays until a delete shortens it to 0 or its finalizers are
// gone.
type GracefulDeleter interface {
	GracePeriod(obj map[string]any, opts *metav1.DeleteOptions) int64
}

// Connecter serves the connect subresources of a built-in (a pod's log,
// exec, attach, portforward and proxy), which upstream forwards to a node
// or the object's address: Connects says which of the version's other
// subresources it serves; Connect answers a request of any verb to one
// of them for parent, the stored object, with the request's query (for
// a subresource with ConnectOptions, the admitted options as a query): a
// body and its content type (neither: a 204), or an error that is the
// client's answer.
type Connecter interface {
	Connects(subresource string) bool
	Connect(ctx context.Context, subresource string, parent map[string]any, query url.Values) (contentType string, body []byte, err error)
}

// ConnectOptioner is a Connecter whose subresources take options that
// admission sees, as upstream's connect handler decodes them from the
// query: ConnectOptions gives the fields of subresource's options (its
// OtherSubresource.Kind, as that kind's JSON writes them) for query and
// subpath, the path a request names after the subresource; ok is false
// for a subresource that takes none (a pod's log), and an error is the
// client's (a 400).
type ConnectOptioner interface {
	ConnectOptions(subresource string, query url.Values, subpath string) (opts map[string]any, ok bool, err error)
}

// ConnectNamer is a Connecter whose connect requests name the object with
// more than its name (nodes/proxy's and pods/proxy's
// [scheme:]name[:port]): ConnectName gives the object's name for a
// request to subresource, or the client's error.
type ConnectNamer interface {
	ConnectName(subresource, name string) (string, error)
}

// Proxier serves a connect subresource that forwards the request to an
// address the object's name resolves to, as upstream's services/proxy
// does: Proxies says which of the version's other subresources it
// serves; ProxyLocation resolves id, the name the request's path gives
// (services/proxy's [scheme:]name[:port]), in namespace to the backend's
// scheme ("" for http) and host, or to the client's error. The object
// need not exist: upstream resolves a bare name through its endpoints
// without reading it. The handler forwards every verb there, with the
// path after the subresource and the query.
type Proxier interface {
	Proxies(subresource string) bool
	ProxyLocation(ctx context.Context, namespace, id string) (*url.URL, error)
}

// dryRunKey marks a request context as a dry run.
type dryRunKey struct{}

// WithDryRun returns ctx marked as a dry run's, for hooks that write
// themselves (a pod's binding and eviction): they check, and store
// nothing.
func WithDryRun(ctx context.Context) context.Context {
	return context.WithValue(ctx, dryRunKey{}, true)
}

// DryRun reports whether ctx is a dry run's (WithDryRun).
func DryRun(ctx context.Context) bool {
	dry, _ := ctx.Value(dryRunKey{}).(bool)
	return dry
}
