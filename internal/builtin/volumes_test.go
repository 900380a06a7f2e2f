package builtin

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/registry"
)

func claimsWithoutClasses() *registry.Definition { return PersistentVolumeClaims(nil) }

const claimSpec = `{accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}`

// Claims and classes are refused with upstream's messages and paths.
func TestVolumesValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		def  func() *registry.Definition
		obj  string
		want string // "" = valid
	}{
		{line(), claimsWithoutClasses, `{kind: PersistentVolumeClaim, metadata: {name: c}, spec: ` + claimSpec + `}`, ""},
		{line(), claimsWithoutClasses, `{kind: PersistentVolumeClaim, metadata: {name: c}, spec: {resources: {requests: {storage: 1Gi}}}}`, "spec.accessModes: Required value: at least 1 access mode is required"},
		{line(), claimsWithoutClasses, `{kind: PersistentVolumeClaim, metadata: {name: c}, spec: {accessModes: [Sometimes], resources: {requests: {storage: 1Gi}}}}`, `spec.accessModes: Unsupported value: "Sometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"`},
		{line(), claimsWithoutClasses, `{kind: PersistentVolumeClaim, metadata: {name: c}, spec: {accessModes: [ReadWriteOncePod, ReadOnlyMany], resources: {requests: {storage: 1Gi}}}}`, "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"},
		{line(), claimsWithoutClasses, `{kind: PersistentVolumeClaim, metadata: {name: c}, spec: {accessModes: [ReadWriteOnce]}}`, "spec.resources[storage]: Required value"},
		{line(), claimsWithoutClasses, `{kind: PersistentVolumeClaim, metadata: {name: c}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: "0"}}}}`, `spec.resources[storage]: Invalid value: "0": must be greater than zero`},
		{line(), claimsWithoutClasses, `{kind: PersistentVolumeClaim, metadata: {name: c}, spec: {accessModes: [ReadWriteOnce], volumeMode: Raw, resources: {requests: {storage: 1Gi}}}}`, `spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem"`},
		{line(), claimsWithoutClasses, `{kind: PersistentVolumeClaim, metadata: {name: c}, spec: {accessModes: [ReadWriteOnce], dataSourceRef: {kind: Image, name: i}, resources: {requests: {storage: 1Gi}}}}`, `spec.dataSourceRef: Invalid value: "Image": must be 'PersistentVolumeClaim' when referencing the default apiGroup`},
		{line(), StorageClasses, `{kind: StorageClass, metadata: {name: s}, provisioner: example.com/csi}`, ""},
		{line(), StorageClasses, `{kind: StorageClass, metadata: {name: s}}`, "provisioner: Required value"},
		{line(), StorageClasses, `{kind: StorageClass, metadata: {name: s}, provisioner: example.com/csi, reclaimPolicy: Recycle}`, `reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"`},
		{line(), StorageClasses, `{kind: StorageClass, metadata: {name: s}, provisioner: example.com/csi, volumeBindingMode: Later}`, `volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"`},
		{line(), CSIDrivers, `{kind: CSIDriver, metadata: {name: d.example.com}}`, ""},
		{line(), CSIDrivers, `{kind: CSIDriver, metadata: {name: d.example.com}, spec: {fsGroupPolicy: Sometimes}}`, `spec.fsGroupPolicy: Unsupported value: "Sometimes": supported values: "File", "None", "ReadWriteOnceWithFSType"`},
		{line(), CSIDrivers, `{kind: CSIDriver, metadata: {name: d.example.com}, spec: {tokenRequests: [{audience: a, expirationSeconds: 60}]}}`, "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"},
		{line(), CSIDrivers, `{kind: CSIDriver, metadata: {name: d.example.com}, spec: {serviceAccountTokenInSecrets: true}}`, "spec.serviceAccountTokenInSecrets: Invalid value: true: serviceAccountTokenInSecrets is set but no tokenRequests are specified"},
		{line(), VolumeAttributesClasses, `{kind: VolumeAttributesClass, metadata: {name: v}, driverName: d.example.com, parameters: {iops: "1"}}`, ""},
		{line(), VolumeAttributesClasses, `{kind: VolumeAttributesClass, metadata: {name: v}, driverName: d.example.com}`, "parameters: Required value: must contain at least one key/value pair"},
		{line(), VolumeAttachments, `{kind: VolumeAttachment, metadata: {name: a}, spec: {attacher: d.example.com, nodeName: node1, source: {persistentVolumeName: pv1}}}`, ""},
		{line(), VolumeAttachments, `{kind: VolumeAttachment, metadata: {name: a}, spec: {attacher: d.example.com, nodeName: node1, source: {}}}`, "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"},
		{line(), VolumeAttachments, `{kind: VolumeAttachment, metadata: {name: a}, spec: {attacher: d.example.com, nodeName: node1, source: {inlineVolumeSpec: {accessModes: [ReadWriteOnce]}}}}`, "spec.source.inlineVolumeSpec.csi: Required value: has to be specified in the context of inline volumes"},
		{line(), CSIStorageCapacities, `{kind: CSIStorageCapacity, metadata: {name: c}, storageClassName: standard, capacity: 1Gi}`, ""},
		{line(), CSIStorageCapacities, `{kind: CSIStorageCapacity, metadata: {name: c}, storageClassName: standard, capacity: -1Gi}`, `capacity: Invalid value: "-1Gi": must be greater than or equal to 0`},
		{line(), StorageClasses, `{kind: StorageClass, metadata: {name: s}, provisioner: example.com/csi, allowedTopologies: [{matchLabelExpressions: [{key: zone, values: [a]}]}, {matchLabelExpressions: [{key: zone, values: [a]}]}]}`, "allowedTopologies[1].matchLabelExpressions: Duplicate value"},
	} {
		_, err := create(t, tc.def(), tc.obj)
		checkErrors(t, tc.name, err, tc.want)
	}
}

// An update of a claim keeps its spec but for what upstream lets change,
// and says what changed as upstream's diff does.
func TestClaimUpdate(t *testing.T) {
	def := PersistentVolumeClaims(nil)
	v := def.Hooks.(registry.Validator)
	old, err := create(t, def, `{kind: PersistentVolumeClaim, metadata: {name: c}, spec: `+claimSpec+`}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, obj, want string
	}{
		{line(), `{kind: PersistentVolumeClaim, metadata: {name: c}, spec: {accessModes: [ReadWriteOnce], volumeName: pv1, resources: {requests: {storage: 1Gi}}}}`, ""},
		{line(), `{kind: PersistentVolumeClaim, metadata: {name: c}, spec: {accessModes: [ReadWriteOnce], storageClassName: fast, resources: {requests: {storage: 1Gi}}}}`, ""},
		{line(), `{kind: PersistentVolumeClaim, metadata: {name: c}, spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}}`,
			"spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n" +
				"@@ -1,6 +1,6 @@\n {\n  \"AccessModes\": [\n-  \"ReadWriteOnce\"\n+  \"ReadWriteMany\"\n  ],\n  \"Selector\": null,\n  \"Resources\": {\n"},
		{line(), `{kind: PersistentVolumeClaim, metadata: {name: c}, spec: {accessModes: [ReadWriteOnce], volumeMode: Block, resources: {requests: {storage: 1Gi}}}}`, "volumeMode: Invalid value: \"Block\": field is immutable"},
	} {
		obj := decodeYAML(t, tc.obj)
		def.Hooks.(registry.UpdatePreparer).PrepareForUpdate(obj, old)
		checkErrors(t, tc.name, v.ValidateUpdate(obj, old).ToAggregate(), tc.want)
	}
}

// A created claim gets the default class unless it names one (or the
// beta annotation does), and the pvc-protection finalizer once.
func TestClaimAdmission(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	class := func(name string, at time.Time, annotation string) storagev1.StorageClass {
		c := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(at)}}
		if annotation != "" {
			c.Annotations = map[string]string{annotation: "true"}
		}
		return c
	}
	classes := []storagev1.StorageClass{
		class("plain", t0, ""),
		class("old", t0, "storageclass.kubernetes.io/is-default-class"),
		class("beta", t0.Add(time.Second), "storageclass.beta.kubernetes.io/is-default-class"),
	}
	for _, tc := range []struct {
		name, claim string
		want        any // spec.storageClassName afterwards
	}{
		{line(), `{metadata: {name: c}, spec: {}}`, "beta"},
		{line(), `{metadata: {name: c}}`, "beta"},
		{line(), `{metadata: {name: c, finalizers: [kubernetes.io/pvc-protection]}, spec: {storageClassName: ""}}`, ""},
		{line(), `{metadata: {name: c, annotations: {volume.beta.kubernetes.io/storage-class: x}}, spec: {}}`, nil},
	} {
		obj := decodeYAML(t, tc.claim)
		h := PersistentVolumeClaims(func(context.Context) ([]storagev1.StorageClass, error) { return classes, nil }).Hooks.(registry.CreateAdmitter)
		if err := h.AdmitCreate(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
		spec, _ := obj["spec"].(map[string]any)
		if got := spec["storageClassName"]; got != tc.want {
			t.Errorf("%s: storageClassName %v, want %v", tc.name, got, tc.want)
		}
		if fs := obj["metadata"].(map[string]any)["finalizers"].([]any); !slices.Equal(fs, []any{"kubernetes.io/pvc-protection"}) {
			t.Errorf("%s: finalizers %v", tc.name, fs)
		}
	}
}

// Growing a claim needs it bound and its class to allow expansion: a 403
// otherwise, with upstream's words.
func TestClaimResize(t *testing.T) {
	yes := true
	classes := []storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "grows"}, AllowVolumeExpansion: &yes}, {ObjectMeta: metav1.ObjectMeta{Name: "fixed"}}}
	def := PersistentVolumeClaims(func(context.Context) ([]storagev1.StorageClass, error) { return classes, nil })
	wc := def.Hooks.(registry.WriteChecker)
	claim := func(class, size, phase string) map[string]any {
		return decodeYAML(t, `{kind: PersistentVolumeClaim, metadata: {name: c}, spec: {storageClassName: `+class+`, accessModes: [ReadWriteOnce], resources: {requests: {storage: `+size+`}}}, status: {phase: `+phase+`}}`)
	}
	for _, tc := range []struct {
		name     string
		obj, old map[string]any
		want     string
	}{
		{line(), claim("grows", "2Gi", "Bound"), claim("grows", "1Gi", "Bound"), ""},
		{line(), claim("grows", "1Gi", "Bound"), claim("grows", "1Gi", "Bound"), ""},
		{line(), claim("fixed", "2Gi", "Bound"), claim("fixed", "1Gi", "Bound"), "only dynamically provisioned pvc can be resized"},
		{line(), claim("grows", "2Gi", "Pending"), claim("grows", "1Gi", "Pending"), ""}, // validation refuses it first
	} {
		err := wc.CheckWrite(context.Background(), tc.obj, tc.old)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want a 403 with %q", tc.name, err, tc.want)
		}
	}
}

// A list's Table marks the effective default class; a single class's
// row does not.
func TestStorageClassDefaultMarker(t *testing.T) {
	def := StorageClasses()
	objs := []map[string]any{
		decodeYAML(t, `{kind: StorageClass, metadata: {name: a, creationTimestamp: "2026-01-01T00:00:00Z", annotations: {storageclass.kubernetes.io/is-default-class: "true"}}, provisioner: p}`),
		decodeYAML(t, `{kind: StorageClass, metadata: {name: b, creationTimestamp: "2026-01-02T00:00:00Z", annotations: {storageclass.kubernetes.io/is-default-class: "true"}}, provisioner: p}`),
	}
	row := def.Hooks.(registry.ListTablePrinter).TableListRow(objs)
	if got := []any{row(objs[0])[0], row(objs[1])[0]}; !slices.Equal(got, []any{"a", "b (default)"}) {
		t.Errorf("list names %v", got)
	}
	if got := def.Hooks.(registry.TablePrinter).TableRow(objs[1])[0]; got != "b" {
		t.Errorf("single row name %v", got)
	}
}
