package cel

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FuzzRules compiles an arbitrary rule on a schema with every kind of
// node and evaluates it on an arbitrary object: nothing may panic, a
// rule that does not compile is reported, and no evaluation outlives the
// runtime budget by much.
func FuzzRules(f *testing.F) {
	for _, seed := range []struct{ rule, obj string }{
		{"self.s.startsWith('a')", `{"s":"abc"}`},
		{"self.l.all(x, x > 0)", `{"l":[1,2,3]}`},
		{"self.m.exists(k, self.m[k] == 'v')", `{"m":{"a":"v"}}`},
		{"self.ios == 1 || self.ios == '1'", `{"ios":"1"}`},
		{"self.t > timestamp('2000-01-01T00:00:00Z')", `{"t":"2001-01-01T00:00:00Z"}`},
		{"self.lm.map(x, x.k).size() > 0 && self == oldSelf", `{"lm":[{"k":"a"}]}`},
		{"self.l.all(x, self.l.all(y, self.l.all(z, x + y + z > 0)))", `{"l":[1,2,3,4,5,6,7,8,9,10]}`},
		{"quantity(self.s).isLessThan(quantity('1Gi'))", `{"s":"1Mi"}`},
		{"self.s.matches(self.s)", `{"s":"(a+)+$"}`},
		{"size(self.s) < 3", `{"s":null}`},
		{"self.n / 0 > 1", `{"n":1.5}`},
	} {
		f.Add(seed.rule, seed.obj)
	}
	f.Fuzz(func(t *testing.T, rule, obj string) {
		p := fuzzSchema(rule)
		errs := Check(p, field.NewPath("schema"), CheckOptions{})
		v := New(p)
		if v == nil {
			t.Fatal("no validator for a schema with a rule")
		}
		var o map[string]any
		if json.Unmarshal([]byte(obj), &o) != nil {
			return
		}
		o = fixNumbers(o).(map[string]any)
		start := time.Now()
		verrs, _ := v.Validate(context.Background(), o, o)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("rule %q took %v", rule, d)
		}
		if len(errs) > 0 && len(verrs) == 0 {
			// A rule refused at CRD write reports itself at runtime too
			// (as "rule compile error"), unless only its cost was refused.
			for _, e := range errs {
				if e.Type != field.ErrorTypeForbidden {
					t.Fatalf("rule %q refused (%v) but evaluated without error", rule, errs)
				}
			}
		}
	})
}

func fuzzSchema(rule string) *apiextensionsv1.JSONSchemaProps {
	ml := int64(64)
	mi := int64(16)
	str := apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: &ml}
	mapList := "map"
	return &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"s":   str,
			"n":   {Type: "number"},
			"i":   {Type: "integer"},
			"b":   {Type: "boolean"},
			"t":   {Type: "string", Format: "date-time"},
			"ios": {XIntOrString: true},
			"l":   {Type: "array", MaxItems: &mi, Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "integer"}}},
			"m":   {Type: "object", MaxProperties: &mi, AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}},
			"lm": {Type: "array", MaxItems: &mi, XListType: &mapList, XListMapKeys: []string{"k"}, Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", Required: []string{"k"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{"k": str},
			}}},
		},
		XValidations: apiextensionsv1.ValidationRules{{Rule: rule}},
	}
}
