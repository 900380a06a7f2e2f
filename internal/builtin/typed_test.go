package builtin

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crdserver/crdserver/internal/registry"
)

// A built-in's Defaulter gives the object its writer is recorded owning,
// as upstream's typed decoding gives it to its field manager: the Go
// type's defaults, and every struct field that is not a pointer ({} when
// empty). Fields the type does not have are dropped.
func TestDefaulterRoundTripsTheGoType(t *testing.T) {
	for _, tc := range []struct {
		name string
		def  *registry.Definition
		obj  string
		want map[string]any // path: value after Default
	}{
		{name: line(), def: Deployments(),
			obj: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}}}`,
			want: map[string]any{
				"spec.replicas": int64(1), "spec.revisionHistoryLimit": int64(10), "spec.progressDeadlineSeconds": int64(600),
				"spec.strategy.type": "RollingUpdate", "spec.strategy.rollingUpdate.maxSurge": "25%",
				"spec.template.spec.containers.0.terminationMessagePolicy": "File",
				"spec.template.spec.containers.0.resources":                map[string]any{},
				"spec.template.spec.dnsPolicy":                             "ClusterFirst",
				"status":                                                   map[string]any{},
			}},
		{name: line(), def: StatefulSets(),
			obj:  `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s}, spec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}}}`,
			want: map[string]any{"spec.podManagementPolicy": "OrderedReady", "spec.updateStrategy.type": "RollingUpdate"}},
		{name: line(), def: StatefulSets(),
			obj: `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s}, spec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}},
				volumeClaimTemplates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}}`,
			want: map[string]any{"spec.volumeClaimTemplates.0.apiVersion": "v1", "spec.volumeClaimTemplates.0.kind": "PersistentVolumeClaim",
				"spec.volumeClaimTemplates.0.spec.volumeMode": "Filesystem", "spec.volumeClaimTemplates.0.status.phase": "Pending"}},
		{name: line(), def: Jobs(),
			obj:  `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {template: {spec: ` + podSpec + `}}}`,
			want: map[string]any{"spec.backoffLimit": int64(6), "spec.completionMode": "NonIndexed"}},
		{name: line(), def: RoleBindings(nil),
			obj:  `{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: b}, roleRef: {kind: Role, name: r}, subjects: [{kind: User, name: u}]}`,
			want: map[string]any{"roleRef.apiGroup": RBACGroup, "subjects.0.apiGroup": RBACGroup}},
		{name: line(), def: ClusterRoles(nil),
			obj:  `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: c}, aggregationRule: {}}`,
			want: map[string]any{"aggregationRule": map[string]any{}, "rules": nil}},
		{name: line(), def: Leases(),
			obj:  `{apiVersion: coordination.k8s.io/v1, kind: Lease, metadata: {name: l}, bogus: 1}`,
			want: map[string]any{"spec": map[string]any{}, "bogus": nil}},
		{name: line(), def: ValidatingAdmissionPolicies(),
			obj:  `{apiVersion: admissionregistration.k8s.io/v1, kind: ValidatingAdmissionPolicy, metadata: {name: p}, spec: {validations: [{expression: "true"}]}}`,
			want: map[string]any{"spec.failurePolicy": "Fail", "status": map[string]any{}}},
		{name: line(), def: EventsV1(time.Hour),
			obj:  `{apiVersion: events.k8s.io/v1, kind: Event, metadata: {name: e}, regarding: {kind: Pod, name: p}, note: hello}`,
			want: map[string]any{"deprecatedSource": map[string]any{}, "note": "hello", "regarding.name": "p"}},
		{name: line(), def: Events(time.Hour),
			obj:  `{apiVersion: v1, kind: Event, metadata: {name: e}, involvedObject: {kind: Pod, name: p}, message: m}`,
			want: map[string]any{"source": map[string]any{}, "message": "m"}},
		{name: line(), def: HorizontalPodAutoscalers(),
			obj:  `{apiVersion: autoscaling/v1, kind: HorizontalPodAutoscaler, metadata: {name: h}, spec: {scaleTargetRef: {kind: Deployment, name: d}, maxReplicas: 3, targetCPUUtilizationPercentage: 50}}`,
			want: map[string]any{"spec.minReplicas": int64(1), "spec.targetCPUUtilizationPercentage": int64(50)}},
		{name: line(), def: Secrets(),
			obj:  `{apiVersion: v1, kind: Secret, metadata: {name: s}, stringData: {a: b}}`,
			want: map[string]any{"type": "Opaque", "data.a": "Yg==", "stringData": nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := decodeYAML(t, tc.obj)
			tc.def.Hooks.(registry.Defaulter).Default(obj)
			for path, want := range tc.want {
				if d := cmp.Diff(want, lookup(obj, path)); d != "" {
					t.Errorf("%s (-want +got):\n%s", path, d)
				}
			}
		})
	}
}

// The object a create is compared with has the Go type's structs that are
// not pointers, and null for its slices without omitempty.
func TestZeroObject(t *testing.T) {
	for _, tc := range []struct {
		name string
		def  *registry.Definition
		want map[string]any
	}{
		{name: line(), def: Deployments(), want: map[string]any{
			"spec.strategy": map[string]any{}, "spec.template.spec.containers": nil, "status": map[string]any{},
		}},
		{name: line(), def: Leases(), want: map[string]any{"spec": map[string]any{}}},
		{name: line(), def: ClusterRoles(nil), want: map[string]any{"rules": nil}},
		{name: line(), def: SubjectAccessReviews(nil), want: map[string]any{"spec": map[string]any{}}},
		{name: line(), def: LocalSubjectAccessReviews(nil), want: map[string]any{"spec": map[string]any{}}},
		{name: line(), def: SelfSubjectAccessReviews(nil), want: map[string]any{"spec": map[string]any{}}},
		{name: line(), def: SelfSubjectRulesReviews(nil), want: map[string]any{"spec": map[string]any{}}},
		{name: line(), def: TokenReviews(nil, nil), want: map[string]any{"spec": map[string]any{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := tc.def.Hooks.(registry.Zeroer).ZeroObject()
			for path, want := range tc.want {
				if d := cmp.Diff(want, lookup(z, path)); d != "" {
					t.Errorf("%s (-want +got):\n%s", path, d)
				}
			}
		})
	}
	// events.k8s.io bodies are compared with its own type's zero object.
	z := EventsV1(time.Hour).Hooks.(registry.VersionTyped).TypedIn("v1").(registry.Zeroer).ZeroObject()
	if d := cmp.Diff(map[string]any{}, z["deprecatedSource"]); d != "" {
		t.Errorf("events.k8s.io deprecatedSource (-want +got):\n%s", d)
	}
}

// StrictErrors says whether the body decoded into the Go type: the
// handler then skips CheckType, which would decode it once more.
func TestStrictErrorsDecoded(t *testing.T) {
	h := ConfigMaps().Hooks.(registry.StrictDecoder)
	for _, tc := range []struct {
		body     string
		problems int
		decoded  bool
	}{
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"b"}}`, 0, true},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"bogus":1,"data":{"a":"b","a":"c"}}`, 2, true},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":1}}`, 0, false},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"immutable":"yes"}`, 0, false},
	} {
		problems, decoded := h.StrictErrors([]byte(tc.body))
		if len(problems) != tc.problems || decoded != tc.decoded {
			t.Errorf("%s: problems %q, decoded %v; want %d problems, decoded %v", tc.body, problems, decoded, tc.problems, tc.decoded)
		}
	}
}
