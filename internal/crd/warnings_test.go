package crd

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// warnCRD is a v1 CRD whose versions v1, v2, … have the given
// openAPIV3Schemas (JSON), the first the storage version.
func warnCRD(t *testing.T, schemas ...string) map[string]any {
	t.Helper()
	versions := make([]string, len(schemas))
	for i, s := range schemas {
		versions[i] = fmt.Sprintf(`{"name":"v%d","served":true,"storage":%t,"schema":{"openAPIV3Schema":%s}}`, i+1, i == 0, s)
	}
	return parseObj(t, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"widgets.example.com"},
		"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},
		"versions":[`+strings.Join(versions, ",")+`]}}`)
}

func parseObj(t *testing.T, s string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := utiljson.Unmarshal([]byte(s), &obj); err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	return obj
}

func formatWarnings(formats ...string) []string {
	out := make([]string, len(formats))
	for i, f := range formats {
		out[i] = fmt.Sprintf("unrecognized format %q", f)
	}
	return out
}

func setWarning(itemType string) string {
	return `x-kubernetes-list-type: set for items of type "` + itemType + `" is not supported by server-side apply or CEL validation rules`
}

func TestWarningsOnCreate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		schemas []string
		want    []string
	}{{
		name:    "no formats",
		schemas: []string{`{"type":"object","properties":{"spec":{"type":"object"}}}`},
	}, {
		name: "recognized formats, dashes ignored",
		schemas: []string{`{"type":"object","properties":{
			"a":{"type":"string","format":"date-time"},"b":{"type":"string","format":"datetime"},
			"c":{"type":"string","format":"k8s-short-name"},"d":{"type":"string","format":"k8slongname"},
			"e":{"type":"string","format":"u-u-i-d"},"f":{"format":"email"},
			"g":{"type":"integer","format":"int32"},"h":{"type":"integer","format":"int64"},
			"i":{"type":"number","format":"float"},"j":{"type":"number","format":"double"},
			"k":{"x-kubernetes-int-or-string":true,"format":"byte"}}}`},
	}, {
		name: "formats unknown, or on a type they do not apply to",
		schemas: []string{`{"type":"object","properties":{"a":{"type":"object","format":"date","properties":{
			"b":{"type":"array","format":"byte","items":{"type":"integer","format":"float","properties":{}}}}}}}`},
		want: formatWarnings("date", "byte", "float"),
	}, {
		name: "case matters; int-or-string is a string",
		schemas: []string{`{"type":"object","properties":{"a":{"type":"object","format":"Date","properties":{
			"b":{"x-kubernetes-int-or-string":true,"format":"int32","allOf":[{"format":"k8s_short_name"}]}}}}}`},
		want: formatWarnings("Date", "int32", "k8s_short_name"),
	}, {
		name: "upstream's order: node, items, allOf, anyOf, oneOf, not, properties, additionalProperties",
		schemas: []string{`{"type":"object","format":"root","properties":{"spec":{"type":"object",
			"not":{"format":"not"},"oneOf":[{"format":"oneOf"}],"anyOf":[{"format":"anyOf1"},{"format":"anyOf2"}],"allOf":[{"format":"allOf"}],
			"properties":{"list":{"type":"array","format":"list","items":{"type":"object","format":"items","properties":{
				"m":{"type":"object","additionalProperties":{"type":"string","format":"additional"}}}}}}}}}`},
		want: formatWarnings("root", "allOf", "anyOf1", "anyOf2", "oneOf", "not", "list", "items", "additional"),
	}, {
		name:    "properties by name",
		schemas: []string{`{"type":"object","properties":{"b":{"type":"string","format":"second"},"a":{"type":"string","format":"first"}}}`},
		want:    formatWarnings("first", "second"),
	}, {
		name: "each version in order, repeats kept",
		schemas: []string{
			`{"type":"object","format":"one","properties":{"a":{"type":"string","format":"one"}}}`,
			`{"type":"object","format":"two"}`,
			`{"type":"object","format":"one"}`,
		},
		want: formatWarnings("one", "one", "two", "one"),
	}, {
		name: "set lists of objects and arrays, sorted, once, after the formats",
		schemas: []string{
			`{"type":"object","properties":{
				"objects":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"object","x-kubernetes-map-type":"atomic"}},
				"scalars":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string","format":"item"}},
				"atomic":{"type":"array","x-kubernetes-list-type":"atomic","items":{"type":"object"}}}}`,
			`{"type":"object","properties":{
				"more":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"object","x-kubernetes-map-type":"atomic"}},
				"grid":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"array","items":{"type":"string"}}}}}`,
		},
		want: append(formatWarnings("item"), setWarning("array"), setWarning("object")),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (Hooks{}).Warnings(warnCRD(t, tc.schemas...), nil, ""); !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestWarningsOnUpdate(t *testing.T) {
	const (
		stored = `{"type":"object","format":"kept","properties":{
			"s":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"object","x-kubernetes-map-type":"atomic"}}}}`
		newFormats = `{"type":"object","format":"kept","properties":{
			"a":{"type":"string","format":"kept"},"b":{"type":"string","format":"new"},"c":{"type":"string","format":"new"},
			"s":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"object","x-kubernetes-map-type":"atomic"}}}}`
		newSet = `{"type":"object","format":"kept","properties":{
			"g":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"array","items":{"type":"string"}}},
			"t":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"object","x-kubernetes-map-type":"atomic"}}}}`
	)
	for _, tc := range []struct {
		name     string
		old, obj []string
		sub      string
		want     []string
	}{
		{name: "unchanged", old: []string{stored}, obj: []string{stored}},
		{name: "formats already stored stay quiet, new ones warn as often as they occur",
			old: []string{stored}, obj: []string{newFormats}, want: formatWarnings("new", "new")},
		{name: "a format stored in another version counts",
			old: []string{stored, `{"type":"object","format":"other"}`}, obj: []string{`{"type":"object","format":"other"}`, stored}},
		{name: "only the kind of set list the stored CRD lacks",
			old: []string{stored}, obj: []string{newSet}, want: []string{setWarning("array")}},
		{name: "status writes warn of nothing", old: []string{stored}, obj: []string{newFormats, newSet}, sub: "status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (Hooks{}).Warnings(warnCRD(t, tc.obj...), warnCRD(t, tc.old...), tc.sub); !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestWarningsV1beta1(t *testing.T) {
	// A v1beta1 CRD reads as v1: its top-level schema is every version's.
	obj := parseObj(t, `{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"CustomResourceDefinition",
		"metadata":{"name":"widgets.example.com"},
		"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},
		"versions":[{"name":"v1","served":true,"storage":true},{"name":"v2","served":true,"storage":false}],
		"validation":{"openAPIV3Schema":{"type":"object","format":"beta","properties":{
			"n":{"type":"integer","format":"uint8"},
			"s":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"array"}}}}}}}`)
	want := append(formatWarnings("beta", "uint8", "beta", "uint8"), setWarning("array"))
	if got := (Hooks{}).Warnings(obj, nil, ""); !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// One that does not decode (the handler has refused it) warns of nothing.
	bad := parseObj(t, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","spec":{"versions":"v1"}}`)
	if got := (Hooks{}).Warnings(bad, nil, ""); got != nil {
		t.Errorf("undecodable: %q", got)
	}
}
