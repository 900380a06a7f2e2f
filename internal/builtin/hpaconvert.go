package builtin

import (
	"encoding/json"
	"maps"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// autoscaling/v1 HorizontalPodAutoscalers are stored as autoscaling/v2
// ones, as upstream stores them. v1 has only a CPU utilization target; it
// carries what else v2 holds in annotations, as upstream's conversion
// does, so that a v2 object read and written back through v1 keeps its
// other metrics, behavior and conditions.
const (
	hpaMetricsAnnotation        = "autoscaling.alpha.kubernetes.io/metrics"
	hpaCurrentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	hpaConditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	hpaBehaviorAnnotation       = "autoscaling.alpha.kubernetes.io/behavior"
	hpaToleranceDownAnnotation  = "autoscaling.alpha.kubernetes.io/scale-down-tolerance"
	hpaToleranceUpAnnotation    = "autoscaling.alpha.kubernetes.io/scale-up-tolerance"

	// defaultCPUUtilization is the target of an HPA without metrics.
	defaultCPUUtilization = 80
)

// withoutHPAAnnotations returns annotations without the round-trip ones
// (a copy when it had any).
func withoutHPAAnnotations(in map[string]string) map[string]string {
	keys := []string{hpaMetricsAnnotation, hpaCurrentMetricsAnnotation, hpaConditionsAnnotation, hpaBehaviorAnnotation, hpaToleranceDownAnnotation, hpaToleranceUpAnnotation}
	found := false
	for _, k := range keys {
		_, ok := in[k]
		found = found || ok
	}
	if !found {
		return in
	}
	out := maps.Clone(in)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

func cpuUtilizationMetric(target int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{
			Name:   corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(target)},
		},
	}
}

func isCPUUtilization(m autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.AverageUtilization != nil
}

// hpaToV2 converts a v1 HPA (defaulted) to v2.
func hpaToV2(in *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.APIVersion, out.Kind = "autoscaling/v2", "HorizontalPodAutoscaler"
	ref := in.Spec.ScaleTargetRef
	out.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion},
		MinReplicas:    in.Spec.MinReplicas,
		MaxReplicas:    in.Spec.MaxReplicas,
	}
	if t := in.Spec.TargetCPUUtilizationPercentage; t != nil {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilizationMetric(*t)}
	}
	ann := in.Annotations
	var others []autoscalingv1.MetricSpec
	if s, ok := ann[hpaMetricsAnnotation]; ok && json.Unmarshal([]byte(s), &others) == nil {
		metrics := make([]autoscalingv2.MetricSpec, 0, len(others)+1)
		for _, m := range others {
			metrics = append(metrics, metricToV2(m))
		}
		out.Spec.Metrics = append(metrics, out.Spec.Metrics...)
	}
	if s, ok := ann[hpaBehaviorAnnotation]; ok {
		// The annotation holds upstream's internal type, whose JSON names
		// are its Go field names; decoding matches them without case.
		var b autoscalingv2.HorizontalPodAutoscalerBehavior
		if json.Unmarshal([]byte(s), &b) == nil && (b.ScaleUp != nil || b.ScaleDown != nil) {
			out.Spec.Behavior = &b
		}
	}
	if len(out.Spec.Metrics) == 0 {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilizationMetric(defaultCPUUtilization)}
	}

	st := in.Status
	out.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: st.ObservedGeneration, LastScaleTime: st.LastScaleTime,
		CurrentReplicas: st.CurrentReplicas, DesiredReplicas: st.DesiredReplicas,
	}
	if c := st.CurrentCPUUtilizationPercentage; c != nil {
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{
			Type:     autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To(*c)}},
		}}
	}
	var current []autoscalingv1.MetricStatus
	if s, ok := ann[hpaCurrentMetricsAnnotation]; ok && json.Unmarshal([]byte(s), &current) == nil {
		out.Status.CurrentMetrics = make([]autoscalingv2.MetricStatus, len(current))
		for i, m := range current {
			out.Status.CurrentMetrics[i] = metricStatusToV2(m)
		}
	}
	var conditions []autoscalingv1.HorizontalPodAutoscalerCondition
	if s, ok := ann[hpaConditionsAnnotation]; ok && json.Unmarshal([]byte(s), &conditions) == nil {
		out.Status.Conditions = make([]autoscalingv2.HorizontalPodAutoscalerCondition, len(conditions))
		for i, c := range conditions {
			out.Status.Conditions[i] = autoscalingv2.HorizontalPodAutoscalerCondition{
				Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
				LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
			}
		}
	}
	out.Annotations = withoutHPAAnnotations(out.Annotations)
	return out
}

// hpaToV1 converts a stored v2 HPA to v1.
func hpaToV1(in *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv1.HorizontalPodAutoscaler {
	out := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.APIVersion, out.Kind = "autoscaling/v1", "HorizontalPodAutoscaler"
	// out's metadata is a copy: its annotations may change.
	ann := withoutHPAAnnotations(out.Annotations)
	set := func(k string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			return // the types encode
		}
		if ann == nil {
			ann = map[string]string{}
		}
		ann[k] = string(b)
	}
	ref := in.Spec.ScaleTargetRef
	out.Spec = autoscalingv1.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion},
		MinReplicas:    in.Spec.MinReplicas,
		MaxReplicas:    in.Spec.MaxReplicas,
	}
	var others []autoscalingv1.MetricSpec
	for _, m := range in.Spec.Metrics {
		if isCPUUtilization(m) {
			if out.Spec.TargetCPUUtilizationPercentage == nil {
				out.Spec.TargetCPUUtilizationPercentage = ptr.To(*m.Resource.Target.AverageUtilization)
			}
			continue
		}
		others = append(others, metricToV1(m))
	}
	if len(others) > 0 {
		set(hpaMetricsAnnotation, others)
	}

	st := in.Status
	out.Status = autoscalingv1.HorizontalPodAutoscalerStatus{
		ObservedGeneration: st.ObservedGeneration, LastScaleTime: st.LastScaleTime,
		CurrentReplicas: st.CurrentReplicas, DesiredReplicas: st.DesiredReplicas,
	}
	if len(st.CurrentMetrics) > 0 {
		current := make([]autoscalingv1.MetricStatus, len(st.CurrentMetrics))
		for i, m := range st.CurrentMetrics {
			current[i] = metricStatusToV1(m)
			if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
				out.Status.CurrentCPUUtilizationPercentage = ptr.To(*m.Resource.Current.AverageUtilization)
			}
		}
		set(hpaCurrentMetricsAnnotation, current)
	}
	if b := in.Spec.Behavior; b != nil {
		set(hpaBehaviorAnnotation, internalBehavior(b))
	}
	if len(st.Conditions) > 0 {
		conditions := make([]autoscalingv1.HorizontalPodAutoscalerCondition, len(st.Conditions))
		for i, c := range st.Conditions {
			conditions[i] = autoscalingv1.HorizontalPodAutoscalerCondition{
				Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
				LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
			}
		}
		set(hpaConditionsAnnotation, conditions)
	}
	out.Annotations = ann
	return out
}

// The behavior annotation is upstream's internal HPA behavior encoded
// with encoding/json: Go field names, no omitempty.
type (
	internalHPABehavior struct {
		ScaleUp, ScaleDown *internalHPAScalingRules
	}
	internalHPAScalingRules struct {
		StabilizationWindowSeconds *int32
		SelectPolicy               *autoscalingv2.ScalingPolicySelect
		Policies                   []internalHPAScalingPolicy
		Tolerance                  *resource.Quantity
	}
	internalHPAScalingPolicy struct {
		Type          autoscalingv2.HPAScalingPolicyType
		Value         int32
		PeriodSeconds int32
	}
)

func internalBehavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior) internalHPABehavior {
	rules := func(r *autoscalingv2.HPAScalingRules) *internalHPAScalingRules {
		if r == nil {
			return nil
		}
		out := &internalHPAScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
		for _, p := range r.Policies {
			out.Policies = append(out.Policies, internalHPAScalingPolicy(p))
		}
		return out
	}
	return internalHPABehavior{ScaleUp: rules(b.ScaleUp), ScaleDown: rules(b.ScaleDown)}
}

func metricToV1(m autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(m.Type)}
	if o := m.Object; o != nil {
		out.Object = &autoscalingv1.ObjectMetricSource{
			Target:     autoscalingv1.CrossVersionObjectReference(o.DescribedObject),
			MetricName: o.Metric.Name, Selector: o.Metric.Selector, AverageValue: o.Target.AverageValue,
		}
		if o.Target.Value != nil {
			out.Object.TargetValue = *o.Target.Value
		}
	}
	if p := m.Pods; p != nil {
		out.Pods = &autoscalingv1.PodsMetricSource{MetricName: p.Metric.Name, Selector: p.Metric.Selector}
		if p.Target.AverageValue != nil {
			out.Pods.TargetAverageValue = *p.Target.AverageValue
		}
	}
	if r := m.Resource; r != nil {
		out.Resource = &autoscalingv1.ResourceMetricSource{Name: r.Name, TargetAverageUtilization: r.Target.AverageUtilization, TargetAverageValue: r.Target.AverageValue}
	}
	if r := m.ContainerResource; r != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{Name: r.Name, Container: r.Container, TargetAverageUtilization: r.Target.AverageUtilization, TargetAverageValue: r.Target.AverageValue}
	}
	if e := m.External; e != nil {
		out.External = &autoscalingv1.ExternalMetricSource{MetricName: e.Metric.Name, MetricSelector: e.Metric.Selector, TargetValue: e.Target.Value, TargetAverageValue: e.Target.AverageValue}
	}
	return out
}

// targetType is the type of a v1 target: utilization or value when set,
// else average value.
func targetType(set bool, ifSet autoscalingv2.MetricTargetType) autoscalingv2.MetricTargetType {
	if set {
		return ifSet
	}
	return autoscalingv2.AverageValueMetricType
}

func metricToV2(m autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(m.Type)}
	if o := m.Object; o != nil {
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(o.TargetValue), AverageValue: o.AverageValue}
		if o.AverageValue != nil {
			t.Type, t.Value = autoscalingv2.AverageValueMetricType, nil
			if !o.TargetValue.IsZero() {
				t.Value = ptr.To(o.TargetValue)
			}
		}
		out.Object = &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(o.Target),
			Target:          t,
			Metric:          autoscalingv2.MetricIdentifier{Name: o.MetricName, Selector: o.Selector},
		}
	}
	if p := m.Pods; p != nil {
		out.Pods = &autoscalingv2.PodsMetricSource{
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(p.TargetAverageValue)},
			Metric: autoscalingv2.MetricIdentifier{Name: p.MetricName, Selector: p.Selector},
		}
	}
	if r := m.Resource; r != nil {
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: r.Name, Target: autoscalingv2.MetricTarget{
			Type: targetType(r.TargetAverageUtilization != nil, autoscalingv2.UtilizationMetricType), AverageUtilization: r.TargetAverageUtilization, AverageValue: r.TargetAverageValue,
		}}
	}
	if r := m.ContainerResource; r != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{Name: r.Name, Container: r.Container, Target: autoscalingv2.MetricTarget{
			Type: targetType(r.TargetAverageUtilization != nil, autoscalingv2.UtilizationMetricType), AverageUtilization: r.TargetAverageUtilization, AverageValue: r.TargetAverageValue,
		}}
	}
	if e := m.External; e != nil {
		out.External = &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: e.MetricName, Selector: e.MetricSelector},
			Target: autoscalingv2.MetricTarget{Type: targetType(e.TargetValue != nil, autoscalingv2.ValueMetricType), Value: e.TargetValue, AverageValue: e.TargetAverageValue},
		}
	}
	return out
}

func metricStatusToV1(m autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(m.Type)}
	if o := m.Object; o != nil {
		out.Object = &autoscalingv1.ObjectMetricStatus{
			Target:     autoscalingv1.CrossVersionObjectReference(o.DescribedObject),
			MetricName: o.Metric.Name, Selector: o.Metric.Selector, CurrentValue: ptr.Deref(o.Current.Value, resource.Quantity{}),
		}
		if v := o.Current.AverageValue; v != nil {
			out.Object.AverageValue = ptr.To(*v)
		}
	}
	if p := m.Pods; p != nil {
		out.Pods = &autoscalingv1.PodsMetricStatus{MetricName: p.Metric.Name, Selector: p.Metric.Selector, CurrentAverageValue: ptr.Deref(p.Current.AverageValue, resource.Quantity{})}
	}
	if r := m.Resource; r != nil {
		out.Resource = &autoscalingv1.ResourceMetricStatus{Name: r.Name, CurrentAverageUtilization: r.Current.AverageUtilization, CurrentAverageValue: ptr.Deref(r.Current.AverageValue, resource.Quantity{})}
	}
	if r := m.ContainerResource; r != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricStatus{Name: r.Name, Container: r.Container, CurrentAverageUtilization: r.Current.AverageUtilization, CurrentAverageValue: ptr.Deref(r.Current.AverageValue, resource.Quantity{})}
	}
	if e := m.External; e != nil {
		out.External = &autoscalingv1.ExternalMetricStatus{MetricName: e.Metric.Name, MetricSelector: e.Metric.Selector, CurrentValue: ptr.Deref(e.Current.Value, resource.Quantity{}), CurrentAverageValue: e.Current.AverageValue}
	}
	return out
}

func metricStatusToV2(m autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(m.Type)}
	if o := m.Object; o != nil {
		out.Object = &autoscalingv2.ObjectMetricStatus{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(o.Target),
			Metric:          autoscalingv2.MetricIdentifier{Name: o.MetricName, Selector: o.Selector},
			Current:         autoscalingv2.MetricValueStatus{Value: ptr.To(o.CurrentValue), AverageValue: o.AverageValue},
		}
	}
	if p := m.Pods; p != nil {
		out.Pods = &autoscalingv2.PodsMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: p.MetricName, Selector: p.Selector},
			Current: autoscalingv2.MetricValueStatus{AverageValue: ptr.To(p.CurrentAverageValue)},
		}
	}
	if r := m.Resource; r != nil {
		out.Resource = &autoscalingv2.ResourceMetricStatus{Name: r.Name, Current: autoscalingv2.MetricValueStatus{AverageValue: ptr.To(r.CurrentAverageValue), AverageUtilization: r.CurrentAverageUtilization}}
	}
	if r := m.ContainerResource; r != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: r.Name, Container: r.Container, Current: autoscalingv2.MetricValueStatus{AverageValue: ptr.To(r.CurrentAverageValue), AverageUtilization: r.CurrentAverageUtilization}}
	}
	if e := m.External; e != nil {
		out.External = &autoscalingv2.ExternalMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: e.MetricName, Selector: e.MetricSelector},
			Current: autoscalingv2.MetricValueStatus{Value: ptr.To(e.CurrentValue), AverageValue: e.CurrentAverageValue},
		}
	}
	return out
}

// quantityString is q's text, "0" when q is nil (upstream prints a zero
// Quantity for an unset target).
func quantityString(q *resource.Quantity) string {
	if q == nil {
		return "0"
	}
	return q.String()
}
