package quota

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodUsage: what pods of several shapes count for.
func TestPodUsage(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, pod string
		want      corev1.ResourceList
	}{
		{"best effort", `{"spec":{"containers":[{"name":"a"}]}}`, amounts("count/pods", "1", "pods", "1")},
		{"requests and limits summed", `{"spec":{"containers":[
			{"name":"a","resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"200m","memory":"128Mi"}}},
			{"name":"b","resources":{"requests":{"cpu":"300m","ephemeral-storage":"1Gi"},"limits":{"cpu":"1"}}}]}}`,
			amounts("count/pods", "1", "pods", "1", "cpu", "400m", "requests.cpu", "400m", "limits.cpu", "1200m",
				"memory", "64Mi", "requests.memory", "64Mi", "limits.memory", "128Mi",
				"ephemeral-storage", "1Gi", "requests.ephemeral-storage", "1Gi")},
		{"an init container asking more wins", `{"spec":{"initContainers":[{"name":"i","resources":{"requests":{"cpu":"2"}}}],
			"containers":[{"name":"a","resources":{"requests":{"cpu":"500m","memory":"1Gi"}}}]}}`,
			amounts("count/pods", "1", "pods", "1", "cpu", "2", "requests.cpu", "2", "memory", "1Gi", "requests.memory", "1Gi")},
		{"sidecars add up, and to later init containers", `{"spec":{"initContainers":[
			{"name":"s","restartPolicy":"Always","resources":{"requests":{"cpu":"1"}}},
			{"name":"i","resources":{"requests":{"cpu":"1500m"}}}],
			"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}}]}}`,
			amounts("count/pods", "1", "pods", "1", "cpu", "2500m", "requests.cpu", "2500m")},
		{"overhead adds to requests, and to limits set", `{"spec":{"overhead":{"cpu":"100m","memory":"10Mi"},
			"containers":[{"name":"a","resources":{"requests":{"cpu":"1","memory":"1Gi"},"limits":{"cpu":"2"}}}]}}`,
			amounts("count/pods", "1", "pods", "1", "cpu", "1100m", "requests.cpu", "1100m", "limits.cpu", "2100m",
				"memory", "1034Mi", "requests.memory", "1034Mi")},
		{"pod-level resources replace the containers'", `{"spec":{"resources":{"requests":{"cpu":"3"},"limits":{"cpu":"4"}},
			"containers":[{"name":"a","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}`,
			amounts("count/pods", "1", "pods", "1", "cpu", "3", "requests.cpu", "3", "limits.cpu", "4", "memory", "1Gi", "requests.memory", "1Gi")},
		{"huge pages and extended resources", `{"spec":{"containers":[{"name":"a","resources":{
			"requests":{"hugepages-2Mi":"4Mi","example.com/gpu":"2"},"limits":{"hugepages-2Mi":"4Mi","example.com/gpu":"2"}}}]}}`,
			amounts("count/pods", "1", "pods", "1", "hugepages-2Mi", "4Mi", "requests.hugepages-2Mi", "4Mi", "requests.example.com/gpu", "2")},
		{"what runs counts when more than the spec", `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}}]},
			"status":{"containerStatuses":[{"name":"a","allocatedResources":{"cpu":"2"}}]}}`,
			amounts("count/pods", "1", "pods", "1", "cpu", "2", "requests.cpu", "2")},
		{"succeeded: the object only", `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}}]},"status":{"phase":"Succeeded"}}`,
			amounts("count/pods", "1")},
		{"failed: the object only", `{"spec":{"containers":[{"name":"a"}]},"status":{"phase":"Failed"}}`, amounts("count/pods", "1")},
		{"deleted past its grace period", `{"metadata":{"deletionTimestamp":"2026-11-30T11:59:00Z","deletionGracePeriodSeconds":30},
			"spec":{"containers":[{"name":"a"}]}}`, amounts("count/pods", "1")},
		{"deleted, within its grace period", `{"metadata":{"deletionTimestamp":"2026-11-30T11:59:50Z","deletionGracePeriodSeconds":30},
			"spec":{"containers":[{"name":"a"}]}}`, amounts("count/pods", "1", "pods", "1")},
	} {
		got, err := Usage(pods, podObj(c.pod), now)
		if err != nil || !Equal(got, c.want) {
			t.Errorf("%s: usage %v (%v), want %v", c.name, got, err, c.want)
		}
	}
}

// TestClaimUsage: a claim's storage, per class, the larger of asked
// and allocated.
func TestClaimUsage(t *testing.T) {
	for _, c := range []struct {
		name, claim string
		want        corev1.ResourceList
	}{
		{"no class", `{"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`,
			amounts("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1", "requests.storage", "1Gi")},
		{"a class", `{"spec":{"storageClassName":"gold","resources":{"requests":{"storage":"2Gi"}}}}`,
			amounts("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1", "requests.storage", "2Gi",
				"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1", "gold.storageclass.storage.k8s.io/requests.storage", "2Gi")},
		{"the beta annotation wins", `{"metadata":{"annotations":{"volume.beta.kubernetes.io/storage-class":"silver"}},
			"spec":{"storageClassName":"gold","resources":{"requests":{"storage":"1Gi"}}}}`,
			amounts("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1", "requests.storage", "1Gi",
				"silver.storageclass.storage.k8s.io/persistentvolumeclaims", "1", "silver.storageclass.storage.k8s.io/requests.storage", "1Gi")},
		{"allocated more", `{"spec":{"resources":{"requests":{"storage":"1Gi"}}},"status":{"allocatedResources":{"storage":"3Gi"}}}`,
			amounts("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1", "requests.storage", "3Gi")},
		{"a fraction of a byte rounds up", `{"spec":{"resources":{"requests":{"storage":"1500m"}}}}`,
			amounts("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1", "requests.storage", "2")},
	} {
		got, err := Usage(claims, podObj(c.claim), time.Now())
		if err != nil || !Equal(got, c.want) {
			t.Errorf("%s: usage %v (%v), want %v", c.name, got, err, c.want)
		}
	}
}

// TestScopes: which pods and claims a scope selects.
func TestScopes(t *testing.T) {
	exists := func(scope corev1.ResourceQuotaScope) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: scope, Operator: corev1.ScopeSelectorOpExists}
	}
	priority := func(op corev1.ScopeSelectorOperator, values ...string) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}
	}
	const (
		bestEffort  = `{"spec":{"containers":[{"name":"a"}]}}`
		burstable   = `{"spec":{"containers":[{"name":"a","resources":{"requests":{"memory":"1Gi"}}}]}}`
		terminating = `{"spec":{"activeDeadlineSeconds":10,"containers":[{"name":"a"}]}}`
		high        = `{"spec":{"priorityClassName":"high","containers":[{"name":"a"}]}}`
		crossNS     = `{"spec":{"affinity":{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,
			"podAffinityTerm":{"topologyKey":"k","namespaceSelector":{}}}]}},"containers":[{"name":"a"}]}}`
	)
	for _, c := range []struct {
		name string
		sel  corev1.ScopedResourceSelectorRequirement
		obj  string
		want bool
	}{
		{"best effort is BestEffort", exists(corev1.ResourceQuotaScopeBestEffort), bestEffort, true},
		{"burstable is not BestEffort", exists(corev1.ResourceQuotaScopeBestEffort), burstable, false},
		{"burstable is NotBestEffort", exists(corev1.ResourceQuotaScopeNotBestEffort), burstable, true},
		{"a deadline is Terminating", exists(corev1.ResourceQuotaScopeTerminating), terminating, true},
		{"no deadline is not Terminating", exists(corev1.ResourceQuotaScopeTerminating), bestEffort, false},
		{"no deadline is NotTerminating", exists(corev1.ResourceQuotaScopeNotTerminating), bestEffort, true},
		{"priority class In", priority(corev1.ScopeSelectorOpIn, "high", "low"), high, true},
		{"priority class not In", priority(corev1.ScopeSelectorOpIn, "low"), high, false},
		{"no priority class is not In", priority(corev1.ScopeSelectorOpIn, "high"), bestEffort, false},
		{"no priority class is NotIn", priority(corev1.ScopeSelectorOpNotIn, "high"), bestEffort, true},
		{"priority class NotIn", priority(corev1.ScopeSelectorOpNotIn, "high"), high, false},
		{"priority class Exists", priority(corev1.ScopeSelectorOpExists), high, true},
		{"no priority class DoesNotExist", priority(corev1.ScopeSelectorOpDoesNotExist), bestEffort, true},
		{"cross-namespace anti-affinity", exists(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), crossNS, true},
		{"no affinity", exists(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), bestEffort, false},
		{"a pod has no volume attributes class", exists(corev1.ResourceQuotaScopeVolumeAttributesClass), bestEffort, false},
	} {
		o, err := decode(pods, podObj(c.obj))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := o.inScope([]corev1.ScopedResourceSelectorRequirement{c.sel}); err != nil || got != c.want {
			t.Errorf("%s: %v (%v), want %v", c.name, got, err, c.want)
		}
	}
	vac := corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopeVolumeAttributesClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"fast"}}
	for _, c := range []struct {
		name  string
		claim string
		want  bool
	}{
		{"asked for", `{"spec":{"volumeAttributesClassName":"fast"}}`, true},
		{"being moved to", `{"spec":{"volumeAttributesClassName":"slow"},"status":{"modifyVolumeStatus":{"targetVolumeAttributesClassName":"fast","status":"InProgress"}}}`, true},
		{"another", `{"spec":{"volumeAttributesClassName":"slow"}}`, false},
		{"none", `{"spec":{}}`, false},
	} {
		o, err := decode(claims, podObj(c.claim))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := o.inScope([]corev1.ScopedResourceSelectorRequirement{vac}); err != nil || got != c.want {
			t.Errorf("claim %s: %v (%v), want %v", c.name, got, err, c.want)
		}
	}
}

// TestChargePods: a pod's create against quotas of compute, with and
// without scopes, and the refusals worded as upstream's.
func TestChargePods(t *testing.T) {
	q := func(used corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
		hard := amounts("pods", "2", "requests.cpu", "1", "limits.memory", "1Gi")
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute"},
			Spec:   corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes},
			Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
	}
	zero := amounts("pods", "0", "requests.cpu", "0", "limits.memory", "0")
	const sized = `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"600m"},"limits":{"memory":"512Mi"}}}]}}`
	for _, c := range []struct {
		name    string
		q       *corev1.ResourceQuota
		pod     string
		want    corev1.ResourceList
		wantErr string
	}{
		{"charged", q(zero), sized, amounts("pods", "1", "requests.cpu", "600m", "limits.memory", "512Mi"), ""},
		{"exceeded", q(amounts("pods", "1", "requests.cpu", "600m", "limits.memory", "512Mi")), sized, nil,
			"exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"},
		{"must specify", q(zero), `{"spec":{"initContainers":[{"name":"init"}],"containers":[{"name":"b","resources":{"limits":{"memory":"1Mi"}}},{"name":"a"}]}}`, nil,
			"failed quota: compute: must specify limits.memory for: a,init; requests.cpu for: a,b,init"},
		{"pod-level resources need no container's", q(zero), `{"spec":{"resources":{"requests":{"cpu":"100m"},"limits":{"memory":"100Mi"}},"containers":[{"name":"a"}]}}`,
			amounts("pods", "1", "requests.cpu", "100m", "limits.memory", "100Mi"), ""},
		{"out of scope: not charged, not checked", q(zero, corev1.ResourceQuotaScopeTerminating), `{"spec":{"containers":[{"name":"a"}]}}`, nil, ""},
		{"in scope", q(zero, corev1.ResourceQuotaScopeNotTerminating), sized, amounts("pods", "1", "requests.cpu", "600m", "limits.memory", "512Mi"), ""},
		{"usage unknown", q(amounts("pods", "0")), sized, nil, "status unknown for quota: compute, resources: limits.memory,pods,requests.cpu"},
	} {
		w, err := NewWrite(pods, "", podObj(c.pod), nil, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		checkCharge(t, c.name, c.q, w, c.want, c.wantErr)
	}
}

// TestChargeClaimResize: a claim grown is charged the difference; grown
// by its status (what was allocated to it), charged but never refused.
func TestChargeClaimResize(t *testing.T) {
	hard := amounts("requests.storage", "5Gi")
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "storage"}, Spec: corev1.ResourceQuotaSpec{Hard: hard},
		Status: corev1.ResourceQuotaStatus{Hard: hard, Used: amounts("requests.storage", "2Gi")}}
	old := podObj(`{"metadata":{"resourceVersion":"5"},"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`)
	for _, c := range []struct {
		name, sub, claim string
		want             corev1.ResourceList
		wantErr          string
	}{
		{"grown", "", `{"spec":{"resources":{"requests":{"storage":"3Gi"}}}}`, amounts("requests.storage", "3Gi"), ""},
		{"shrunk: nothing", "", `{"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`, nil, ""},
		{"past the limit", "", `{"spec":{"resources":{"requests":{"storage":"8Gi"}}}}`, nil,
			"exceeded quota: storage, requested: requests.storage=6Gi, used: requests.storage=2Gi, limited: requests.storage=5Gi"},
		{"allocated more, by status: past the limit, charged", "status",
			`{"spec":{"resources":{"requests":{"storage":"2Gi"}}},"status":{"allocatedResources":{"storage":"8Gi"}}}`, amounts("requests.storage", "8Gi"), ""},
	} {
		w, err := NewWrite(claims, c.sub, podObj(c.claim), old, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		got, err := Charge(q, w)
		if c.wantErr != "" {
			if err == nil || err.Error() != c.wantErr {
				t.Errorf("%s: error %v, want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil || !Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("%s: %v (%v), want %v", c.name, got, err, c.want)
		}
	}
	if w, err := NewWrite(pods, "status", podObj(`{}`), podObj(`{}`), time.Now()); w != nil || err != nil {
		t.Errorf("a pod's status write is charged: %v, %v", w, err)
	}
}

// TestChargePodResize: a pod's resize is charged what it adds and
// refused past a limit; one that adds nothing is charged nothing; a
// pod's other updates are not charged.
func TestChargePodResize(t *testing.T) {
	hard := amounts("requests.cpu", "1", "limits.cpu", "2")
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute"}, Spec: corev1.ResourceQuotaSpec{Hard: hard},
		Status: corev1.ResourceQuotaStatus{Hard: hard, Used: amounts("requests.cpu", "500m", "limits.cpu", "1")}}
	pod := func(req, lim string) map[string]any {
		return podObj(`{"metadata":{"resourceVersion":"5"},"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"` + req + `"},"limits":{"cpu":"` + lim + `"}}}]}}`)
	}
	old := pod("200m", "400m")
	for _, c := range []struct {
		name    string
		pod     map[string]any
		want    corev1.ResourceList
		wantErr string
	}{
		{"grown: charged the difference", pod("500m", "1"), amounts("requests.cpu", "800m", "limits.cpu", "1600m"), ""},
		{"shrunk: nothing", pod("100m", "200m"), nil, ""},
		{"past the limit", pod("1", "1"), nil,
			"exceeded quota: compute, requested: requests.cpu=800m, used: requests.cpu=500m, limited: requests.cpu=1"},
	} {
		w, err := NewWrite(pods, "resize", c.pod, old, time.Now())
		if err != nil || w == nil {
			t.Fatalf("%s: write %v, %v", c.name, w, err)
		}
		checkCharge(t, c.name, q, w, c.want, c.wantErr)
	}
	if w, err := NewWrite(pods, "", pod("1", "1"), old, time.Now()); w != nil || err != nil {
		t.Errorf("a pod's update is charged: %v, %v", w, err)
	}
}

// TestStatusScoped: a scoped quota counts the pods in its scope only,
// and other kinds not at all.
func TestStatusScoped(t *testing.T) {
	q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{
		Hard:   amounts("pods", "9", "count/pods", "9", "requests.cpu", "9"),
		Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}}}
	st, err := Status(context.Background(), q, counter{pods: 3}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// Of the counter's pods: one live, one terminating, one succeeded.
	if want := amounts("pods", "1", "count/pods", "2", "requests.cpu", "250m"); !Equal(st.Used, want) {
		t.Errorf("used %v, want %v", st.Used, want)
	}
}
