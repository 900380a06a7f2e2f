package schemabench

import (
	"context"
	"testing"

	"github.com/crdserver/crdserver/internal/cel"
	"github.com/crdserver/crdserver/internal/loadgen"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	upstreamcel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
)

// celWidgetsProps is the schema of the load generator's celwidgets CRD:
// the Widget schema with four rules, one a transition rule and one a list
// macro.
func celWidgetsProps(tb testing.TB) *apiextensionsv1.JSONSchemaProps {
	tb.Helper()
	u, err := loadgen.WidgetsCRDFor(loadgen.ResourceCELWidgets)
	if err != nil {
		tb.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
		tb.Fatal(err)
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// upstreamRules builds upstream's CEL validator the way its custom
// resource strategy does, and runs it as an update does: with the
// ratcheting correlation of new and old objects.
type upstreamRules struct {
	s *structuralschema.Structural
	v *upstreamcel.Validator
}

func newUpstreamRules(tb testing.TB) upstreamRules {
	tb.Helper()
	internal := &apiextensionsinternal.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(celWidgetsProps(tb), internal, nil); err != nil {
		tb.Fatal(err)
	}
	s, err := structuralschema.NewStructural(internal)
	if err != nil {
		tb.Fatal(err)
	}
	return upstreamRules{s: s, v: upstreamcel.NewValidator(s, true, celconfig.PerCallLimit)}
}

func (u upstreamRules) validate(obj, old map[string]any) field.ErrorList {
	var opts []upstreamcel.Option
	if old != nil {
		opts = append(opts, upstreamcel.WithRatcheting(common.NewCorrelatedObject(obj, old, &model.Structural{Structural: u.s})))
	}
	errs, _ := u.v.Validate(context.Background(), nil, u.s, obj, old, celconfig.RuntimeCELCostBudget, opts...)
	return errs
}

// TestSameRuleResults: both validators accept the widget on create and
// on update, and both refuse a change of owner with the same error.
func TestSameRuleResults(t *testing.T) {
	ours := cel.New(celWidgetsProps(t))
	theirs := newUpstreamRules(t)
	obj := widgetObject(t)
	delete(obj["spec"].(map[string]any), "unknownField")
	if errs, _ := ours.Validate(context.Background(), obj, nil); len(errs) > 0 {
		t.Errorf("crdserver refuses the widget: %v", errs)
	}
	if errs := theirs.validate(obj, nil); len(errs) > 0 {
		t.Errorf("upstream refuses the widget: %v", errs)
	}
	moved := runtime.DeepCopyJSON(obj)
	moved["spec"].(map[string]any)["owner"] = "team-9"
	a, _ := ours.Validate(context.Background(), moved, obj)
	b := theirs.validate(moved, obj)
	if len(a) != 1 || len(b) != 1 || a[0].Error() != b[0].Error() {
		t.Errorf("owner change: crdserver %v, upstream %v", a, b)
	}
}

// BenchmarkRules evaluates the four rules of celwidgets on the ~2 KB
// widget, as a create (no old object) and as an update (the transition
// rule runs, with ratcheting), with crdserver's and upstream's CEL
// validators side by side.
func BenchmarkRules(b *testing.B) {
	ours := cel.New(celWidgetsProps(b))
	theirs := newUpstreamRules(b)
	obj := widgetObject(b)
	delete(obj["spec"].(map[string]any), "unknownField")
	old := runtime.DeepCopyJSON(obj)
	old["spec"].(map[string]any)["replicas"] = int64(7)
	ctx := context.Background()
	for _, op := range []struct {
		name string
		old  map[string]any
	}{{"op=create", nil}, {"op=update", old}} {
		b.Run(op.name+"/impl=crdserver", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if errs, _ := ours.Validate(ctx, obj, op.old); len(errs) > 0 {
					b.Fatal(errs)
				}
			}
		})
		b.Run(op.name+"/impl=upstream", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if errs := theirs.validate(obj, op.old); len(errs) > 0 {
					b.Fatal(errs)
				}
			}
		})
	}
}
