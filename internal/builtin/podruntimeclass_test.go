package builtin

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/registry"
)

// fakeRuntimeClasses is a pod source that also looks up runtime
// classes.
type fakeRuntimeClasses struct {
	fakePodSource
	classes map[string]*nodev1.RuntimeClass
}

func (f fakeRuntimeClasses) RuntimeClass(_ context.Context, name string) (*nodev1.RuntimeClass, error) {
	if rc, ok := f.classes[name]; ok {
		return rc, nil
	}
	return nil, apierrors.NewNotFound(nodev1.Resource("runtimeclasses"), name)
}

func TestPodRuntimeClassAdmission(t *testing.T) {
	src := fakeRuntimeClasses{
		fakePodSource: fakePodSource{accounts: map[string]*corev1.ServiceAccount{"ns/default": {ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns"}}}},
		classes: map[string]*nodev1.RuntimeClass{
			"plain": {ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Handler: "runc"},
			"kata": {ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata",
				Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{"cpu": resource.MustParse("100m")}},
				Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"pool": "kata"},
					Tolerations: []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpExists}}}},
		},
	}
	def := testPods(src)
	const c = "containers: [{name: app, image: busybox}]"
	for _, tc := range []struct {
		name, spec string
		admitErr   string // of AdmitCreate
		checkErr   string // of CheckCreateAdmission
		selector   string // the pod's node selector after admission
		tolerates  int    // how many tolerations it has after admission
	}{
		{name: line(), spec: "{runtimeClassName: nope, " + c + "}", admitErr: `pod rejected: RuntimeClass "nope" not found`},
		{name: line(), spec: "{runtimeClassName: plain, " + c + "}", tolerates: 2},
		// The class's toleration covers the pod's; the default ones stay.
		{name: line(), spec: "{runtimeClassName: kata, nodeSelector: {disk: ssd}, tolerations: [{key: pool, operator: Equal, value: x}], " + c + "}",
			selector: "disk=ssd,pool=kata", tolerates: 3},
		{name: line(), spec: "{runtimeClassName: kata, nodeSelector: {pool: other}, " + c + "}",
			admitErr: "conflict: runtimeClass.scheduling.nodeSelector[pool] = kata; pod.spec.nodeSelector[pool] = other"},
		{name: line(), spec: "{runtimeClassName: kata, overhead: {cpu: 1}, " + c + "}", admitErr: "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"},
		{name: line(), spec: "{runtimeClassName: plain, overhead: {cpu: 1}, " + c + "}", tolerates: 2,
			checkErr: "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := decodeYAML(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec: "+tc.spec)
			def.Hooks.(registry.Defaulter).Default(obj)
			err := def.Hooks.(registry.CreateAdmitter).AdmitCreate(context.Background(), obj)
			if got := errText(err); got != tc.admitErr {
				t.Fatalf("AdmitCreate: %q, want %q", got, tc.admitErr)
			}
			if err != nil {
				return
			}
			if got := errText(def.Hooks.(registry.CreateAdmissionChecker).CheckCreateAdmission(context.Background(), obj)); got != tc.checkErr {
				t.Errorf("CheckCreateAdmission: %q, want %q", got, tc.checkErr)
			}
			p, _, _ := def.Hooks.(podHooks).Decode(obj)
			var sel []string
			for _, k := range slices.Sorted(maps.Keys(p.Spec.NodeSelector)) {
				sel = append(sel, k+"="+p.Spec.NodeSelector[k])
			}
			if got := strings.Join(sel, ","); got != tc.selector {
				t.Errorf("node selector %q, want %q", got, tc.selector)
			}
			if len(p.Spec.Tolerations) != tc.tolerates {
				t.Errorf("tolerations %v, want %d", p.Spec.Tolerations, tc.tolerates)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
