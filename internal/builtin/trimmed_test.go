package builtin

import (
	"bytes"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// everyKind decodes the e2e tests' object of every kind, as the handler
// decodes a body (integers as int64).
func everyKind(t *testing.T) []map[string]any {
	t.Helper()
	data, err := os.ReadFile("../../test/e2e/testdata/apply/every-kind.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatal(err)
		}
		obj, _, err := codec.Decode(j, "", codec.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if obj != nil {
			out = append(out, obj)
		}
	}
	return out
}

// The definitions whose hooks need nothing of a running server.
func trimmedDefinitions() []*registry.Definition {
	return []*registry.Definition{
		Namespaces(), StorageVersionMigrations(), Endpoints(), EndpointSlices(),
		ConfigMaps(), Secrets(), ServiceAccounts(), Events(time.Hour), EventsV1(time.Hour),
		PodTemplates(), Leases(), ResourceQuotas(), LimitRanges(),
		Deployments(), ReplicaSets(), StatefulSets(), DaemonSets(),
		ReplicationControllers(), ControllerRevisions(),
		Jobs(), CronJobs(), HorizontalPodAutoscalers(), PodDisruptionBudgets(),
		IngressClasses(), NetworkPolicies(), CertificateSigningRequests(),
		RuntimeClasses(), PriorityClasses(), CSINodes(),
		FlowSchemas(), PriorityLevelConfigurations(), IPAddresses(), ServiceCIDRs(),
		StorageClasses(), PersistentVolumes(nil), Nodes(),
		CSIDrivers(), VolumeAttributesClasses(), VolumeAttachments(), CSIStorageCapacities(),
		DeviceClasses(), ResourceClaims(), ResourceClaimTemplates(), ResourceSlices(), DeviceTaintRules(),
		MutatingWebhookConfigurations(), ValidatingWebhookConfigurations(),
		ValidatingAdmissionPolicies(), ValidatingAdmissionPolicyBindings(), APIServices(),
		MutatingAdmissionPolicies(), MutatingAdmissionPolicyBindings(),
		Roles(nil), ClusterRoles(nil), RoleBindings(nil), ClusterRoleBindings(nil),
	}
}

// A write's second trim, skipped when a rewrite left the object as it is,
// gives what trimming again would: for every kind, Default then
// PrepareForCreate, and then PrepareForUpdate, leave the same object with
// the record of trimmed forms as without it.
func TestTrimSkippedGivesTheSameObject(t *testing.T) {
	byKind := map[string]*registry.Definition{}
	for _, d := range trimmedDefinitions() {
		for _, v := range d.Versions {
			byKind[registry.APIVersion(d.Group, v.Name)+"/"+d.Kind] = d
		}
	}
	saved := trimmedForms
	t.Cleanup(func() { trimmedForms = saved })
	tried := 0
	for _, obj := range everyKind(t) {
		apiVersion, _ := obj["apiVersion"].(string)
		kind, _ := obj["kind"].(string)
		d := byKind[apiVersion+"/"+kind]
		if d == nil {
			continue
		}
		tried++
		t.Run(kind, func(t *testing.T) {
			write := func(remember bool) map[string]any {
				trimmedForms = newTrimmedSet(4096)
				o := codec.DeepCopy(obj)
				forget := func() {
					if !remember {
						trimmedForms = newTrimmedSet(4096)
					}
				}
				if df, ok := d.Hooks.(registry.Defaulter); ok {
					df.Default(o)
				}
				forget()
				if p, ok := d.Hooks.(registry.CreatePreparer); ok {
					p.PrepareForCreate(o)
				}
				forget()
				if p, ok := d.Hooks.(registry.UpdatePreparer); ok {
					p.PrepareForUpdate(o, codec.DeepCopy(o))
				}
				return o
			}
			if d := cmp.Diff(write(false), write(true)); d != "" {
				t.Errorf("trimmed again (-) and not (+):\n%s", d)
			}
		})
	}
	if tried < 40 {
		t.Errorf("only %d kinds of every-kind.yaml tried", tried)
	}
}

// An object changed after its rewrite (by admission, or a hook) is
// trimmed again.
func TestTrimAfterAChange(t *testing.T) {
	h := Leases().Hooks
	obj := map[string]any{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
		"metadata": map[string]any{"name": "l"}, "spec": map[string]any{"holderIdentity": "a"}}
	h.(registry.Defaulter).Default(obj)
	obj["bogus"] = int64(1)
	obj["spec"].(map[string]any)["nonsense"] = "x"
	h.(registry.UpdatePreparer).PrepareForUpdate(obj, obj)
	want := map[string]any{"holderIdentity": "a"}
	if d := cmp.Diff(want, obj["spec"]); d != "" || obj["bogus"] != nil {
		t.Errorf("spec (-want +got):\n%s\nbogus %v", d, obj["bogus"])
	}
}

func TestTrimmedSetStartsAgainWhenFull(t *testing.T) {
	s := newTrimmedSet(2)
	typ := reflect.TypeFor[struct{ Spec any }]()
	forms := make([]trimmedForm, 3)
	for i := range forms {
		f, ok := s.form(typ, map[string]any{"spec": map[string]any{"n": int64(i)}})
		if !ok {
			t.Fatal("no form")
		}
		forms[i] = f
		s.add(f)
	}
	if s.has(forms[0]) || s.has(forms[1]) || !s.has(forms[2]) {
		t.Errorf("after three adds to a set of two: has %v %v %v, want false false true", s.has(forms[0]), s.has(forms[1]), s.has(forms[2]))
	}
	// Metadata, apiVersion and kind are not part of the form.
	a, _ := s.form(typ, map[string]any{"metadata": map[string]any{"name": "a"}, "spec": map[string]any{"n": int64(2)}})
	if a != forms[2] {
		t.Errorf("the form depends on metadata")
	}
}

// BenchmarkNamespaceUpdateHooks is the typed work of a Namespace update:
// its Default, then its PrepareForUpdate.
func BenchmarkNamespaceUpdateHooks(b *testing.B) {
	h := Namespaces().Hooks
	obj := map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "n", "labels": map[string]any{"a": "b"}},
		"spec":     map[string]any{"finalizers": []any{"kubernetes"}}, "status": map[string]any{"phase": "Active"}}
	old := codec.DeepCopy(obj)
	b.ReportAllocs()
	for b.Loop() {
		o := codec.DeepCopy(obj)
		h.(registry.Defaulter).Default(o)
		h.(registry.UpdatePreparer).PrepareForUpdate(o, old)
	}
}
