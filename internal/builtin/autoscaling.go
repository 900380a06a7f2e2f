package builtin

import (
	"fmt"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/crdserver/crdserver/internal/registry"
)

// HorizontalPodAutoscalers is the autoscaling horizontalpodautoscalers
// resource in v2 (stored) and v1, converted as upstream converts them
// (hpaconvert.go). No autoscaler runs: status is whatever a client writes
// to /status. Validation covers the replica bounds, the scale target and
// each metric's type and source; the sources' contents and the behavior's
// policies are not checked.
func HorizontalPodAutoscalers() *registry.Definition {
	k := kindDef{
		group: "autoscaling", version: "v2", resource: "horizontalpodautoscalers", kind: "HorizontalPodAutoscaler",
		shortNames: []string{"hpa"}, categories: []string{"all"}, scope: registry.Namespaced, status: true,
		statusMetadata: registry.UserMetadata,
	}
	def := k.definition(hpaHooks{
		kindHooks: newKindHooks[autoscalingv2.HorizontalPodAutoscaler](k, hpaRules{}),
		v1:        newStored[autoscalingv1.HorizontalPodAutoscaler]("HorizontalPodAutoscaler", "v1"),
	})
	v1 := def.Versions[0]
	v1.Name, v1.Storage = "v1", false
	def.Versions = append(def.Versions, v1)
	return def
}

type hpaHooks struct {
	kindHooks[autoscalingv2.HorizontalPodAutoscaler, hpaRules]
	v1 stored[autoscalingv1.HorizontalPodAutoscaler]
}

var (
	_ registry.VersionConverter = hpaHooks{}
	_ registry.VersionTyped     = hpaHooks{}
	_ registry.TablePrinter     = hpaHooks{}
	_ registry.Defaulter        = hpaHooks{}
)

const hpaV1APIVersion, hpaV2APIVersion = "autoscaling/v1", "autoscaling/v2"

// TypedIn: v1 request bodies decode, patch and unmarshal with v1's type.
func (h hpaHooks) TypedIn(version string) any {
	if version == "v1" {
		return h.v1
	}
	return h
}

// Default defaults a request body in its version's type: a v1 body as v1
// defaults it (ToStorage converts it later), a v2 body as v2.
func (h hpaHooks) Default(obj map[string]any) {
	if obj["apiVersion"] == hpaV1APIVersion {
		h.v1.rewrite(obj, defaultHPAV1)
		return
	}
	h.kindHooks.Default(obj)
}

func defaultHPAV1(in *autoscalingv1.HorizontalPodAutoscaler) { setDefault(&in.Spec.MinReplicas, 1) }

// ToStorage converts a v1 body, defaulted as v1 defaults it, to v2.
func (h hpaHooks) ToStorage(obj map[string]any, version string) (map[string]any, error) {
	if version != "v1" {
		return obj, nil
	}
	in, _, err := h.v1.Decode(obj)
	if err != nil {
		return nil, err
	}
	defaultHPAV1(in)
	out := hpaToV2(in)
	return withAnnotations(withBody(obj, hpaV2APIVersion, out), out.Annotations), nil
}

// FromStorage converts a stored v2 HPA to version; one that does not
// decode comes back with only its apiVersion changed.
func (h hpaHooks) FromStorage(obj map[string]any, version string) map[string]any {
	if version != "v1" {
		obj["apiVersion"] = hpaV2APIVersion
		return obj
	}
	in, _, err := h.Decode(obj)
	if err != nil {
		obj["apiVersion"] = hpaV1APIVersion
		return obj
	}
	out := hpaToV1(in)
	return withAnnotations(withBody(obj, hpaV1APIVersion, out), out.Annotations)
}

// withAnnotations replaces obj's metadata by a copy with annotations ann
// (conversion adds and removes the round-trip ones).
func withAnnotations(obj map[string]any, ann map[string]string) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	next := make(map[string]any, len(md)+1)
	for k, v := range md {
		next[k] = v
	}
	delete(next, "annotations")
	if len(ann) > 0 {
		a := make(map[string]any, len(ann))
		for k, v := range ann {
			a[k] = v
		}
		next["annotations"] = a
	}
	obj["metadata"] = next
	return obj
}

// TableRow renders v1 objects (watch events in v1) as their v2 form.
func (h hpaHooks) TableRow(obj map[string]any) []any {
	if obj["apiVersion"] == hpaV1APIVersion {
		if v2, err := h.ToStorage(obj, "v1"); err == nil {
			obj = v2
		}
	}
	return h.kindHooks.TableRow(obj)
}

type hpaRules struct{}

// hpaScaleUp and hpaScaleDown are upstream's default scaling rules.
func hpaScaleUp() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr.To[int32](0),
		SelectPolicy:               ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

func hpaScaleDown() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies:     []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
	}
}

func (hpaRules) defaults(hpa *autoscalingv2.HorizontalPodAutoscaler) {
	s := &hpa.Spec
	setDefault(&s.MinReplicas, 1)
	if len(s.Metrics) == 0 {
		s.Metrics = []autoscalingv2.MetricSpec{cpuUtilizationMetric(defaultCPUUtilization)}
	}
	if b := s.Behavior; b != nil {
		b.ScaleUp = withDefaultRules(b.ScaleUp, hpaScaleUp())
		b.ScaleDown = withDefaultRules(b.ScaleDown, hpaScaleDown())
	}
}

// withDefaultRules is r with def's values where r has none.
func withDefaultRules(r, def *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if r == nil {
		return def
	}
	if r.SelectPolicy != nil {
		def.SelectPolicy = r.SelectPolicy
	}
	if r.StabilizationWindowSeconds != nil {
		def.StabilizationWindowSeconds = r.StabilizationWindowSeconds
	}
	if r.Policies != nil {
		def.Policies = r.Policies
	}
	if r.Tolerance != nil {
		def.Tolerance = r.Tolerance
	}
	return def
}

// validateStatus: no negative replica count or condition generation.
func (hpaRules) validateStatus(hpa *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	p := field.NewPath("status")
	var errs field.ErrorList
	for i, c := range hpa.Status.Conditions {
		if c.ObservedGeneration != nil {
			errs = append(errs, apivalidation.ValidateNonnegativeField(*c.ObservedGeneration, p.Child("conditions").Index(i).Child("observedGeneration"))...)
		}
	}
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(hpa.Status.CurrentReplicas), p.Child("currentReplicas"))...)
	return append(errs, apivalidation.ValidateNonnegativeField(int64(hpa.Status.DesiredReplicas), p.Child("desiredReplicas"))...)
}

var hpaMetricTypes = []string{"ContainerResource", "External", "Object", "Pods", "Resource"}

func (hpaRules) validate(hpa, was *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	s, p := &hpa.Spec, field.NewPath("spec")
	var errs field.ErrorList
	if s.MinReplicas != nil && *s.MinReplicas < 1 {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), *s.MinReplicas, "must be greater than or equal to 1"))
	}
	if s.MinReplicas != nil && s.MaxReplicas < *s.MinReplicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	rp := p.Child("scaleTargetRef")
	for _, f := range []struct{ name, value string }{{"kind", s.ScaleTargetRef.Kind}, {"name", s.ScaleTargetRef.Name}} {
		if f.value == "" {
			errs = append(errs, field.Required(rp.Child(f.name), ""))
			continue
		}
		for _, msg := range path.IsValidPathSegmentName(f.value) {
			errs = append(errs, field.Invalid(rp.Child(f.name), f.value, msg))
		}
	}
	// The target names its API group, unless the stored object already
	// did not (upstream ratchets it).
	av := s.ScaleTargetRef.APIVersion
	if gv, err := schema.ParseGroupVersion(av); err != nil {
		errs = append(errs, field.Invalid(rp.Child("apiVersion"), av, err.Error()))
	} else if gv.Group == "" && (was == nil || !emptyGroup(was.Spec.ScaleTargetRef.APIVersion)) {
		errs = append(errs, field.Invalid(rp.Child("apiVersion"), av, "apiVersion must specify API group"))
	}
	for i, m := range s.Metrics {
		errs = append(errs, validateMetricType(m, p.Child("metrics").Index(i))...)
	}
	// Upstream's declarative validation checks maxReplicas after the rest.
	switch {
	case s.MaxReplicas == 0:
		errs = append(errs, field.Required(p.Child("maxReplicas"), ""))
	case s.MaxReplicas < 0:
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to 1"))
	}
	return errs
}

// emptyGroup reports whether apiVersion parses and names no API group.
func emptyGroup(apiVersion string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group == ""
}

// validateMetricType checks that a metric has a supported type and the
// source of that type, and no other.
func validateMetricType(m autoscalingv2.MetricSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric source type"))
	}
	sources := map[string]bool{
		"object": m.Object != nil, "pods": m.Pods != nil, "resource": m.Resource != nil,
		"containerResource": m.ContainerResource != nil, "external": m.External != nil,
	}
	expected := map[autoscalingv2.MetricSourceType]string{
		autoscalingv2.ObjectMetricSourceType: "object", autoscalingv2.PodsMetricSourceType: "pods",
		autoscalingv2.ResourceMetricSourceType: "resource", autoscalingv2.ContainerResourceMetricSourceType: "containerResource",
		autoscalingv2.ExternalMetricSourceType: "external",
	}[m.Type]
	switch {
	case expected == "":
		errs = append(errs, field.NotSupported(p.Child("type"), m.Type, hpaMetricTypes))
	case !sources[expected]:
		errs = append(errs, field.Required(p.Child(expected), "must populate information for the given metric source"))
	}
	n := 0
	for _, set := range sources {
		if set {
			n++
		}
	}
	if n > 1 {
		for _, name := range []string{"object", "external", "pods", "resource", "containerResource"} {
			if sources[name] && name != expected {
				errs = append(errs, field.Forbidden(p.Child(name), "must populate the given metric source only"))
			}
		}
	}
	return errs
}

func (hpaRules) columns() []metav1.TableColumnDefinition {
	spec := autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Reference", Type: "string", Description: spec["scaleTargetRef"]},
		{Name: "Targets", Type: "string", Description: spec["metrics"]},
		{Name: "MinPods", Type: "string", Description: spec["minReplicas"]},
		{Name: "MaxPods", Type: "string", Description: spec["maxReplicas"]},
		{Name: "Replicas", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]},
		ageColumn,
	}
}

func (hpaRules) cells(hpa *autoscalingv2.HorizontalPodAutoscaler) []any {
	minPods := "<unset>"
	if hpa.Spec.MinReplicas != nil {
		minPods = fmt.Sprintf("%d", *hpa.Spec.MinReplicas)
	}
	ref := hpa.Spec.ScaleTargetRef.Kind + "/" + hpa.Spec.ScaleTargetRef.Name
	return []any{hpa.Name, ref, hpaTargets(hpa.Spec.Metrics, hpa.Status.CurrentMetrics), minPods,
		int64(hpa.Spec.MaxReplicas), int64(hpa.Status.CurrentReplicas), age(&hpa.ObjectMeta)}
}

// hpaTargets is upstream's Targets cell: current/target of the first two
// metrics.
func hpaTargets(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	var list []string
	for i, spec := range specs {
		var st *autoscalingv2.MetricStatus
		if i < len(statuses) {
			st = &statuses[i]
		}
		list = append(list, hpaTarget(spec, st))
	}
	if len(list) > 2 {
		return strings.Join(list[:2], ", ") + fmt.Sprintf(" + %d more...", len(list)-2)
	}
	return strings.Join(list, ", ")
}

func hpaTarget(spec autoscalingv2.MetricSpec, st *autoscalingv2.MetricStatus) string {
	if spec.External == nil && spec.Pods == nil && spec.Object == nil && spec.Resource == nil && spec.ContainerResource == nil {
		return "<unknown type>" // validation refuses these; stored ones may predate it
	}
	current := "<unknown>"
	switch spec.Type {
	case autoscalingv2.ExternalMetricSourceType:
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.External != nil {
			cur = &st.External.Current
		}
		return valueTarget(spec.External.Target, cur)
	case autoscalingv2.PodsMetricSourceType:
		if st != nil && st.Pods != nil && st.Pods.Current.AverageValue != nil {
			current = st.Pods.Current.AverageValue.String()
		}
		return fmt.Sprintf("%s/%s", current, quantityString(spec.Pods.Target.AverageValue))
	case autoscalingv2.ObjectMetricSourceType:
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.Object != nil {
			cur = &st.Object.Current
		}
		return valueTarget(spec.Object.Target, cur)
	case autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType:
		name, target, cur := resourceTarget(spec, st)
		if target.AverageValue != nil {
			if cur != nil && cur.AverageValue != nil {
				current = cur.AverageValue.String()
			}
			return fmt.Sprintf("%s: %s/%s", name, current, target.AverageValue.String())
		}
		if cur != nil && cur.AverageUtilization != nil {
			current = fmt.Sprintf("%d%%", *cur.AverageUtilization)
		}
		t := "<auto>"
		if target.AverageUtilization != nil {
			t = fmt.Sprintf("%d%%", *target.AverageUtilization)
		}
		return fmt.Sprintf("%s: %s/%s", name, current, t)
	}
	return "<unknown type>"
}

// valueTarget is the cell of an object or external metric: its average
// or its value against the target's.
func valueTarget(target autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := "<unknown>"
	if target.AverageValue != nil {
		if cur != nil && cur.AverageValue != nil {
			current = cur.AverageValue.String()
		}
		return fmt.Sprintf("%s/%s (avg)", current, target.AverageValue.String())
	}
	if cur != nil && cur.Value != nil {
		current = cur.Value.String()
	}
	return fmt.Sprintf("%s/%s", current, quantityString(target.Value))
}

// resourceTarget gives a (container) resource metric's name, target and
// current value, if any.
func resourceTarget(spec autoscalingv2.MetricSpec, st *autoscalingv2.MetricStatus) (string, autoscalingv2.MetricTarget, *autoscalingv2.MetricValueStatus) {
	if spec.Type == autoscalingv2.ResourceMetricSourceType {
		if st != nil && st.Resource != nil {
			return spec.Resource.Name.String(), spec.Resource.Target, &st.Resource.Current
		}
		return spec.Resource.Name.String(), spec.Resource.Target, nil
	}
	if st != nil && st.ContainerResource != nil {
		return spec.ContainerResource.Name.String(), spec.ContainerResource.Target, &st.ContainerResource.Current
	}
	return spec.ContainerResource.Name.String(), spec.ContainerResource.Target, nil
}
