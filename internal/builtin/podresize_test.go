package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/registry"
)

// resized is a resize of the pod old into obj (the pod as patched or
// replaced, each a Pod's YAML after its metadata) as the handler makes
// it: old as created, obj defaulted, then kept to what the resize may
// change; it returns the result and its validation errors.
func resized(t *testing.T, def *registry.Definition, old, obj string) (*corev1.Pod, []string) {
	t.Helper()
	head := "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns, labels: {app: a}}\n"
	o := decodeYAML(t, head+old)
	def.Hooks.(registry.Defaulter).Default(o)
	def.Hooks.(registry.CreatePreparer).PrepareForCreate(o)
	n := decodeYAML(t, strings.Replace(head, "app: a", "app: b", 1)+obj)
	def.Hooks.(registry.Defaulter).Default(n)
	next := def.Hooks.(registry.SubresourceUpdater).UpdateSubresource("resize", n, o)
	var got []string
	for _, e := range def.Hooks.(registry.SubresourceValidator).ValidateSubresourceUpdate("resize", next, o) {
		got = append(got, e.Error())
	}
	return asPod(t, next), got
}

func TestPodResizeValidation(t *testing.T) {
	def := Pods(nil, nil)
	const (
		burst     = "{name: app, image: nginx, resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 200m, memory: 128Mi}}}"
		burstCPU  = "{name: app, image: nginx, resources: {requests: {cpu: 150m, memory: 64Mi}, limits: {cpu: 300m, memory: 128Mi}}}"
		guar      = "{name: app, image: nginx, resources: {limits: {cpu: 100m, memory: 64Mi}}}"
		sidecar   = "{name: side, image: envoy, restartPolicy: Always, resources: {requests: {cpu: 50m}}}"
		sidecar2  = "{name: side, image: envoy, restartPolicy: Always, resources: {requests: {cpu: 80m}}}"
		initC     = "{name: init, image: busybox, resources: {requests: {cpu: 50m}}}"
		initC2    = "{name: init, image: busybox, resources: {requests: {cpu: 70m}}}"
		onlyCPU   = "spec: Forbidden: only cpu and memory resources are mutable"
		qosChange = "Pod QOS Class may not change as a result of resizing"
	)
	spec := func(containers string) string { return "spec: {containers: [" + containers + "]}" }
	for _, tc := range []struct {
		name, old, obj string
		want           []string
	}{
		{name: line(), old: spec(burst), obj: spec(burstCPU)},
		// What a resize may not change is dropped, not refused.
		{name: line(), old: spec(burst), obj: "spec: {activeDeadlineSeconds: 5, containers: [{name: app, image: nginx:2, resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 200m, memory: 128Mi}}}]}"},
		// Requests default to limits first: a limit alone moves both.
		{name: line(), old: spec(guar), obj: spec("{name: app, image: nginx, resources: {limits: {cpu: 150m, memory: 96Mi}}}")},
		{name: line(), old: spec(guar), obj: spec("{name: app, image: nginx, resources: {requests: {cpu: 50m}, limits: {cpu: 100m, memory: 64Mi}}}"), want: []string{
			`spec: Invalid value: "Guaranteed": ` + qosChange}},
		{name: line(), old: spec("{name: app, image: nginx}"), obj: spec("{name: app, image: nginx, resources: {requests: {cpu: 50m}}}"), want: []string{
			`spec: Invalid value: "BestEffort": ` + qosChange}},
		{name: line(), old: spec(burst), obj: spec("{name: app, image: nginx, resources: {requests: {cpu: 100m, memory: 64Mi, ephemeral-storage: 1Gi}, limits: {cpu: 200m, memory: 128Mi}}}"), want: []string{
			onlyCPU}},
		{name: line(), old: spec(burst), obj: spec("{name: app, image: nginx, resources: {requests: {cpu: 100m}, limits: {cpu: 200m}}}"), want: []string{
			"spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed",
			"spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"}},
		// A resize policy is the resize's to keep, but not to change.
		{name: line(), old: spec(burst), obj: spec("{name: app, image: nginx, resizePolicy: [{resourceName: cpu, restartPolicy: RestartContainer}], resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 200m, memory: 128Mi}}}"), want: []string{
			onlyCPU}},
		{name: line(), old: spec(burst), obj: spec(burst + ", {name: two, image: nginx}"), want: []string{
			"spec.containers: Forbidden: containers may not be added or removed on resize"}},
		{name: line(), old: spec(burst + ", {name: two, image: nginx}"), obj: spec(burstCPU + ", {name: three, image: nginx}"), want: []string{
			"spec.containers[1].name: Forbidden: containers may not be renamed or reordered on resize"}},
		// Sidecars and other init containers resize alike; an init
		// container's image is dropped as a container's is.
		{name: line(), old: "spec: {initContainers: [" + initC + ", " + sidecar + "], containers: [" + burst + "]}",
			obj: "spec: {initContainers: [{name: init, image: alpine, resources: {requests: {cpu: 70m}}}, " + sidecar2 + "], containers: [" + burst + "]}"},
		{name: line(), old: "spec: {initContainers: [{name: init, image: busybox, resources: {requests: {cpu: 50m}}, resizePolicy: [{resourceName: cpu, restartPolicy: RestartContainer}]}], containers: [" + burst + "]}",
			obj: "spec: {initContainers: [{name: init, image: busybox, resources: {requests: {cpu: 70m}}, resizePolicy: [{resourceName: cpu, restartPolicy: RestartContainer}]}], containers: [" + burst + "]}", want: []string{
				`spec.initContainers[0].resizePolicy[0].restartPolicy: Invalid value: "RestartContainer": must not be set to 'RestartContainer' for non-sidecar initContainers`,
				"spec.initContainers[0]: Forbidden: non-sidecar init containers with a resize policy of RestartContainer cannot be resized"}},
		{name: line(), old: "spec: {initContainers: [" + initC + "], containers: [" + burst + "]}",
			obj: "spec: {initContainers: [{name: init, image: busybox, resources: {requests: {cpu: 50m, ephemeral-storage: 1Gi}}}], containers: [" + burst + "]}", want: []string{
				"spec.initContainers[0]: Forbidden: only cpu and memory resources for init or sidecar containers are mutable"}},
		{name: line(), old: "spec: {initContainers: [" + initC + "], containers: [" + burst + "]}",
			obj: "spec: {initContainers: [" + initC2 + ", " + sidecar + "], containers: [" + burst + "]}", want: []string{
				"spec.initContainers: Forbidden: initContainers may not be added or removed on resize"}},
		// Pods no resize may change.
		{name: line(), old: "spec: {os: {name: windows}, containers: [" + burst + "]}", obj: spec(burstCPU), want: []string{
			"[]: Forbidden: windows pods cannot be resized"}},
		// Pod-level resources: cpu and memory change; left out, they are
		// kept; a limit may not go.
		{name: line(), old: "spec: {resources: {requests: {cpu: 200m}, limits: {cpu: 400m}}, containers: [{name: app, image: nginx}]}",
			obj: "spec: {resources: {requests: {cpu: 300m}, limits: {cpu: 500m}}, containers: [{name: app, image: nginx}]}"},
		{name: line(), old: "spec: {resources: {requests: {cpu: 200m}, limits: {cpu: 400m}}, containers: [{name: app, image: nginx}]}",
			obj: spec("{name: app, image: nginx}")},
		// (The memory request went too: it defaulted to the limit.)
		{name: line(), old: "spec: {resources: {requests: {cpu: 200m}, limits: {cpu: 400m, memory: 1Gi}}, containers: [{name: app, image: nginx}]}",
			obj: "spec: {resources: {requests: {cpu: 200m}, limits: {cpu: 400m}}, containers: [{name: app, image: nginx}]}", want: []string{
				"spec.resources.requests: Forbidden: pod-level resource requests cannot be removed",
				"spec.resources.limits: Forbidden: pod-level resource limits cannot be removed"}},
		{name: line(), old: "spec: {resources: {requests: {cpu: 200m}}, containers: [{name: app, image: nginx}]}",
			obj: "spec: {resources: {requests: {cpu: 200m, ephemeral-storage: 1Gi}}, containers: [{name: app, image: nginx}]}", want: []string{
				`spec.resources.requests[ephemeral-storage]: Unsupported value: "ephemeral-storage": supported values: "cpu", "hugepages-", "memory"`,
				"spec: Forbidden: only cpu and memory resources are mutable at pod-level"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got := resized(t, def, tc.old, tc.obj)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestPodResizeRefusesPods: a static pod, and one whose running
// container reports no resources, are not resized.
func TestPodResizeRefusesPods(t *testing.T) {
	def := Pods(nil, nil)
	h := def.Hooks.(podHooks)
	for _, tc := range []struct {
		name string
		old  func(*corev1.Pod)
		want string
	}{
		{line(), func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }, "[]: Forbidden: static pods cannot be resized"},
		{line(), func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}, "spec: Forbidden: Pod running on node without support for resize"},
		{line(), func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				Resources: &corev1.ResourceRequirements{}}}
		}, ""},
		// A finished pod is resized as any other.
		{line(), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := decodeYAML(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec: {containers: [{name: app, image: nginx, resources: {requests: {cpu: 100m}}}]}")
			h.Default(old)
			h.PrepareForCreate(old)
			p, _, err := h.Decode(old)
			if err != nil {
				t.Fatal(err)
			}
			tc.old(p)
			b, _ := json.Marshal(p)
			old = map[string]any{}
			if err := json.Unmarshal(b, &old); err != nil {
				t.Fatal(err)
			}
			obj := decodeYAML(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec: {containers: [{name: app, image: nginx, resources: {requests: {cpu: 200m}}}]}")
			h.Default(obj)
			next := h.UpdateSubresource("resize", obj, old)
			var got []string
			for _, e := range h.ValidateSubresourceUpdate("resize", next, old) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != tc.want {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), tc.want)
			}
		})
	}
}

// TestPrepareResize: of the pod written, the resize keeps the resources
// and resize policies; the rest of the spec, the status and the labels
// are the stored pod's, the managedFields the write's.
func TestPrepareResize(t *testing.T) {
	def := Pods(nil, nil)
	const policy = "resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]"
	p, errs := resized(t, def,
		"spec: {containers: [{name: app, image: nginx, "+policy+", resources: {limits: {cpu: 100m}}}], resources: {requests: {cpu: 500m, memory: 1Gi}}}",
		"spec: {nodeName: node-a, containers: [{name: app, image: nginx:2, "+policy+", resources: {limits: {cpu: 300m}}}]}\nstatus: {phase: Running}")
	if len(errs) != 0 {
		t.Fatalf("refused: %v", errs)
	}
	c := p.Spec.Containers[0]
	if c.Image != "nginx" || p.Spec.NodeName != "" || p.Labels["app"] != "a" || p.Status.Phase != corev1.PodPending {
		t.Errorf("the resize changed more than resources: image %q, node %q, labels %v, phase %q", c.Image, p.Spec.NodeName, p.Labels, p.Status.Phase)
	}
	if q := c.Resources.Requests[corev1.ResourceCPU]; q.String() != "300m" || len(c.ResizePolicy) != 1 {
		t.Errorf("resources %v, policies %v: want the write's (a request defaulted to its limit)", c.Resources, c.ResizePolicy)
	}
	// Pod-level resources left out are the stored pod's.
	if r := p.Spec.Resources; r == nil || r.Requests.Memory().String() != "1Gi" || r.Requests.Cpu().String() != "500m" {
		t.Errorf("pod-level resources %v", r)
	}
}

func TestPodResizeAdmission(t *testing.T) {
	q := resource.MustParse
	limited := Pods(fakePodSource{ranges: []corev1.LimitRange{{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type:           corev1.LimitTypeContainer,
		Max:            corev1.ResourceList{corev1.ResourceCPU: q("500m")},
		Default:        corev1.ResourceList{corev1.ResourceMemory: q("96Mi")},
		DefaultRequest: corev1.ResourceList{corev1.ResourceMemory: q("48Mi")},
	}}}}}}, nil).Hooks.(podHooks)
	placed := Pods(fakePodSource{nodes: []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "small", Labels: map[string]string{corev1.LabelOSStable: "linux"}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "win", Labels: map[string]string{corev1.LabelOSStable: "windows"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "declared"}, Status: corev1.NodeStatus{DeclaredFeatures: []string{featureInitResize},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")}}},
	}}, nil).Hooks.(podHooks)
	for _, tc := range []struct {
		name       string
		h          podHooks
		node, init string
		from, to   string // the app container's cpu limit
		initTo     string // the init container's cpu request afterwards
		// want is the refusal; cause, PodResizeValidator's reason.
		want, cause string
	}{
		// LimitRanger: a container's maximum; its default memory, which
		// the container lacks.
		{name: line(), h: limited, from: "100m", to: "400m"},
		{name: line(), h: limited, from: "100m", to: "600m", want: "maximum cpu usage per Container is 500m, but limit is 600m"},
		// The node: it must exist, declare the features the resize
		// needs, run Linux, and hold the requests; a write that does not
		// change the spec is not checked.
		{name: line(), h: placed, node: "gone", from: "100m", to: "200m", want: `node "gone" not found`},
		{name: line(), h: placed, node: "gone", from: "100m", to: "100m"},
		{name: line(), h: placed, node: "win", from: "100m", to: "200m", want: `pod resize is only supported on linux nodes, node "win" is "windows"`, cause: "UnsupportedPlatform"},
		{name: line(), h: placed, node: "small", from: "100m", to: "400m"},
		{name: line(), h: placed, node: "small", init: "{name: init, image: busybox, resources: {requests: {cpu: 200m}}}", from: "100m", to: "100m", initTo: "300m",
			want: `pod update requires features InPlacePodVerticalScalingInitContainers which are not available on node "small"`},
		{name: line(), h: placed, node: "declared", init: "{name: init, image: busybox, resources: {requests: {cpu: 200m}}}", from: "100m", to: "100m", initTo: "300m"},
		{name: line(), h: placed, node: "small", init: "{name: init, image: busybox, resources: {requests: {cpu: 1200m}}}", from: "100m", to: "400m",
			want: "node didn't have enough allocatable resources: cpu, requested: 1200, allocatable: 1000", cause: "NodeCapacity"},
		{name: line(), h: placed, node: "small", init: "{name: side, image: envoy, restartPolicy: Always, resources: {requests: {cpu: 700m}}}", from: "100m", to: "400m",
			want: "node didn't have enough allocatable resources: cpu, requested: 1100, allocatable: 1000", cause: "NodeCapacity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := func(cpu, initCPU string) map[string]any {
				s := "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns, generation: 1}\nspec: {nodeName: '" + tc.node + "', "
				if tc.init != "" {
					init := tc.init
					if initCPU != "" {
						init = strings.Replace(init, "200m", initCPU, 1)
					}
					s += "initContainers: [" + init + "], "
				}
				obj := decodeYAML(t, s+"containers: [{name: app, image: nginx, resources: {limits: {cpu: "+cpu+"}}}]}")
				tc.h.Default(obj)
				return obj
			}
			old, obj := pod(tc.from, ""), pod(tc.to, tc.initTo)
			if err := tc.h.AdmitUpdate(context.Background(), "resize", obj, old); err != nil {
				t.Fatal(err)
			}
			p, _, _ := tc.h.Decode(obj)
			if mem := p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]; (tc.h.src.(fakePodSource).ranges != nil) != (mem.String() == "96Mi") {
				t.Errorf("memory limit %s: LimitRanger's default is 96Mi", mem.String())
			}
			if tc.from != tc.to || tc.initTo != "" {
				obj["metadata"].(map[string]any)["generation"] = int64(2)
			}
			err := tc.h.CheckUpdateAdmission(context.Background(), "resize", obj, old)
			checkErrors(t, tc.name, err, tc.want)
			var st apierrors.APIStatus
			if tc.cause != "" && (!errors.As(err, &st) || len(st.Status().Details.Causes) != 1 || string(st.Status().Details.Causes[0].Type) != tc.cause) {
				t.Errorf("refusal %#v, want cause %s", err, tc.cause)
			}
		})
	}
}
