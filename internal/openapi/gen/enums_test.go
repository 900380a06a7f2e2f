package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// definitions is a zz_generated.openapi.go in the shape openapi-gen writes
// it: a strategy type with an enum field, a spec with a list of enum values,
// and a type with no enum.
const definitions = `package openapi

import (
	v1 "k8s.io/api/apps/v1"
	common "k8s.io/kube-openapi/pkg/common"
	spec "k8s.io/kube-openapi/pkg/validation/spec"
)

func GetOpenAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	return map[string]common.OpenAPIDefinition{
		v1.Strategy{}.OpenAPIModelName(): schema_k8sio_api_apps_v1_Strategy(ref),
		v1.Spec{}.OpenAPIModelName():     schema_k8sio_api_apps_v1_Spec(ref),
		v1.Plain{}.OpenAPIModelName():    schema_k8sio_api_apps_v1_Plain(ref),
	}
}

func schema_k8sio_api_apps_v1_Strategy(ref common.ReferenceCallback) common.OpenAPIDefinition {
	return common.OpenAPIDefinition{
		Schema: spec.Schema{
			SchemaProps: spec.SchemaProps{
				Description: "Strategy says how.",
				Type:        []string{"object"},
				Properties: map[string]spec.Schema{
					"type": {
						SchemaProps: spec.SchemaProps{
							Description: "Type of strategy.\n\nPossible enum values:\n - ` + "`" + `\"A\"` + "`" + ` first\n - ` + "`" + `\"B\"` + "`" + ` second",
							Default:     "",
							Type:        []string{"string"},
							Enum:        []interface{}{"A", "B"},
						},
					},
				},
			},
		},
	}
}

func schema_k8sio_api_apps_v1_Spec(ref common.ReferenceCallback) common.OpenAPIDefinition {
	return common.OpenAPIDefinition{
		Schema: spec.Schema{
			SchemaProps: spec.SchemaProps{
				Type: []string{"object"},
				Properties: map[string]spec.Schema{
					"types": {
						VendorExtensible: spec.VendorExtensible{
							Extensions: spec.Extensions{"x-kubernetes-list-type": "atomic"},
						},
						SchemaProps: spec.SchemaProps{
							Description: "types is a list.",
							Type:        []string{"array"},
							Items: &spec.SchemaOrArray{
								Schema: &spec.Schema{
									SchemaProps: spec.SchemaProps{
										Type: []string{"string"},
										Enum: []interface{}{"X", "Y"},
									},
								},
							},
						},
					},
					"strategy": {
						SchemaProps: spec.SchemaProps{
							Default: map[string]interface{}{},
							Ref:     ref(v1.Strategy{}.OpenAPIModelName()),
						},
					},
				},
			},
		},
		Dependencies: []string{v1.Strategy{}.OpenAPIModelName()},
	}
}

func schema_k8sio_api_apps_v1_Plain(ref common.ReferenceCallback) common.OpenAPIDefinition {
	return common.OpenAPIDefinition{
		Schema: spec.Schema{
			SchemaProps: spec.SchemaProps{Type: []string{"object"}},
		},
	}
}
`

func writeDefinitions(t *testing.T, src string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "zz_generated.openapi.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestEnumSites(t *testing.T) {
	sites, models, err := enumSites(writeDefinitions(t, definitions))
	if err != nil {
		t.Fatal(err)
	}
	wantModels := map[string]bool{"io.k8s.api.apps.v1.Strategy": true, "io.k8s.api.apps.v1.Spec": true, "io.k8s.api.apps.v1.Plain": true}
	if !reflect.DeepEqual(models, wantModels) {
		t.Errorf("models %v, want %v", models, wantModels)
	}
	want := map[string][]enumSite{
		"io.k8s.api.apps.v1.Strategy": {{
			path:        []string{"properties", "type"},
			enum:        []string{"A", "B"},
			description: "Type of strategy.\n\nPossible enum values:\n - `\"A\"` first\n - `\"B\"` second",
		}},
		"io.k8s.api.apps.v1.Spec": {{path: []string{"properties", "types", "items"}, enum: []string{"X", "Y"}}},
	}
	if !reflect.DeepEqual(sites, want) {
		t.Errorf("sites\n%#v\nwant\n%#v", sites, want)
	}
}

// An enum where gen does not look is an error, not a site missed.
func TestEnumSitesRefusesUnknownPlaces(t *testing.T) {
	src := strings.Replace(definitions, `SchemaProps: spec.SchemaProps{Type: []string{"object"}},`,
		`SchemaProps: spec.SchemaProps{Type: []string{"object"}, Not: &spec.Schema{SchemaProps: spec.SchemaProps{Enum: []interface{}{"Z"}}}},`, 1)
	if _, _, err := enumSites(writeDefinitions(t, src)); err == nil || !strings.Contains(err.Error(), "Plain has 1 enum lists, 0 of them") {
		t.Errorf("err = %v, want one about the enum under not", err)
	}
}

func TestWithEnums(t *testing.T) {
	site := enumSite{
		path:        []string{"properties", "type"},
		enum:        []string{"A", "B"},
		description: "Type of strategy.\n\nPossible enum values:\n - `\"A\"` first",
	}
	tests := []struct {
		name      string
		published string
		want      string // "" for an error
	}{
		{"put back", `{"type":"object","properties":{"type":{"description":"Type of strategy.","type":"string"},"z":{}}}`,
			`{"type":"object","properties":{"type":{"description":"Type of strategy.\n\nPossible enum values:\n - ` + "`" + `\"A\"` + "`" + ` first","type":"string","enum":["A","B"]},"z":{}}}`},
		{"another description", `{"properties":{"type":{"description":"Kind of strategy.","type":"string"}}}`, ""},
		{"enum there already", `{"properties":{"type":{"description":"Type of strategy.","enum":["A"]}}}`, ""},
		{"no such property", `{"properties":{"kind":{"type":"string"}}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withEnums(json.RawMessage(tt.published), []enumSite{site})
			if tt.want == "" {
				if err == nil {
					t.Errorf("got %s, want an error", got)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("got %s, %v\nwant %s", got, err, tt.want)
			}
		})
	}
}
