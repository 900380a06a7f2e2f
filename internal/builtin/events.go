package builtin

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// Events is the core v1 events resource. Events expire ttl after their
// last write (upstream's --event-ttl), through the storage's leases
// (registry.Expiring); ttl 0 keeps them until deleted.
func Events(ttl time.Duration) *registry.Definition {
	return eventsIn("", eventHooks{stored: newStored[corev1.Event]("Event", "v1"), ttl: ttl})
}

// eventsIn is the events resource of group (core or events.k8s.io), both
// served in v1 with the core names as selectable fields: those of
// events.k8s.io convert to them (eventsV1Hooks.ConvertFieldLabel).
func eventsIn(group string, hooks any) *registry.Definition {
	return &registry.Definition{
		Group:      group,
		Resource:   "events",
		Singular:   "event",
		Kind:       "Event",
		ListKind:   "EventList",
		ShortNames: []string{"ev"},
		Scope:      registry.Namespaced,

		CreateOnUpdate: true,
		Versions: []registry.Version{{
			Name: "v1", Served: true, Storage: true,
			SelectableFields: eventSelectableFields,
		}},
		Hooks: hooks,
	}
}

// eventSelectableFields are upstream's event fields; "source" is computed
// (ComputedFields).
var eventSelectableFields = []string{
	"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
	"involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
	"involvedObject.fieldPath", "reason", "reportingComponent", "source", "type",
}

type eventHooks struct {
	stored[corev1.Event]
	noGeneration
	coreFieldLabels
	ttl time.Duration
}

// TTL implements registry.Expiring.
func (h eventHooks) TTL() time.Duration { return h.ttl }

var (
	_ registry.Validator     = eventHooks{}
	_ registry.NameValidator = eventHooks{}
	_ registry.TablePrinter  = eventHooks{}
	_ registry.FieldComputer = eventHooks{}
	_ registry.NoGeneration  = eventHooks{}
	_ registry.Expiring      = eventHooks{}
)

// ValidateName: core/v1 events keep upstream's legacy rule, any name that
// is a valid path segment (recorders name them <object>.<hex>).
func (eventHooks) ValidateName(name string, prefix bool) []string {
	return path.IsValidPathSegmentName(name)
}

// Upstream's limits on an event's fields (events.k8s.io/v1 names).
const (
	reportingInstanceLengthLimit = 128
	actionLengthLimit            = 128
	reasonLengthLimit            = 128
	noteLengthLimit              = 1024
)

// Validate is upstream's legacy event validation, the only one core/v1
// writes get.
func (h eventHooks) Validate(obj map[string]any) field.ErrorList {
	e, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateEvent(e, "reportingComponent")
}

// validateEvent is upstream's legacy event validation, which every write
// gets: an old-style event (no eventTime) must be in its object's
// namespace; a new-style one must say who reported it and why. rc is what
// the request's API calls the reporting controller.
func validateEvent(e *corev1.Event, rc string) field.ErrorList {
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	mismatch := field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace")
	if e.EventTime.IsZero() {
		// Cluster-scoped objects' events may live in "default", for old clients.
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault ||
			e.InvolvedObject.Namespace != "" && e.Namespace != e.InvolvedObject.Namespace {
			errs = append(errs, mismatch)
		}
		return errs
	}
	if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
		errs = append(errs, mismatch)
	}
	rcPath := field.NewPath(rc)
	if e.ReportingController == "" {
		errs = append(errs, field.Required(rcPath, ""))
	}
	for _, msg := range validation.IsQualifiedName(e.ReportingController) {
		errs = append(errs, field.Invalid(rcPath, e.ReportingController, msg))
	}
	errs = append(errs, requiredAtMost(field.NewPath("reportingInstance"), e.ReportingInstance, reportingInstanceLengthLimit)...)
	errs = append(errs, requiredAtMost(field.NewPath("action"), e.Action, actionLengthLimit)...)
	errs = append(errs, requiredAtMost(field.NewPath("reason"), e.Reason, reasonLengthLimit)...)
	if len(e.Message) > noteLengthLimit {
		errs = append(errs, tooManyChars(field.NewPath("message"), noteLengthLimit))
	}
	return errs
}

func (h eventHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList { return h.Validate(obj) }

func requiredAtMost(p *field.Path, v string, limit int) field.ErrorList {
	switch {
	case v == "":
		return field.ErrorList{field.Required(p, "")}
	case len(v) > limit:
		return field.ErrorList{tooManyChars(p, limit)}
	}
	return nil
}

// tooManyChars words a length error as upstream's event validation does:
// an Invalid with an empty value, not a TooLong.
func tooManyChars(p *field.Path, limit int) *field.Error {
	return field.Invalid(p, "", fmt.Sprintf("can have at most %v characters", limit))
}

// ComputedFields gives "source" as upstream selects it: the source
// component, or the reporting component of a new-style event.
func (eventHooks) ComputedFields(obj map[string]any) map[string]string {
	src, _ := nested(obj, "source", "component").(string)
	if src == "" {
		src, _ = obj["reportingComponent"].(string)
	}
	return map[string]string{"source": src}
}

func nested(obj map[string]any, keys ...string) any {
	var v any = obj
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// TableColumns are upstream's event columns; kubectl shows those of
// priority 1 only with -o wide.
func (eventHooks) TableColumns() []metav1.TableColumnDefinition {
	doc := corev1.Event{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string", Description: doc["lastTimestamp"]},
		{Name: "Type", Type: "string", Description: doc["type"]},
		{Name: "Reason", Type: "string", Description: doc["reason"]},
		{Name: "Object", Type: "string", Description: doc["involvedObject"]},
		{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
		{Name: "Source", Type: "string", Priority: 1, Description: doc["source"]},
		{Name: "Message", Type: "string", Description: doc["message"]},
		{Name: "First Seen", Type: "string", Priority: 1, Description: doc["firstTimestamp"]},
		{Name: "Count", Type: "string", Priority: 1, Description: doc["count"]},
		{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: objectMetaDocs["name"]},
	}
}

// TableRow: new-style events have an eventTime and a series instead of
// first and last timestamps and a count.
func (h eventHooks) TableRow(obj map[string]any) []any {
	e, _, err := h.Decode(obj)
	if err != nil {
		return make([]any, len(h.TableColumns()))
	}
	first := since(e.FirstTimestamp.Time)
	if e.FirstTimestamp.IsZero() {
		first = since(e.EventTime.Time)
	}
	last := since(e.LastTimestamp.Time)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	if e.Series != nil {
		last, count = since(e.Series.LastObservedTime.Time), e.Series.Count
	} else if count == 0 {
		count = 1
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target += "/" + e.InvolvedObject.Name
	}
	source := cmp.Or(e.Source.Component, e.ReportingController)
	if instance := cmp.Or(e.Source.Host, e.ReportingInstance); instance != "" {
		source += ", " + instance
	}
	return []any{last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath, source,
		strings.TrimSpace(e.Message), first, int64(count), e.Name}
}

func since(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t))
}
