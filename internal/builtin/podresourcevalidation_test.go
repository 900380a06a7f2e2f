package builtin

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestPodLevelResourcesValidation(t *testing.T) {
	const c = "containers: [{name: app, image: busybox}]"
	checkValidation(t, Pods(nil, nil), []validateCase{
		{name: line(), obj: "spec: {resources: {requests: {cpu: 1}, limits: {memory: 1Gi}}, " + c + "}"},
		{name: line(), obj: "spec: {os: {name: windows}, resources: {requests: {cpu: -1}}, " + c + "}", want: []string{
			"spec.resources: Forbidden: may not be set for a windows pod"}},
		{name: line(), obj: "spec: {resources: {limits: {ephemeral-storage: 1Gi}}, " + c + "}", want: []string{
			`spec.resources.limits[ephemeral-storage]: Unsupported value: "ephemeral-storage": supported values: "cpu", "hugepages-", "memory"`}},
		{name: line(), obj: "spec: {resources: {limits: {hugepages-2Mi: 3Mi}}, " + c + "}", want: []string{
			`spec.resources.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi`,
			`spec.resources.requests[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi`,
			"spec.resources: Forbidden: HugePages require cpu or memory"}},
		// The containers' requests together, a sidecar's included, and
		// each container's limit. (A new pod's requests default to its
		// limits, and its limits are checked too.)
		{name: line(), obj: "spec: {initContainers: [{name: side, image: x, restartPolicy: Always, resources: {requests: {cpu: 600m}}}], " +
			"containers: [{name: app, image: x, resources: {requests: {cpu: 600m}, limits: {memory: 2Gi}}}], resources: {requests: {cpu: 1}, limits: {memory: 1Gi}}}", want: []string{
			`spec.resources.requests: Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi`,
			`spec.resources.requests[cpu]: Invalid value: "1": must be greater than or equal to aggregate container requests of 1200m`,
			`spec.resources.containers[0][memory].limits: Invalid value: "2Gi": must be less than or equal to pod limits of 1Gi`}},
	})
}

func TestDefaultPodLevelResources(t *testing.T) {
	q := resource.MustParse
	ctr := func(name string, lim corev1.ResourceList) corev1.Container {
		return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: lim, Requests: lim}}
	}
	for _, tc := range []struct {
		name     string
		spec     corev1.PodSpec
		wantReqs corev1.ResourceList
		wantLims corev1.ResourceList
	}{
		{name: line(), spec: corev1.PodSpec{Containers: []corev1.Container{ctr("a", nil)},
			Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": q("2")}}},
			wantReqs: corev1.ResourceList{"cpu": q("2")}, wantLims: corev1.ResourceList{"cpu": q("2")}},
		// Every container has a cpu limit: the pod's is theirs together,
		// at least its request.
		{name: line(), spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": q("1")}}}},
			Containers:     []corev1.Container{ctr("a", corev1.ResourceList{"cpu": q("500m")})},
			Resources:      &corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("1")}}},
			wantReqs: corev1.ResourceList{"cpu": q("1")}, wantLims: corev1.ResourceList{"cpu": q("1500m")}},
		{name: line(), spec: corev1.PodSpec{Containers: []corev1.Container{ctr("a", corev1.ResourceList{"hugepages-2Mi": q("4Mi"), "memory": q("1Gi")})},
			Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{"memory": q("2Gi")}}},
			wantReqs: corev1.ResourceList{"memory": q("2Gi"), "hugepages-2Mi": q("4Mi")}, wantLims: corev1.ResourceList{"hugepages-2Mi": q("4Mi"), "memory": q("2Gi")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.spec
			defaultPodLevelResources(&s)
			for _, c := range []struct {
				got, want corev1.ResourceList
			}{{s.Resources.Requests, tc.wantReqs}, {s.Resources.Limits, tc.wantLims}} {
				if len(c.got) != len(c.want) {
					t.Fatalf("got %v, want %v", c.got, c.want)
				}
				for n, w := range c.want {
					if g := c.got[n]; g.Cmp(w) != 0 {
						t.Errorf("%s: got %s, want %s", n, g.String(), w.String())
					}
				}
			}
		})
	}
}
