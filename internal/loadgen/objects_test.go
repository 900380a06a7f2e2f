package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/crdserver/crdserver/internal/cel"
)

func loadCRD(t *testing.T) *apiextv1.CustomResourceDefinition {
	t.Helper()
	var crd apiextv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(WidgetsCRD(), &crd); err != nil {
		t.Fatalf("embedded CRD does not decode strictly: %v", err)
	}
	return &crd
}

func TestWidgetsCRD(t *testing.T) {
	crd := loadCRD(t)
	if crd.Name != "widgets.bench.crdserver.io" || crd.Spec.Group != widgetsGVR.Group ||
		crd.Spec.Names.Plural != widgetsGVR.Resource || crd.Spec.Names.Kind != "Widget" ||
		crd.Spec.Scope != apiextv1.NamespaceScoped {
		t.Errorf("unexpected CRD identity: %s %+v %s", crd.Name, crd.Spec.Names, crd.Spec.Scope)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != widgetsGVR.Version {
		t.Fatalf("versions = %+v", crd.Spec.Versions)
	}
	v := crd.Spec.Versions[0]
	if v.Subresources == nil || v.Subresources.Status == nil {
		t.Error("no status subresource")
	}
	if len(v.AdditionalPrinterColumns) < 4 {
		t.Errorf("%d printer columns, want at least 4", len(v.AdditionalPrinterColumns))
	}

	// The schema should exercise what real ones do.
	var fields int
	var features = map[string]bool{}
	var walk func(s *apiextv1.JSONSchemaProps)
	walk = func(s *apiextv1.JSONSchemaProps) {
		if s.Default != nil {
			features["default"] = true
		}
		if s.Pattern != "" {
			features["pattern"] = true
		}
		if len(s.Enum) > 0 {
			features["enum"] = true
		}
		if s.XIntOrString {
			features["int-or-string"] = true
		}
		if s.XListType != nil && *s.XListType == "map" {
			features["list-map"] = true
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			features["map"] = true
			walk(s.AdditionalProperties.Schema)
		}
		if s.Items != nil && s.Items.Schema != nil {
			walk(s.Items.Schema)
		}
		for _, p := range s.Properties {
			fields++
			walk(&p)
		}
	}
	walk(v.Schema.OpenAPIV3Schema)
	if fields < 25 {
		t.Errorf("schema has %d fields, want at least 25", fields)
	}
	for _, f := range []string{"default", "pattern", "enum", "int-or-string", "list-map", "map"} {
		if !features[f] {
			t.Errorf("schema uses no %s", f)
		}
	}
}

// TestWidgetMatchesSchema guards against a benchmark that measures 422s: the
// generated widgets must be valid against the CRD's schema.
func TestWidgetMatchesSchema(t *testing.T) {
	schema := loadCRD(t).Spec.Versions[0].Schema.OpenAPIV3Schema
	for _, i := range []int{0, 1, 2, 7, 99, 12345} {
		w := newWidget(fmt.Sprintf("bench-%d", i), "ns", "run", i)
		// Round-trip through JSON, as the object travels.
		var obj map[string]any
		data, _ := json.Marshal(w.Object)
		if err := json.Unmarshal(data, &obj); err != nil {
			t.Fatal(err)
		}
		for _, field := range []string{"spec", "status"} {
			if v, ok := obj[field]; ok {
				for _, problem := range checkSchema(v, schema.Properties[field], field) {
					t.Errorf("widget %d: %s", i, problem)
				}
			}
		}
	}
}

// checkSchema is a small validator covering the schema features the CRD
// uses; it is not a general OpenAPI validator.
func checkSchema(v any, s apiextv1.JSONSchemaProps, path string) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, path+": "+fmt.Sprintf(format, args...))
	}
	if s.XIntOrString {
		switch v.(type) {
		case string, float64:
		default:
			bad("want int or string, got %T", v)
		}
		return problems
	}
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			bad("want object, got %T", v)
			return problems
		}
		for _, r := range s.Required {
			if _, ok := m[r]; !ok {
				bad("missing required %s", r)
			}
		}
		for k, child := range m {
			if p, ok := s.Properties[k]; ok {
				problems = append(problems, checkSchema(child, p, path+"."+k)...)
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				problems = append(problems, checkSchema(child, *s.AdditionalProperties.Schema, path+"."+k)...)
			} else {
				bad("unknown field %s (would be pruned)", k)
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			bad("want array, got %T", v)
			return problems
		}
		if s.MaxItems != nil && int64(len(a)) > *s.MaxItems {
			bad("too many items")
		}
		for i, item := range a {
			problems = append(problems, checkSchema(item, *s.Items.Schema, fmt.Sprintf("%s[%d]", path, i))...)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			bad("want string, got %T", v)
			return problems
		}
		if s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString(str) {
			bad("%q does not match %s", str, s.Pattern)
		}
		if s.MaxLength != nil && int64(len(str)) > *s.MaxLength {
			bad("too long")
		}
		if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e apiextv1.JSON) bool { return string(e.Raw) == `"`+str+`"` }) {
			bad("%q not in enum", str)
		}
	case "integer", "number":
		f, ok := v.(float64)
		if !ok {
			bad("want number, got %T", v)
			return problems
		}
		if s.Type == "integer" && f != float64(int64(f)) {
			bad("want integer, got %v", f)
		}
		if s.Minimum != nil && f < *s.Minimum {
			bad("%v below minimum %v", f, *s.Minimum)
		}
		if s.Maximum != nil && f > *s.Maximum {
			bad("%v above maximum %v", f, *s.Maximum)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("want boolean, got %T", v)
		}
	}
	return problems
}

func TestPadTo(t *testing.T) {
	builders := map[string]func() *unstructured.Unstructured{
		ResourceWidgets:    func() *unstructured.Unstructured { return newWidget("bench-1", "ns", "run", 1) },
		ResourceNamespaces: func() *unstructured.Unstructured { return newNamespace("bench-run-1", "run", 1) },
	}
	for kind, build := range builders {
		unpadded, _ := json.Marshal(build().Object)
		// The padding annotation's key and quotes alone take about 40 bytes,
		// so the smallest size that can be padded exactly lies above that.
		for _, size := range []int{len(unpadded) + 40, 2048, 10240} {
			t.Run(fmt.Sprintf("%s/%d", kind, size), func(t *testing.T) {
				obj := build()
				if err := padTo(obj, size); err != nil {
					t.Fatal(err)
				}
				data, _ := json.Marshal(obj.Object)
				if len(data) != size {
					t.Errorf("size = %d, want %d", len(data), size)
				}
			})
		}
	}
}

func TestPadToSmallerThanObject(t *testing.T) {
	obj := newWidget("bench-1", "ns", "run", 1)
	if err := padTo(obj, 10); err != nil {
		t.Fatal(err)
	}
	if _, ok := obj.GetAnnotations()[annotationPadding]; ok {
		t.Error("object larger than size got a padding annotation")
	}
}

// The celwidgets variant's rules compile within their cost limits, pass
// every widget the load generator writes, and refuse what they are for.
func TestCELWidgetsCRD(t *testing.T) {
	u, err := WidgetsCRDFor(ResourceCELWidgets)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
		t.Fatal(err)
	}
	s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	if errs := cel.Check(s, field.NewPath("schema"), cel.CheckOptions{}); len(errs) > 0 {
		t.Fatalf("rules refused: %v", errs)
	}
	v := cel.New(s)
	if v == nil {
		t.Fatal("no rules compiled")
	}
	obj := newWidget("w", "ns", "run", 5).Object
	if errs, _ := v.Validate(context.Background(), obj, nil); len(errs) > 0 {
		t.Fatalf("a generated widget fails the rules: %v", errs)
	}
	moved := runtime.DeepCopyJSON(obj)
	_ = unstructured.SetNestedField(moved, "someone-else", "spec", "owner")
	if errs, _ := v.Validate(context.Background(), moved, obj); len(errs) != 1 || !strings.Contains(errs[0].Error(), "owner is immutable") {
		t.Fatalf("changing the owner: got %v, want the transition rule's error", errs)
	}
}
