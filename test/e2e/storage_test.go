package e2e

import (
	"strings"
	"testing"
	"time"
)

const storageManifest = `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: example.com/csi
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-data}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /mnt/data}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttributesClass
metadata: {name: gold}
driverName: example.com/csi
parameters: {iops: "3000"}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: held, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
  volumeAttributesClassName: gold
---
apiVersion: v1
kind: Pod
metadata: {name: unscheduled, namespace: default}
spec:
  containers: [{name: app, image: busybox}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
---
apiVersion: v1
kind: Pod
metadata: {name: scheduled, namespace: default}
spec:
  nodeName: node-1
  containers: [{name: app, image: busybox}]
  volumes: [{name: held, persistentVolumeClaim: {claimName: held}}]
`

// TestStorageProtection: a claim gets the default class and the
// pvc-protection finalizer, a volume the pv-protection one; deleted and
// unused (no scheduled pod names the claim, no claim the
// VolumeAttributesClass), they go, as kube-controller-manager's
// protection controllers let them.
func TestStorageProtection(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	kubectl(t, srv, "create", "-f", writeManifest(t, "storage.yaml", storageManifest))
	got := kubectl(t, srv, "get", "pvc", "data", "-o", "jsonpath={.spec.storageClassName} {.metadata.finalizers}")
	if got != `standard ["kubernetes.io/pvc-protection"]` {
		t.Errorf("claim class and finalizers %q", got)
	}
	if got := kubectl(t, srv, "get", "pv", "pv-data", "-o", "jsonpath={.status.phase} {.metadata.finalizers}"); got != `Pending ["kubernetes.io/pv-protection"]` {
		t.Errorf("volume phase and finalizers %q", got)
	}
	// An unscheduled pod holds no claim; a scheduled one does, and the
	// claim holds the VolumeAttributesClass it names.
	kubectl(t, srv, "delete", "pvc", "data", "held", "--wait=false")
	kubectl(t, srv, "delete", "pv", "pv-data", "--wait=false")
	kubectl(t, srv, "delete", "volumeattributesclass", "gold", "--wait=false")
	waitLeft(t, srv, "persistentvolumeclaim/held volumeattributesclass.storage.k8s.io/gold")
	time.Sleep(time.Second) // they stay
	waitLeft(t, srv, "persistentvolumeclaim/held volumeattributesclass.storage.k8s.io/gold")
	kubectl(t, srv, "delete", "pod", "scheduled", "--grace-period=0", "--force")
	waitLeft(t, srv, "")
}

// waitLeft waits until the claims, volumes and VolumeAttributesClasses
// stored are want (their names, space-separated).
func waitLeft(t *testing.T, srv *server, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := strings.Join(strings.Fields(kubectl(t, srv, "get", "pvc,pv,volumeattributesclass", "-o", "name")), " ")
		if left == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stored %q, want %q", left, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
