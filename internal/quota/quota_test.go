package quota

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func amounts(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func podObj(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

var (
	pods       = schema.GroupResource{Resource: "pods"}
	claims     = schema.GroupResource{Resource: "persistentvolumeclaims"}
	configMaps = schema.GroupResource{Resource: "configmaps"}
	services   = schema.GroupResource{Resource: "services"}
	widgets    = schema.GroupResource{Group: "example.com", Resource: "widgets"}
)

func TestUsage(t *testing.T) {
	for _, c := range []struct {
		name string
		gr   schema.GroupResource
		obj  map[string]any
		want corev1.ResourceList
	}{
		{"custom resource", widgets, nil, amounts("count/widgets.example.com", "1")},
		{"config map", configMaps, nil, amounts("count/configmaps", "1", "configmaps", "1")},
		{"cluster IP service", services, map[string]any{"spec": map[string]any{"type": "ClusterIP", "ports": []any{map[string]any{}}}},
			amounts("count/services", "1", "services", "1", "services.loadbalancers", "0", "services.nodeports", "0")},
		{"node port service", services, map[string]any{"spec": map[string]any{"type": "NodePort", "ports": []any{map[string]any{}, map[string]any{}}}},
			amounts("count/services", "1", "services", "1", "services.loadbalancers", "0", "services.nodeports", "2")},
		{"load balancer", services, map[string]any{"spec": map[string]any{"type": "LoadBalancer", "ports": []any{map[string]any{}}}},
			amounts("count/services", "1", "services", "1", "services.loadbalancers", "1", "services.nodeports", "1")},
		{"load balancer without node ports", services, map[string]any{"spec": map[string]any{"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false, "ports": []any{map[string]any{}}}},
			amounts("count/services", "1", "services", "1", "services.loadbalancers", "1", "services.nodeports", "0")},
	} {
		if got, err := Usage(c.gr, c.obj, time.Now()); err != nil || !Equal(got, c.want) {
			t.Errorf("%s: usage %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCharge(t *testing.T) {
	quota := func(hard, statusHard, used corev1.ResourceList) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: hard},
			Status: corev1.ResourceQuotaStatus{Hard: statusHard, Used: used}}
	}
	var cm map[string]any
	nodePort := map[string]any{"spec": map[string]any{"type": "NodePort", "ports": []any{map[string]any{}}}}
	clusterIP := map[string]any{"spec": map[string]any{"type": "ClusterIP", "ports": []any{map[string]any{}}}}
	for _, c := range []struct {
		name    string
		q       *corev1.ResourceQuota
		u       map[string]any      // a ConfigMap or a Service
		want    corev1.ResourceList // nil: nothing charged
		wantErr string
	}{
		{"not limited", quota(amounts("secrets", "2"), amounts("secrets", "2"), amounts("secrets", "0")), cm, nil, ""},
		{"not yet counted: limits nothing", quota(amounts("configmaps", "2"), nil, nil), cm, nil, ""},
		{"charged, other usage kept", quota(amounts("configmaps", "2", "secrets", "1"), amounts("configmaps", "2", "secrets", "1"), amounts("configmaps", "1", "secrets", "1")),
			cm, amounts("configmaps", "2", "secrets", "1"), ""},
		{"exceeded", quota(amounts("configmaps", "2"), amounts("configmaps", "2"), amounts("configmaps", "2")), cm, nil,
			"exceeded quota: q, requested: configmaps=1, used: configmaps=2, limited: configmaps=2"},
		{"both names, one exceeded", quota(amounts("configmaps", "5", "count/configmaps", "1"), amounts("configmaps", "5", "count/configmaps", "1"),
			amounts("configmaps", "1", "count/configmaps", "1")), cm, nil,
			"exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1"},
		{"usage unknown", quota(amounts("configmaps", "2", "count/configmaps", "2"), amounts("configmaps", "2", "count/configmaps", "2"), amounts("configmaps", "0")), cm, nil,
			"status unknown for quota: q, resources: configmaps,count/configmaps"},
		{"node ports past a full quota", quota(amounts("services.nodeports", "1"), amounts("services.nodeports", "1"), amounts("services.nodeports", "1")),
			nodePort, nil,
			"exceeded quota: q, requested: services.nodeports=1, used: services.nodeports=1, limited: services.nodeports=1"},
		{"no node ports: a full quota of them is not charged", quota(amounts("services.nodeports", "1"), amounts("services.nodeports", "1"), amounts("services.nodeports", "1")),
			clusterIP, nil, ""},
		{"scoped quotas count pods only", &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: amounts("configmaps", "0"), Scopes: []corev1.ResourceQuotaScope{"BestEffort"}},
			Status: corev1.ResourceQuotaStatus{Hard: amounts("configmaps", "0"), Used: amounts("configmaps", "0")}}, cm, nil, ""},
	} {
		gr := configMaps
		if c.u != nil {
			gr = services
		}
		w, err := NewWrite(gr, "", c.u, nil, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		checkCharge(t, c.name, c.q, w, c.want, c.wantErr)
	}
}

// TestChargeUpdate: a Service's update is charged what it adds; other
// objects' updates nothing.
func TestChargeUpdate(t *testing.T) {
	svc := func(typ string, ports int) map[string]any {
		return map[string]any{"spec": map[string]any{"type": typ, "ports": make([]any, ports)}}
	}
	hard := amounts("services", "9", "services.nodeports", "9", "services.loadbalancers", "9", "configmaps", "9")
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: hard},
		Status: corev1.ResourceQuotaStatus{Hard: hard, Used: amounts("services", "1", "services.nodeports", "1", "services.loadbalancers", "0", "configmaps", "1")}}
	for _, c := range []struct {
		name     string
		gr       schema.GroupResource
		obj, old map[string]any
		want     corev1.ResourceList // nil: nothing charged
	}{
		{"cluster IP to node port", services, svc("NodePort", 2), svc("ClusterIP", 2), amounts("services", "1", "services.nodeports", "3", "services.loadbalancers", "0", "configmaps", "1")},
		{"a port more", services, svc("LoadBalancer", 2), svc("LoadBalancer", 1), amounts("services", "1", "services.nodeports", "2", "services.loadbalancers", "0", "configmaps", "1")},
		{"node port to load balancer", services, svc("LoadBalancer", 1), svc("NodePort", 1), amounts("services", "1", "services.nodeports", "1", "services.loadbalancers", "1", "configmaps", "1")},
		{"fewer ports", services, svc("NodePort", 1), svc("NodePort", 3), nil},
		{"a config map", configMaps, map[string]any{}, map[string]any{}, nil},
	} {
		w, err := NewWrite(c.gr, "", c.obj, c.old, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if w == nil {
			if c.want != nil {
				t.Errorf("%s: not charged, want %v", c.name, c.want)
			}
			continue
		}
		got, err := Charge(q, w)
		if err != nil || !Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}

type counter map[schema.GroupResource]int64

func (c counter) Served(gr schema.GroupResource) bool { _, ok := c[gr]; return ok }
func (c counter) Count(_ context.Context, gr schema.GroupResource, _ string) (int64, error) {
	return c[gr], nil
}
func (c counter) List(_ context.Context, gr schema.GroupResource, _ string) ([]map[string]any, error) {
	switch gr {
	case services:
		return []map[string]any{
			{"spec": map[string]any{"type": "NodePort", "ports": []any{map[string]any{}}}},
			{"spec": map[string]any{"type": "LoadBalancer", "ports": []any{map[string]any{}, map[string]any{}}}},
		}, nil
	case pods:
		return []map[string]any{
			podObj(`{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"250m"}}}]}}`),
			podObj(`{"spec":{"activeDeadlineSeconds":5,"containers":[{"name":"a","resources":{"requests":{"cpu":"500m"}}}]}}`),
			podObj(`{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}}]},"status":{"phase":"Succeeded"}}`),
		}, nil
	}
	return nil, nil
}

// TestStatus: what is served is counted, what is not is 0,
// a name nothing counts keeps its usage, and hard is the spec's.
func TestStatus(t *testing.T) {
	q := &corev1.ResourceQuota{
		Spec: corev1.ResourceQuotaSpec{Hard: amounts("configmaps", "10", "count/widgets.example.com", "5", "services.nodeports", "9",
			"services.loadbalancers", "9", "pods", "5", "requests.cpu", "1", "count/gadgets.example.com", "3", "example.com/other", "4",
			"count/replicationcontrollers", "2")},
		Status: corev1.ResourceQuotaStatus{Used: amounts("example.com/other", "2", "configmaps", "7", "stale", "1")},
	}
	st, err := Status(context.Background(), q, counter{configMaps: 3, widgets: 2, services: 2}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := amounts("configmaps", "3", "count/widgets.example.com", "2", "services.nodeports", "3", "services.loadbalancers", "1",
		"pods", "0", "requests.cpu", "0", "example.com/other", "2", "count/replicationcontrollers", "0")
	if !Equal(st.Used, want) || !Equal(st.Hard, q.Spec.Hard) {
		t.Errorf("status %v / %v, want used %v and the spec's hard", st.Hard, st.Used, want)
	}
	if rs := Resources(q, counter{configMaps: 3, widgets: 2, services: 2}.Served); len(rs) != 3 {
		t.Errorf("resources %v, want configmaps, widgets and services", rs)
	}
	if Counted(q, counter{configMaps: 0}.Served) {
		t.Error("a quota whose status lacks its hard list reported counted")
	}
	q.Status = st
	if !Counted(q, counter{configMaps: 3, widgets: 2, services: 2}.Served) {
		t.Error("a quota just counted reported not counted")
	}
}

// checkCharge fails the case named name unless charging w against q
// gives the usage want, or the error wantErr when it is not "".
func checkCharge(t *testing.T, name string, q *corev1.ResourceQuota, w *Write, want corev1.ResourceList, wantErr string) {
	t.Helper()
	got, err := Charge(q, w)
	switch {
	case wantErr != "":
		if err == nil || err.Error() != wantErr {
			t.Errorf("%s: error %v, want %q", name, err, wantErr)
		}
	case err != nil:
		t.Errorf("%s: %v", name, err)
	case want == nil && got != nil, want != nil && !Equal(got, want):
		t.Errorf("%s: used %v, want %v", name, got, want)
	}
}
