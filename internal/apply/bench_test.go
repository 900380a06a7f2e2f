package apply

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// benchWidgets is the load generator's Widget (the schema package's test
// copy) with a ~2 KB object created by one manager.
func benchWidgets(b *testing.B) (*Manager, map[string]any) {
	b.Helper()
	data, err := os.ReadFile("../schema/testdata/widgets-crd.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		b.Fatal(err)
	}
	s, err := json.Marshal(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
	if err != nil {
		b.Fatal(err)
	}
	def := &registry.Definition{Group: crd.Spec.Group, Resource: "widgets", Kind: "Widget", Scope: registry.Namespaced,
		Versions: []registry.Version{{Name: "v1", Served: true, Storage: true, OpenAPISchema: s, Subresources: registry.Subresources{Status: true}}}}
	m := &Manager{Types: NewTypes(def), GroupVersion: schema.GroupVersion{Group: crd.Spec.Group, Version: "v1"}, Kind: "Widget"}
	data, err = os.ReadFile("../schema/testdata/widget.json")
	if err != nil {
		b.Fatal(err)
	}
	// Integers decode as int64, as the server decodes them.
	var o map[string]any
	if err := utiljson.Unmarshal(data, &o); err != nil {
		b.Fatal(err)
	}
	delete(o["spec"].(map[string]any), "unknownField")
	m.Update(nil, o, "creator")
	if len(managedFieldsOf(o)) != 1 {
		b.Fatalf("the create recorded no managedFields")
	}
	return m, o
}

// BenchmarkUpdate is what recording managedFields adds to an update that
// changes an annotation and the replicas of a ~2 KB object, by the
// manager that changed them last (a controller's steady state).
func BenchmarkUpdate(b *testing.B) {
	m, live := benchWidgets(b)
	change := func(o map[string]any, n int64) map[string]any {
		next := runtime.DeepCopyJSON(o)
		next["metadata"].(map[string]any)["annotations"] = map[string]any{"seq": fmt.Sprint(n)}
		next["spec"].(map[string]any)["replicas"] = n
		return next
	}
	first := change(live, 1)
	m.Update(live, first, "updater")
	live = first
	updateInBatches(b, m, live, change, "updater")
}

// BenchmarkUpdateOwn is the load generator's update: the manager that
// created the object changes the seq annotation and the replicas, fields
// it owns already, so only its entry's time may change.
func BenchmarkUpdateOwn(b *testing.B) {
	m, live := benchWidgets(b)
	updateInBatches(b, m, live, changeOwn, "creator")
}

// changeOwn is the load generator's update of o, the n-th: the seq
// annotation and the replicas change, and managedFields are not sent.
func changeOwn(o map[string]any, n int64) map[string]any {
	next := runtime.DeepCopyJSON(o)
	delete(next["metadata"].(map[string]any), "managedFields")
	next["metadata"].(map[string]any)["annotations"].(map[string]any)["bench.crdserver.io/seq"] = fmt.Sprint(n)
	next["spec"].(map[string]any)["replicas"] = n
	return next
}

// BenchmarkApply applies the object as it is with a changed annotation.
func BenchmarkApply(b *testing.B) {
	m, live := benchWidgets(b)
	patch := runtime.DeepCopyJSON(live)
	delete(patch["metadata"].(map[string]any), "managedFields")
	patch["metadata"].(map[string]any)["annotations"] = map[string]any{"seq": "1"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Apply(live, runtime.DeepCopyJSON(patch), "applier", true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyAgain applies the object as it is with a changed
// annotation to the object as the same applier applied it last: the
// usual apply of a controller or a GitOps tool.
func BenchmarkApplyAgain(b *testing.B) {
	m, live := benchWidgets(b)
	patch := runtime.DeepCopyJSON(live)
	delete(patch["metadata"].(map[string]any), "managedFields")
	patch["metadata"].(map[string]any)["annotations"] = map[string]any{"seq": "1"}
	applied, err := m.Apply(live, runtime.DeepCopyJSON(patch), "applier", true)
	if err != nil {
		b.Fatal(err)
	}
	patch["metadata"].(map[string]any)["annotations"] = map[string]any{"seq": "2"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Apply(applied, runtime.DeepCopyJSON(patch), "applier", true); err != nil {
			b.Fatal(err)
		}
	}
}

// updateInBatches times m.Update of live by manager to change(live, n),
// the copies made in batches outside the timer.
func updateInBatches(b *testing.B, m *Manager, live map[string]any, change func(map[string]any, int64) map[string]any, manager string) {
	inBatches(b, live, change, func(next map[string]any) { m.Update(live, next, manager) })
}

// inBatches times step on change(from, n) for each n, the changed copies
// made in batches outside the timer.
func inBatches(b *testing.B, from map[string]any, change func(map[string]any, int64) map[string]any, step func(next map[string]any)) {
	batch := make([]map[string]any, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(batch) == 0 {
			b.StopTimer()
			for j := range batch {
				batch[j] = change(from, int64(j+2))
			}
			b.StartTimer()
		}
		step(batch[i%len(batch)])
	}
}

// BenchmarkUpdateOwnEncoded is BenchmarkUpdateOwn from an object whose
// managedFields are kept encoded, as the handler reads it.
func BenchmarkUpdateOwnEncoded(b *testing.B) {
	m, live := benchWidgets(b)
	// The changes are made from the decoded object, the update from the
	// encoded one.
	change := func(_ map[string]any, n int64) map[string]any { return changeOwn(live, n) }
	enc, err := codec.Marshal(live)
	if err != nil {
		b.Fatal(err)
	}
	raw, _, err := codec.Decode(enc, "", codec.DecodeOptions{RawManagedFields: true})
	if err != nil {
		b.Fatal(err)
	}
	if _, ok := rawManagedFields(raw); !ok {
		b.Fatal("managedFields not kept encoded")
	}
	updateInBatches(b, m, raw, change, "creator")
}

// BenchmarkScalarChanges is the walk that finds what the load generator's
// update changed (the seq annotation and the replicas), which every update
// on the fast paths makes.
func BenchmarkScalarChanges(b *testing.B) {
	m, live := benchWidgets(b)
	live = withoutManagedFields(live)
	next := changeOwn(live, 7)
	v, err := m.Types.version("v1")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if changes, ok := scalarChangeList(v.walk, live, next); !ok || len(changes) != 2 {
			b.Fatalf("changes %v, %v; want the annotation and the replicas", changes, ok)
		}
	}
}
