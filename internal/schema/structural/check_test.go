package structural

import (
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

var root = field.NewPath("spec", "validation", "openAPIV3Schema")

// tc is one Check case; line says where it is declared.
type tc struct {
	line   string
	name   string
	schema string
	status bool
	opts   Options
	want   []string // err.Error() of each cause, in order
}

// at returns the caller's file:line, to name a table case.
func at() string {
	_, file, line, _ := runtime.Caller(1)
	return fmt.Sprintf("%s:%d", file[strings.LastIndex(file, "/")+1:], line)
}

func parse(t testing.TB, s string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	var props apiextensionsv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict([]byte(s), &props); err != nil {
		t.Fatalf("schema: %v", err)
	}
	return &props
}

func run(t *testing.T, cases []tc) {
	t.Helper()
	dump := os.Getenv("STRUCTURAL_DUMP") != ""
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := Check(parse(t, c.schema), root, c.status, c.opts)
			got := make([]string, len(errs))
			for i, e := range errs {
				got[i] = e.Error()
			}
			if dump {
				fmt.Printf("== %s\n", c.name)
				for _, g := range got {
					fmt.Printf("\t\t%q,\n", g)
				}
				return
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("%s: got\n\t%s\nwant\n\t%s", c.line, strings.Join(got, "\n\t"), strings.Join(c.want, "\n\t"))
			}
			for _, e := range errs {
				if e.Field == "" {
					t.Errorf("%s: error without field path: %v", c.line, e)
				}
			}
		})
	}
}

func specWith(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinitionSpec {
	return &apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
		{Name: "v1", Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: s}},
	}}
}

// TestRootFieldNames: the status-root fast path reads the v1 type by the
// field names of the internal type.
func TestRootFieldNames(t *testing.T) {
	v1 := reflect.TypeOf(apiextensionsv1.JSONSchemaProps{})
	in := reflect.TypeOf(apiextensionsinternal.JSONSchemaProps{})
	if v1.NumField() != in.NumField() {
		t.Fatalf("v1 has %d fields, internal %d", v1.NumField(), in.NumField())
	}
	for i := 0; i < v1.NumField(); i++ {
		if _, ok := in.FieldByName(v1.Field(i).Name); !ok {
			t.Errorf("internal schema has no field %s", v1.Field(i).Name)
		}
	}
}
