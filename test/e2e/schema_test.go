package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The tests below follow seed 001 from "Specifying a structural schema" to
// "Categories", the MaintenanceNightlyJob of seed 000 and the At example of
// seed 003 with the real kubectl, and check what a user sees against
// upstream kube-apiserver's answers. Each top-level test has its own server
// and runs in parallel with the others.

const (
	maintenanceCRD = "maintenancenightlyjobs.operations.example.com"
	pruningsCRD    = "prunings.stable.example.com"
	atsCRD         = "ats.cnat.programming-kubernetes.info"
	cronScaleURL   = "/apis/stable.example.com/v1/namespaces/default/crontabs/my-new-cron-object/scale"
)

// TestSchemaStructural covers the structural rules: a v1 CRD with a
// non-structural schema is refused with one cause per violation (seed 001's
// non-structural example 3 and seed 000's MaintenanceNightlyJob), the
// structural counterparts are accepted and validate objects, and the
// unknown privileged field of seed 000 never reaches storage.
func TestSchemaStructural(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())

	t.Run("non-structural example 3 refused", func(t *testing.T) {
		// The seed's six violations, sorted by message as upstream sorts
		// them; a single-version v1 schema is reported under
		// spec.validation, where upstream's internal version keeps it.
		got := kubectlFails(t, srv, "apply", "-f", schemaFixture("nonstructural-crd.yaml"))
		wantOutput(t, "kubectl apply -f nonstructural-crd.yaml", got,
			`The CustomResourceDefinition "nonstructurals.stable.example.com" is invalid: `,
			`* spec.validation.openAPIV3Schema.anyOf[0].description: Forbidden: must be empty to be structural`,
			`* spec.validation.openAPIV3Schema.anyOf[0].properties[bar].type: Forbidden: must be empty to be structural`,
			`* spec.validation.openAPIV3Schema.properties[bar]: Required value: because it is defined in spec.validation.openAPIV3Schema.anyOf[0].properties[bar]`,
			`* spec.validation.openAPIV3Schema.properties[foo].type: Required value: must not be empty for specified object fields`,
			`* spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified`,
			`* spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root`,
		)
		kubectlFails(t, srv, "get", "crd", "nonstructurals.stable.example.com")
	})

	t.Run("non-structural MaintenanceNightlyJob refused", func(t *testing.T) {
		// Seed 000: no type at the root and types inside oneOf. The seed
		// also names privileged inside not (not specified outside), but
		// upstream checks that rule only for the junctors at the root
		// (validateStructuralCompleteness starts and stays there), so
		// kube-apiserver reports three causes, not four.
		got := kubectlFails(t, srv, "apply", "-f", schemaFixture("maintenance-nonstructural-crd.yaml"))
		wantOutput(t, "kubectl apply -f maintenance-nonstructural-crd.yaml", got,
			`The CustomResourceDefinition "maintenancenightlyjobs.operations.example.com" is invalid: `,
			`* spec.validation.openAPIV3Schema.properties[spec].oneOf[0].properties[command].type: Forbidden: must be empty to be structural`,
			`* spec.validation.openAPIV3Schema.properties[spec].oneOf[1].properties[shell].type: Forbidden: must be empty to be structural`,
			`* spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root`,
		)
	})

	t.Run("structural example 3", func(t *testing.T) {
		applySchemaCRD(t, srv, "structural-crd.yaml", "structurals.stable.example.com", "created")
		if got, want := kubectlLine(t, srv, "apply", "-f", schemaFixture("structural-ok.yaml")), "structural.stable.example.com/abc-ok created"; got != want {
			t.Errorf("kubectl apply -f structural-ok.yaml printed %q, want %q", got, want)
		}
		// Every value validation of the schema fails at once: the pattern
		// on foo, the minimum of bar inside anyOf (so anyOf fails too), and
		// the pattern on metadata.name.
		got := kubectlFails(t, srv, "apply", "-f", schemaFixture("structural-bad.yaml"))
		wantOutput(t, "kubectl apply -f structural-bad.yaml", got,
			`The Structural "bad" is invalid: `,
			`* <nil>: Invalid value: "": "" must validate at least one schema (anyOf)`,
			`* bar: Invalid value: 41: bar in body should be greater than or equal to 42`,
			`* foo: Invalid value: "xyz": foo in body should match 'abc'`,
			`* metadata.name: Invalid value: "bad": metadata.name in body should match '^a'`,
		)
	})

	t.Run("MaintenanceNightlyJob stored without privileged", func(t *testing.T) {
		applySchemaCRD(t, srv, "maintenance-crd.yaml", maintenanceCRD, "created")
		// kubectl's default (strict) field validation makes the server
		// refuse the unknown field outright.
		got := kubectlFails(t, srv, "apply", "-f", schemaFixture("maintenance-job.yaml"))
		wantOutput(t, "kubectl apply -f maintenance-job.yaml", got,
			`Error from server (BadRequest): error when creating "testdata/schema/maintenance-job.yaml": MaintenanceNightlyJob in version "v1" cannot be handled as a MaintenanceNightlyJob: strict decoding error: unknown field "spec.privileged"`)

		// Without it, the field is pruned before it is persisted.
		if got, want := kubectlLine(t, srv, "apply", "--validate=false", "-f", schemaFixture("maintenance-job.yaml")), "maintenancenightlyjob.operations.example.com/nightly created"; got != want {
			t.Errorf("kubectl apply --validate=false printed %q, want %q", got, want)
		}
		job := kubectlYAML(t, srv, "get", "maintenancenightlyjob", "nightly", "-o", "yaml")
		if got, want := mapKeys(job["spec"]), []string{"machines", "shell"}; !equalJSON(got, want) {
			t.Errorf("stored spec has fields %v, want %v (privileged pruned)", got, want)
		}
		checkFields(t, "get maintenancenightlyjob nightly", job, []fieldCheck{
			{"spec.machines", []any{"az1-master1", "az1-master2", "az2-master3"}},
			{"spec.shell", "grep backdoor /etc/passwd || echo \"backdoor:76asdfh76:/bin/bash\" >> /etc/passwd || true\n"},
		})

		// The value validations of the seed: oneOf (exactly one of command
		// and shell) and the pattern on machines.
		got = kubectlFails(t, srv, "apply", "-f", schemaFixture("maintenance-job-both.yaml"))
		wantOutput(t, "kubectl apply -f maintenance-job-both.yaml", got,
			`The MaintenanceNightlyJob "both" is invalid: `,
			`* <nil>: Invalid value: "": "spec" must validate one and only one schema (oneOf). Found 2 valid alternatives`,
			`* spec.machines[0]: Invalid value: "AZ1-master1": spec.machines[0] in body should match '^[a-z0-9]+(-[a-z0-9]+)*$'`,
		)
	})
}

// TestSchemaPruning covers seed 001's "Field pruning" and "Controlling
// pruning", "IntOrString", "RawExtension" and "Defaulting and Nullable".
func TestSchemaPruning(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())

	t.Run("someRandomField", func(t *testing.T) {
		// The CRD of the tutorial's first step, without defaults, so the
		// output is the seed's.
		if got, want := kubectlLine(t, srv, "apply", "-f", crdFixture("crontab-crd.yaml")), "customresourcedefinition.apiextensions.k8s.io/"+crontabsCRD+" created"; got != want {
			t.Fatalf("kubectl apply -f crontab-crd.yaml printed %q, want %q", got, want)
		}
		waitEstablished(t, srv, crontabsCRD)

		got := kubectlFails(t, srv, "create", "-f", schemaFixture("crontab-random-field.yaml"), "-o", "yaml")
		wantOutput(t, "kubectl create -f crontab-random-field.yaml", got,
			`Error from server (BadRequest): error when creating "testdata/schema/crontab-random-field.yaml": CronTab in version "v1" cannot be handled as a CronTab: strict decoding error: unknown field "spec.someRandomField"`)

		obj := kubectlYAML(t, srv, "create", "--validate=false", "-f", schemaFixture("crontab-random-field.yaml"), "-o", "yaml")
		checkFields(t, "kubectl create --validate=false -o yaml", obj, []fieldCheck{
			{"apiVersion", "stable.example.com/v1"},
			{"kind", "CronTab"},
			{"metadata.name", "my-new-cron-object"},
			{"metadata.namespace", "default"},
			{"metadata.generation", 1},
			{"metadata.uid", nil},
			{"metadata.resourceVersion", nil},
			{"metadata.creationTimestamp", nil},
			{"spec", map[string]any{"cronSpec": "* * * * */5", "image": "my-awesome-cron-image"}},
		})
		// Reading it back shows the same: nothing was stored.
		stored := kubectlYAML(t, srv, "get", "crontab", "my-new-cron-object", "-o", "yaml")
		checkFields(t, "kubectl get crontab -o yaml", stored, []fieldCheck{
			{"spec", map[string]any{"cronSpec": "* * * * */5", "image": "my-awesome-cron-image"}},
		})
	})

	applySchemaCRD(t, srv, "pruning-crd.yaml", pruningsCRD, "created")

	t.Run("controlling pruning", func(t *testing.T) {
		// Strict field validation names the one field that would be pruned.
		got := kubectlFails(t, srv, "create", "-f", schemaFixture("pruning.yaml"))
		wantOutput(t, "kubectl create -f pruning.yaml", got,
			`Error from server (BadRequest): error when creating "testdata/schema/pruning.yaml": Pruning in version "v1" cannot be handled as a Pruning: strict decoding error: unknown field "json.spec.something"`)

		obj := kubectlYAML(t, srv, "create", "--validate=false", "-f", schemaFixture("pruning.yaml"), "-o", "json")
		for _, o := range []map[string]any{obj, kubectlYAML(t, srv, "get", "pruning", "example", "-o", "json")} {
			checkFields(t, "pruning example", o, []fieldCheck{
				// x-kubernetes-preserve-unknown-fields without a type: any JSON.
				{"anything", []any{1, "two", map[string]any{"three": 3}}},
				// ... with type: object: any object.
				{"objectOnly", map[string]any{"any": map[string]any{"thing": []any{"goes"}}}},
				// Pruning resumes under the specified json.spec.
				{"json", map[string]any{
					"spec":   map[string]any{"foo": "abc", "bar": "def"},
					"status": map[string]any{"something": "x"},
				}},
				// IntOrString, plain and with the anyOf pattern.
				{"port", 8080},
				{"portAnyOf", "http"},
				// RawExtension: a complete object, nothing pruned.
				{"foo", map[string]any{
					"apiVersion": "v1",
					"kind":       "Pod",
					"metadata":   map[string]any{"name": "embedded"},
					"spec": map[string]any{"containers": []any{
						map[string]any{"name": "c", "image": "busybox"},
					}},
				}},
				// Defaulting and nullable: foo defaulted, bar kept null,
				// baz pruned.
				{"spec", map[string]any{"foo": "default", "bar": nil}},
			})
		}
	})

	t.Run("embedded resource metadata", func(t *testing.T) {
		// metadata of an embedded resource is pruned to ObjectMeta's fields.
		obj := kubectlYAML(t, srv, "create", "--validate=false", "-f", schemaFixture("embedded-metadata.yaml"), "-o", "json")
		checkFields(t, "embedded-metadata", obj, []fieldCheck{
			{"foo", map[string]any{
				"apiVersion": "v1",
				"kind":       "ConfigMap",
				"metadata":   map[string]any{"name": "embedded"},
				"data":       map[string]any{"a": "b"},
			}},
		})
	})

	t.Run("types and embedded apiVersion and kind validated", func(t *testing.T) {
		got := kubectlFails(t, srv, "create", "--validate=false", "-f", schemaFixture("embedded-bad.yaml"))
		wantOutput(t, "kubectl create -f embedded-bad.yaml", got,
			`The Pruning "bad" is invalid: `,
			`* objectOnly: Invalid value: "string": objectOnly in body must be of type object: "string"`,
			`* port: Invalid value: "boolean": port in body must be of type integer,string: "boolean"`,
			`* foo.apiVersion: Required value`,
			`* foo.kind: Required value`,
		)
	})
}

// TestSchemaValidationDefaulting covers seed 001's "Validation" and
// "Defaulting" CronTab, kubectl explain, and seed 003's At getting its
// default image on create and on read.
func TestSchemaValidationDefaulting(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	applySchemaCRD(t, srv, "crontab-validation-crd.yaml", crontabsCRD, "created")

	t.Run("CronTab validation error", func(t *testing.T) {
		got := kubectlFails(t, srv, "apply", "-f", schemaFixture("crontab-invalid.yaml"))
		wantOutput(t, "kubectl apply -f crontab-invalid.yaml", got,
			`The CronTab "my-new-cron-object" is invalid: `,
			`* spec.cronSpec: Invalid value: "* * * *": spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'`,
			`* spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10`,
		)
		kubectlFails(t, srv, "get", "crontab", "my-new-cron-object")
	})

	t.Run("valid CronTab accepted", func(t *testing.T) {
		if got, want := kubectlLine(t, srv, "apply", "-f", crdFixture("my-crontab.yaml")), "crontab.stable.example.com/my-new-cron-object created"; got != want {
			t.Errorf("kubectl apply -f my-crontab.yaml printed %q, want %q", got, want)
		}
	})

	t.Run("defaulting", func(t *testing.T) {
		obj := kubectlYAML(t, srv, "create", "-f", schemaFixture("crontab-defaulted.yaml"), "-o", "yaml")
		want := map[string]any{"cronSpec": "5 0 * * *", "image": "my-awesome-cron-image", "replicas": 1}
		checkFields(t, "kubectl create -o yaml", obj, []fieldCheck{{"spec", want}})
		checkFields(t, "kubectl get -o yaml", kubectlYAML(t, srv, "get", "crontab", "defaulted", "-o", "yaml"), []fieldCheck{{"spec", want}})
	})

	t.Run("explain", func(t *testing.T) {
		out := kubectl(t, srv, "explain", "crontab.spec.replicas")
		for _, want := range []string{
			"GROUP:      stable.example.com",
			"KIND:       CronTab",
			"VERSION:    v1",
			"FIELD: replicas <integer>",
			"DESCRIPTION:",
			"    The number of jobs launched by the CronJob.",
		} {
			if !strings.Contains(out, want+"\n") {
				t.Errorf("kubectl explain crontab.spec.replicas lacks the line %q; output:\n%s", want, out)
			}
		}
		out = kubectl(t, srv, "explain", "crontab.spec")
		for _, want := range []string{"cronSpec\t<string>", "image\t<string>", "replicas\t<integer>"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl explain crontab.spec lacks %q; output:\n%s", want, out)
			}
		}
	})

	t.Run("At gets image busybox", func(t *testing.T) {
		// An At stored before the CRD had the image field ...
		applySchemaCRD(t, srv, "at-crd-nodefault.yaml", atsCRD, "created")
		if got, want := kubectlLine(t, srv, "apply", "-f", schemaFixture("at-old.yaml")), "at.cnat.programming-kubernetes.info/old-at created"; got != want {
			t.Fatalf("kubectl apply -f at-old.yaml printed %q, want %q", got, want)
		}
		if img := lookup(kubectlYAML(t, srv, "get", "at", "old-at", "-o", "json"), "spec.image"); img != nil {
			t.Fatalf("old-at has spec.image %v before the default exists", img)
		}
		applySchemaCRD(t, srv, "at-crd.yaml", atsCRD, "configured")

		// ... and one created after: defaulted in the request.
		obj := kubectlYAML(t, srv, "create", "-f", schemaFixture("at.yaml"), "-o", "yaml")
		checkFields(t, "kubectl create -f at.yaml -o yaml", obj, []fieldCheck{
			{"apiVersion", "cnat.programming-kubernetes.info/v1alpha1"},
			{"kind", "At"},
			{"metadata.name", "example-at"},
			{"spec", map[string]any{"schedule": "2019-07-03T02:00:00Z", "command": `echo "hello world!"`, "image": "busybox"}},
		})

		// The old object gets it when read (the CRD change reaches the
		// serving handler asynchronously).
		waitFor(t, 5*time.Second, "old-at read with spec.image busybox", func() (bool, error) {
			out, _, err := kubectlResult(srv, "get", "at", "old-at", "-o", "jsonpath={.spec.image}")
			return err == nil && out == "busybox", err
		})
		// And so does a list, served from the watch cache.
		waitFor(t, 5*time.Second, "old-at listed with spec.image busybox", func() (bool, error) {
			out, _, err := kubectlResult(srv, "get", "ats", "-o", `jsonpath={range .items[?(@.metadata.name=="old-at")]}{.spec.image}{end}`)
			return err == nil && out == "busybox", err
		})
	})
}

// TestSchemaSubresources covers seed 001's "Status subresource" and "Scale
// subresource".
func TestSchemaSubresources(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	applySchemaCRD(t, srv, "crontab-subresources-crd.yaml", crontabsCRD, "created")
	if got, want := kubectlLine(t, srv, "apply", "-f", schemaFixture("crontab-replicas-3.yaml")), "crontab.stable.example.com/my-new-cron-object created"; got != want {
		t.Fatalf("kubectl apply -f crontab-replicas-3.yaml printed %q, want %q", got, want)
	}
	// state is spec.replicas, status (as JSON) and generation.
	state := func(t *testing.T) string {
		t.Helper()
		return kubectl(t, srv, "get", "crontab", "my-new-cron-object", "-o", `jsonpath={.spec.replicas} {.status} {.metadata.generation}`)
	}

	t.Run("create ignores status", func(t *testing.T) {
		obj := kubectlYAML(t, srv, "create", "-f", schemaFixture("crontab-with-status.yaml"), "-o", "json")
		if st, ok := obj["status"]; ok {
			t.Errorf("kubectl create of an object with status answered status %v; upstream drops status on create when the status subresource is on", st)
		}
	})

	t.Run("kubectl scale", func(t *testing.T) {
		if got, want := kubectlLine(t, srv, "scale", "--replicas=5", "crontabs/my-new-cron-object"), "crontab.stable.example.com/my-new-cron-object scaled"; got != want {
			t.Errorf("kubectl scale printed %q, want %q", got, want)
		}
		if got := kubectl(t, srv, "get", "crontabs", "my-new-cron-object", "-o", "jsonpath={.spec.replicas}"); got != "5" {
			t.Errorf("spec.replicas after kubectl scale = %q, want 5", got)
		}
		// A spec change moves generation.
		if got, want := state(t), "5  2"; got != want {
			t.Errorf("after scale: replicas, status, generation = %q, want %q", got, want)
		}
		var scale map[string]any
		raw := kubectl(t, srv, "get", "--raw", cronScaleURL)
		if err := json.Unmarshal([]byte(raw), &scale); err != nil {
			t.Fatalf("get --raw %s: %v\n%s", cronScaleURL, err, raw)
		}
		checkFields(t, "GET "+cronScaleURL, scale, []fieldCheck{
			{"apiVersion", "autoscaling/v1"},
			{"kind", "Scale"},
			{"metadata.name", "my-new-cron-object"},
			{"metadata.namespace", "default"},
			{"metadata.uid", nil},
			{"metadata.resourceVersion", nil},
			{"spec", map[string]any{"replicas": 5}},
			// No status.replicas in the object: 0; no selector: absent.
			{"status", map[string]any{"replicas": 0}},
		})
	})

	t.Run("main resource ignores status", func(t *testing.T) {
		got := kubectlLine(t, srv, "patch", "crontab", "my-new-cron-object", "--type=merge", "-p", `{"status":{"replicas":2,"labelSelector":"app=cron"}}`)
		if want := "crontab.stable.example.com/my-new-cron-object patched (no change)"; got != want {
			t.Errorf("kubectl patch of .status on the main resource printed %q, want %q", got, want)
		}
		if got, want := state(t), "5  2"; got != want {
			t.Errorf("after patching status on the main resource: %q, want %q", got, want)
		}
	})

	t.Run("status subresource changes only status", func(t *testing.T) {
		got := kubectlLine(t, srv, "patch", "crontab", "my-new-cron-object", "--subresource=status", "--type=merge", "-p", `{"spec":{"replicas":9},"status":{"replicas":2,"labelSelector":"app=cron"}}`)
		if want := "crontab.stable.example.com/my-new-cron-object patched"; got != want {
			t.Errorf("kubectl patch --subresource=status printed %q, want %q", got, want)
		}
		// spec untouched, status written, generation unchanged.
		if got, want := state(t), `5 {"labelSelector":"app=cron","replicas":2} 2`; got != want {
			t.Errorf("after patching /status: %q, want %q", got, want)
		}
		raw := kubectl(t, srv, "get", "--raw", cronScaleURL)
		var scale map[string]any
		if err := json.Unmarshal([]byte(raw), &scale); err != nil {
			t.Fatalf("get --raw %s: %v\n%s", cronScaleURL, err, raw)
		}
		checkFields(t, "GET "+cronScaleURL, scale, []fieldCheck{
			{"spec", map[string]any{"replicas": 5}},
			{"status", map[string]any{"replicas": 2, "selector": "app=cron"}},
		})
	})

	t.Run("PUT to status ignores spec", func(t *testing.T) {
		// kubectl replace --subresource=status sends the whole object with
		// PUT; only its status may take effect.
		obj := kubectlYAML(t, srv, "get", "crontab", "my-new-cron-object", "-o", "json")
		obj["spec"].(map[string]any)["replicas"] = 8
		obj["status"] = map[string]any{"replicas": 4, "labelSelector": "app=cron"}
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "crontab.json")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if got, want := kubectlLine(t, srv, "replace", "--subresource=status", "-f", file), "crontab.stable.example.com/my-new-cron-object replaced"; got != want {
			t.Errorf("kubectl replace --subresource=status printed %q, want %q", got, want)
		}
		if got, want := state(t), `5 {"labelSelector":"app=cron","replicas":4} 2`; got != want {
			t.Errorf("after PUT to /status: %q, want %q", got, want)
		}
	})

	t.Run("status subresource validates status", func(t *testing.T) {
		got := kubectlFails(t, srv, "patch", "crontab", "my-new-cron-object", "--subresource=status", "--type=merge", "-p", `{"status":{"replicas":"many"}}`)
		// Upstream validates a status write with the status schema as the
		// root, hence "replicas in body"; the scale subresource reads
		// status.replicas, and upstream's validator adds its own cause.
		wantOutput(t, "kubectl patch --subresource=status", got, `The CronTab "my-new-cron-object" is invalid: 
* status.replicas: Invalid value: "string": replicas in body must be of type integer: "string"
* .status.replicas: Invalid value: 0: .status.replicas accessor error: many is of the type string, expected int64`)
	})

	t.Run("metadata changes keep generation", func(t *testing.T) {
		if got, want := kubectlLine(t, srv, "label", "crontab", "my-new-cron-object", "tier=batch"), "crontab.stable.example.com/my-new-cron-object labeled"; got != want {
			t.Errorf("kubectl label printed %q, want %q", got, want)
		}
		if got := kubectl(t, srv, "get", "crontab", "my-new-cron-object", "-o", "jsonpath={.metadata.generation}"); got != "2" {
			t.Errorf("generation after a label change = %s, want 2", got)
		}
		kubectlLine(t, srv, "patch", "crontab", "my-new-cron-object", "--type=merge", "-p", `{"spec":{"image":"other"}}`)
		if got := kubectl(t, srv, "get", "crontab", "my-new-cron-object", "-o", "jsonpath={.metadata.generation}"); got != "3" {
			t.Errorf("generation after a spec change = %s, want 3", got)
		}
	})
}
