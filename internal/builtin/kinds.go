package builtin

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// rules is what a stored built-in kind (jobs, priorityclasses, ...) adds to
// its Go type: upstream's defaults, validation and Table. kindHooks turns
// them into the registry's hooks, so that each kind is its rules alone.
type rules[T any] interface {
	// defaults applies upstream's defaulters to a request body (create and
	// update, as upstream defaults every decoded object).
	defaults(*T)
	// validate checks t with upstream's messages; was is the stored object
	// on an update, nil on a create.
	validate(t, was *T) field.ErrorList
	columns() []metav1.TableColumnDefinition
	// cells are the Table row of t: one cell a column, Name first.
	cells(t *T) []any
}

// statusRules are rules that also check writes to /status, as upstream's
// status strategies do: the status alone.
type statusRules[T any] interface {
	validateStatus(t *T) field.ErrorList
}

// kindHooks are the hooks of a stored built-in kind with rules R. Kinds
// with a status subresource start with an empty status, as upstream's
// strategies reset it on create.
type kindHooks[T any, R rules[T]] struct {
	stored[T]
	rules  R
	status bool
	// conditional: a PUT must name the revision it replaces.
	conditional bool
}

func (h kindHooks[T, R]) AllowUnconditionalUpdate() bool { return !h.conditional }

var (
	_ registry.CreatePreparer  = kindHooks[struct{}, nopRules]{}
	_ registry.UpdatePreparer  = kindHooks[struct{}, nopRules]{}
	_ registry.Validator       = kindHooks[struct{}, nopRules]{}
	_ registry.TablePrinter    = kindHooks[struct{}, nopRules]{}
	_ registry.StatusValidator = kindHooks[struct{}, nopRules]{}
	_ registry.Defaulter       = kindHooks[struct{}, nopRules]{}
)

// nopRules is rules that do nothing, for the compile-time guards.
type nopRules struct{}

func (nopRules) defaults(*struct{})                      {}
func (nopRules) validate(_, _ *struct{}) field.ErrorList { return nil }
func (nopRules) columns() []metav1.TableColumnDefinition { return nil }
func (nopRules) cells(*struct{}) []any                   { return nil }

// Default implements registry.Defaulter: the round trip through T with
// the rules' defaults, before the writer's fields are recorded, so that
// the writer owns the defaults as upstream's field manager records them.
func (h kindHooks[T, R]) Default(obj map[string]any) { h.rewrite(obj, h.rules.defaults) }

// PrepareForCreate defaults obj again (mutating admission may have changed
// it since Default) and, with a status subresource, resets the status to
// the Go type's empty one, as upstream's strategies do after the field
// manager (a PodDisruptionBudget answers its counts, 0).
func (h kindHooks[T, R]) PrepareForCreate(obj map[string]any) {
	if h.status {
		delete(obj, "status")
	}
	h.Default(obj)
	h.dropDisabled(obj)
}

func (h kindHooks[T, R]) PrepareForUpdate(obj, _ map[string]any) {
	h.Default(obj)
	h.dropDisabled(obj)
}

// podSpecHolder is rules of a kind holding a pod spec (at podSpecPath),
// whose disabled container fields PrepareForCreate and PrepareForUpdate
// drop.
type podSpecHolder interface{ podSpecPath() []string }

func (h kindHooks[T, R]) dropDisabled(obj map[string]any) {
	if ps, ok := any(h.rules).(podSpecHolder); ok {
		dropDisabledContainerFields(obj, ps.podSpecPath()...)
	}
}

func (h kindHooks[T, R]) Validate(obj map[string]any) field.ErrorList {
	t, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return h.rules.validate(t, nil)
}

func (h kindHooks[T, R]) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	t, was, err := h.decodeUpdate(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return h.rules.validate(t, was)
}

// ValidateStatusUpdate checks a /status write with the rules'
// validateStatus, if they have one; the rest of the object is the stored
// one's, so it is not validated again.
func (h kindHooks[T, R]) ValidateStatusUpdate(obj, _ map[string]any) field.ErrorList {
	sr, ok := any(h.rules).(statusRules[T])
	if !ok {
		return nil
	}
	t, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return sr.validateStatus(t)
}

func (h kindHooks[T, R]) TableColumns() []metav1.TableColumnDefinition { return h.rules.columns() }

// TableRow gives a stored object that no longer decodes its name and age
// alone.
func (h kindHooks[T, R]) TableRow(obj map[string]any) []any {
	t, _, err := h.Decode(obj)
	if err != nil {
		cells := make([]any, len(h.rules.columns()))
		cells[0] = objectName(obj)
		return cells
	}
	return h.rules.cells(t)
}

// kindHooksNoGeneration are kindHooks of a kind whose strategy keeps no
// metadata.generation (certificatesigningrequests, runtimeclasses, csinodes,
// storageclasses).
type kindHooksNoGeneration[T any, R rules[T]] struct {
	kindHooks[T, R]
	noGeneration
}

var _ registry.NoGeneration = kindHooksNoGeneration[struct{}, nopRules]{}

// kindDef names a stored built-in kind served in one version.
type kindDef struct {
	group, version, resource, kind string
	shortNames, categories         []string
	scope                          registry.Scope
	// status: the kind has a status subresource.
	status bool
	// statusMetadata: the metadata its status writes keep
	// (registry.Subresources.StatusMetadata).
	statusMetadata []string
	// noGeneration: its strategy keeps no metadata.generation.
	noGeneration bool
	// conditional: its strategy does not allow unconditional updates.
	conditional bool
	// createOnUpdate: its strategy allows a PUT to create
	// (registry.Definition.CreateOnUpdate).
	createOnUpdate bool
	selectable     []string
}

// define returns k's definition with r's hooks.
func define[T any, R rules[T]](k kindDef, r R) *registry.Definition {
	h := newKindHooks[T](k, r)
	var def *registry.Definition
	if k.noGeneration {
		def = k.definition(kindHooksNoGeneration[T, R]{kindHooks: h})
	} else {
		def = k.definition(h)
	}
	def.Versions[0] = withLifecycle(def.Versions[0], new(T), schema.GroupVersionKind{Group: k.group, Version: k.version, Kind: k.kind})
	return def
}

func newKindHooks[T any, R rules[T]](k kindDef, r R) kindHooks[T, R] {
	return kindHooks[T, R]{stored: newStored[T](k.kind, k.version), rules: r, status: k.status, conditional: k.conditional}
}

func (k kindDef) definition(hooks any) *registry.Definition {
	v := registry.Version{Name: k.version, Served: true, Storage: true, SelectableFields: k.selectable}
	v.Subresources.Status = k.status
	v.Subresources.StatusMetadata = k.statusMetadata
	return &registry.Definition{
		Group:      k.group,
		Resource:   k.resource,
		Singular:   strings.ToLower(k.kind),
		Kind:       k.kind,
		ListKind:   k.kind + "List",
		ShortNames: k.shortNames,
		Categories: k.categories,
		Scope:      k.scope,
		Versions:   []registry.Version{v},
		Hooks:      hooks,

		CreateOnUpdate: k.createOnUpdate,
	}
}
