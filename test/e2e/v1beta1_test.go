package e2e

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// v1beta1Fixture is the path of a file in testdata/v1beta1: the seeds'
// manifests written for the legacy apiextensions.k8s.io/v1beta1 API.
func v1beta1Fixture(name string) string { return filepath.Join("testdata", "v1beta1", name) }

// v1beta1Warning is what every request to the legacy CRD API is warned
// with, upstream's words.
const v1beta1Warning = "Warning: apiextensions.k8s.io/v1beta1 CustomResourceDefinition is deprecated in v1.16+, unavailable in v1.22+; use apiextensions.k8s.io/v1 CustomResourceDefinition"

// kubectlV1beta1 runs kubectl on the legacy CRD API: it must succeed and
// print nothing on standard error but the deprecation warning.
func kubectlV1beta1(t *testing.T, srv *server, args ...string) string {
	t.Helper()
	stdout, stderr, err := kubectlResult(srv, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		// kubectl cannot compute a strategic merge patch inside
		// spec.validation's schema maps from v1beta1's OpenAPI models,
		// and falls back to a merge patch (v1 has no such field).
		if strings.HasPrefix(line, "warning: error calculating patch from openapi") {
			continue
		}
		if line != "" && line != v1beta1Warning {
			t.Errorf("kubectl %s printed on standard error: %q", strings.Join(args, " "), line)
		}
	}
	return strings.TrimSpace(stdout)
}

// getRaw GETs a path and decodes the JSON answer.
func getRaw(t *testing.T, srv *server, path string) map[string]any {
	t.Helper()
	stdout, _, err := kubectlResult(srv, "get", "--raw", path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(stdout), &obj); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, stdout)
	}
	return obj
}

// TestV1beta1CRDs applies the seeds' manifests written for
// apiextensions.k8s.io/v1beta1 unchanged with kubectl, creates their
// objects, and reads the CRDs back through both APIs.
func TestV1beta1CRDs(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	const (
		pizzas   = "pizzas.restaurant.programming-kubernetes.info"
		toppings = "toppings.restaurant.programming-kubernetes.info"
		crontabs = "crontabs.example.com"
		jobs     = "maintenancenightlyjobs.operations.example.com"
	)
	crdPath := func(version, name string) string {
		return "/apis/apiextensions.k8s.io/" + version + "/customresourcedefinitions/" + name
	}

	t.Run("discovery", func(t *testing.T) {
		g := getRaw(t, srv, "/apis/apiextensions.k8s.io")
		if got := lookup(g, "preferredVersion.version"); got != "v1" {
			t.Errorf("preferred version %v, want v1", got)
		}
		versions := kubectl(t, srv, "api-versions")
		if !strings.Contains(versions, "apiextensions.k8s.io/v1beta1\n") {
			t.Errorf("kubectl api-versions does not list apiextensions.k8s.io/v1beta1:\n%s", versions)
		}
		out := kubectl(t, srv, "explain", "crd.spec.validation", "--api-version=apiextensions.k8s.io/v1beta1")
		if !strings.Contains(out, "VERSION:    v1beta1") || !strings.Contains(out, "CustomResourceValidation") {
			t.Errorf("kubectl explain crd.spec.validation in v1beta1:\n%s", out)
		}
	})

	t.Run("seed 003 pizza restaurant", func(t *testing.T) {
		for file, name := range map[string]string{"pizza-crd.yaml": pizzas, "topping-crd.yaml": toppings} {
			if got, want := kubectlV1beta1(t, srv, "apply", "-f", v1beta1Fixture(file)), "customresourcedefinition.apiextensions.k8s.io/"+name+" created"; got != want {
				t.Fatalf("kubectl apply -f %s printed %q, want %q", file, got, want)
			}
			waitEstablished(t, srv, name)
		}
		kubectlLine(t, srv, "create", "namespace", "pizza-crd")
		kubectlLine(t, srv, "create", "-f", v1beta1Fixture("toppings.yaml"))
		if got := kubectlLine(t, srv, "-n", "pizza-crd", "create", "-f", v1beta1Fixture("margherita-pizza.yaml")); got != "pizza.restaurant.programming-kubernetes.info/margherita created" {
			t.Errorf("kubectl create margherita printed %q", got)
		}
		// The chapter's first CRD has no conversion: both versions give the
		// same object, and kubectl prefers v1beta1.
		for _, resource := range []string{"pizza", "pizzas.v1alpha1.restaurant.programming-kubernetes.info"} {
			p := kubectlYAML(t, srv, "-n", "pizza-crd", "get", resource, "margherita", "-o", "yaml")
			checkFields(t, "get "+resource, p, []fieldCheck{
				{"spec.toppings", []any{"mozzarella", "tomato"}},
				{"metadata.generation", 1},
			})
		}
		if got := lookup(kubectlYAML(t, srv, "-n", "pizza-crd", "get", "pizza", "margherita", "-o", "yaml"), "apiVersion"); got != "restaurant.programming-kubernetes.info/v1beta1" {
			t.Errorf("kubectl get pizza reads %v, want the v1beta1 version", got)
		}
		if out := kubectl(t, srv, "get", "toppings"); !strings.Contains(out, "mozzarella") || !strings.Contains(out, "tomato") {
			t.Errorf("kubectl get toppings:\n%s", out)
		}

		// Through v1beta1 the CRD reads as it was written, with v1beta1's
		// defaults; stored, it is a v1 CRD that keeps unknown fields.
		b := getRaw(t, srv, crdPath("v1beta1", pizzas))
		checkFields(t, "v1beta1 CRD", b, []fieldCheck{
			{"apiVersion", "apiextensions.k8s.io/v1beta1"},
			{"spec.version", "v1alpha1"},
			{"spec.preserveUnknownFields", true},
			{"spec.conversion.strategy", "None"},
			{"status.storedVersions", []any{"v1alpha1"}},
		})
		v1 := getRaw(t, srv, crdPath("v1", pizzas))
		checkFields(t, "v1 CRD", v1, []fieldCheck{
			{"apiVersion", "apiextensions.k8s.io/v1"},
			{"spec.preserveUnknownFields", true},
		})
		if got := lookup(v1, "spec.version"); got != nil {
			t.Errorf("v1 CRD has spec.version %v", got)
		}
		conds := crdConditions(t, v1)
		if c := conds["NonStructuralSchema"]; c != (condition{"NonStructuralSchema", "True", "Violations", "spec.preserveUnknownFields: Invalid value: true: must be false"}) {
			t.Errorf("NonStructuralSchema condition %+v", c)
		}
		if c := conds["Established"]; c.Status != "True" {
			t.Errorf("Established %+v", c)
		}
		if out := kubectl(t, srv, "get", "crd", pizzas); !strings.Contains(out, "v1alpha1(storage),v1beta1") {
			t.Errorf("kubectl get crd:\n%s", out)
		}
	})

	t.Run("seed 001 versioned crontab", func(t *testing.T) {
		if got := kubectlV1beta1(t, srv, "apply", "-f", v1beta1Fixture("my-versioned-crontab.yaml")); got != "customresourcedefinition.apiextensions.k8s.io/"+crontabs+" created" {
			t.Fatalf("kubectl apply printed %q", got)
		}
		waitEstablished(t, srv, crontabs)
		kubectlLine(t, srv, "apply", "-f", v1beta1Fixture("my-crontab.yaml"))
		ct := kubectlYAML(t, srv, "get", "crontabs.v1.example.com", "my-new-cron-object", "-o", "yaml")
		checkFields(t, "crontab read in v1", ct, []fieldCheck{
			{"apiVersion", "example.com/v1"},
			{"host", "localhost"},
			{"port", "8080"},
			// preserveUnknownFields defaults to true: nothing is pruned.
			{"extra", "kept, as preserveUnknownFields defaults to true in v1beta1"},
		})
		// The shared schema is spec.validation in v1beta1 and each
		// version's schema in v1.
		b := getRaw(t, srv, crdPath("v1beta1", crontabs))
		checkFields(t, "v1beta1 CRD", b, []fieldCheck{
			{"spec.version", "v1beta1"},
			{"spec.validation.openAPIV3Schema.properties.host.type", "string"},
		})
		v1 := getRaw(t, srv, crdPath("v1", crontabs))
		versions, _ := lookup(v1, "spec.versions").([]any)
		if len(versions) != 2 {
			t.Fatalf("v1 versions %v", versions)
		}
		for _, v := range versions {
			if got := lookup(v.(map[string]any), "schema.openAPIV3Schema.properties.port.type"); got != "string" {
				t.Errorf("v1 version %v has no per-version schema", v)
			}
		}

		// An update through v1beta1 of what was read through v1beta1
		// changes nothing but what it changes.
		set := kubectlV1beta1(t, srv, "patch", "customresourcedefinitions.v1beta1.apiextensions.k8s.io", crontabs, "--type=merge",
			"-p", `{"spec":{"additionalPrinterColumns":[{"name":"Host","type":"string","JSONPath":".host"}]}}`)
		if !strings.Contains(set, "patched") {
			t.Errorf("kubectl patch printed %q", set)
		}
		v1 = getRaw(t, srv, crdPath("v1", crontabs))
		versions, _ = lookup(v1, "spec.versions").([]any)
		for _, v := range versions {
			cols, _ := lookup(v.(map[string]any), "additionalPrinterColumns").([]any)
			if len(cols) != 1 || lookup(cols[0].(map[string]any), "jsonPath") != ".host" {
				t.Errorf("v1 version %v: columns %v", lookup(v.(map[string]any), "name"), cols)
			}
			if got := lookup(v.(map[string]any), "schema.openAPIV3Schema.properties.port.type"); got != "string" {
				t.Errorf("the patch lost the schema of %v", v)
			}
		}
		if out := kubectl(t, srv, "get", "crontabs"); !strings.Contains(out, "HOST") || !strings.Contains(out, "localhost") {
			t.Errorf("kubectl get crontabs:\n%s", out)
		}
	})

	t.Run("seed 000 non-structural schema", func(t *testing.T) {
		// v1 refuses the non-structural schema...
		dir := t.TempDir()
		v1File := filepath.Join(dir, "v1.yaml")
		if err := os.WriteFile(v1File, []byte(v1NonStructural), 0o644); err != nil {
			t.Fatal(err)
		}
		msg := kubectlFails(t, srv, "apply", "-f", v1File)
		for _, want := range []string{
			`is invalid`,
			`spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root`,
			`spec.validation.openAPIV3Schema.properties[spec].oneOf[1].properties[shell].type: Forbidden: must be empty to be structural`,
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("v1 refusal does not say %q:\n%s", want, msg)
			}
		}
		// ...which v1beta1 accepts, reporting the violations.
		kubectlV1beta1(t, srv, "apply", "-f", v1beta1Fixture("mnj-crd-nonstructural.yaml"))
		waitEstablished(t, srv, jobs)
		c := crdConditions(t, getRaw(t, srv, crdPath("v1", jobs)))["NonStructuralSchema"]
		want := condition{"NonStructuralSchema", "True", "Violations", "[spec.preserveUnknownFields: Invalid value: true: must be false, " +
			"spec.versions[0].schema.openAPIV3Schema.properties[spec].oneOf[0].properties[command].type: Forbidden: must be empty to be structural, " +
			"spec.versions[0].schema.openAPIV3Schema.properties[spec].oneOf[1].properties[shell].type: Forbidden: must be empty to be structural, " +
			"spec.versions[0].schema.openAPIV3Schema.type: Required value: must not be empty at the root]"}
		if c != want {
			t.Errorf("NonStructuralSchema condition\n %+v\nwant\n %+v", c, want)
		}
		// Its schema still validates (the seed's not: privileged refuses
		// every spec, as JSON schema reads it).
		msg = kubectlFails(t, srv, "apply", "-f", v1beta1Fixture("nightly-job.yaml"))
		if !strings.Contains(msg, "must not validate the schema (not)") {
			t.Errorf("the job is refused with %q", msg)
		}
		// It is published without a schema, as upstream does.
		doc := getRaw(t, srv, "/openapi/v3/apis/operations.example.com/v1")
		model := lookup(doc, `components.schemas.com\.example\.operations\.v1\.MaintenanceNightlyJob`)
		if m, _ := model.(map[string]any); m == nil || m["properties"] != nil {
			t.Errorf("published model %v, want a bare object", model)
		}

		// The seed's structural schema with pruning on: the privileged
		// field the operators never specified is pruned.
		kubectlV1beta1(t, srv, "apply", "-f", v1beta1Fixture("mnj-crd-structural.yaml"))
		waitFor(t, crdSettle, "the NonStructuralSchema condition to go", func() (bool, error) {
			_, has := crdConditions(t, getRaw(t, srv, crdPath("v1", jobs)))["NonStructuralSchema"]
			return !has, nil
		})
		// kubectl asks for strict field validation unless told otherwise.
		var stderr string
		waitFor(t, crdSettle, "the job to be created", func() (bool, error) {
			var err error
			_, stderr, err = kubectlResult(srv, "apply", "--validate=warn", "-f", v1beta1Fixture("nightly-job.yaml"))
			return err == nil, nil
		})
		if want := `Warning: unknown field "spec.privileged"`; strings.TrimSpace(stderr) != want {
			t.Errorf("kubectl apply printed %q, want %q", stderr, want)
		}
		job := kubectlYAML(t, srv, "get", "maintenancenightlyjob", "nightly", "-o", "yaml")
		checkFields(t, "job", job, []fieldCheck{
			{"spec.machines", []any{"az1-master1", "az1-master2", "az2-master3"}},
		})
		if got := lookup(job, "spec.privileged"); got != nil {
			t.Errorf("the job kept privileged: %v", got)
		}

		// Turned back to preserveUnknownFields through v1beta1, the
		// field is kept.
		kubectlV1beta1(t, srv, "patch", "customresourcedefinitions.v1beta1.apiextensions.k8s.io", jobs, "--type=merge", "-p", `{"spec":{"preserveUnknownFields":true}}`)
		waitFor(t, crdSettle, "privileged to be kept", func() (bool, error) {
			_, _, err := kubectlResult(srv, "patch", "maintenancenightlyjob", "nightly", "--type=merge", "-p", `{"spec":{"privileged":true}}`)
			if err != nil {
				return false, nil
			}
			j := kubectlYAML(t, srv, "get", "maintenancenightlyjob", "nightly", "-o", "yaml")
			return lookup(j, "spec.privileged") == true, nil
		})
	})
}

// v1NonStructural is seed 000's non-structural schema in a v1 CRD.
const v1NonStructural = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: maintenancenightlyjobs.ops.example.com
spec:
  group: ops.example.com
  scope: Namespaced
  names: {plural: maintenancenightlyjobs, kind: MaintenanceNightlyJob}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        properties:
          spec:
            type: object
            properties:
              shell: {type: string, minLength: 1}
            oneOf:
            - properties:
                command: {type: string}
              required: ["command"]
            - properties:
                shell: {type: string}
              required: ["shell"]
        required: ["spec"]
`

// TestV1beta1WebhookCRD applies seed 001's v1beta1 CRD with a conversion
// webhook (its caBundle placeholder replaced by a real CA) and reads the
// webhook settings in both APIs: conversion.webhookClientConfig and the
// defaulted conversionReviewVersions [v1beta1] in v1beta1,
// conversion.webhook in v1. Watching at v1beta1 answers in v1beta1.
func TestV1beta1WebhookCRD(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	const name = "crontabs.example.com"
	manifest, err := os.ReadFile(v1beta1Fixture("crontab-conversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(srv.Dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	caBundle := base64.StdEncoding.EncodeToString(ca)
	const placeholder = "Ci0tLS0tQk...<base64-encoded PEM bundle>...tLS0K"
	if !strings.Contains(string(manifest), placeholder) {
		t.Fatal("the fixture has no caBundle placeholder")
	}
	file := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(string(manifest), placeholder, caBundle, 1)), 0o644); err != nil {
		t.Fatal(err)
	}

	watch := kubectlStream(t, srv, "get", "customresourcedefinitions.v1beta1.apiextensions.k8s.io", "--watch", "-o",
		`jsonpath={.apiVersion} {.metadata.name} {.spec.version} {.spec.conversion.conversionReviewVersions}{"\n"}`)
	if got := kubectlV1beta1(t, srv, "apply", "-f", file); got != "customresourcedefinition.apiextensions.k8s.io/"+name+" created" {
		t.Fatalf("kubectl apply printed %q", got)
	}
	waitEstablished(t, srv, name)
	line, _ := watch.waitLine(t, crdSettle, "the CRD in the v1beta1 watch", func(l string) bool { return strings.Contains(l, name) })
	if want := `apiextensions.k8s.io/v1beta1 ` + name + ` v1beta1 ["v1beta1"]`; line != want {
		t.Errorf("watch at v1beta1 printed %q, want %q", line, want)
	}

	b := getRaw(t, srv, "/apis/apiextensions.k8s.io/v1beta1/customresourcedefinitions/"+name)
	checkFields(t, "v1beta1 CRD", b, []fieldCheck{
		{"spec.preserveUnknownFields", false},
		{"spec.conversion.strategy", "Webhook"},
		{"spec.conversion.conversionReviewVersions", []any{"v1beta1"}},
		{"spec.conversion.webhookClientConfig.service", map[string]any{
			"namespace": "default", "name": "example-conversion-webhook-server", "path": "/crdconvert", "port": 443,
		}},
		{"spec.conversion.webhookClientConfig.caBundle", caBundle},
	})
	v1 := getRaw(t, srv, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name)
	checkFields(t, "v1 CRD", v1, []fieldCheck{
		{"spec.conversion.webhook.conversionReviewVersions", []any{"v1beta1"}},
		{"spec.conversion.webhook.clientConfig.service.name", "example-conversion-webhook-server"},
		{"spec.conversion.webhook.clientConfig.caBundle", caBundle},
	})
	if c := crdConditions(t, v1); c["NonStructuralSchema"] != (condition{}) {
		t.Errorf("a structural CRD that prunes has %+v", c["NonStructuralSchema"])
	}
}
