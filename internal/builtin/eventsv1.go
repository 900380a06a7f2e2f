package builtin

import (
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// EventsV1 is events.k8s.io/v1 events: the core events' storage seen
// through the newer API, as upstream serves it. Objects are stored as
// core/v1 Events under the core resource's key prefix, with one watch
// cache for both APIs; its hooks convert request bodies to that form and
// stored objects back (upstream's conversion: regarding is involvedObject,
// note is message, the deprecated* fields are the legacy ones). Writes
// through this API get upstream's strict validation. Events written
// through it expire as core's do, ttl after their last write.
func EventsV1(ttl time.Duration) *registry.Definition {
	def := eventsIn(eventsv1.GroupName, eventsV1Hooks{
		eventHooks: eventHooks{stored: newStored[corev1.Event]("Event", "v1"), ttl: ttl},
		request:    newStored[eventsv1.Event]("Event", "v1"),
	})
	def.StoredAs = &registry.StoredAs{Resource: "events", Version: "v1"}
	return def
}

// eventsV1Hooks are core events' hooks on the stored (core) form, with
// strict validation, and events.k8s.io/v1's Go type for request bodies.
type eventsV1Hooks struct {
	eventHooks
	request stored[eventsv1.Event]
}

// InvalidKind implements registry.InvalidKinder: a 422 names the core
// Event, whose validation upstream runs.
func (eventsV1Hooks) InvalidKind() schema.GroupKind { return schema.GroupKind{Kind: "Event"} }

var (
	_ registry.VersionConverter    = eventsV1Hooks{}
	_ registry.VersionTyped        = eventsV1Hooks{}
	_ registry.Validator           = eventsV1Hooks{}
	_ registry.FieldLabelConverter = eventsV1Hooks{}
	_ registry.TablePrinter        = eventsV1Hooks{}
	_ registry.Defaulter           = eventsV1Hooks{}
)

const eventsV1APIVersion = "events.k8s.io/v1"

// TypedIn: request bodies are events.k8s.io/v1 Events (strict decoding,
// strategic merge patches, protobuf).
func (h eventsV1Hooks) TypedIn(string) any { return h.request }

// Default round-trips a request body through the events.k8s.io/v1 type
// (not core's, whose Default the embedded hooks have), as upstream's
// decoding does before its field manager records the writer's fields.
func (h eventsV1Hooks) Default(obj map[string]any) { h.request.Default(obj) }

// ToStorage converts an events.k8s.io/v1 body to a core/v1 Event. Fields
// the type does not have are dropped, as upstream's typed decoding drops
// them; CheckType has refused wrongly typed ones.
func (h eventsV1Hooks) ToStorage(obj map[string]any, version string) (map[string]any, error) {
	in, _, err := h.request.Decode(obj)
	if err != nil {
		return nil, err
	}
	return withBody(obj, "v1", EventFromV1(in)), nil
}

// FromStorage converts a stored core/v1 Event to events.k8s.io/v1. A
// stored event that does not decode comes back with only its apiVersion
// changed.
func (h eventsV1Hooks) FromStorage(obj map[string]any, version string) map[string]any {
	in, _, err := h.Decode(obj)
	if err != nil {
		obj["apiVersion"] = eventsV1APIVersion
		return obj
	}
	return withBody(obj, eventsV1APIVersion, EventToV1(in))
}

// withBody is obj's kind and metadata (the handler's map, already
// normalized) with apiVersion and every other field taken from the typed
// value v, as upstream encodes it: a struct field that is not a pointer
// is there, {} when empty (an events.k8s.io Event's deprecatedSource).
func withBody(obj map[string]any, apiVersion string, v any) map[string]any {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(v)
	if err != nil {
		u = nil // the types convert; nothing but metadata would be lost
	}
	out := make(map[string]any, len(u)+3)
	for k, x := range u {
		out[k] = x
	}
	out["apiVersion"] = apiVersion
	out["kind"] = obj["kind"]
	out["metadata"] = obj["metadata"]
	return out
}

// EventToV1 is upstream's conversion of a core Event to events.k8s.io/v1.
func EventToV1(in *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		ObjectMeta:               in.ObjectMeta,
		EventTime:                in.EventTime,
		ReportingController:      in.ReportingController,
		ReportingInstance:        in.ReportingInstance,
		Action:                   in.Action,
		Reason:                   in.Reason,
		Regarding:                in.InvolvedObject,
		Related:                  in.Related,
		Note:                     in.Message,
		Type:                     in.Type,
		DeprecatedSource:         in.Source,
		DeprecatedFirstTimestamp: in.FirstTimestamp,
		DeprecatedLastTimestamp:  in.LastTimestamp,
		DeprecatedCount:          in.Count,
	}
	out.APIVersion, out.Kind = eventsV1APIVersion, "Event"
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	return out
}

// EventFromV1 is upstream's conversion of an events.k8s.io/v1 Event to
// a core Event.
func EventFromV1(in *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		ObjectMeta:          in.ObjectMeta,
		InvolvedObject:      in.Regarding,
		Reason:              in.Reason,
		Message:             in.Note,
		Source:              in.DeprecatedSource,
		FirstTimestamp:      in.DeprecatedFirstTimestamp,
		LastTimestamp:       in.DeprecatedLastTimestamp,
		Count:               in.DeprecatedCount,
		Type:                in.Type,
		EventTime:           in.EventTime,
		Action:              in.Action,
		Related:             in.Related,
		ReportingController: in.ReportingController,
		ReportingInstance:   in.ReportingInstance,
	}
	out.APIVersion, out.Kind = "v1", "Event"
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	return out
}

// eventsV1FieldLabels is upstream's field label conversion for
// events.k8s.io/v1: its names to the core names the stored objects'
// selectable fields have.
var eventsV1FieldLabels = map[string]string{
	"reason":                    "reason",
	"regarding.kind":            "involvedObject.kind",
	"regarding.namespace":       "involvedObject.namespace",
	"regarding.name":            "involvedObject.name",
	"regarding.uid":             "involvedObject.uid",
	"regarding.apiVersion":      "involvedObject.apiVersion",
	"regarding.resourceVersion": "involvedObject.resourceVersion",
	"regarding.fieldPath":       "involvedObject.fieldPath",
	"reportingController":       "reportingComponent",
	"type":                      "type",
	"metadata.namespace":        "metadata.namespace",
	"metadata.name":             "metadata.name",
}

// ConvertFieldLabel refuses, in upstream's words, any label the mapping
// lacks (involvedObject.name among them).
func (eventsV1Hooks) ConvertFieldLabel(_, label, value string) (string, string, error) {
	mapped, ok := eventsV1FieldLabels[label]
	if !ok {
		return "", "", fmt.Errorf("field label not supported: %s", label)
	}
	return mapped, value, nil
}

// Validate is upstream's ValidateEventCreate for a write through
// events.k8s.io/v1: the legacy rules (naming reportingController as this
// API does), then the strict ones. obj is the stored (core) form, so the
// field paths are core's, as upstream's internal type has them.
func (h eventsV1Hooks) Validate(obj map[string]any) field.ErrorList {
	e, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	errs := validateEvent(e, "reportingController")
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(e.Name, false) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), e.Name, msg))
	}
	errs = append(errs, validateEventSeries(e)...)
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	unset := func(name string, set bool) {
		if set {
			errs = append(errs, field.Invalid(field.NewPath(name), "", "needs to be unset"))
		}
	}
	unset("firstTimestamp", !e.FirstTimestamp.IsZero())
	unset("lastTimestamp", !e.LastTimestamp.IsZero())
	unset("count", e.Count != 0)
	unset("source", e.Source.Component != "" || e.Source.Host != "")
	return errs
}

// ValidateUpdate is upstream's ValidateEventUpdate through
// events.k8s.io/v1: the legacy rules, the series when it changed, and
// everything but metadata and the series immutable (eventTime up to
// microseconds).
func (h eventsV1Hooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	e, was, err := h.decodeUpdate(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	errs := validateEvent(e, "reportingController")
	if !reflect.DeepEqual(e.Series, was.Series) {
		errs = append(errs, validateEventSeries(e)...)
	}
	immutable := func(now, before any, name string) {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(now, before, field.NewPath(name))...)
	}
	immutable(e.InvolvedObject, was.InvolvedObject, "involvedObject")
	immutable(e.Reason, was.Reason, "reason")
	immutable(e.Message, was.Message, "message")
	immutable(e.Source, was.Source, "source")
	immutable(e.FirstTimestamp, was.FirstTimestamp, "firstTimestamp")
	immutable(e.LastTimestamp, was.LastTimestamp, "lastTimestamp")
	immutable(e.Count, was.Count, "count")
	immutable(e.Reason, was.Reason, "reason") // upstream checks it twice (listed once)
	immutable(e.Type, was.Type, "type")
	if !e.EventTime.Truncate(time.Microsecond).UTC().Equal(was.EventTime.Truncate(time.Microsecond).UTC()) {
		immutable(e.EventTime, was.EventTime, "eventTime")
	}
	immutable(e.Action, was.Action, "action")
	immutable(e.Related, was.Related, "related")
	immutable(e.ReportingController, was.ReportingController, "reportingController")
	immutable(e.ReportingInstance, was.ReportingInstance, "reportingInstance")
	return errs
}

// validateEventSeries: a series has been seen at least twice, and when
// last.
func validateEventSeries(e *corev1.Event) field.ErrorList {
	if e.Series == nil {
		return nil
	}
	var errs field.ErrorList
	if e.Series.Count < 2 {
		errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
	}
	if e.Series.LastObservedTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
	}
	return errs
}

// TableRow: upstream prints both APIs' events with one printer, on the
// internal (core) form; rows here are of events.k8s.io/v1 objects, so
// they convert back first.
func (h eventsV1Hooks) TableRow(obj map[string]any) []any {
	if obj["apiVersion"] == eventsV1APIVersion {
		if in, _, err := h.request.Decode(obj); err == nil {
			obj = withBody(obj, "v1", EventFromV1(in))
		}
	}
	return h.eventHooks.TableRow(obj)
}
