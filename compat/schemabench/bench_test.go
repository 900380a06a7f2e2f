package schemabench

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/crdserver/crdserver/internal/schema"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// The schema is read from the load generator's CRD rather than copied, so
// the benchmark follows it when it changes.
const crdPath = "../../internal/loadgen/widgets-crd.yaml"

// widgetsProps returns the openAPIV3Schema of the Widget CRD's only version.
func widgetsProps(tb testing.TB) *apiextensionsv1.JSONSchemaProps {
	tb.Helper()
	data, err := os.ReadFile(crdPath)
	if err != nil {
		tb.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		tb.Fatalf("decoding %s: %v", crdPath, err)
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// widgetObject returns the ~2 KB Widget of testdata/widget.json, decoded as
// upstream's unstructured decoder does (int64 and float64 numbers). It has
// one unknown field to prune and three fields left to defaulting.
func widgetObject(tb testing.TB) map[string]any {
	tb.Helper()
	data, err := os.ReadFile("testdata/widget.json")
	if err != nil {
		tb.Fatal(err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(data, &obj); err != nil {
		tb.Fatalf("decoding widget: %v", err)
	}
	return obj
}

// crdserverPipeline is the per-request schema work of crdserver's handler.
type crdserverPipeline struct{ s *schema.Schema }

func newCrdserver(tb testing.TB) crdserverPipeline {
	tb.Helper()
	s, err := schema.Compile(widgetsProps(tb))
	if err != nil {
		tb.Fatalf("compiling schema: %v", err)
	}
	return crdserverPipeline{s: s}
}

func (p crdserverPipeline) run(obj map[string]any) ([]string, field.ErrorList) {
	unknown := p.s.Prune(obj)
	p.s.Default(obj)
	return unknown, p.s.Validate(obj)
}

// upstreamPipeline is the same work done with upstream's code, built the way
// crdHandler.getOrCreateServingInfoFor builds it: the v1 schema converted to
// the internal version, a structural schema with pruned defaults, and a
// kube-openapi schema validator.
type upstreamPipeline struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
}

func newUpstream(tb testing.TB) upstreamPipeline {
	tb.Helper()
	internal := &apiextensionsinternal.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(widgetsProps(tb), internal, nil); err != nil {
		tb.Fatalf("converting schema: %v", err)
	}
	s, err := structuralschema.NewStructural(internal)
	if err != nil {
		tb.Fatalf("structural schema: %v", err)
	}
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		tb.Fatalf("pruning defaults: %v", err)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		tb.Fatalf("schema validator: %v", err)
	}
	return upstreamPipeline{structural: s, validator: validator}
}

// run mirrors upstream's request path for a create of a custom resource:
// unstructuredSchemaCoercer.apply in the decoder (with fieldValidation
// Strict or Warn, kubectl's default, so unknown paths are collected),
// unstructuredDefaulter, then the schema parts of
// customResourceStrategy.Validate. Left out, as they are not the schema
// pipeline (crdserver's handler does them elsewhere): TypeMeta and root
// ObjectMeta validation, scale validation, and CEL rules (the schema has
// none).
func (p upstreamPipeline) run(obj map[string]any) ([]string, field.ErrorList) {
	// Decode: save apiVersion, kind and metadata, prune, drop nulls, coerce
	// embedded metadata, restore (metadata through ObjectMeta).
	kind, foundKind := obj["kind"]
	apiVersion, foundAPIVersion := obj["apiVersion"]
	objectMeta, foundObjectMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(obj, schemaobjectmeta.ObjectMetaOptions{
		DropMalformedFields:     true,
		ReturnUnknownFieldPaths: true,
	})
	if err != nil {
		return nil, field.ErrorList{field.InternalError(nil, err)}
	}
	unknown = append(unknown, structuralpruning.PruneWithOptions(obj, p.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, p.structural)
	fieldErr, paths := schemaobjectmeta.CoerceWithOptions(nil, obj, p.structural, false, schemaobjectmeta.CoerceOptions{
		DropInvalidFields:       true,
		ReturnUnknownFieldPaths: true,
	})
	if fieldErr != nil {
		return nil, field.ErrorList{fieldErr}
	}
	unknown = append(unknown, paths...)
	if foundKind {
		obj["kind"] = kind
	}
	if foundAPIVersion {
		obj["apiVersion"] = apiVersion
	}
	if foundObjectMeta {
		if err := schemaobjectmeta.SetObjectMeta(obj, objectMeta); err != nil {
			return nil, field.ErrorList{field.InternalError(nil, err)}
		}
	}

	// Default.
	structuraldefaulting.Default(obj, p.structural)

	// Validate: OpenAPI keywords, embedded resources, list types.
	errs := apiservervalidation.ValidateCustomResource(nil, obj, p.validator)
	errs = append(errs, schemaobjectmeta.Validate(context.Background(), nil, obj, p.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, p.structural, obj)...)
	return unknown, errs
}

// TestSameResult keeps the comparison fair: both pipelines accept the
// object, report the same unknown field, and leave the same pruned and
// defaulted object.
func TestSameResult(t *testing.T) {
	src := widgetObject(t)
	if data, _ := json.Marshal(src); len(data) < 1900 || len(data) > 2200 {
		t.Errorf("widget is %d bytes of JSON, want about 2 KB", len(data))
	}

	ours, theirs := runtime.DeepCopyJSON(src), runtime.DeepCopyJSON(src)
	ourUnknown, errs := newCrdserver(t).run(ours)
	if len(errs) != 0 {
		t.Errorf("crdserver rejects the widget: %v", errs)
	}
	theirUnknown, errs := newUpstream(t).run(theirs)
	if len(errs) != 0 {
		t.Errorf("upstream rejects the widget: %v", errs)
	}
	slices.Sort(theirUnknown)
	if want := []string{"spec.unknownField"}; !slices.Equal(ourUnknown, want) || !slices.Equal(theirUnknown, want) {
		t.Errorf("unknown fields: crdserver %q, upstream %q, want %q", ourUnknown, theirUnknown, want)
	}
	if !reflect.DeepEqual(ours, theirs) {
		a, _ := json.MarshalIndent(ours, "", "  ")
		b, _ := json.MarshalIndent(theirs, "", "  ")
		t.Errorf("results differ\ncrdserver:\n%s\nupstream:\n%s", a, b)
	}
	// The object must have given each step work to do.
	spec := ours["spec"].(map[string]any)
	if _, ok := spec["unknownField"]; ok {
		t.Error("spec.unknownField not pruned")
	}
	if spec["size"] != "medium" {
		t.Errorf("spec.size = %v, want the default medium", spec["size"])
	}
}

// BenchmarkPipeline runs both pipelines side by side. Each op deep-copies
// the object first, as a handler works on a freshly decoded object; the
// impl=deepcopy sub-benchmark gives that share alone. The impl=name keys let
// benchstat -col /impl put the three in columns.
func BenchmarkPipeline(b *testing.B) {
	src := widgetObject(b)
	pipelines := []struct {
		name string
		run  func(map[string]any) ([]string, field.ErrorList)
	}{
		{"impl=crdserver", newCrdserver(b).run},
		{"impl=upstream", newUpstream(b).run},
		{"impl=deepcopy", func(map[string]any) ([]string, field.ErrorList) { return nil, nil }},
	}
	for _, p := range pipelines {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				obj := runtime.DeepCopyJSON(src)
				if _, errs := p.run(obj); len(errs) != 0 {
					b.Fatal(errs)
				}
			}
		})
	}
}
