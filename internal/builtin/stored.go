package builtin

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/registry"
)

// stored is the hooks every built-in with a generated Go type shares: typed
// checks and trimming (Typed), strategic merge patches and protobuf bodies.
// Resources embed it and add their validation, defaults and columns; those
// without a spec (configmaps, secrets, events, ...) also embed noGeneration.
type stored[T any] struct{ Typed[T] }

var (
	_ registry.CreatePreparer  = stored[struct{}]{}
	_ registry.UpdatePreparer  = stored[struct{}]{}
	_ registry.StrategicMerger = stored[struct{}]{}
	_ registry.Protobuf        = stored[struct{}]{}
	_ registry.TypeChecker     = stored[struct{}]{}
	_ registry.UnknownFielder  = stored[struct{}]{}

	_ registry.UnconditionalUpdater = stored[struct{}]{}
)

func newStored[T any](kind, version string) stored[T] {
	return stored[T]{Typed[T]{Kind: kind, Version: version}}
}

func (stored[T]) PatchSchema() any { return *new(T) }

// NewProtobuf returns nil for a T that is not a generated type; none of the
// resources using stored is such.
func (stored[T]) NewProtobuf() registry.ProtoMessage {
	m, _ := any(new(T)).(registry.ProtoMessage)
	return m
}

// AllowUnconditionalUpdate: the strategies of most kinds using stored let
// a PUT omit metadata.resourceVersion (last write wins); the others
// override it.
func (stored[T]) AllowUnconditionalUpdate() bool { return true }

func (h stored[T]) PrepareForCreate(obj map[string]any)      { h.trim(obj) }
func (h stored[T]) PrepareForUpdate(obj, old map[string]any) { h.trim(obj) }

// coreFieldLabels words the refusal of a field selector as the core/v1
// kinds with field label conversions of their own (namespaces, secrets,
// services, events) word it upstream; the others give apimachinery's
// default message (the handler's).
type coreFieldLabels struct{}

func (coreFieldLabels) RefuseFieldLabel(label string) string {
	return "field label not supported: " + label
}

// noGeneration marks kinds upstream keeps no metadata.generation for: their
// strategies never set it, as they have no spec to track.
type noGeneration struct{}

func (noGeneration) NoGeneration() {}

// columns returns upstream's Table columns of a built-in whose cells are
// computed: Name, then cols, then Age.
func columns(cols ...metav1.TableColumnDefinition) []metav1.TableColumnDefinition {
	out := []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name", Description: objectMetaDocs["name"]}}
	out = append(out, cols...)
	return append(out, metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: objectMetaDocs["creationTimestamp"]})
}

// row returns the cells of a row of columns(...): the object's name, cells,
// then its age.
func row(obj map[string]any, cells ...any) []any {
	return append(append([]any{objectName(obj)}, cells...), objectAge(obj))
}

// decodeUpdate decodes an update's new and old object. An error is the
// server's: CheckType refused undecodable bodies before validation runs.
func (h stored[T]) decodeUpdate(obj, old map[string]any) (now, was *T, err error) {
	if now, _, err = h.Decode(obj); err != nil {
		return nil, nil, err
	}
	was, _, err = h.Decode(old)
	return now, was, err
}
