package crd

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// stored is obj as storage holds it and reads it back: encoded, decoded.
func stored(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := utiljson.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// typedAs decodes obj into a new T.
func typedAs[T any](t *testing.T, obj map[string]any) *T {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
	return v
}

// upstreamRoundTrip is what upstream does with a v1beta1 CRD written and
// then read through v1beta1, computed with its types and generated
// functions alone: v1beta1 defaults, v1beta1 → internal → v1 (stored,
// decoded, v1 defaults), v1 → internal → v1beta1.
func upstreamRoundTrip(t *testing.T, obj map[string]any) (*apiextensionsv1.CustomResourceDefinition, *apiextensionsv1beta1.CustomResourceDefinition) {
	t.Helper()
	in := typedAs[apiextensionsv1beta1.CustomResourceDefinition](t, obj)
	apiextensionsv1beta1.SetObjectDefaults_CustomResourceDefinition(in)
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1beta1.Convert_v1beta1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(in, &internal, nil); err != nil {
		t.Fatal(err)
	}
	var v1 apiextensionsv1.CustomResourceDefinition
	if err := apiextensionsv1.Convert_apiextensions_CustomResourceDefinition_To_v1_CustomResourceDefinition(&internal, &v1, nil); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(&v1)
	if err != nil {
		t.Fatal(err)
	}
	var read apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(b, &read); err != nil {
		t.Fatal(err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&read)
	var internal2 apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&read, &internal2, nil); err != nil {
		t.Fatal(err)
	}
	var back apiextensionsv1beta1.CustomResourceDefinition
	if err := apiextensionsv1beta1.Convert_apiextensions_CustomResourceDefinition_To_v1beta1_CustomResourceDefinition(&internal2, &back, nil); err != nil {
		t.Fatal(err)
	}
	return &v1, &back
}

// TestV1beta1RoundTrip writes each fixture through v1beta1 (ToStorage),
// stores it, reads it back through v1beta1 (FromStorage), and compares
// both the stored v1 form and the v1beta1 answer with what upstream's
// generated conversions give, field by field; then checks the fields the
// legacy API is about by name.
func TestV1beta1RoundTrip(t *testing.T) {
	for _, tc := range []struct {
		file string
		v1   map[string]any // stored v1 values by path ("spec.versions.0.name")
		back map[string]any // v1beta1 values read back
	}{{
		file: "v1beta1-single.yaml",
		v1: map[string]any{
			"spec.versions.0.name":    "v1",
			"spec.versions.0.served":  true,
			"spec.versions.0.storage": true,
			"spec.versions.0.schema.openAPIV3Schema.properties.spec.properties.replicas.default": int64(1),
			"spec.versions.0.subresources.scale.specReplicasPath":                                ".spec.replicas",
			"spec.versions.0.additionalPrinterColumns.0.jsonPath":                                ".spec.cronSpec",
			"spec.preserveUnknownFields":                                                         nil, // false, omitted
			"spec.names.singular":                                                                "crontab",
			"spec.names.listKind":                                                                "CronTabList",
			"spec.conversion.strategy":                                                           "None",
			"spec.version":                                                                       nil,
			"spec.validation":                                                                    nil,
			"status.conditions.0.type":                                                           "Established",
		},
		back: map[string]any{
			"spec.version":                             "v1",
			"spec.validation.openAPIV3Schema.type":     "object",
			"spec.subresources.status":                 map[string]any{},
			"spec.additionalPrinterColumns.0.JSONPath": ".spec.cronSpec",
			"spec.additionalPrinterColumns.1.name":     "Age",
			"spec.versions.0.schema":                   nil,
			"spec.versions.0.subresources":             nil,
			"spec.versions.0.additionalPrinterColumns": nil,
			"spec.preserveUnknownFields":               false,
			"status.storedVersions.0":                  "v1",
			"status.acceptedNames.plural":              "crontabs",
		},
	}, {
		file: "v1beta1-perversion.yaml",
		v1: map[string]any{
			"spec.versions.0.schema.openAPIV3Schema.properties.hostPort.type": "string",
			"spec.versions.1.schema.openAPIV3Schema.properties.host.type":     "string",
			"spec.versions.0.deprecated":                                      true,
			"spec.versions.1.subresources.status":                             map[string]any{},
			"spec.conversion.webhook.clientConfig.service.name":               "example-conversion-webhook-server",
			"spec.conversion.webhook.clientConfig.service.port":               int64(443),
			"spec.conversion.webhook.clientConfig.caBundle":                   "Y2EK",
			"spec.conversion.webhook.conversionReviewVersions":                []any{"v1beta1"},
			"spec.conversion.webhookClientConfig":                             nil,
		},
		back: map[string]any{
			"spec.version":                 "v1beta1",
			"spec.validation":              nil,
			"spec.subresources.status":     map[string]any{},
			"spec.versions.0.subresources": nil,
			"spec.versions.0.schema.openAPIV3Schema.properties.hostPort.type": "string",
			"spec.versions.1.additionalPrinterColumns.0.priority":             int64(1),
			"spec.conversion.webhookClientConfig.service.path":                "/crdconvert",
			"spec.conversion.webhookClientConfig.service.port":                int64(443),
			"spec.conversion.conversionReviewVersions":                        []any{"v1beta1"},
			"spec.conversion.webhook":                                         nil,
		},
	}, {
		file: "v1beta1-legacy.yaml",
		v1: map[string]any{
			"spec.preserveUnknownFields": true,
			"spec.scope":                 "Namespaced",
			"spec.versions.0.name":       "v1",
			"spec.versions.0.schema.openAPIV3Schema.required.0": "spec",
			"spec.versions.0.schema.openAPIV3Schema.type":       nil,
			"spec.conversion.strategy":                          "None",
		},
		back: map[string]any{
			"spec.preserveUnknownFields": true,
			"spec.version":               "v1",
			"spec.validation.openAPIV3Schema.properties.spec.oneOf.0.required.0": "shell",
		},
	}, {
		file: "v1beta1-webhook-url.yaml",
		v1: map[string]any{
			"spec.conversion.webhook.clientConfig.url":                                    "https://my-webhook.example.com:9443/my-webhook-path",
			"spec.conversion.webhook.conversionReviewVersions":                            []any{"v1", "v1beta1"},
			"spec.versions.1.served":                                                      false,
			"spec.versions.1.schema.openAPIV3Schema.x-kubernetes-preserve-unknown-fields": true,
		},
		back: map[string]any{
			"spec.version": "v2",
			"spec.validation.openAPIV3Schema.x-kubernetes-preserve-unknown-fields": true,
			"spec.conversion.webhookClientConfig.url":                              "https://my-webhook.example.com:9443/my-webhook-path",
			"spec.conversion.conversionReviewVersions":                             []any{"v1", "v1beta1"},
		},
	}} {
		t.Run(tc.file, func(t *testing.T) {
			in := load(t, tc.file)
			wantV1, wantBack := upstreamRoundTrip(t, load(t, tc.file))

			v1, err := Hooks{}.ToStorage(in, VersionV1beta1)
			if err != nil {
				t.Fatal(err)
			}
			v1 = stored(t, v1)
			if av := v1["apiVersion"]; av != "apiextensions.k8s.io/v1" {
				t.Errorf("stored apiVersion = %v", av)
			}
			gotV1 := typedAs[apiextensionsv1.CustomResourceDefinition](t, v1)
			if d := cmp.Diff(&wantV1.Spec, &gotV1.Spec); d != "" {
				t.Errorf("stored v1 spec differs from upstream's (-upstream +ours):\n%s", d)
			}
			if d := cmp.Diff(&wantV1.Status, &gotV1.Status); d != "" {
				t.Errorf("stored v1 status differs from upstream's (-upstream +ours):\n%s", d)
			}
			checkPaths(t, "stored v1", v1, tc.v1)

			back := Hooks{}.FromStorage(v1, VersionV1beta1)
			if av := back["apiVersion"]; av != "apiextensions.k8s.io/v1beta1" {
				t.Errorf("read apiVersion = %v", av)
			}
			back = stored(t, back)
			gotBack := typedAs[apiextensionsv1beta1.CustomResourceDefinition](t, back)
			if d := cmp.Diff(&wantBack.Spec, &gotBack.Spec); d != "" {
				t.Errorf("v1beta1 spec read back differs from upstream's (-upstream +ours):\n%s", d)
			}
			if d := cmp.Diff(&wantBack.Status, &gotBack.Status); d != "" {
				t.Errorf("v1beta1 status read back differs from upstream's (-upstream +ours):\n%s", d)
			}
			checkPaths(t, "v1beta1 read back", back, tc.back)
			if !reflect.DeepEqual(back["metadata"], in["metadata"]) {
				t.Errorf("metadata changed: %v, wrote %v", back["metadata"], in["metadata"])
			}

			// Written again as read (kubectl get -o yaml | kubectl apply),
			// it stores the same v1 object: the conversion loses nothing.
			again, err := Hooks{}.ToStorage(stored(t, back), VersionV1beta1)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(v1, stored(t, again)); d != "" {
				t.Errorf("writing back what was read changes the stored object (-first +second):\n%s", d)
			}
		})
	}
}

// checkPaths checks the values at dotted paths (numbers index lists); a
// nil value means absent.
func checkPaths(t *testing.T, what string, obj map[string]any, want map[string]any) {
	t.Helper()
	for p, w := range want {
		var keys []any
		for _, k := range strings.Split(p, ".") {
			if n, err := json.Number(k).Int64(); err == nil {
				keys = append(keys, int(n))
			} else {
				keys = append(keys, k)
			}
		}
		if got := at(obj, keys...); !reflect.DeepEqual(got, w) {
			t.Errorf("%s: %s = %#v, want %#v", what, p, got, w)
		}
	}
}

// TestV1ObjectReadAsV1beta1 reads a CRD created through v1 with the
// legacy API: versions that share a schema show it as spec.validation.
func TestV1ObjectReadAsV1beta1(t *testing.T) {
	obj := valid(t, "crontab.yaml")
	back := Hooks{}.FromStorage(stored(t, obj), VersionV1beta1)
	checkPaths(t, "v1beta1", back, map[string]any{
		"apiVersion":                 "apiextensions.k8s.io/v1beta1",
		"spec.version":               at(obj, "spec", "versions", 0, "name"),
		"spec.validation":            at(obj, "spec", "versions", 0, "schema"),
		"spec.versions.0.schema":     nil,
		"spec.preserveUnknownFields": false,
	})
	v1 := Hooks{}.FromStorage(stored(t, obj), Version)
	if d := cmp.Diff(stored(t, obj), v1); d != "" {
		t.Errorf("reading in v1 changes the object:\n%s", d)
	}
}

// TestV1beta1Validation: the legacy API accepts what v1 refuses —
// preserveUnknownFields true, versions without a schema, non-structural
// schemas when nothing needs a structural one — and refuses a
// non-structural schema once pruning or defaults need it.
func TestV1beta1Validation(t *testing.T) {
	h := Hooks{Schemas: StructuralChecker{}}
	write := func(t *testing.T, file string, edit func(map[string]any)) map[string]any {
		t.Helper()
		obj := load(t, file)
		if edit != nil {
			edit(obj)
		}
		v1, err := h.ToStorage(obj, VersionV1beta1)
		if err != nil {
			t.Fatal(err)
		}
		h.PrepareForCreate(v1)
		set(v1, "1", "metadata", "resourceVersion") // as stored
		return v1
	}
	legacy := write(t, "v1beta1-legacy.yaml", nil)
	if errs := h.ValidateIn(VersionV1beta1, legacy); len(errs) > 0 {
		t.Errorf("v1beta1 refuses a non-structural schema with preserveUnknownFields: %v", errs)
	}
	errs := h.ValidateIn(Version, legacy)
	for _, want := range []string{
		"spec.preserveUnknownFields: Invalid value: true: cannot set to true",
		"spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root",
	} {
		if !containsError(errs, want) {
			t.Errorf("v1 does not refuse it with %q: %v", want, errs)
		}
	}

	noSchema := write(t, "v1beta1-legacy.yaml", func(o map[string]any) { set(o, nil, "spec", "validation") })
	if errs := h.ValidateIn(VersionV1beta1, noSchema); len(errs) > 0 {
		t.Errorf("v1beta1 refuses a CRD without schema: %v", errs)
	}
	if errs := h.ValidateIn(Version, noSchema); !containsError(errs, "spec.versions[0].schema.openAPIV3Schema: Required value") {
		t.Errorf("v1 accepts a CRD without schema: %v", errs)
	}

	pruning := write(t, "v1beta1-legacy.yaml", func(o map[string]any) { set(o, false, "spec", "preserveUnknownFields") })
	if errs := h.ValidateIn(VersionV1beta1, pruning); !containsError(errs, "spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root") {
		t.Errorf("v1beta1 accepts a non-structural schema with pruning on: %v", errs)
	}
	defaults := write(t, "v1beta1-legacy.yaml", func(o map[string]any) {
		set(o, "object", "spec", "validation", "openAPIV3Schema", "type")
		set(o, map[string]any{"type": "string", "default": "x"}, "spec", "validation", "openAPIV3Schema", "properties", "extra")
	})
	if errs := h.ValidateIn(VersionV1beta1, defaults); !containsError(errs, "spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema") {
		t.Errorf("v1beta1 accepts defaults without pruning: %v", errs)
	}

	// An update through v1 of a CRD stored with preserveUnknownFields
	// true keeps it (upstream's ratcheting); through v1beta1 it may set it.
	if errs := h.ValidateUpdateIn(Version, legacy, legacy); containsError(errs, "preserveUnknownFields") {
		t.Errorf("v1 refuses to keep preserveUnknownFields: %v", errs)
	}
	if errs := h.ValidateUpdateIn(VersionV1beta1, legacy, pruning); len(errs) > 0 {
		t.Errorf("v1beta1 refuses to turn preserveUnknownFields on: %v", errs)
	}
}

func containsError(errs field.ErrorList, s string) bool {
	for _, e := range errs {
		if strings.Contains(e.Error(), s) {
			return true
		}
	}
	return false
}

// TestNonStructuralCondition: upstream's NonStructuralSchema condition,
// set while the CRD keeps unknown fields or a schema is not structural,
// removed once neither holds.
func TestNonStructuralCondition(t *testing.T) {
	h := Hooks{}
	obj, err := h.ToStorage(load(t, "v1beta1-legacy.yaml"), VersionV1beta1)
	if err != nil {
		t.Fatal(err)
	}
	h.PrepareForCreate(obj)
	c, err := decode(obj)
	if err != nil {
		t.Fatal(err)
	}
	now := mustTime(t, "2026-01-02T03:04:05Z")
	if !syncNonStructural(obj, c, now) {
		t.Fatal("no condition set")
	}
	cond := findCondition(obj, ConditionNonStructural)
	want := "[spec.preserveUnknownFields: Invalid value: true: must be false, " +
		"spec.versions[0].schema.openAPIV3Schema.properties[spec].oneOf[0].properties[shell].type: Forbidden: must be empty to be structural, " +
		"spec.versions[0].schema.openAPIV3Schema.type: Required value: must not be empty at the root]"
	if cond["status"] != StatusTrue || cond["reason"] != ReasonViolations || cond["message"] != want {
		t.Errorf("condition = %v, want True, Violations, %q", cond, want)
	}
	if syncNonStructural(obj, c, now) {
		t.Error("an unchanged condition is written again")
	}

	fixed := valid(t, "crontab.yaml")
	fc, _ := decode(fixed)
	SetCondition(fixed, ConditionNonStructural, StatusTrue, ReasonViolations, "old", now)
	if !syncNonStructural(fixed, fc, now) || findCondition(fixed, ConditionNonStructural) != nil {
		t.Errorf("condition kept on a structural CRD: %v", fixed["status"])
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}
