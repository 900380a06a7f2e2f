package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/storage"
)

// newNodePorts allocates from portRange in a fresh prefix of a real etcd.
func newNodePorts(t *testing.T, st storage.Interface, portRange string) *NodePorts {
	t.Helper()
	prefix := "/" + strings.ReplaceAll(t.Name(), "/", "_")
	a, err := NewNodePorts(portRange, st, prefix+"/servicenodeports/", prefix+"/services/")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// nodePortService is a Service of typ named name whose ports ask for
// nodePorts (0: none), numbered 80 on.
func nodePortService(name, typ string, nodePorts ...int) map[string]any {
	var ports []any
	for i, np := range nodePorts {
		p := map[string]any{"name": fmt.Sprintf("p%d", i), "port": int64(80 + i)}
		if np != 0 {
			p["nodePort"] = int64(np)
		}
		ports = append(ports, p)
	}
	return map[string]any{
		"metadata": map[string]any{"namespace": "default", "name": name},
		"spec":     map[string]any{"type": typ, "ports": ports},
	}
}

func gotNodePorts(svc map[string]any) []int { return nodePortsOf(mapField(svc, "spec")) }

// store stores svc as the Service its allocation was for.
func storeService(t *testing.T, a *NodePorts, svc map[string]any) {
	t.Helper()
	data, _ := json.Marshal(svc)
	md := mapField(svc, "metadata")
	key := a.ServicePrefix + md["namespace"].(string) + "/" + md["name"].(string)
	if kv, err := a.Storage.Get(context.Background(), key); err == nil {
		if _, err := a.Storage.Update(context.Background(), key, data, kv.ModRevision); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := a.Storage.Create(context.Background(), key, data); err != nil {
		t.Fatal(err)
	}
}

func TestNodePortAllocation(t *testing.T) {
	st := testBackend(t)
	ctx := context.Background()
	a := newNodePorts(t, st, "30000-30099")
	for _, tc := range []struct {
		name    string
		svc     map[string]any
		want    []int  // nil: one in range per port
		wantErr string // the 422's message
	}{
		{name: "given", svc: nodePortService("given", "NodePort", 30080), want: []int{30080}},
		{name: "taken", svc: nodePortService("taken", "NodePort", 30080),
			wantErr: `Service "taken" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated`},
		{name: "out", svc: nodePortService("out", "NodePort", 30100),
			wantErr: `Service "out" is invalid: spec.ports[0].nodePort: Invalid value: 30100: provided port is not in the valid range. The range of valid ports is 30000-30099`},
		{name: "dynamic", svc: nodePortService("dynamic", "NodePort", 0, 0)},
		{name: "lb", svc: nodePortService("lb", "LoadBalancer", 0)},
		{name: "clusterip", svc: nodePortService("clusterip", "ClusterIP", 0), want: []int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a.AllocateService(ctx, tc.svc)
			if tc.wantErr != "" {
				if !apierrors.IsInvalid(err) || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := gotNodePorts(tc.svc)
			if tc.want != nil {
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("node ports %v, want %v", got, tc.want)
				}
				return
			}
			if len(got) != len(servicePorts(mapField(tc.svc, "spec"))) {
				t.Fatalf("node ports %v, want one per port", got)
			}
			for _, p := range got {
				if p < 30000 || p > 30099 || p == 30080 {
					t.Errorf("node port %d: not a free port of the range", p)
				}
			}
		})
	}
}

// A LoadBalancer not allocating node ports still reserves one it asks for;
// one with a Local policy gets a health check node port; ports of one
// number share a node port.
func TestNodePortLoadBalancer(t *testing.T) {
	st := testBackend(t)
	ctx := context.Background()
	a := newNodePorts(t, st, "30000-30099")
	noAlloc := nodePortService("noalloc", "LoadBalancer", 30010, 0)
	mapField(noAlloc, "spec")["allocateLoadBalancerNodePorts"] = false
	if _, err := a.AllocateService(ctx, noAlloc); err != nil {
		t.Fatal(err)
	}
	if got := gotNodePorts(noAlloc); fmt.Sprint(got) != "[30010]" {
		t.Errorf("node ports %v, want [30010]", got)
	}
	if _, err := a.AllocateService(ctx, nodePortService("x", "NodePort", 30010)); !apierrors.IsInvalid(err) {
		t.Errorf("30010 reused: err = %v", err)
	}
	local := nodePortService("local", "LoadBalancer", 0)
	mapField(local, "spec")["externalTrafficPolicy"] = "Local"
	if _, err := a.AllocateService(ctx, local); err != nil {
		t.Fatal(err)
	}
	hc := intOf(mapField(local, "spec")["healthCheckNodePort"])
	if hc < 30000 || hc > 30099 || hc == gotNodePorts(local)[0] {
		t.Errorf("health check node port %d", hc)
	}
	shared := nodePortService("shared", "NodePort", 0, 0)
	ports := servicePorts(mapField(shared, "spec"))
	ports[1]["port"] = int64(80)
	ports[1]["protocol"] = "UDP"
	if _, err := a.AllocateService(ctx, shared); err != nil {
		t.Fatal(err)
	}
	if got := gotNodePorts(shared); len(got) != 2 || got[0] != got[1] {
		t.Errorf("node ports %v, want one shared", got)
	}
}

// An update reserves the ports it adds, frees those it drops once stored,
// and a type change to ClusterIP frees them all; undo frees what it
// reserved; a delete frees what the Service held.
func TestNodePortUpdateAndRelease(t *testing.T) {
	st := testBackend(t)
	ctx := context.Background()
	a := newNodePorts(t, st, "30000-30099")
	old := nodePortService("s", "NodePort", 30001)
	if _, err := a.AllocateService(ctx, old); err != nil {
		t.Fatal(err)
	}
	storeService(t, a, old)

	// Adding a port: old's kept (PrepareForUpdate patched it in), the
	// new one reserved; undone, it is free again.
	svc := nodePortService("s", "NodePort", 0, 30002)
	patchNodePorts(mapField(svc, "spec"), mapField(old, "spec"))
	_, undo, err := a.UpdateService(ctx, svc, old, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := gotNodePorts(svc); fmt.Sprint(got) != "[30001 30002]" {
		t.Fatalf("node ports %v, want [30001 30002]", got)
	}
	undo()
	if _, err := a.AllocateService(ctx, nodePortService("t", "NodePort", 30002)); err != nil {
		t.Fatalf("undone port: %v", err)
	}

	// Changed to another port: the old one is freed once stored.
	svc = nodePortService("s", "NodePort", 30003)
	release, _, err := a.UpdateService(ctx, svc, old, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AllocateService(ctx, nodePortService("u", "NodePort", 30001)); !apierrors.IsInvalid(err) {
		t.Fatalf("30001 given before the update is stored: err = %v", err)
	}
	storeService(t, a, svc)
	release()
	if _, err := a.AllocateService(ctx, nodePortService("u", "NodePort", 30001)); err != nil {
		t.Fatalf("30001 after the update: %v", err)
	}

	// To ClusterIP: the strategy drops the ports, the update frees them.
	clusterIP := nodePortService("s", "ClusterIP", 30003)
	patchNodePorts(mapField(clusterIP, "spec"), mapField(svc, "spec"))
	if got := gotNodePorts(clusterIP); len(got) != 0 {
		t.Fatalf("ClusterIP keeps node ports %v", got)
	}
	release, _, err = a.UpdateService(ctx, clusterIP, svc, false)
	if err != nil {
		t.Fatal(err)
	}
	storeService(t, a, clusterIP)
	release()
	reuse := nodePortService("v", "NodePort", 30003)
	if _, err := a.AllocateService(ctx, reuse); err != nil {
		t.Fatalf("30003 after the type change: %v", err)
	}

	// A delete frees them (the Service is gone from storage first).
	a.ReleaseService(ctx, reuse)
	if _, err := a.AllocateService(ctx, nodePortService("w", "NodePort", 30003)); err != nil {
		t.Fatalf("30003 after the delete: %v", err)
	}
}

// A dry run reserves nothing, fails on a taken port only, and makes its
// ports up from 32769 as upstream's.
func TestNodePortPreview(t *testing.T) {
	st := testBackend(t)
	ctx := context.Background()
	a := newNodePorts(t, st, "30000-30099")
	if _, err := a.AllocateService(ctx, nodePortService("held", "NodePort", 30050)); err != nil {
		t.Fatal(err)
	}
	if err := a.PreviewService(ctx, nodePortService("dry", "NodePort", 30050)); !apierrors.IsInvalid(err) {
		t.Errorf("taken: err = %v, want a 422", err)
	}
	if err := a.PreviewService(ctx, nodePortService("dry", "NodePort", 40000)); err != nil {
		t.Errorf("out of the range: %v", err)
	}
	svc := nodePortService("dry", "LoadBalancer", 30060, 0)
	mapField(svc, "spec")["externalTrafficPolicy"] = "Local"
	if err := a.PreviewService(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if got, hc := gotNodePorts(svc), mapField(svc, "spec")["healthCheckNodePort"]; fmt.Sprint(got) != "[30060 30061]" || hc != int64(30062) {
		t.Errorf("node ports %v, health check %v; want [30060 30061], 30062", got, hc)
	}
	svc = nodePortService("dry", "NodePort", 0)
	if err := a.PreviewService(ctx, svc); err != nil || fmt.Sprint(gotNodePorts(svc)) != "[32769]" {
		t.Errorf("node ports %v (err %v), want [32769]", gotNodePorts(svc), err)
	}
	if _, err := a.AllocateService(ctx, nodePortService("real", "NodePort", 30060)); err != nil {
		t.Errorf("after the dry run: %v", err)
	}
}

// Two allocators sharing one store, as replicas sharing an etcd, never
// give one port twice.
func TestNodePortConcurrentAllocation(t *testing.T) {
	st := testBackend(t)
	ctx := context.Background()
	a := newNodePorts(t, st, "30000-30019")
	b := *a
	got, full := allocateConcurrently(t, 26, func(i int) (string, error) {
		alloc := a
		if i%2 == 1 {
			alloc = &b
		}
		svc := nodePortService(fmt.Sprintf("s%d", i), "NodePort", 0)
		if _, err := alloc.AllocateService(ctx, svc); err != nil {
			return "", err
		}
		return fmt.Sprint(gotNodePorts(svc)), nil
	})
	if got != 20 || full != 6 {
		t.Errorf("allocated %d, refused %d; want 20 and 6", got, full)
	}
}

// A record whose Service never got stored is reclaimed after the grace
// period; one whose Service holds the port stays.
func TestNodePortReclaim(t *testing.T) {
	st := testBackend(t)
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := newNodePorts(t, st, "30000-30099")
	a.Now = func() time.Time { return now }
	if _, err := a.AllocateService(ctx, nodePortService("lost", "NodePort", 30007)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AllocateService(ctx, nodePortService("b", "NodePort", 30007)); !apierrors.IsInvalid(err) {
		t.Fatalf("within the grace period: err = %v, want a 422", err)
	}
	now = now.Add(2 * time.Minute)
	b := nodePortService("b", "NodePort", 30007)
	if _, err := a.AllocateService(ctx, b); err != nil {
		t.Fatalf("after the grace period: %v", err)
	}
	storeService(t, a, b)
	now = now.Add(2 * time.Minute)
	if _, err := a.AllocateService(ctx, nodePortService("c", "NodePort", 30007)); !apierrors.IsInvalid(err) {
		t.Fatalf("held by a stored Service: err = %v, want a 422", err)
	}
	a.Release(ctx, 30007, "default", "b")
	if _, err := st.Get(ctx, a.key(30007)); err != nil {
		t.Errorf("the stored Service's record was freed: %v", err)
	}
}

func TestNewNodePorts(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "30000-32767"}, {"30000-30099", "30000-30099"}, {"30000+99", "30000-30099"}, {"8080", "8080-8080"},
		{"x", ""}, {"3-2", ""}, {"60000-70000", ""},
	} {
		a, err := NewNodePorts(tc.in, nil, "", "")
		got := ""
		if err == nil {
			got = a.String()
		}
		if got != tc.want {
			t.Errorf("NewNodePorts(%q) = %q (%v), want %q", tc.in, got, err, tc.want)
		}
	}
}
