package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/crdserver/crdserver/internal/registry"
)

// fakePodSource holds the service accounts (by namespace/name), priority
// classes, LimitRanges, runtime classes and nodes the pods' admission
// reads.
type fakePodSource struct {
	accounts map[string]*corev1.ServiceAccount
	classes  []schedulingv1.PriorityClass
	ranges   []corev1.LimitRange
	runtimes []nodev1.RuntimeClass
	nodes    []corev1.Node
}

func (f fakePodSource) Node(_ context.Context, name string) (*corev1.Node, error) {
	for i := range f.nodes {
		if f.nodes[i].Name == name {
			return &f.nodes[i], nil
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}

func (f fakePodSource) RuntimeClass(_ context.Context, name string) (*nodev1.RuntimeClass, error) {
	for i := range f.runtimes {
		if f.runtimes[i].Name == name {
			return &f.runtimes[i], nil
		}
	}
	return nil, apierrors.NewNotFound(nodev1.Resource("runtimeclasses"), name)
}

func (f fakePodSource) LimitRanges(context.Context, string) ([]corev1.LimitRange, error) {
	return f.ranges, nil
}

func (f fakePodSource) ServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	if sa, ok := f.accounts[ns+"/"+name]; ok {
		return sa, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
}

func (f fakePodSource) PriorityClasses(context.Context) ([]schedulingv1.PriorityClass, error) {
	return f.classes, nil
}

func testPods(src PodAdmissionSource) *registry.Definition {
	def := Pods(src, nil)
	h := def.Hooks.(podHooks)
	h.suffix = func() string { return "abcde" }
	def.Hooks = h
	return def
}

// admitted is the pod y (a Pod's YAML in namespace ns) defaulted,
// admitted, prepared for create and checked by the validating admission
// as the handler does, or the admission error.
func admitted(t *testing.T, def *registry.Definition, y string) (*corev1.Pod, error) {
	t.Helper()
	obj := decodeYAML(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\n"+y)
	def.Hooks.(registry.Defaulter).Default(obj)
	if err := def.Hooks.(registry.CreateAdmitter).AdmitCreate(context.Background(), obj); err != nil {
		return nil, err
	}
	def.Hooks.(registry.CreatePreparer).PrepareForCreate(obj)
	if err := def.Hooks.(registry.CreateAdmissionChecker).CheckCreateAdmission(context.Background(), obj); err != nil {
		return nil, err
	}
	return asPod(t, obj), nil
}

// asPod is obj decoded as a Pod.
func asPod(t *testing.T, obj map[string]any) *corev1.Pod {
	t.Helper()
	b, _ := json.Marshal(obj)
	p := &corev1.Pod{}
	if err := json.Unmarshal(b, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPodAdmission(t *testing.T) {
	src := fakePodSource{
		accounts: map[string]*corev1.ServiceAccount{
			"ns/default": {},
			"ns/robot":   {AutomountServiceAccountToken: ptr.To(false), ImagePullSecrets: []corev1.LocalObjectReference{{Name: "reg"}}},
		},
		classes: []schedulingv1.PriorityClass{
			{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000, PreemptionPolicy: ptr.To(corev1.PreemptNever)},
			{ObjectMeta: metav1.ObjectMeta{Name: "low-default"}, Value: 5, GlobalDefault: true},
		},
		ranges: []corev1.LimitRange{{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			Default:        corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		}}}}},
		runtimes: []nodev1.RuntimeClass{
			{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Handler: "runc"},
			{ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata",
				Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}},
				Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "yes"},
					Tolerations: []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}},
		},
	}
	def := testPods(src)
	for _, tc := range []struct {
		name, pod string
		check     func(t *testing.T, p *corev1.Pod)
		err       string
	}{
		{name: line(), pod: "spec: {containers: [{name: c, image: nginx}], initContainers: [{name: i, image: busybox}]}", check: func(t *testing.T, p *corev1.Pod) {
			if p.Spec.ServiceAccountName != "default" || p.Spec.DeprecatedServiceAccount != "default" { //nolint:staticcheck
				t.Errorf("service account %q", p.Spec.ServiceAccountName)
			}
			if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].Name != "kube-api-access-abcde" || p.Spec.Volumes[0].Projected == nil {
				t.Errorf("volumes %+v", p.Spec.Volumes)
			}
			for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
				if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != serviceAccountMountPath || !c.VolumeMounts[0].ReadOnly {
					t.Errorf("container %s mounts %+v", c.Name, c.VolumeMounts)
				}
			}
			if ptr.Deref(p.Spec.Priority, -1) != 5 || p.Spec.PriorityClassName != "low-default" {
				t.Errorf("priority %v %q", p.Spec.Priority, p.Spec.PriorityClassName)
			}
			if len(p.Spec.Tolerations) != 2 || p.Spec.Tolerations[0].Key != corev1.TaintNodeNotReady || *p.Spec.Tolerations[1].TolerationSeconds != 300 {
				t.Errorf("tolerations %+v", p.Spec.Tolerations)
			}
			// The LimitRange's memory alone: Burstable.
			if p.Status.Phase != corev1.PodPending || p.Status.QOSClass != corev1.PodQOSBurstable {
				t.Errorf("status %+v", p.Status)
			}
			if !ptr.Deref(p.Spec.EnableServiceLinks, false) {
				t.Error("enableServiceLinks not defaulted")
			}
		}},
		{name: line(), pod: "spec: {serviceAccountName: robot, priorityClassName: high, tolerations: [{operator: Exists}], containers: [{name: c, image: nginx}]}", check: func(t *testing.T, p *corev1.Pod) {
			if len(p.Spec.Volumes) != 0 || len(p.Spec.Containers[0].VolumeMounts) != 0 {
				t.Errorf("automount off, got %+v", p.Spec.Volumes)
			}
			if len(p.Spec.ImagePullSecrets) != 1 || p.Spec.ImagePullSecrets[0].Name != "reg" {
				t.Errorf("pull secrets %+v", p.Spec.ImagePullSecrets)
			}
			if *p.Spec.Priority != 1000 || *p.Spec.PreemptionPolicy != corev1.PreemptNever {
				t.Errorf("priority %v %v", *p.Spec.Priority, *p.Spec.PreemptionPolicy)
			}
			if len(p.Spec.Tolerations) != 1 {
				t.Errorf("a toleration of everything needs no others: %+v", p.Spec.Tolerations)
			}
		}},
		{name: line(), pod: "spec: {containers: [{name: c, image: nginx}], initContainers: [{name: i, image: x, resources: {limits: {memory: 2Gi}}}]}", check: func(t *testing.T, p *corev1.Pod) {
			want := "LimitRanger plugin set: memory request for container c; memory limit for container c"
			if got := p.Annotations[limitRangerAnnotation]; got != want {
				t.Errorf("annotation %q, want %q", got, want)
			}
			if r := p.Spec.InitContainers[0].Resources; r.Limits.Memory().String() != "2Gi" || r.Requests.Memory().String() != "2Gi" {
				t.Errorf("init container resources %v", r)
			}
		}},
		{name: line(), pod: "spec: {containers: [{name: c, image: nginx, resources: {limits: {cpu: 1, memory: 1Gi}}}]}", check: func(t *testing.T, p *corev1.Pod) {
			if p.Status.QOSClass != corev1.PodQOSGuaranteed || p.Spec.Containers[0].Resources.Requests.Cpu().String() != "1" {
				t.Errorf("qos %s requests %v", p.Status.QOSClass, p.Spec.Containers[0].Resources.Requests)
			}
		}},
		{name: line(), pod: "spec: {containers: [{name: c, image: nginx, resources: {requests: {cpu: 1}}}]}", check: func(t *testing.T, p *corev1.Pod) {
			if p.Status.QOSClass != corev1.PodQOSBurstable || p.Annotations[limitRangerAnnotation] == "" {
				t.Errorf("qos %s", p.Status.QOSClass)
			}
		}},
		{name: line(), pod: "spec: {serviceAccountName: ghost, containers: [{name: c, image: nginx}]}", err: `error looking up service account ns/ghost: serviceaccount "ghost" not found`},
		{name: line(), pod: "spec: {priorityClassName: ghost, containers: [{name: c, image: nginx}]}", err: "no PriorityClass with name ghost was found"},
		{name: line(), pod: "spec: {priority: 7, containers: [{name: c, image: nginx}]}", err: "the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 5 from the given PriorityClass name"},
		// RuntimeClass: the class's overhead and scheduling become the pod's.
		{name: line(), pod: "spec: {runtimeClassName: kata, nodeSelector: {zone: a}, containers: [{name: c, image: nginx}]}", check: func(t *testing.T, p *corev1.Pod) {
			if p.Spec.Overhead.Cpu().String() != "250m" {
				t.Errorf("overhead %v", p.Spec.Overhead)
			}
			if len(p.Spec.NodeSelector) != 2 || p.Spec.NodeSelector["sandbox"] != "yes" || p.Spec.NodeSelector["zone"] != "a" {
				t.Errorf("node selector %v", p.Spec.NodeSelector)
			}
			if n := len(p.Spec.Tolerations); n != 3 || p.Spec.Tolerations[2].Key != "sandbox" {
				t.Errorf("tolerations %+v", p.Spec.Tolerations)
			}
		}},
		{name: line(), pod: "spec: {runtimeClassName: plain, containers: [{name: c, image: nginx}]}", check: func(t *testing.T, p *corev1.Pod) {
			if p.Spec.Overhead != nil || p.Spec.NodeSelector != nil {
				t.Errorf("overhead %v, node selector %v", p.Spec.Overhead, p.Spec.NodeSelector)
			}
		}},
		{name: line(), pod: "spec: {runtimeClassName: ghost, containers: [{name: c, image: nginx}]}", err: `pod rejected: RuntimeClass "ghost" not found`},
		{name: line(), pod: "spec: {runtimeClassName: kata, overhead: {cpu: 1}, containers: [{name: c, image: nginx}]}", err: "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"},
		{name: line(), pod: "spec: {runtimeClassName: kata, nodeSelector: {sandbox: never}, containers: [{name: c, image: nginx}]}", err: "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = yes; pod.spec.nodeSelector[sandbox] = never"},
		{name: line(), pod: "spec: {runtimeClassName: plain, overhead: {cpu: 1}, containers: [{name: c, image: nginx}]}", err: "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"},
		{name: line(), pod: "spec: {overhead: {cpu: 1}, containers: [{name: c, image: nginx}]}", err: "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := admitted(t, def, tc.pod)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
		})
	}
}

func TestPodGracePeriod(t *testing.T) {
	h := Pods(nil, nil).Hooks.(registry.GracefulDeleter)
	for _, tc := range []struct {
		name, pod string
		asked     *int64
		want      int64
	}{
		{line(), "spec: {containers: [{name: c, image: x}]}", nil, 0},
		{line(), "spec: {nodeName: node1, containers: [{name: c, image: x}]}", nil, 30},
		{line(), "spec: {nodeName: node1, terminationGracePeriodSeconds: 5, containers: [{name: c, image: x}]}", nil, 5},
		{line(), "spec: {nodeName: node1, containers: [{name: c, image: x}]}", ptr.To[int64](7), 7},
		{line(), "spec: {nodeName: node1, containers: [{name: c, image: x}]}", ptr.To[int64](-3), 1},
		{line(), "spec: {nodeName: node1, containers: [{name: c, image: x}]}\nstatus: {phase: Succeeded}", nil, 0},
	} {
		obj := decodeYAML(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"+tc.pod)
		Pods(nil, nil).Hooks.(registry.Defaulter).Default(obj)
		if got := h.GracePeriod(obj, &metav1.DeleteOptions{GracePeriodSeconds: tc.asked}); got != tc.want {
			t.Errorf("%s: grace period %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestPodValidation(t *testing.T) {
	const c = "containers: [{name: app, image: busybox}]"
	checkValidation(t, Pods(nil, nil), []validateCase{
		{name: line(), obj: "spec: {" + c + "}"},
		{name: line(), obj: "spec: {containers: []}", want: []string{"spec.containers: Required value"}},
		{name: line(), obj: "spec: {containers: [{name: Bad_Name, image: x}]}", want: []string{
			`spec.containers[0].name: Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`}},
		{name: line(), obj: "spec: {containers: [{name: app}]}", want: []string{"spec.containers[0].image: Required value"}},
		{name: line(), obj: "spec: {initContainers: [{name: app, image: x}], " + c + "}", want: []string{`spec.initContainers[0].name: Duplicate value: "app"`}},
		{name: line(), obj: "spec: {volumes: [{name: v, emptyDir: {}}, {name: v, emptyDir: {}}], " + c + "}", want: []string{`spec.volumes[1].name: Duplicate value: "v"`}},
		{name: line(), obj: "spec: {volumes: [{name: v, emptyDir: {}, secret: {secretName: s}}], " + c + "}", want: []string{"spec.volumes[0].secret: Forbidden: may not specify more than 1 volume type"}},
		{name: line(), obj: "spec: {containers: [{name: app, image: x, volumeMounts: [{name: ghost, mountPath: /x}]}]}", want: []string{`spec.containers[0].volumeMounts[0].name: Not found: "ghost"`}},
		{name: line(), obj: "spec: {restartPolicy: Sometimes, " + c + "}", want: []string{`spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`}},
		{name: line(), obj: "spec: {dnsPolicy: Cloudy, " + c + "}", want: []string{`spec.dnsPolicy: Unsupported value: "Cloudy": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`}},
		{name: line(), obj: "spec: {containers: [{name: app, image: x, env: [{name: '', value: v}]}]}", want: []string{"spec.containers[0].env[0].name: Required value"}},
		{name: line(), obj: "spec: {containers: [{name: app, image: x, resources: {requests: {cpu: 2}, limits: {cpu: 1}}}]}", want: []string{
			`spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`}},
		// Updates: images and the deadline may change, little else.
		{name: line(), old: "spec: {containers: [{name: app, image: busybox:1}]}", obj: "spec: {containers: [{name: app, image: busybox:2}]}"},
		{name: line(), old: "spec: {activeDeadlineSeconds: 10, " + c + "}", obj: "spec: {activeDeadlineSeconds: 20, " + c + "}", want: []string{
			"spec.activeDeadlineSeconds: Invalid value: 20: must be less than or equal to previous value"}},
		{name: line(), old: "spec: {tolerations: [{key: a, operator: Exists}], " + c + "}", obj: "spec: {" + c + "}", want: []string{
			"spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"}},
	})
	// A change of anything else lists what may change, then the
	// difference.
	obj := decodeYAML(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: app, image: x, command: [sh]}]}")
	old := decodeYAML(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: app, image: x}]}")
	def := Pods(nil, nil)
	def.Hooks.(registry.CreatePreparer).PrepareForCreate(old)
	def.Hooks.(registry.UpdatePreparer).PrepareForUpdate(obj, old)
	errs := def.Hooks.(registry.Validator).ValidateUpdate(obj, old)
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`") || !strings.Contains(errs[0].Error(), `"sh"`) {
		t.Errorf("update of the command: %v", errs)
	}
}

func TestPodTable(t *testing.T) {
	def := Pods(nil, nil)
	for _, tc := range []struct{ name, pod, want string }{
		{line(), "spec: {containers: [{name: c, image: x}]}\nstatus: {phase: Pending}", "p 0/1 Pending 0 <none> <none> <none> <none>"},
		{line(), "spec: {nodeName: node1, readinessGates: [{conditionType: G}], containers: [{name: c, image: x}, {name: d, image: x}]}\n" +
			"status: {phase: Running, podIPs: [{ip: 10.0.0.1}], conditions: [{type: G, status: 'True'}], containerStatuses: [{name: c, ready: true, restartCount: 1, state: {running: {}}}, {name: d, state: {waiting: {reason: CrashLoopBackOff}}}]}",
			"p 1/2 CrashLoopBackOff 1 10.0.0.1 node1 <none> 1/1"},
		{line(), "spec: {containers: [{name: c, image: x}]}\nstatus: {phase: Pending, conditions: [{type: PodScheduled, status: 'False', reason: SchedulingGated}]}", "p 0/1 SchedulingGated 0 <none> <none> <none> <none>"},
		{line(), "spec: {initContainers: [{name: i, image: x}], containers: [{name: c, image: x}]}\nstatus: {phase: Pending, initContainerStatuses: [{name: i, state: {waiting: {reason: PodInitializing}}}]}", "p 0/1 Init:0/1 0 <none> <none> <none> <none>"},
	} {
		obj := decodeYAML(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, creationTimestamp: '2026-01-01T00:00:00Z'}\n"+tc.pod)
		cells := def.Hooks.(registry.TablePrinter).TableRow(obj)
		if _, _, err := def.Hooks.(podHooks).Decode(obj); err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, c := range cells {
			if i == 4 {
				continue // the age
			}
			got = append(got, c.(string))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: row %q, want %q", tc.name, strings.Join(got, " "), tc.want)
		}
	}
}

// fakePodStore keeps pods by namespace/name for the subresources.
type fakePodStore struct {
	pods    map[string]*corev1.Pod
	deleted []string
}

func (f *fakePodStore) UpdatePod(_ context.Context, ns, name string, change func(*corev1.Pod) error) error {
	p, ok := f.pods[ns+"/"+name]
	if !ok {
		return apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
	next := p.DeepCopy()
	if err := change(next); err != nil {
		return err
	}
	f.pods[ns+"/"+name] = next
	return nil
}

func (f *fakePodStore) DeletePod(_ context.Context, ns, name string, _ *metav1.DeleteOptions) error {
	f.deleted = append(f.deleted, ns+"/"+name)
	return nil
}

func (f *fakePodStore) DisruptionBudgets(context.Context, string) ([]policyv1.PodDisruptionBudget, error) {
	return []policyv1.PodDisruptionBudget{{
		ObjectMeta: metav1.ObjectMeta{Name: "pdb", Generation: 1},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1},
	}}, nil
}

func TestPodSubresources(t *testing.T) {
	st := &fakePodStore{pods: map[string]*corev1.Pod{
		"ns/free":    {ObjectMeta: metav1.ObjectMeta{Name: "free", Namespace: "ns"}},
		"ns/bound":   {ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: "n1"}},
		"ns/running": {ObjectMeta: metav1.ObjectMeta{Name: "running", Namespace: "ns", Labels: map[string]string{"app": "web"}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
	}}
	h := Pods(nil, st).Hooks.(podHooks)
	parent := func(name string) map[string]any {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st.pods["ns/"+name])
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name, sub, pod string
		body           map[string]any
		err            string
	}{
		{line(), "binding", "free", map[string]any{"metadata": map[string]any{"name": "free"}, "target": map[string]any{"name": "n2"}}, ""},
		{line(), "binding", "free", map[string]any{"metadata": map[string]any{"name": "free"}, "target": map[string]any{"name": "n3"}}, `Operation cannot be fulfilled on pods/binding "free": pod free is already assigned to node "n2"`},
		{line(), "binding", "free", map[string]any{"metadata": map[string]any{"name": "other"}, "target": map[string]any{"name": "n3"}}, "name in URL does not match name in Binding object"},
		{line(), "binding", "free", map[string]any{"metadata": map[string]any{"name": "free"}, "target": map[string]any{"kind": "Pod"}}, `[target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>", target.name: Required value]`},
		{line(), "eviction", "running", map[string]any{"metadata": map[string]any{"name": "running"}}, "Cannot evict pod as it would violate the pod's disruption budget."},
		{line(), "eviction", "bound", map[string]any{"metadata": map[string]any{"name": "bound"}}, ""},
	} {
		_, err := h.CreateSubresource(ctx, tc.sub, parent(tc.pod), tc.body)
		if got := fmt.Sprint(err); (tc.err == "" && err != nil) || (tc.err != "" && got != tc.err) {
			t.Errorf("%s: %s error %v, want %q", tc.name, tc.sub, err, tc.err)
		}
	}
	if st.pods["ns/free"].Spec.NodeName != "n2" || st.pods["ns/free"].Status.Conditions[0].Type != corev1.PodScheduled {
		t.Errorf("bound pod %+v", st.pods["ns/free"])
	}
	if len(st.deleted) != 1 || st.deleted[0] != "ns/bound" {
		t.Errorf("evicted %v", st.deleted)
	}

	for _, tc := range []struct {
		name, sub, pod, query string
		code                  int32
		msg                   string
	}{
		{line(), "log", "spec: {containers: [{name: a, image: x}]}", "", 0, ""},
		{line(), "log", "spec: {containers: [{name: a, image: x}, {name: b, image: x}]}", "", 400, "a container name must be specified for pod p, choose one of: [a b]"},
		{line(), "log", "spec: {containers: [{name: a, image: x}]}", "container=z", 400, "container z is not valid for pod p"},
		{line(), "exec", "spec: {containers: [{name: a, image: x}]}", "", 400, "pod p does not have a host assigned"},
		{line(), "exec", "spec: {nodeName: n1, containers: [{name: a, image: x}]}", "", 404, `pods "n1" not found`},
		{line(), "proxy", "spec: {containers: [{name: a, image: x}]}", "", 400, "address not allowed"},
	} {
		obj := decodeYAML(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\n"+tc.pod)
		q, _ := url.ParseQuery(tc.query)
		_, _, err := h.Connect(ctx, tc.sub, obj, q)
		var code int32
		msg := ""
		if se, ok := err.(*apierrors.StatusError); ok {
			code, msg = se.ErrStatus.Code, se.ErrStatus.Message
		} else if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if code != tc.code || msg != tc.msg {
			t.Errorf("%s: %s answered %d %q, want %d %q", tc.name, tc.sub, code, msg, tc.code, tc.msg)
		}
	}
}
