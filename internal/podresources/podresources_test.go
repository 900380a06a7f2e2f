package podresources

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestAggregate(t *testing.T) {
	cpu := func(v string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}}
	}
	ctr := func(v string) corev1.Container { return corev1.Container{Resources: cpu(v)} }
	sidecar := func(v string) corev1.Container {
		c := ctr(v)
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		return c
	}
	for _, tc := range []struct {
		name       string
		init, ctrs []corev1.Container
		want       string
	}{
		{"containers add up", nil, []corev1.Container{ctr("100m"), ctr("200m")}, "300m"},
		{"a larger init container wins", []corev1.Container{ctr("1")}, []corev1.Container{ctr("100m")}, "1"},
		{"a smaller init container does not count", []corev1.Container{ctr("50m")}, []corev1.Container{ctr("100m")}, "100m"},
		{"sidecars add to the containers", []corev1.Container{sidecar("100m")}, []corev1.Container{ctr("200m")}, "300m"},
		{"an init container after a sidecar needs both", []corev1.Container{sidecar("300m"), ctr("500m")}, []corev1.Container{ctr("100m")}, "800m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &corev1.PodSpec{InitContainers: tc.init, Containers: tc.ctrs}
			got := Aggregate(s, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
			if q := got[corev1.ResourceCPU]; q.Cmp(resource.MustParse(tc.want)) != 0 {
				t.Errorf("cpu %s, want %s", q.String(), tc.want)
			}
		})
	}
}
