package builtin

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestLimitRangeDefaults: a Container limit's default comes from its
// max, its default request from the default, else the min; other types
// are left alone, and a LimitRange without a name gets one.
func TestLimitRangeDefaults(t *testing.T) {
	q := resource.MustParse
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{"cpu": q("2")}, Min: corev1.ResourceList{"memory": q("64Mi")},
			Default: corev1.ResourceList{"ephemeral-storage": q("1Gi")}},
		{Type: corev1.LimitTypePod, Max: corev1.ResourceList{"cpu": q("4")}},
	}}}
	limitRangeRules{}.defaults(lr)
	c := lr.Spec.Limits[0]
	for _, check := range []struct {
		what string
		l    corev1.ResourceList
		name corev1.ResourceName
		want string
	}{
		{"default from max", c.Default, "cpu", "2"},
		{"default kept", c.Default, "ephemeral-storage", "1Gi"},
		{"request from default", c.DefaultRequest, "cpu", "2"},
		{"request from default set", c.DefaultRequest, "ephemeral-storage", "1Gi"},
		{"request from min", c.DefaultRequest, "memory", "64Mi"},
	} {
		if v, ok := check.l[check.name]; !ok || v.String() != check.want {
			t.Errorf("%s: %s = %v, want %s", check.what, check.name, check.l[check.name], check.want)
		}
	}
	if len(c.Default) != 2 || len(lr.Spec.Limits[1].Default) != 0 || lr.Spec.Limits[1].DefaultRequest != nil {
		t.Errorf("limits %+v", lr.Spec.Limits)
	}
	if lr.Name == "" {
		t.Error("a LimitRange without a name got none")
	}
}
