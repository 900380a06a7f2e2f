package crd

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// wantErr is one expected field error: path, type and detail, exactly.
type wantErr struct {
	field  string
	typ    field.ErrorType
	detail string
}

type validationCase struct {
	name    string
	fixture string // default crontab.yaml
	mutate  func(obj map[string]any)
	want    []wantErr
	line    string
}

// tc records the line of a table case so failures point at it.
func tc(c validationCase) validationCase {
	_, file, line, _ := runtime.Caller(1)
	c.line = fmt.Sprintf("%s:%d", file[strings.LastIndex(file, "/")+1:], line)
	return c
}

func checkErrs(t *testing.T, line string, got field.ErrorList, want []wantErr) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, e := range got {
			if e.Field == w.field && e.Type == w.typ && e.Detail == w.detail {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: missing error %s %s %q; got:\n%s", line, w.field, w.typ, w.detail, list(got))
		}
	}
	if len(want) == 0 && len(got) > 0 {
		t.Errorf("%s: unexpected errors:\n%s", line, list(got))
	}
}

func list(errs field.ErrorList) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s %s %q (%s)\n", e.Field, e.Type, e.Detail, e.Error())
	}
	return b.String()
}

func TestValidFixtures(t *testing.T) {
	for _, f := range []string{"crontab.yaml", "crontab-scale.yaml", "crontab-webhook.yaml", "crontab-columns.yaml"} {
		obj := valid(t, f)
		if errs := (Hooks{}).Validate(obj); len(errs) > 0 {
			t.Errorf("%s: %s", f, list(errs))
		}
	}
}

// The name rule is run with the checks of metadata, so that its error
// comes where upstream's does: after the name's own, before the labels'.
func TestCreateNameValidator(t *testing.T) {
	const dns = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
	obj := valid(t, "crontab.yaml")
	rule := Hooks{}.CreateNameValidator(obj)
	for _, c := range []struct {
		name   string
		prefix bool
		want   []string
	}{
		{"crontabs.stable.example.com", false, nil},
		{"crontab.stable.example.com", false, []string{nameRule}},
		{"Crontabs.stable.example.com", false, []string{dns, nameRule}},
		{"crontabs-", true, []string{nameRule}},
	} {
		if got := rule(c.name, c.prefix); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%q (prefix %v): got %q, want %q", c.name, c.prefix, got, c.want)
		}
	}
	if errs := (Hooks{}).Validate(obj); len(errs) > 0 {
		t.Errorf("Validate checks the name again: %s", list(errs))
	}
}

func TestValidate(t *testing.T) {
	const (
		dns1035   = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
		colTypes  = "must be one of boolean,date,integer,number,string"
		oneStored = "must have exactly one version marked as storage version"
		approval  = `protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111`
	)
	v0 := func(keys ...any) []any { return append([]any{"spec", "versions", 0}, keys...) }
	webhook := func(obj map[string]any, conv map[string]any) { set(obj, conv, "spec", "conversion") }
	cases := []validationCase{
		tc(validationCase{name: "group required",
			mutate: func(o map[string]any) { set(o, "", "spec", "group") },
			want:   []wantErr{{"spec.group", field.ErrorTypeRequired, ""}}}),
		tc(validationCase{name: "group DNS subdomain",
			mutate: func(o map[string]any) { set(o, "Stable.example.com", "spec", "group") },
			want: []wantErr{{"spec.group", field.ErrorTypeInvalid,
				"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"}}}),
		tc(validationCase{name: "group has a dot",
			mutate: func(o map[string]any) {
				set(o, "stable", "spec", "group")
				set(o, "crontabs.stable", "metadata", "name")
			},
			want: []wantErr{{"spec.group", field.ErrorTypeInvalid, "should be a domain with at least one dot"}}}),
		tc(validationCase{name: "scope required",
			mutate: func(o map[string]any) { set(o, nil, "spec", "scope") },
			want:   []wantErr{{"spec.scope", field.ErrorTypeRequired, ""}}}),
		tc(validationCase{name: "scope supported",
			mutate: func(o map[string]any) { set(o, "Global", "spec", "scope") },
			want:   []wantErr{{"spec.scope", field.ErrorTypeNotSupported, `supported values: "Cluster", "Namespaced"`}}}),
		tc(validationCase{name: "schema required",
			mutate: func(o map[string]any) { set(o, nil, v0("schema")...) },
			want:   []wantErr{{"spec.versions[0].schema.openAPIV3Schema", field.ErrorTypeRequired, ""}}}),
		tc(validationCase{name: "schema required per version", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) { set(o, nil, "spec", "versions", 1, "schema") },
			want:   []wantErr{{"spec.versions[1].schema.openAPIV3Schema", field.ErrorTypeRequired, ""}}}),
		tc(validationCase{name: "versions required",
			mutate: func(o map[string]any) { set(o, []any{}, "spec", "versions") },
			want: []wantErr{
				{"spec.versions", field.ErrorTypeInvalid, oneStored},
				{"status.storedVersions", field.ErrorTypeInvalid, "must have at least one stored version"},
			}}),
		tc(validationCase{name: "version name DNS-1035",
			mutate: func(o map[string]any) { set(o, "V1", v0("name")...) },
			want: []wantErr{
				{"spec.versions[0].name", field.ErrorTypeInvalid, dns1035},
				{"spec.version", field.ErrorTypeInvalid, dns1035},
			}}),
		tc(validationCase{name: "version names unique", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) { set(o, "v1beta1", "spec", "versions", 1, "name") },
			want:   []wantErr{{"spec.versions", field.ErrorTypeInvalid, "must contain unique version names"}}}),
		tc(validationCase{name: "exactly one storage version", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) { set(o, true, "spec", "versions", 1, "storage") },
			want:   []wantErr{{"spec.versions", field.ErrorTypeInvalid, oneStored}}}),
		tc(validationCase{name: "no storage version",
			mutate: func(o map[string]any) { set(o, false, v0("storage")...) },
			want: []wantErr{
				{"spec.versions", field.ErrorTypeInvalid, oneStored},
				{"status.storedVersions", field.ErrorTypeInvalid, "must have at least one stored version"},
			}}),
		tc(validationCase{name: "deprecationWarning only when deprecated",
			mutate: func(o map[string]any) { set(o, "going away", v0("deprecationWarning")...) },
			want:   []wantErr{{"spec.versions[0].deprecationWarning", field.ErrorTypeInvalid, "can only be set for deprecated versions"}}}),
		tc(validationCase{name: "deprecationWarning length",
			mutate: func(o map[string]any) {
				set(o, true, v0("deprecated")...)
				set(o, strings.Repeat("x", 257), v0("deprecationWarning")...)
			},
			want: []wantErr{{"spec.versions[0].deprecationWarning", field.ErrorTypeInvalid, "must be <= 256 characters long"}}}),
		tc(validationCase{name: "deprecationWarning printable",
			mutate: func(o map[string]any) {
				set(o, true, v0("deprecated")...)
				set(o, "bad\x01", v0("deprecationWarning")...)
			},
			want: []wantErr{{"spec.versions[0].deprecationWarning", field.ErrorTypeInvalid, "must only contain printable UTF-8 characters; non-printable character found at index 3"}}}),
		tc(validationCase{name: "plural required",
			mutate: func(o map[string]any) {
				set(o, nil, "spec", "names", "plural")
				set(o, ".stable.example.com", "metadata", "name")
			},
			want: []wantErr{{"spec.names.plural", field.ErrorTypeRequired, ""}}}),
		tc(validationCase{name: "plural DNS-1035",
			mutate: func(o map[string]any) {
				set(o, "Crontabs", "spec", "names", "plural")
				set(o, "Crontabs.stable.example.com", "metadata", "name")
			},
			want: []wantErr{{"spec.names.plural", field.ErrorTypeInvalid, dns1035}}}),
		tc(validationCase{name: "singular DNS-1035",
			mutate: func(o map[string]any) { set(o, "cron_tab", "spec", "names", "singular") },
			want:   []wantErr{{"spec.names.singular", field.ErrorTypeInvalid, dns1035}}}),
		tc(validationCase{name: "kind required",
			mutate: func(o map[string]any) {
				set(o, nil, "spec", "names", "kind")
				set(o, nil, "spec", "names", "listKind")
			},
			want: []wantErr{
				{"spec.names.kind", field.ErrorTypeRequired, ""},
				{"spec.names.listKind", field.ErrorTypeRequired, ""},
			}}),
		tc(validationCase{name: "kind shape",
			mutate: func(o map[string]any) { set(o, "Cron_Tab", "spec", "names", "kind") },
			want:   []wantErr{{"spec.names.kind", field.ErrorTypeInvalid, "may have mixed case, but should otherwise match: " + dns1035}}}),
		tc(validationCase{name: "listKind shape",
			mutate: func(o map[string]any) { set(o, "CronTab.List", "spec", "names", "listKind") },
			want:   []wantErr{{"spec.names.listKind", field.ErrorTypeInvalid, "may have mixed case, but should otherwise match: " + dns1035}}}),
		tc(validationCase{name: "kind and listKind differ",
			mutate: func(o map[string]any) { set(o, "CronTab", "spec", "names", "listKind") },
			want:   []wantErr{{"spec.names.listKind", field.ErrorTypeInvalid, "kind and listKind may not be the same"}}}),
		tc(validationCase{name: "shortNames DNS-1035",
			mutate: func(o map[string]any) { set(o, []any{"ct", "C T"}, "spec", "names", "shortNames") },
			want:   []wantErr{{"spec.names.shortNames[1]", field.ErrorTypeInvalid, dns1035}}}),
		tc(validationCase{name: "categories DNS-1035",
			mutate: func(o map[string]any) { set(o, []any{"All"}, "spec", "names", "categories") },
			want:   []wantErr{{"spec.names.categories[0]", field.ErrorTypeInvalid, dns1035}}}),
		tc(validationCase{name: "column name required", fixture: "crontab-columns.yaml",
			mutate: func(o map[string]any) { set(o, nil, v0("additionalPrinterColumns", 0, "name")...) },
			want:   []wantErr{{"spec.additionalPrinterColumns[0].name", field.ErrorTypeRequired, ""}}}),
		tc(validationCase{name: "column type required", fixture: "crontab-columns.yaml",
			mutate: func(o map[string]any) { set(o, nil, v0("additionalPrinterColumns", 0, "type")...) },
			want:   []wantErr{{"spec.additionalPrinterColumns[0].type", field.ErrorTypeRequired, colTypes}}}),
		tc(validationCase{name: "column type supported", fixture: "crontab-columns.yaml",
			mutate: func(o map[string]any) { set(o, "float", v0("additionalPrinterColumns", 1, "type")...) },
			want:   []wantErr{{"spec.additionalPrinterColumns[1].type", field.ErrorTypeInvalid, colTypes}}}),
		tc(validationCase{name: "column format supported", fixture: "crontab-columns.yaml",
			mutate: func(o map[string]any) { set(o, "uuid", v0("additionalPrinterColumns", 0, "format")...) },
			want: []wantErr{{"spec.additionalPrinterColumns[0].format", field.ErrorTypeInvalid,
				"must be one of byte,date,date-time,double,float,int32,int64,password"}}}),
		tc(validationCase{name: "column jsonPath required", fixture: "crontab-columns.yaml",
			mutate: func(o map[string]any) { set(o, nil, v0("additionalPrinterColumns", 0, "jsonPath")...) },
			want:   []wantErr{{"spec.additionalPrinterColumns[0].JSONPath", field.ErrorTypeRequired, ""}}}),
		tc(validationCase{name: "column jsonPath starts with a dot", fixture: "crontab-columns.yaml",
			mutate: func(o map[string]any) { set(o, "spec.replicas", v0("additionalPrinterColumns", 1, "jsonPath")...) },
			want:   []wantErr{{"spec.additionalPrinterColumns[1].JSONPath", field.ErrorTypeInvalid, "must be a simple json path starting with ."}}}),
		tc(validationCase{name: "per-version column path", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) {
				set(o, []any{map[string]any{"name": "Host", "type": "text", "jsonPath": ".host"}}, "spec", "versions", 1, "additionalPrinterColumns")
			},
			want: []wantErr{{"spec.versions[1].additionalPrinterColumns[0].type", field.ErrorTypeInvalid, colTypes}}}),
		tc(validationCase{name: "scale specReplicasPath required", fixture: "crontab-scale.yaml",
			mutate: func(o map[string]any) { set(o, nil, v0("subresources", "scale", "specReplicasPath")...) },
			want:   []wantErr{{"spec.subresources.scale.specReplicasPath", field.ErrorTypeRequired, ""}}}),
		tc(validationCase{name: "scale specReplicasPath under .spec", fixture: "crontab-scale.yaml",
			mutate: func(o map[string]any) { set(o, ".status.replicas", v0("subresources", "scale", "specReplicasPath")...) },
			want:   []wantErr{{"spec.subresources.scale.specReplicasPath", field.ErrorTypeInvalid, "should be a json path under .spec"}}}),
		tc(validationCase{name: "scale statusReplicasPath under .status", fixture: "crontab-scale.yaml",
			mutate: func(o map[string]any) { set(o, ".spec.replicas", v0("subresources", "scale", "statusReplicasPath")...) },
			want:   []wantErr{{"spec.subresources.scale.statusReplicasPath", field.ErrorTypeInvalid, "should be a json path under .status"}}}),
		tc(validationCase{name: "scale statusReplicasPath simple", fixture: "crontab-scale.yaml",
			mutate: func(o map[string]any) {
				set(o, "status.replicas", v0("subresources", "scale", "statusReplicasPath")...)
			},
			want: []wantErr{{"spec.subresources.scale.statusReplicasPath", field.ErrorTypeInvalid, "must be a simple json path starting with ."}}}),
		tc(validationCase{name: "scale labelSelectorPath under .spec or .status", fixture: "crontab-scale.yaml",
			mutate: func(o map[string]any) {
				set(o, ".metadata.labels", v0("subresources", "scale", "labelSelectorPath")...)
			},
			want: []wantErr{{"spec.subresources.scale.labelSelectorPath", field.ErrorTypeInvalid, "should be a json path under either .spec or .status"}}}),
		tc(validationCase{name: "preserveUnknownFields false",
			mutate: func(o map[string]any) { set(o, true, "spec", "preserveUnknownFields") },
			want: []wantErr{{"spec.preserveUnknownFields", field.ErrorTypeInvalid,
				"cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"}}}),
		tc(validationCase{name: "preserveUnknownFields with defaults",
			mutate: func(o map[string]any) {
				set(o, true, "spec", "preserveUnknownFields")
				set(o, int64(1), v0("schema", "openAPIV3Schema", "properties", "spec", "properties", "replicas", "default")...)
			},
			want: []wantErr{{"spec.preserveUnknownFields", field.ErrorTypeInvalid, "must be false in order to use defaults in the schema"}}}),
		tc(validationCase{name: "conversion strategy None with preserveUnknownFields", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) { set(o, true, "spec", "preserveUnknownFields") },
			want:   []wantErr{{"spec.conversion.strategy", field.ErrorTypeInvalid, "must be None if spec.preserveUnknownFields is true"}}}),
		tc(validationCase{name: "conversion strategy supported",
			mutate: func(o map[string]any) { set(o, "Magic", "spec", "conversion", "strategy") },
			want:   []wantErr{{"spec.conversion.strategy", field.ErrorTypeNotSupported, `supported values: "None", "Webhook"`}}}),
		tc(validationCase{name: "webhook config required",
			mutate: func(o map[string]any) { webhook(o, map[string]any{"strategy": "Webhook"}) },
			want: []wantErr{
				{"spec.conversion.webhookClientConfig", field.ErrorTypeRequired, "required when strategy is set to Webhook"},
				{"spec.conversion.conversionReviewVersions", field.ErrorTypeRequired, ""},
			}}),
		tc(validationCase{name: "webhook url or service", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) {
				set(o, "https://example.com/convert", "spec", "conversion", "webhook", "clientConfig", "url")
			},
			want: []wantErr{{"spec.conversion.webhookClientConfig", field.ErrorTypeRequired, "exactly one of url or service is required"}}}),
		tc(validationCase{name: "webhook url https", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) {
				set(o, nil, "spec", "conversion", "webhook", "clientConfig", "service")
				set(o, "http://example.com/convert", "spec", "conversion", "webhook", "clientConfig", "url")
			},
			want: []wantErr{{"spec.conversion.webhookClientConfig.url", field.ErrorTypeInvalid, "'https' is the only allowed URL scheme; desired format: https://host[/path]"}}}),
		tc(validationCase{name: "webhook url without query", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) {
				set(o, nil, "spec", "conversion", "webhook", "clientConfig", "service")
				set(o, "https://example.com/convert?x=1", "spec", "conversion", "webhook", "clientConfig", "url")
			},
			want: []wantErr{{"spec.conversion.webhookClientConfig.url", field.ErrorTypeInvalid, "query parameters are not permitted in the URL"}}}),
		// Upstream swaps the two in its message: a missing name is
		// required at service.namespace, a missing namespace at
		// service.name.
		tc(validationCase{name: "webhook service name", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) {
				set(o, nil, "spec", "conversion", "webhook", "clientConfig", "service", "name")
			},
			want: []wantErr{{"spec.conversion.webhookClientConfig.service.namespace", field.ErrorTypeRequired, ""}}}),
		tc(validationCase{name: "webhook service namespace", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) {
				set(o, nil, "spec", "conversion", "webhook", "clientConfig", "service", "namespace")
			},
			want: []wantErr{{"spec.conversion.webhookClientConfig.service.name", field.ErrorTypeRequired, ""}}}),
		tc(validationCase{name: "webhook service port", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) {
				set(o, int64(70000), "spec", "conversion", "webhook", "clientConfig", "service", "port")
			},
			want: []wantErr{{"spec.conversion.webhookClientConfig.service.port", field.ErrorTypeInvalid, "port is not valid: must be between 1 and 65535, inclusive"}}}),
		tc(validationCase{name: "webhook service path", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) {
				set(o, "convert", "spec", "conversion", "webhook", "clientConfig", "service", "path")
			},
			want: []wantErr{{"spec.conversion.webhookClientConfig.service.path", field.ErrorTypeInvalid, "must start with a '/'"}}}),
		tc(validationCase{name: "conversionReviewVersions known", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) {
				set(o, []any{"v2"}, "spec", "conversion", "webhook", "conversionReviewVersions")
			},
			want: []wantErr{{"spec.conversion.conversionReviewVersions", field.ErrorTypeInvalid, "must include at least one of v1, v1beta1"}}}),
		tc(validationCase{name: "conversionReviewVersions unique", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) {
				set(o, []any{"v1", "v1"}, "spec", "conversion", "webhook", "conversionReviewVersions")
			},
			want: []wantErr{{"spec.conversion.conversionReviewVersions[1]", field.ErrorTypeInvalid, "duplicate version"}}}),
		tc(validationCase{name: "no webhook with strategy None", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) { set(o, "None", "spec", "conversion", "strategy") },
			want: []wantErr{
				{"spec.conversion.webhookClientConfig", field.ErrorTypeForbidden, "should not be set when strategy is not set to Webhook"},
				{"spec.conversion.conversionReviewVersions", field.ErrorTypeForbidden, "should not be set when strategy is not set to Webhook"},
			}}),
		tc(validationCase{name: "selectableFields need a schema", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) {
				set(o, nil, "spec", "versions", 1, "schema")
				set(o, []any{map[string]any{"jsonPath": ".host"}}, "spec", "versions", 1, "selectableFields")
			},
			want: []wantErr{{"spec.versions[1].selectableFields", field.ErrorTypeInvalid, "may only be set when `version.schema.openAPIV3Schema` is not included"}}}),
		// When every version shares the schema, a version holds none of
		// its own, so selectable fields of one version alone are refused,
		// as upstream's internal form refuses them.
		tc(validationCase{name: "selectableFields of one version need its own schema", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) {
				set(o, deepCopy(at(o, "spec", "versions", 0, "schema")), "spec", "versions", 1, "schema")
				set(o, []any{map[string]any{"jsonPath": ".hostPort"}}, "spec", "versions", 1, "selectableFields")
			},
			want: []wantErr{{"spec.versions[1].selectableFields", field.ErrorTypeInvalid, "may only be set when `version.schema.openAPIV3Schema` is not included"}}}),
		tc(validationCase{name: "protected group needs approval",
			mutate: func(o map[string]any) {
				set(o, "stable.k8s.io", "spec", "group")
				set(o, "crontabs.stable.k8s.io", "metadata", "name")
			},
			want: []wantErr{{"metadata.annotations[api-approved.kubernetes.io]", field.ErrorTypeRequired, approval}}}),
		tc(validationCase{name: "protected group approval is a URL or unapproved",
			mutate: func(o map[string]any) {
				set(o, "stable.k8s.io", "spec", "group")
				set(o, "crontabs.stable.k8s.io", "metadata", "name")
				set(o, map[string]any{"api-approved.kubernetes.io": "yes"}, "metadata", "annotations")
			},
			want: []wantErr{{"metadata.annotations[api-approved.kubernetes.io]", field.ErrorTypeInvalid,
				`protected groups must have approval annotation "api-approved.kubernetes.io" with either a URL or a reason starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111`}}}),
		tc(validationCase{name: "protected group approved",
			mutate: func(o map[string]any) {
				set(o, "stable.k8s.io", "spec", "group")
				set(o, "crontabs.stable.k8s.io", "metadata", "name")
				set(o, map[string]any{"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"}, "metadata", "annotations")
			}}),
		tc(validationCase{name: "protected group bypassed",
			mutate: func(o map[string]any) {
				set(o, "stable.k8s.io", "spec", "group")
				set(o, "crontabs.stable.k8s.io", "metadata", "name")
				set(o, map[string]any{"api-approved.kubernetes.io": "unapproved, testing"}, "metadata", "annotations")
			}}),
		tc(validationCase{name: "wrong JSON type",
			mutate: func(o map[string]any) { set(o, "yes", v0("served")...) },
			want: []wantErr{{"spec", field.ErrorTypeInvalid,
				`CustomResourceDefinition in version "v1" cannot be handled as a CustomResourceDefinition: json: cannot unmarshal string into Go struct field CustomResourceDefinitionVersion.spec.versions.served of type bool`}}}),
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := c.fixture
			if f == "" {
				f = "crontab.yaml"
			}
			// As the handler does: prepare, then validate.
			obj := load(t, f)
			c.mutate(obj)
			Hooks{}.PrepareForCreate(obj)
			checkErrs(t, c.line, Hooks{}.Validate(obj), c.want)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	established := func(o map[string]any) {
		set(o, []any{map[string]any{"type": "Established", "status": "True"}}, "status", "conditions")
	}
	cases := []struct {
		validationCase
		old func(old map[string]any)
	}{
		{validationCase: tc(validationCase{name: "unchanged"})},
		// Upstream's CRD validation checks an update's metadata again,
		// after the generic checks (the handler's).
		{validationCase: tc(validationCase{name: "metadata checked again",
			mutate: func(o map[string]any) { set(o, map[string]any{"a": "b c"}, "metadata", "labels") },
			want: []wantErr{{"metadata.labels", field.ErrorTypeInvalid,
				"a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"}}})},
		{validationCase: tc(validationCase{name: "scope immutable once established",
			mutate: func(o map[string]any) { set(o, "Cluster", "spec", "scope") },
			want:   []wantErr{{"spec.scope", field.ErrorTypeInvalid, "field is immutable"}}}),
			old: established},
		{validationCase: tc(validationCase{name: "scope mutable before established",
			mutate: func(o map[string]any) { set(o, "Cluster", "spec", "scope") }})},
		{validationCase: tc(validationCase{name: "kind immutable once established",
			mutate: func(o map[string]any) {
				set(o, "Cron", "spec", "names", "kind")
				set(o, "CronList", "spec", "names", "listKind")
			},
			want: []wantErr{{"spec.names.kind", field.ErrorTypeInvalid, "field is immutable"}}}),
			old: established},
		{validationCase: tc(validationCase{name: "group immutable",
			mutate: func(o map[string]any) { set(o, "other.example.com", "spec", "group") },
			want:   []wantErr{{"spec.group", field.ErrorTypeInvalid, "field is immutable"}}})},
		{validationCase: tc(validationCase{name: "plural immutable",
			mutate: func(o map[string]any) { set(o, "crons", "spec", "names", "plural") },
			want:   []wantErr{{"spec.names.plural", field.ErrorTypeInvalid, "field is immutable"}}})},
		{validationCase: tc(validationCase{name: "stored version stays in spec.versions", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) {
				set(o, []any{at(o, "spec", "versions", 1)}, "spec", "versions")
				set(o, true, "spec", "versions", 0, "storage")
				set(o, []any{"v1beta1", "v1"}, "status", "storedVersions")
			},
			want: []wantErr{{"status.storedVersions[0]", field.ErrorTypeInvalid,
				"missing from spec.versions; v1beta1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1beta1 and removes v1beta1 from status.storedVersions"}}})},
		{validationCase: tc(validationCase{name: "acceptedNames shape",
			mutate: func(o map[string]any) {},
			want:   []wantErr{{"status.acceptedNames.plural", field.ErrorTypeInvalid, "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"}}}),
			old: func(o map[string]any) { set(o, "Crontabs", "status", "acceptedNames", "plural") }},
		{validationCase: tc(validationCase{name: "stored without schema may stay so when not served", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) {
				set(o, nil, "spec", "versions", 1, "schema")
				set(o, false, "spec", "versions", 1, "served")
			}}),
			old: func(o map[string]any) { set(o, nil, "spec", "versions", 1, "schema") }},
		{validationCase: tc(validationCase{name: "stored without schema, served needs one", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) { set(o, nil, "spec", "versions", 1, "schema") },
			want:   []wantErr{{"spec.versions[1].schema.openAPIV3Schema", field.ErrorTypeRequired, "because otherwise all fields are pruned"}}}),
			old: func(o map[string]any) { set(o, nil, "spec", "versions", 1, "schema") }},
		{validationCase: tc(validationCase{name: "caBundle checked once established", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) { set(o, "Y2E=", "spec", "conversion", "webhook", "clientConfig", "caBundle") },
			want: []wantErr{{"spec.conversion.webhookClientConfig.caBundle", field.ErrorTypeInvalid,
				"unable to load root certificates: unable to parse bytes as PEM block"}}}),
			old: func(o map[string]any) {
				established(o)
				set(o, nil, "spec", "conversion", "webhook", "clientConfig", "caBundle")
			}},
		{validationCase: tc(validationCase{name: "invalid caBundle may stay", fixture: "crontab-webhook.yaml",
			mutate: func(o map[string]any) {}}),
			old: established},
		{validationCase: tc(validationCase{name: "unchanged approval state passes",
			mutate: func(o map[string]any) { set(o, []any{"all"}, "spec", "names", "categories") }}),
			old: func(o map[string]any) { set(o, "stable.k8s.io", "spec", "group") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := c.fixture
			if f == "" {
				f = "crontab.yaml"
			}
			old := valid(t, f)
			if c.old != nil {
				c.old(old)
			}
			obj := copyObj(old)
			if c.mutate != nil {
				c.mutate(obj)
			}
			Hooks{}.PrepareForUpdate(obj, old)
			checkErrs(t, c.line, Hooks{}.ValidateUpdate(obj, old), c.want)
		})
	}
}

func TestStoredVersionsRules(t *testing.T) {
	c, err := Decode(valid(t, "crontab-webhook.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p := field.NewPath("status", "storedVersions")
	checkErrs(t, "storage version recorded", validateStoredVersions([]string{"v1"}, c.Spec.Versions, p),
		[]wantErr{{"status.storedVersions", field.ErrorTypeInvalid, "must have the storage version v1beta1"}})
	checkErrs(t, "at least one", validateStoredVersions(nil, c.Spec.Versions, p),
		[]wantErr{{"status.storedVersions", field.ErrorTypeInvalid, "must have at least one stored version"}})
	errs := validateStoredVersions([]string{"v1beta1", "v0", "v2"}, c.Spec.Versions, p)
	if len(errs) != 2 || errs[0].Field != "status.storedVersions[1]" || errs[1].Field != "status.storedVersions[2]" {
		t.Errorf("missing versions in index order: %s", list(errs))
	}
}

func TestValidateStatusUpdate(t *testing.T) {
	old := valid(t, "crontab.yaml")
	obj := copyObj(old)
	// Upstream checks only the shape of accepted names on status writes.
	set(obj, []any{}, "status", "storedVersions")
	if errs := (Hooks{}).ValidateStatusUpdate(obj, old); len(errs) > 0 {
		t.Errorf("storedVersions are not validated on status writes: %s", list(errs))
	}
	set(obj, "Crontabs", "status", "acceptedNames", "plural")
	errs := Hooks{}.ValidateStatusUpdate(obj, old)
	if len(errs) != 1 || errs[0].Field != "status.acceptedNames.plural" {
		t.Errorf("got %s", list(errs))
	}
	// Metadata is checked again, first.
	set(obj, map[string]any{"a": "b c"}, "metadata", "labels")
	errs = Hooks{}.ValidateStatusUpdate(obj, old)
	if len(errs) != 2 || errs[0].Field != "metadata.labels" || errs[1].Field != "status.acceptedNames.plural" {
		t.Errorf("got %s", list(errs))
	}
}

// The value of a spec.versions error is upstream's internal Go types as
// JSON, shared per-version fields lifted out.
func TestVersionsValue(t *testing.T) {
	obj := valid(t, "crontab-webhook.yaml")
	set(obj, true, "spec", "versions", 1, "storage")
	var msg string
	for _, e := range (Hooks{}).Validate(obj) {
		if e.Field == "spec.versions" {
			msg = e.Error()
		}
	}
	for _, want := range []string{
		`spec.versions: Invalid value: [{"Name":"v1beta1","Served":true,"Storage":true,"Deprecated":false,"DeprecationWarning":null,"Schema":{"OpenAPIV3Schema":{"ID":"","Schema":"","Ref":null,"Description":"","Type":"object","Nullable":false,"Format":""`,
		`"Properties":{"hostPort":{"ID":"",`,
		`"Subresources":null,"AdditionalPrinterColumns":null,"SelectableFields":null},{"Name":"v1"`,
		`: must have exactly one version marked as storage version`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %s\n%s", want, msg)
		}
	}
	// A single version shares everything: nothing but its flags remains.
	obj = valid(t, "crontab.yaml")
	set(obj, false, "spec", "versions", 0, "storage")
	want := `spec.versions: Invalid value: [{"Name":"v1","Served":true,"Storage":false,"Deprecated":false,"DeprecationWarning":null,"Schema":null,"Subresources":null,"AdditionalPrinterColumns":null,"SelectableFields":null}]: must have exactly one version marked as storage version`
	found := false
	for _, e := range (Hooks{}).Validate(obj) {
		found = found || e.Error() == want
	}
	if !found {
		t.Errorf("want %s; got\n%s", want, list(Hooks{}.Validate(obj)))
	}
}

type recordingChecker struct{ schemas, selectable []string }

func (r *recordingChecker) CheckSchema(in SchemaInput, p *field.Path) field.ErrorList {
	r.schemas = append(r.schemas, fmt.Sprintf("%s version=%q status=%v old=%v", p, in.Version, in.StatusEnabled, in.OldSpec != nil))
	return field.ErrorList{field.Invalid(p.Child("openAPIV3Schema"), "", "checked")}
}

func (r *recordingChecker) CheckSelectableFields(in SelectableFieldsInput, p *field.Path) field.ErrorList {
	r.selectable = append(r.selectable, fmt.Sprintf("%s version=%q n=%d", p, in.Version, len(in.Fields)))
	return nil
}

func TestSchemaChecker(t *testing.T) {
	rc := &recordingChecker{}
	h := NewDefinition(rc).Hooks.(Hooks)

	obj := valid(t, "crontab-scale.yaml")
	errs := h.Validate(obj)
	checkErrs(t, "single version", errs, []wantErr{{"spec.validation.openAPIV3Schema", field.ErrorTypeInvalid, "checked"}})

	obj = valid(t, "crontab-webhook.yaml")
	set(obj, []any{map[string]any{"jsonPath": ".host"}}, "spec", "versions", 1, "selectableFields")
	h.ValidateUpdate(obj, valid(t, "crontab-webhook.yaml"))

	want := []string{
		`spec.validation version="" status=true old=false`,
		`spec.versions[0].schema version="v1beta1" status=false old=true`,
		`spec.versions[1].schema version="v1" status=false old=true`,
	}
	if fmt.Sprint(rc.schemas) != fmt.Sprint(want) {
		t.Errorf("schemas checked:\n%q\nwant\n%q", rc.schemas, want)
	}
	if want := []string{`spec.versions[1].selectableFields version="v1" n=1`}; fmt.Sprint(rc.selectable) != fmt.Sprint(want) {
		t.Errorf("selectable fields checked: %q, want %q", rc.selectable, want)
	}
}
