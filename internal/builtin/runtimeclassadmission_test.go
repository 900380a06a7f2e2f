package builtin

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
)

func TestMergeTolerations(t *testing.T) {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	equal := func(key, value string) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpEqual, Value: value}
	}
	noExec := func(key string, s int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(s)}
	}
	for _, tc := range []struct {
		name          string
		first, second []corev1.Toleration
		want          []corev1.Toleration
	}{
		{"disjoint kept in order", []corev1.Toleration{equal("a", "1")}, []corev1.Toleration{equal("b", "2")}, []corev1.Toleration{equal("a", "1"), equal("b", "2")}},
		{"duplicates once", []corev1.Toleration{equal("a", "1")}, []corev1.Toleration{equal("a", "1")}, []corev1.Toleration{equal("a", "1")}},
		{"a later superset wins", []corev1.Toleration{equal("a", "1")}, []corev1.Toleration{exists("a", "")}, []corev1.Toleration{exists("a", "")}},
		{"an earlier superset wins", []corev1.Toleration{exists("", "")}, []corev1.Toleration{equal("a", "1"), exists("b", corev1.TaintEffectNoSchedule)}, []corev1.Toleration{exists("", "")}},
		{"effects differ", []corev1.Toleration{exists("a", corev1.TaintEffectNoSchedule)}, []corev1.Toleration{exists("a", corev1.TaintEffectNoExecute)}, []corev1.Toleration{exists("a", corev1.TaintEffectNoSchedule), exists("a", corev1.TaintEffectNoExecute)}},
		{"longer NoExecute keeps the shorter out", []corev1.Toleration{noExec("a", 10)}, []corev1.Toleration{noExec("a", 300)}, []corev1.Toleration{noExec("a", 300)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mergeTolerations(tc.first, tc.second)
			if !apiequality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}
