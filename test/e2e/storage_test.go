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
`

// TestStorageProtection: a claim gets the default class and the
// pvc-protection finalizer, a volume the pv-protection one; deleted and
// unused, both go, as kube-controller-manager's protection controllers
// let them.
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
	kubectl(t, srv, "delete", "pvc", "data", "--wait=false")
	kubectl(t, srv, "delete", "pv", "pv-data", "--wait=false")
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := strings.TrimSpace(kubectl(t, srv, "get", "pvc,pv", "-o", "name"))
		if left == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still there after their deletes: %q", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
