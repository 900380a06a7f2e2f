package e2e

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	crontabsCRD = "crontabs.stable.example.com"
	crontabsURL = "/apis/stable.example.com/v1/namespaces/default/crontabs"
)

// TestCRDWalkthrough follows the CustomResourceDefinition tutorial of seed
// 001 with the real kubectl, from "Create a CustomResourceDefinition" to
// "Delete a CustomResourceDefinition", then "Additional printer columns",
// "Categories" and "Finalizers", checking what the user sees at each step.
// Steps run in order on one server; a step that later ones build on stops
// the walkthrough when it fails.
func TestCRDWalkthrough(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	must := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	must("create CRD", func(t *testing.T) {
		applyCRD(t, srv, "crontab-crd.yaml", crontabsCRD, "created")
	})

	t.Run("CRD status", func(t *testing.T) {
		crd := kubectlYAML(t, srv, "get", "crd", crontabsCRD, "-o", "yaml")
		checkFields(t, "get crd -o yaml", crd, []fieldCheck{
			{"apiVersion", "apiextensions.k8s.io/v1"},
			{"kind", "CustomResourceDefinition"},
			{"metadata.name", crontabsCRD},
			{"metadata.uid", nil},
			{"metadata.resourceVersion", nil},
			{"metadata.creationTimestamp", nil},
			{"metadata.generation", 1},
			{"spec.names.listKind", "CronTabList"}, // defaulted from kind
			{"spec.conversion.strategy", "None"},   // defaulted
			{"status.acceptedNames", map[string]any{
				"kind":       "CronTab",
				"listKind":   "CronTabList",
				"plural":     "crontabs",
				"singular":   "crontab",
				"shortNames": []any{"ct"},
			}},
			{"status.storedVersions", []any{"v1"}},
		})
		// The cleanup finalizer comes with the first delete, not before.
		if f := lookup(crd, "metadata.finalizers"); f != nil {
			t.Errorf("a new CRD has metadata.finalizers %v, want none", f)
		}
		conds := crdConditions(t, crd)
		for _, want := range []condition{
			{"NamesAccepted", "True", "NoConflicts", "no conflicts found"},
			{"Established", "True", "InitialNamesAccepted", "the initial names have been accepted"},
		} {
			if got := conds[want.Type]; got != want {
				t.Errorf("condition %s = %+v, want %+v", want.Type, got, want)
			}
		}
	})

	must("create object", func(t *testing.T) {
		if got, want := kubectlLine(t, srv, "apply", "-f", crdFixture("my-crontab.yaml")), "crontab.stable.example.com/my-new-cron-object created"; got != want {
			t.Fatalf("kubectl apply -f my-crontab.yaml printed %q, want %q", got, want)
		}
	})

	// "Resource names are not case-sensitive when using kubectl, and you
	// can use either the singular or plural forms defined in the CRD, as
	// well as any short names."
	t.Run("get", func(t *testing.T) {
		for _, resource := range []string{"crontab", "crontabs", "ct", "CronTab", "crontabs.stable.example.com", "crontabs.v1.stable.example.com"} {
			out := kubectl(t, srv, "get", resource)
			rows := table(t, out)
			if want := []string{"NAME", "AGE"}; !slices.Equal(rows[0], want) {
				t.Errorf("kubectl get %s: header %q, want %q\n%s", resource, rows[0], want, out)
			}
			if len(rows) != 2 || rows[1][0] != "my-new-cron-object" || len(rows[1]) != 2 || !crdAge.MatchString(rows[1][1]) {
				t.Errorf("kubectl get %s: want one row my-new-cron-object <age>, got\n%s", resource, out)
			}
		}
	})

	t.Run("get -o yaml", func(t *testing.T) {
		list := kubectlYAML(t, srv, "get", "ct", "-o", "yaml")
		checkFields(t, "get ct -o yaml", list, []fieldCheck{
			{"apiVersion", "v1"},
			{"kind", "List"},
		})
		items, _ := list["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("get ct -o yaml: %d items, want 1\n%v", len(items), list)
		}
		obj, _ := items[0].(map[string]any)
		if got, want := mapKeys(obj), []string{"apiVersion", "kind", "metadata", "spec"}; !slices.Equal(got, want) {
			t.Errorf("object fields %q, want %q", got, want)
		}
		// The seed's metadata, exactly: managedFields are hidden by
		// kubectl, nothing else is added.
		if got, want := mapKeys(obj["metadata"]), []string{"annotations", "creationTimestamp", "generation", "name", "namespace", "resourceVersion", "uid"}; !slices.Equal(got, want) {
			t.Errorf("metadata fields %q, want %q", got, want)
		}
		lastApplied := `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"annotations":{},"name":"my-new-cron-object","namespace":"default"},"spec":{"cronSpec":"* * * * */5","image":"my-awesome-cron-image"}}` + "\n"
		checkFields(t, "get ct -o yaml, items[0]", obj, []fieldCheck{
			{"apiVersion", "stable.example.com/v1"},
			{"kind", "CronTab"},
			{"metadata.name", "my-new-cron-object"},
			{"metadata.namespace", "default"},
			{"metadata.generation", 1},
			{"metadata.resourceVersion", nil},
			{"metadata.creationTimestamp", nil},
			{"metadata.annotations", map[string]any{"kubectl.kubernetes.io/last-applied-configuration": lastApplied}},
			{"spec", map[string]any{"cronSpec": "* * * * */5", "image": "my-awesome-cron-image"}},
		})
		if uid, _ := lookup(obj, "metadata.uid").(string); !uuidRE.MatchString(uid) {
			t.Errorf("metadata.uid %q is not a UUID", uid)
		}
	})

	t.Run("raw API", func(t *testing.T) {
		out := kubectl(t, srv, "get", "--raw", crontabsURL)
		var list map[string]any
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("get --raw %s: not JSON: %v\n%s", crontabsURL, err, out)
		}
		checkFields(t, "GET "+crontabsURL, list, []fieldCheck{
			{"apiVersion", "stable.example.com/v1"},
			{"kind", "CronTabList"},
			{"metadata.resourceVersion", nil},
		})
		items, _ := list["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("GET %s: %d items, want 1\n%s", crontabsURL, len(items), out)
		}
		item, _ := items[0].(map[string]any)
		checkFields(t, "GET "+crontabsURL+" items[0]", item, []fieldCheck{
			{"apiVersion", "stable.example.com/v1"},
			{"kind", "CronTab"},
			{"metadata.name", "my-new-cron-object"},
			{"spec.cronSpec", "* * * * */5"},
		})

		one := kubectlYAML(t, srv, "get", "--raw", crontabsURL+"/my-new-cron-object")
		checkFields(t, "GET "+crontabsURL+"/my-new-cron-object", one, []fieldCheck{
			{"apiVersion", "stable.example.com/v1"},
			{"kind", "CronTab"},
			{"metadata.name", "my-new-cron-object"},
			{"metadata.uid", lookup(item, "metadata.uid")},
		})
	})

	// The body's apiVersion and kind must be the URL's: another version is
	// a bad request, another kind fails validation (upstream's
	// TestForProperValidationErrors).
	t.Run("body must match URL", func(t *testing.T) {
		stderr := kubectlFails(t, srv, "create", "--raw", crontabsURL, "-f", crdFixture("crontab-kind-other.json"))
		want := `The Other "other-kind" is invalid: ` + field.Invalid(field.NewPath("kind"), "Other", "must be CronTab").Error()
		if stderr != want {
			t.Errorf("POST %s with kind Other:\n got %q\nwant %q", crontabsURL, stderr, want)
		}
		// The CRD has no v2 schema to prune the body with: upstream's
		// decoder then takes all but apiVersion, kind and metadata for
		// unknown fields, and warns of them before refusing the body.
		stderr = kubectlFails(t, srv, "create", "--raw", crontabsURL, "-f", crdFixture("crontab-v2.json"))
		if want := "Warning: unknown field \"spec\"\nError from server (BadRequest): the API version in the data (stable.example.com/v2) does not match the expected API version (stable.example.com/v1)"; stderr != want {
			t.Errorf("POST %s with apiVersion stable.example.com/v2:\n got %q\nwant %q", crontabsURL, stderr, want)
		}
		if out := kubectl(t, srv, "get", "ct", "-o", "name"); out != "crontab.stable.example.com/my-new-cron-object\n" {
			t.Errorf("after the rejected creates, get ct -o name printed %q, want only my-new-cron-object", out)
		}
	})

	t.Run("printer columns", func(t *testing.T) {
		applyCRD(t, srv, "crontab-crd-columns.yaml", crontabsCRD, "configured")
		if got, want := kubectlLine(t, srv, "apply", "-f", crdFixture("my-crontab-columns.yaml")), "crontab.stable.example.com/my-new-cron-object configured"; got != want {
			t.Fatalf("kubectl apply -f my-crontab-columns.yaml printed %q, want %q", got, want)
		}
		// The seed's output, to the space.
		out := kubectl(t, srv, "get", "crontab", "my-new-cron-object")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("get crontab my-new-cron-object printed %d lines, want 2:\n%s", len(lines), out)
		}
		if want := "NAME                 SPEC        REPLICAS   AGE"; lines[0] != want {
			t.Errorf("header:\n got %q\nwant %q", lines[0], want)
		}
		row := regexp.MustCompile(`^my-new-cron-object   \* \* \* \* \*   1          [0-9]+(s|m[0-9]*s?)$`)
		if !row.MatchString(lines[1]) {
			t.Errorf("row %q, want %q", lines[1], "my-new-cron-object   * * * * *   1          <age>")
		}
	})

	// "Columns with priority greater than 0 are shown only in wide view."
	t.Run("priority", func(t *testing.T) {
		applyCRD(t, srv, "crontab-crd-columns-wide.yaml", crontabsCRD, "configured")
		out := kubectl(t, srv, "get", "crontab", "my-new-cron-object")
		if got, want := strings.Fields(firstLine(out)), []string{"NAME", "SPEC", "REPLICAS", "AGE"}; !slices.Equal(got, want) {
			t.Errorf("get crontab: header %q, want %q\n%s", got, want, out)
		}
		out = kubectl(t, srv, "get", "crontab", "my-new-cron-object", "-o", "wide")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if want := "NAME                 SPEC        REPLICAS   AGE   IMAGE"; lines[0] != want {
			t.Errorf("get crontab -o wide: header\n got %q\nwant %q", lines[0], want)
		}
		row := regexp.MustCompile(`^my-new-cron-object   \* \* \* \* \*   1          [0-9]+(s|m[0-9]*s?) +my-awesome-cron-image$`)
		if len(lines) != 2 || !row.MatchString(lines[1]) {
			t.Errorf("get crontab -o wide: want one row my-new-cron-object * * * * * 1 <age> my-awesome-cron-image, got\n%s", out)
		}
	})

	t.Run("categories", func(t *testing.T) {
		applyCRD(t, srv, "crontab-crd-categories.yaml", crontabsCRD, "configured")
		// kubectl expands categories from its discovery cache, which
		// api-resources refreshes.
		out := kubectl(t, srv, "api-resources", "-o", "wide", "--api-group=stable.example.com")
		rows := table(t, out)
		if want := []string{"crontabs", "ct", "stable.example.com/v1", "true", "CronTab"}; len(rows) != 2 || len(rows[1]) < 6 || !slices.Equal(rows[1][:5], want) || rows[1][len(rows[1])-1] != "all" {
			t.Errorf("api-resources -o wide: want one row %q ... with CATEGORIES all, got\n%s", want, out)
		}
		// The default namespace holds the kubernetes Service, as upstream's.
		const all = "service/kubernetes\ncrontab.stable.example.com/my-new-cron-object\n"
		if out := kubectl(t, srv, "get", "all", "-o", "name"); out != all {
			t.Errorf("get all -o name printed %q, want %q", out, all)
		}
		out = kubectl(t, srv, "get", "all")
		if rows := table(t, out); len(rows) != 4 || !slices.Equal(rows[2], []string{"NAME", "AGE"}) || !strings.HasSuffix(rows[3][0], "my-new-cron-object") {
			t.Errorf("get all: want the kubernetes Service, then the header NAME AGE and one crontab, got\n%s", out)
		}
	})

	t.Run("finalizers", func(t *testing.T) {
		const name = "finalized-cron-object"
		if got, want := kubectlLine(t, srv, "create", "-f", crdFixture("crontab-finalizer.yaml")), "crontab.stable.example.com/"+name+" created"; got != want {
			t.Fatalf("kubectl create -f crontab-finalizer.yaml printed %q, want %q", got, want)
		}
		// "The first delete request on an object with finalizers sets a
		// value for the metadata.deletionTimestamp field but does not
		// delete it."
		if got, want := kubectlLine(t, srv, "delete", "crontab", name, "--wait=false"), `crontab.stable.example.com "`+name+`" deleted`; got != want {
			t.Errorf("kubectl delete --wait=false printed %q, want %q", got, want)
		}
		obj := kubectlYAML(t, srv, "get", "crontab", name, "-o", "yaml")
		checkFields(t, "get crontab "+name+" after delete", obj, []fieldCheck{
			{"metadata.deletionTimestamp", nil},
			{"metadata.deletionGracePeriodSeconds", 0},
			{"metadata.finalizers", []any{"stable.example.com/finalizer"}},
			{"metadata.generation", 2}, // deletion bumps the generation
		})
		deletionTimestamp := lookup(obj, "metadata.deletionTimestamp")

		// "Once this value is set, entries in the finalizers list can only
		// be removed."
		stderr := kubectlFails(t, srv, "patch", "crontab", name, "--type=json", "-p", `[{"op":"add","path":"/metadata/finalizers/-","value":"stable.example.com/other"}]`)
		want := `The CronTab "` + name + `" is invalid: ` + field.Forbidden(field.NewPath("metadata", "finalizers"), `no new finalizers can be added if the object is being deleted, found new finalizers []string{"stable.example.com/other"}`).Error()
		if stderr != want {
			t.Errorf("adding a finalizer while deleting:\n got %q\nwant %q", stderr, want)
		}
		// "While any finalizers remain it is also impossible to force the
		// deletion of an object."
		kubectl(t, srv, "delete", "crontab", name, "--wait=false")
		if got := lookup(kubectlYAML(t, srv, "get", "crontab", name, "-o", "yaml"), "metadata.deletionTimestamp"); got != deletionTimestamp {
			t.Errorf("a second delete changed deletionTimestamp from %v to %v", deletionTimestamp, got)
		}

		// "Once the list of finalizers is empty ... the resource is
		// deleted."
		if got, want := kubectlLine(t, srv, "patch", "crontab", name, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`), "crontab.stable.example.com/"+name+" patched"; got != want {
			t.Errorf("removing the finalizer printed %q, want %q", got, want)
		}
		stderr = kubectlFails(t, srv, "get", "crontab", name)
		if want := `Error from server (NotFound): crontabs.stable.example.com "` + name + `" not found`; stderr != want {
			t.Errorf("get after the last finalizer was removed:\n got %q\nwant %q", stderr, want)
		}
	})

	// "When you delete a CustomResourceDefinition, the server will
	// uninstall the RESTful API endpoint and delete all custom objects
	// stored in it." An object's finalizer holds the CRD back until the
	// object's controller removes it.
	t.Run("delete CRD", func(t *testing.T) {
		const finalized = "finalized-cron-object"
		kubectlLine(t, srv, "create", "-f", crdFixture("crontab-finalizer.yaml"))
		if got, want := kubectlLine(t, srv, "delete", "crd", crontabsCRD, "--wait=false"), `customresourcedefinition.apiextensions.k8s.io "`+crontabsCRD+`" deleted`; got != want {
			t.Fatalf("kubectl delete crd --wait=false printed %q, want %q", got, want)
		}
		crd := kubectlYAML(t, srv, "get", "crd", crontabsCRD, "-o", "yaml")
		checkFields(t, "get crd while it is deleted", crd, []fieldCheck{
			{"metadata.deletionTimestamp", nil},
			{"metadata.finalizers", []any{"customresourcecleanup.apiextensions.k8s.io"}},
		})
		// Pending right after the delete, in progress once the cleanup
		// has started; it cannot finish while the finalizer remains.
		if c := crdConditions(t, crd)["Terminating"]; c.Status != "True" || (c.Reason != "InstanceDeletionPending" && c.Reason != "InstanceDeletionInProgress") {
			t.Errorf("condition Terminating = %+v, want True with reason InstanceDeletionPending or InstanceDeletionInProgress", c)
		}
		var last string
		waitFor(t, crdSettle, "the cleanup deletes my-new-cron-object and marks "+finalized, func() (bool, error) {
			out, _, err := kubectlResult(srv, "get", "crontabs", "-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}`)
			last = out
			name, ts, _ := strings.Cut(strings.TrimSpace(out), " ")
			return err == nil && name == finalized && ts != "" && !strings.Contains(ts, "\n"), err
		})
		// No new object while the CRD terminates.
		stderr := kubectlFails(t, srv, "create", "-f", crdFixture("crontab-late.yaml"))
		want := `Error from server (Forbidden): error when creating "` + crdFixture("crontab-late.yaml") + `": crontabs.stable.example.com "late-cron-object" is forbidden: create not allowed while custom resource definition is terminating`
		if stderr != want {
			t.Errorf("create while the CRD terminates:\n got %q\nwant %q", stderr, want)
		}
		if out := kubectl(t, srv, "get", "crd", crontabsCRD, "-o", "name"); out != "customresourcedefinition.apiextensions.k8s.io/"+crontabsCRD+"\n" {
			t.Fatalf("the CRD went away while %s still had its finalizer: get crd -o name printed %q (crontabs: %q)", finalized, out, last)
		}

		// The object's controller finishes; then the CRD goes.
		kubectlLine(t, srv, "patch", "crontab", finalized, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		kubectl(t, srv, "wait", "--for=delete", "crd/"+crontabsCRD, "--timeout=30s")
		stderr = kubectlFails(t, srv, "get", "crd", crontabsCRD)
		if want := `Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io "` + crontabsCRD + `" not found`; stderr != want {
			t.Errorf("get crd after delete:\n got %q\nwant %q", stderr, want)
		}
		// kubectl still has crontabs in its discovery cache: it lists,
		// and the server no longer knows the path (the seed's output).
		stderr = kubectlFails(t, srv, "get", "crontabs")
		if want := `Error from server (NotFound): Unable to list "stable.example.com/v1, Resource=crontabs": the server could not find the requested resource (get crontabs.stable.example.com)`; stderr != want {
			t.Errorf("get crontabs with a warm discovery cache:\n got %q\nwant %q", stderr, want)
		}
		stderr = kubectlFails(t, srv, "get", "--raw", crontabsURL)
		if want := "Error from server (NotFound): the server could not find the requested resource"; stderr != want {
			t.Errorf("get --raw %s:\n got %q\nwant %q", crontabsURL, stderr, want)
		}
		// Once discovery is refreshed the type is gone.
		if out := kubectl(t, srv, "api-resources"); strings.Contains(out, "crontabs") {
			t.Errorf("api-resources still lists crontabs:\n%s", out)
		}
		stderr = kubectlFails(t, srv, "get", "crontabs")
		if want := `error: the server doesn't have a resource type "crontabs"`; stderr != want {
			t.Errorf("get crontabs after api-resources:\n got %q\nwant %q", stderr, want)
		}
	})

	// "If you later recreate the same CustomResourceDefinition, it will
	// start out empty."
	t.Run("recreate CRD", func(t *testing.T) {
		applyCRD(t, srv, "crontab-crd.yaml", crontabsCRD, "created")
		stdout, stderr, err := kubectlResult(srv, "get", "crontabs")
		if err != nil || stdout != "" || strings.TrimSpace(stderr) != "No resources found in default namespace." {
			t.Errorf("get crontabs after recreating the CRD: err %v, stdout %q, stderr %q; want only %q", err, stdout, stderr, "No resources found in default namespace.")
		}
	})
}

// TestCRDChanges changes CRDs on a running server and checks that kubectl
// sees each change without a restart: a cluster-scoped CRD, CRD validation,
// namespace deletion of custom objects, and the version lifecycle of seed
// 001 "Versions in CustomResourceDefinitions" and seed 002 (a new served
// version, a new storage version and storedVersions, an unserved version,
// removing a version).
func TestCRDChanges(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())

	t.Run("cluster-scoped", func(t *testing.T) {
		applyCRD(t, srv, "backup-crd.yaml", "backups.cluster.example.com", "created")
		if got, want := kubectlLine(t, srv, "create", "-f", crdFixture("backup.yaml")), "backup.cluster.example.com/nightly created"; got != want {
			t.Fatalf("kubectl create -f backup.yaml printed %q, want %q", got, want)
		}
		out := kubectl(t, srv, "api-resources", "--api-group=cluster.example.com")
		if rows := table(t, out); len(rows) != 2 || !slices.Equal(rows[1], []string{"backups", "cluster.example.com/v1", "false", "Backup"}) {
			t.Errorf("api-resources --api-group=cluster.example.com: want one row backups cluster.example.com/v1 false Backup, got\n%s", out)
		}
		for _, args := range [][]string{{"get", "backups"}, {"get", "backups", "-A"}} {
			out := kubectl(t, srv, args...)
			rows := table(t, out)
			if len(rows) != 2 || !slices.Equal(rows[0], []string{"NAME", "AGE"}) || rows[1][0] != "nightly" {
				t.Errorf("kubectl %s: want header NAME AGE and one row nightly, got\n%s", strings.Join(args, " "), out)
			}
		}
		obj := kubectlYAML(t, srv, "get", "--raw", "/apis/cluster.example.com/v1/backups/nightly")
		checkFields(t, "GET /apis/cluster.example.com/v1/backups/nightly", obj, []fieldCheck{
			{"apiVersion", "cluster.example.com/v1"},
			{"kind", "Backup"},
			{"metadata.name", "nightly"},
			{"spec.schedule", "0 3 * * *"},
		})
		if ns, ok := lookup(obj, "metadata").(map[string]any)["namespace"]; ok {
			t.Errorf("cluster-scoped object has metadata.namespace %v", ns)
		}
		stderr := kubectlFails(t, srv, "get", "--raw", "/apis/cluster.example.com/v1/namespaces/default/backups")
		if want := "Error from server (NotFound): the server could not find the requested resource"; stderr != want {
			t.Errorf("a namespaced path for a cluster-scoped resource:\n got %q\nwant %q", stderr, want)
		}
		if got, want := kubectlLine(t, srv, "delete", "backup", "nightly"), `backup.cluster.example.com "nightly" deleted`; got != want {
			t.Errorf("kubectl delete backup nightly printed %q, want %q", got, want)
		}
		stderr = kubectlFails(t, srv, "get", "backup", "nightly")
		if want := `Error from server (NotFound): backups.cluster.example.com "nightly" not found`; stderr != want {
			t.Errorf("get backup nightly after delete:\n got %q\nwant %q", stderr, want)
		}
	})

	t.Run("invalid CRD", func(t *testing.T) {
		const name = "crontab.stable.example.com"
		stderr := kubectlFails(t, srv, "create", "-f", crdFixture("crontab-crd-bad-name.yaml"))
		want := `The CustomResourceDefinition "` + name + `" is invalid: ` + field.Invalid(field.NewPath("metadata", "name"), name, `must be spec.names.plural+"."+spec.group`).Error()
		if stderr != want {
			t.Errorf("create a CRD named %s:\n got %q\nwant %q", name, stderr, want)
		}
		stderr = kubectlFails(t, srv, "get", "crd", name)
		if want := `Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io "` + name + `" not found`; stderr != want {
			t.Errorf("the invalid CRD was stored: get crd %s:\n got %q\nwant %q", name, stderr, want)
		}
	})

	if !t.Run("create CRD", func(t *testing.T) {
		applyCRD(t, srv, "crontab-crd.yaml", crontabsCRD, "created")
		kubectl(t, srv, "apply", "-f", crdFixture("my-crontab.yaml"))
	}) {
		t.FailNow()
	}

	// Names are unique within a group: a CRD that wants a name another
	// already has is stored, but not served.
	t.Run("names conflict", func(t *testing.T) {
		const name = "crontabcopies.stable.example.com"
		if got, want := kubectlLine(t, srv, "create", "-f", crdFixture("crontabcopy-crd.yaml")), "customresourcedefinition.apiextensions.k8s.io/"+name+" created"; got != want {
			t.Fatalf("kubectl create -f crontabcopy-crd.yaml printed %q, want %q", got, want)
		}
		var conds map[string]condition
		waitFor(t, crdSettle, name+" has a NamesAccepted condition", func() (bool, error) {
			conds = crdConditions(t, kubectlYAML(t, srv, "get", "crd", name, "-o", "yaml"))
			return conds["NamesAccepted"].Status != "", nil
		})
		for _, want := range []condition{
			{"NamesAccepted", "False", "ShortNamesConflict", `"ct" is already in use`},
			{"Established", "False", "NotAccepted", "not all names are accepted"},
		} {
			if got := conds[want.Type]; got != want {
				t.Errorf("condition %s = %+v, want %+v", want.Type, got, want)
			}
		}
		stderr := kubectlFails(t, srv, "get", "--raw", "/apis/stable.example.com/v1/namespaces/default/crontabcopies")
		if want := "Error from server (NotFound): the server could not find the requested resource"; stderr != want {
			t.Errorf("GET of a CRD whose names were not accepted:\n got %q\nwant %q", stderr, want)
		}
		if out := kubectl(t, srv, "get", "ct", "-o", "name"); out != "crontab.stable.example.com/my-new-cron-object\n" {
			t.Errorf("get ct -o name printed %q, want the crontab: ct is still crontabs' short name", out)
		}
		if got, want := kubectlLine(t, srv, "delete", "crd", name, "--timeout=30s"), `customresourcedefinition.apiextensions.k8s.io "`+name+`" deleted`; got != want {
			t.Errorf("kubectl delete crd %s printed %q, want %q", name, got, want)
		}
	})

	// A CRD refused a name gets it once the CRD holding it is deleted, as
	// upstream's naming controller checks a group's CRDs again.
	t.Run("names freed", func(t *testing.T) {
		const holder, waiter = "gadgets.free.example.com", "gizmos.free.example.com"
		applyCRD(t, srv, "gadget-crd.yaml", holder, "created")
		kubectl(t, srv, "create", "-f", crdFixture("gizmo-crd.yaml"))
		waitFor(t, crdSettle, waiter+" is refused the short name gd", func() (bool, error) {
			c := crdConditions(t, kubectlYAML(t, srv, "get", "crd", waiter, "-o", "yaml"))["NamesAccepted"]
			return c == condition{"NamesAccepted", "False", "ShortNamesConflict", `"gd" is already in use`}, nil
		})
		kubectl(t, srv, "delete", "crd", holder, "--timeout=30s")
		waitEstablished(t, srv, waiter)
		conds := crdConditions(t, kubectlYAML(t, srv, "get", "crd", waiter, "-o", "yaml"))
		if want := (condition{"NamesAccepted", "True", "NoConflicts", "no conflicts found"}); conds["NamesAccepted"] != want {
			t.Errorf("NamesAccepted = %+v, want %+v", conds["NamesAccepted"], want)
		}
		if _, stderr, err := kubectlResult(srv, "get", "gd"); err != nil || strings.TrimSpace(stderr) != "No resources found in default namespace." {
			t.Errorf("kubectl get gd (gizmos): %v, %q", err, stderr)
		}
	})

	// "As with existing built-in objects, deleting a namespace deletes all
	// custom objects in that namespace."
	t.Run("namespace deletion", func(t *testing.T) {
		kubectl(t, srv, "create", "namespace", "cron-ns")
		if got, want := kubectlLine(t, srv, "apply", "-n", "cron-ns", "-f", crdFixture("my-crontab.yaml")), "crontab.stable.example.com/my-new-cron-object created"; got != want {
			t.Fatalf("apply -n cron-ns printed %q, want %q", got, want)
		}
		if got, want := kubectlLine(t, srv, "delete", "namespace", "cron-ns", "--timeout=30s"), `namespace "cron-ns" deleted`; got != want {
			t.Fatalf("delete namespace cron-ns printed %q, want %q", got, want)
		}
		out := kubectl(t, srv, "get", "crontabs", "-A")
		rows := table(t, out)
		if want := [][]string{{"NAMESPACE", "NAME", "AGE"}, {"default", "my-new-cron-object"}}; len(rows) != 2 || !slices.Equal(rows[0], want[0]) || !slices.Equal(rows[1][:2], want[1]) {
			t.Errorf("get crontabs -A after deleting cron-ns: want only default/my-new-cron-object, got\n%s", out)
		}
		list := kubectlYAML(t, srv, "get", "--raw", "/apis/stable.example.com/v1/namespaces/cron-ns/crontabs")
		if items, _ := list["items"].([]any); len(items) != 0 {
			t.Errorf("cron-ns still holds %d crontabs after its deletion", len(items))
		}
	})

	// A custom object's finalizer holds its namespace in Terminating, and
	// the namespace's conditions say so, as upstream's controller does.
	t.Run("namespace held by a finalizer", func(t *testing.T) {
		const ns, name = "held-ns", "finalized-cron-object"
		kubectl(t, srv, "create", "namespace", ns)
		kubectl(t, srv, "create", "-n", ns, "-f", crdFixture("crontab-finalizer.yaml"))
		kubectl(t, srv, "delete", "namespace", ns, "--wait=false")
		want := map[string]condition{
			"NamespaceContentRemaining":    {"NamespaceContentRemaining", "True", "SomeResourcesRemain", "Some resources are remaining: crontabs.stable.example.com has 1 resource instances"},
			"NamespaceFinalizersRemaining": {"NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: stable.example.com/finalizer in 1 resource instances"},
			"NamespaceDeletionContentFailure": {"NamespaceDeletionContentFailure", "False", "ContentDeleted",
				"All content successfully deleted, may be waiting on finalization"},
		}
		var conds map[string]condition
		waitFor(t, crdSettle, ns+" reports the crontab that holds it", func() (bool, error) {
			conds = crdConditions(t, kubectlYAML(t, srv, "get", "namespace", ns, "-o", "yaml"))
			return conds["NamespaceFinalizersRemaining"].Status == "True", nil
		})
		for typ, w := range want {
			if conds[typ] != w {
				t.Errorf("condition %s = %+v, want %+v", typ, conds[typ], w)
			}
		}
		kubectl(t, srv, "patch", "-n", ns, "crontab", name, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		kubectl(t, srv, "wait", "--for=delete", "namespace/"+ns, "--timeout=30s")
	})

	// Adding a version (v2, served, v1 storage) and a short name to a
	// served CRD: both appear in discovery within seconds.
	t.Run("new version", func(t *testing.T) {
		applyCRD(t, srv, "crontab-crd-v2.yaml", crontabsCRD, "configured")
		want := []string{"crontabs", "ct,cron", "stable.example.com/v2", "true", "CronTab"} // v2 is preferred: it sorts first
		var last string
		waitFor(t, crdSettle, "api-resources shows crontabs at v2 with short names ct,cron", func() (bool, error) {
			last = kubectl(t, srv, "api-resources", "--api-group=stable.example.com")
			rows := table(t, last)
			return len(rows) == 2 && slices.Equal(rows[1], want), nil
		})
		versions := strings.Fields(kubectl(t, srv, "api-versions"))
		if !slices.Contains(versions, "stable.example.com/v1") || !slices.Contains(versions, "stable.example.com/v2") {
			t.Errorf("api-versions = %q, want stable.example.com/v1 and stable.example.com/v2", versions)
		}
		if out := kubectl(t, srv, "get", "cron", "-o", "name"); out != "crontab.stable.example.com/my-new-cron-object\n" {
			t.Errorf("get cron -o name printed %q, want my-new-cron-object", out)
		}
		// Conversion None: the same object in both versions, only
		// apiVersion differs.
		for _, v := range []string{"v1", "v2"} {
			obj := kubectlYAML(t, srv, "get", "crontabs."+v+".stable.example.com", "my-new-cron-object", "-o", "yaml")
			checkFields(t, "get crontabs."+v+".stable.example.com", obj, []fieldCheck{
				{"apiVersion", "stable.example.com/" + v},
				{"kind", "CronTab"},
				{"spec", map[string]any{"cronSpec": "* * * * */5", "image": "my-awesome-cron-image"}},
			})
		}
		// A list converts every item to the version asked for.
		if out := kubectl(t, srv, "get", "crontabs.v2.stable.example.com", "-o", "jsonpath={.apiVersion} {.kind} {.items[*].apiVersion}"); out != "v1 List stable.example.com/v2" {
			t.Errorf("get crontabs.v2.stable.example.com: list apiVersion, kind and items' apiVersions = %q, want %q", out, "v1 List stable.example.com/v2")
		}
		raw := kubectlYAML(t, srv, "get", "--raw", "/apis/stable.example.com/v2/namespaces/default/crontabs")
		checkFields(t, "GET /apis/stable.example.com/v2/namespaces/default/crontabs", raw, []fieldCheck{
			{"apiVersion", "stable.example.com/v2"},
			{"kind", "CronTabList"},
		})
		if items, _ := raw["items"].([]any); len(items) != 1 {
			t.Errorf("GET /apis/stable.example.com/v2/namespaces/default/crontabs: %d items, want 1", len(items))
		} else if item, _ := items[0].(map[string]any); item["apiVersion"] != "stable.example.com/v2" {
			t.Errorf("GET /apis/stable.example.com/v2/namespaces/default/crontabs: items[0].apiVersion = %v, want stable.example.com/v2", item["apiVersion"])
		}
		// The v2 object that the walkthrough's v1 URL refused.
		if got := kubectl(t, srv, "create", "--raw", "/apis/stable.example.com/v2/namespaces/default/crontabs", "-f", crdFixture("crontab-v2.json")); !strings.Contains(got, `"apiVersion":"stable.example.com/v2"`) {
			t.Errorf("POST a CronTab at v2 printed %q, want the created object at v2", got)
		}
		obj := kubectlYAML(t, srv, "get", "crontabs.v1.stable.example.com", "v2-cron-object", "-o", "yaml")
		checkFields(t, "get crontabs.v1.stable.example.com v2-cron-object", obj, []fieldCheck{
			{"apiVersion", "stable.example.com/v1"},
			{"spec.cronSpec", "0 * * * *"},
		})
		if got := kubectl(t, srv, "get", "crd", crontabsCRD, "-o", "jsonpath={.status.storedVersions}"); got != `["v1"]` {
			t.Errorf("storedVersions = %s, want [\"v1\"]: v2 was never the storage version", got)
		}
	})

	// "Set v1 as the storage in the CustomResourceDefinition file and apply
	// it using kubectl. The storedVersions is now v1beta1, v1."
	t.Run("new storage version", func(t *testing.T) {
		applyCRD(t, srv, "crontab-crd-v2-storage.yaml", crontabsCRD, "configured")
		if got := kubectl(t, srv, "get", "crd", crontabsCRD, "-o", "jsonpath={.status.storedVersions}"); got != `["v1","v2"]` {
			t.Errorf("storedVersions = %s, want [\"v1\",\"v2\"]", got)
		}
		if out := kubectl(t, srv, "get", "ct", "-o", "name"); out != "crontab.stable.example.com/my-new-cron-object\ncrontab.stable.example.com/v2-cron-object\n" {
			t.Errorf("get ct -o name after changing the storage version printed %q, want both objects", out)
		}
		// Objects stored at v1 before the change are still served at the
		// version asked for, in a list as in a get.
		for _, v := range []string{"v1", "v2"} {
			want := "stable.example.com/" + v + " stable.example.com/" + v
			if out := kubectl(t, srv, "get", "crontabs."+v+".stable.example.com", "-o", "jsonpath={.items[*].apiVersion}"); out != want {
				t.Errorf("get crontabs.%s.stable.example.com: items' apiVersions = %q, want %q", v, out, want)
			}
		}
	})

	// "Set served to false for the old version ... clients ... may begin
	// reporting errors attempting to access the custom resource objects at
	// the old version."
	t.Run("unserved version", func(t *testing.T) {
		applyCRD(t, srv, "crontab-crd-v1-unserved.yaml", crontabsCRD, "configured")
		var stderr string
		waitFor(t, crdSettle, "v1 is no longer served", func() (bool, error) {
			_, stderr, _ = kubectlResult(srv, "get", "--raw", crontabsURL)
			return strings.HasPrefix(stderr, "Error from server (NotFound)"), nil
		})
		if want := "Error from server (NotFound): the server could not find the requested resource"; strings.TrimSpace(stderr) != want {
			t.Errorf("GET %s of an unserved version:\n got %q\nwant %q", crontabsURL, stderr, want)
		}
		versions := strings.Fields(kubectl(t, srv, "api-versions"))
		if slices.Contains(versions, "stable.example.com/v1") || !slices.Contains(versions, "stable.example.com/v2") {
			t.Errorf("api-versions = %q, want stable.example.com/v2 without stable.example.com/v1", versions)
		}
		if out := kubectl(t, srv, "get", "crontabs.v2.stable.example.com", "-o", "name"); out != "crontab.stable.example.com/my-new-cron-object\ncrontab.stable.example.com/v2-cron-object\n" {
			t.Errorf("get crontabs.v2.stable.example.com -o name printed %q, want both objects", out)
		}
	})

	// "None of the Status.StoredVersion can be removed from Spec.Versions
	// list" (seed 002) until status.storedVersions no longer has it.
	t.Run("remove version", func(t *testing.T) {
		stderr := kubectlFails(t, srv, "apply", "-f", crdFixture("crontab-crd-v2-only.yaml"))
		msg := "missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions"
		want := `The CustomResourceDefinition "` + crontabsCRD + `" is invalid: ` + field.Invalid(field.NewPath("status", "storedVersions").Index(0), "v1", msg).Error()
		if stderr != want {
			t.Errorf("removing v1 while it is a stored version:\n got %q\nwant %q", stderr, want)
		}
		// "Remove the old version from the CustomResourceDefinition
		// status.storedVersions field."
		if got, want := kubectlLine(t, srv, "patch", "crd", crontabsCRD, "--subresource=status", "--type=merge", "-p", `{"status":{"storedVersions":["v2"]}}`), "customresourcedefinition.apiextensions.k8s.io/"+crontabsCRD+" patched"; got != want {
			t.Fatalf("patching status.storedVersions printed %q, want %q", got, want)
		}
		applyCRD(t, srv, "crontab-crd-v2-only.yaml", crontabsCRD, "configured")
		crd := kubectlYAML(t, srv, "get", "crd", crontabsCRD, "-o", "yaml")
		checkFields(t, "get crd after removing v1", crd, []fieldCheck{
			{"status.storedVersions", []any{"v2"}},
			{"status.acceptedNames.shortNames", []any{"ct", "cron"}},
		})
		if vs, _ := lookup(crd, "spec.versions").([]any); len(vs) != 1 {
			t.Errorf("spec.versions has %d entries, want only v2", len(vs))
		}
		if out := kubectl(t, srv, "get", "ct", "my-new-cron-object", "-o", "jsonpath={.apiVersion} {.spec.cronSpec}"); out != "stable.example.com/v2 * * * * */5" {
			t.Errorf("get ct my-new-cron-object printed %q, want it at v2 with its spec", out)
		}
	})

	// The seed's way to delete a CRD: kubectl delete -f with its file.
	t.Run("delete CRD", func(t *testing.T) {
		if got, want := kubectlLine(t, srv, "delete", "-f", crdFixture("crontab-crd-v2-only.yaml"), "--timeout=30s"), `customresourcedefinition.apiextensions.k8s.io "`+crontabsCRD+`" deleted`; got != want {
			t.Fatalf("kubectl delete -f crontab-crd-v2-only.yaml printed %q, want %q", got, want)
		}
		stderr := kubectlFails(t, srv, "get", "--raw", "/apis/stable.example.com/v2/namespaces/default/crontabs")
		if want := "Error from server (NotFound): the server could not find the requested resource"; stderr != want {
			t.Errorf("GET /apis/stable.example.com/v2/namespaces/default/crontabs after deleting the CRD:\n got %q\nwant %q", stderr, want)
		}
		if versions := strings.Fields(kubectl(t, srv, "api-versions")); slices.Contains(versions, "stable.example.com/v2") {
			t.Errorf("api-versions still lists stable.example.com/v2: %q", versions)
		}
	})
}
