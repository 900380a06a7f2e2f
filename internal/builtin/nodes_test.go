package builtin

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/registry"
)

func volumesAtEpoch() *registry.Definition {
	return PersistentVolumes(func() time.Time { return time.Unix(0, 0) })
}

// Nodes and volumes are refused with upstream's messages and paths.
func TestNodesAndVolumesValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		def  func() *registry.Definition
		obj  string
		want string // "" = valid
	}{
		{line(), Nodes, `{kind: Node, metadata: {name: node1}, spec: {podCIDR: 10.0.0.0/24}}`, ""},
		{line(), Nodes, `{kind: Node, metadata: {name: node1}, spec: {taints: [{key: a, effect: Sometimes}]}}`, `metadata.taints[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`},
		{line(), Nodes, `{kind: Node, metadata: {name: node1}, spec: {taints: [{key: a}]}}`, "metadata.taints[0].effect: Required value"},
		{line(), Nodes, `{kind: Node, metadata: {name: node1}, spec: {taints: [{key: a, effect: NoExecute}, {key: a, effect: NoExecute}]}}`, `metadata.taints[1]: Duplicate value: {"Effect":"NoExecute","Key":"a","TimeAdded":null,"Value":""}: taints must be unique by key and effect pair`},
		{line(), Nodes, `{kind: Node, metadata: {name: node1}, spec: {podCIDRs: [10.0.0.0/24, 10.1.0.0/24]}}`, "spec.podCIDRs: Invalid value: [\"10.0.0.0/24\",\"10.1.0.0/24\"]: may specify no more than one CIDR for each IP family"},
		{line(), Nodes, `{kind: Node, metadata: {name: node1}, status: {capacity: {cpu: "-1"}}}`, `status.capacity.cpu: Invalid value: "-1": must be greater than or equal to 0`},
		{line(), volumesAtEpoch, `{kind: PersistentVolume, metadata: {name: v}, spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /a}}}`, ""},
		{line(), volumesAtEpoch, `{kind: PersistentVolume, metadata: {name: v}, spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce]}}`, "spec: Required value: must specify a volume type"},
		{line(), volumesAtEpoch, `{kind: PersistentVolume, metadata: {name: v}, spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /a}, nfs: {server: s, path: /b}}}`, "spec.nfs: Forbidden: may not specify more than 1 volume type"},
		{line(), volumesAtEpoch, `{kind: PersistentVolume, metadata: {name: v}, spec: {accessModes: [ReadWriteOnce], hostPath: {path: /a}}}`, "spec.capacity: Required value"},
		{line(), volumesAtEpoch, `{kind: PersistentVolume, metadata: {name: v}, spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], local: {path: /a}}}`, "spec.nodeAffinity: Required value: Local volume requires node affinity"},
		{line(), volumesAtEpoch, `{kind: PersistentVolume, metadata: {name: v}, spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], persistentVolumeReclaimPolicy: Keep, hostPath: {path: /a}}}`, `spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", "Retain"`},
	} {
		_, err := create(t, tc.def(), tc.obj)
		checkErrors(t, tc.name, err, tc.want)
	}
}

// A new volume is Pending from its create, at the clock's time.
func TestPersistentVolumeCreate(t *testing.T) {
	obj, err := create(t, volumesAtEpoch(), `{kind: PersistentVolume, metadata: {name: v}, spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /a}}, status: {phase: Bound}}`)
	if err != nil {
		t.Fatal(err)
	}
	status := obj["status"].(map[string]any)
	if status["phase"] != "Pending" || status["lastPhaseTransitionTime"] != "1970-01-01T00:00:00Z" {
		t.Errorf("status %v", status)
	}
	if typ := obj["spec"].(map[string]any)["hostPath"].(map[string]any)["type"]; typ != "" {
		t.Errorf("hostPath.type %v, want upstream's default \"\"", typ)
	}
}

// A created node keeps its status, gets the not-ready taint once, and
// its podCIDR and podCIDRs agree.
func TestNodeCreate(t *testing.T) {
	def := Nodes()
	obj, err := create(t, def, `{kind: Node, metadata: {name: node1}, spec: {podCIDR: 10.0.0.0/24}, status: {capacity: {cpu: "2"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := def.Hooks.(registry.CreateAdmitter).AdmitCreate(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	spec, status := obj["spec"].(map[string]any), obj["status"].(map[string]any)
	if taints := spec["taints"].([]any); len(taints) != 1 || taints[0].(map[string]any)["key"] != "node.kubernetes.io/not-ready" {
		t.Errorf("taints %v", taints)
	}
	if cidrs := spec["podCIDRs"].([]any); len(cidrs) != 1 || cidrs[0] != "10.0.0.0/24" {
		t.Errorf("podCIDRs %v", cidrs)
	}
	if alloc := status["allocatable"].(map[string]any); alloc["cpu"] != "2" {
		t.Errorf("allocatable %v", alloc)
	}
}

// nodes/proxy answers as upstream does with no kubelet to reach.
func TestNodeProxy(t *testing.T) {
	hooks := Nodes().Hooks
	cn, nm := hooks.(registry.Connecter), hooks.(registry.ConnectNamer)
	for _, tc := range []struct {
		name, id, node string
		code           int32
		msg            string
	}{
		{line(), "node1", `{kind: Node, metadata: {name: node1}}`, http.StatusInternalServerError, "no preferred addresses found; known addresses: []"},
		{line(), "https:node1:10255", `{kind: Node, metadata: {name: node1}, status: {addresses: [{type: InternalIP, address: 127.0.0.1}]}}`, http.StatusBadRequest, "address not allowed"},
		{line(), "node1", `{kind: Node, metadata: {name: node1}, status: {addresses: [{type: InternalIP, address: 10.0.0.1}]}}`, http.StatusServiceUnavailable, "dial tcp 10.0.0.1:10250"},
	} {
		name, err := nm.ConnectName("proxy", tc.id)
		if err != nil || name != "node1" {
			t.Fatalf("%s: name %q, %v", tc.name, name, err)
		}
		_, _, err = cn.Connect(context.Background(), "proxy", decodeYAML(t, tc.node), nil)
		var se apierrors.APIStatus
		if !errorsAs(err, &se) || se.Status().Code != tc.code || !strings.Contains(se.Status().Message, tc.msg) {
			t.Errorf("%s: got %v, want %d %q", tc.name, err, tc.code, tc.msg)
		}
	}
	if _, err := nm.ConnectName("proxy", "a:b:c:d"); !apierrors.IsBadRequest(err) {
		t.Errorf("a:b:c:d: %v, want a 400", err)
	}
}

func errorsAs(err error, target *apierrors.APIStatus) bool {
	s, ok := err.(apierrors.APIStatus)
	*target = s
	return ok
}
