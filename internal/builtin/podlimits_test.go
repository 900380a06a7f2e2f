package builtin

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestCheckLimitRange checks pods against a LimitRange with upstream's
// LimitRanger messages (compat's pods.txt compares those of one rule).
func TestCheckLimitRange(t *testing.T) {
	q := resource.MustParse
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, Min: corev1.ResourceList{"cpu": q("50m")}, Max: corev1.ResourceList{"cpu": q("2"), "memory": q("1Gi")},
			MaxLimitRequestRatio: corev1.ResourceList{"cpu": q("4")}},
		{Type: corev1.LimitTypePod, Max: corev1.ResourceList{"cpu": q("3")}},
	}}}
	container := func(req, lim, mem string) corev1.Container {
		return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"cpu": q(req)}, Limits: corev1.ResourceList{"cpu": q(lim), "memory": q(mem)}}}
	}
	for _, tc := range []struct {
		name       string
		containers []corev1.Container
		want       string
	}{
		{line(), []corev1.Container{container("500m", "1", "512Mi")}, ""},
		{line(), []corev1.Container{container("1", "3", "512Mi")}, "maximum cpu usage per Container is 2, but limit is 3"},
		{line(), []corev1.Container{container("1", "2", "1Gi"), container("1", "2", "1Gi")}, "maximum cpu usage per Pod is 3, but limit is 4"},
		{line(), []corev1.Container{container("10m", "1", "2Gi")}, "[minimum cpu usage per Container is 50m, but request is 10m, " +
			"maximum memory usage per Container is 1Gi, but limit is 2Gi, cpu max limit to request ratio per Container is 4, but provided ratio is 100.000000]"},
		{line(), []corev1.Container{{Name: "c"}}, "[minimum cpu usage per Container is 50m.  No request is specified, maximum cpu usage per Container is 2.  No limit is specified, " +
			"maximum memory usage per Container is 1Gi.  No limit is specified, cpu max limit to request ratio per Container is 4, but no request is specified or request is 0, " +
			"maximum cpu usage per Pod is 3.  No limit is specified]"},
	} {
		err := checkLimitRange(lr, &corev1.Pod{Spec: corev1.PodSpec{Containers: tc.containers}})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%s: %v\nwant %s", tc.name, err, tc.want)
		}
	}
}
