package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// TestServerSideApplyEveryKind applies one object of every kind crdserver
// serves with create and patch (discovery says which: a kind added later
// without an object here fails the test) with kubectl apply
// --server-side, as a user applies a directory of manifests: each is
// applied, applying it again changes nothing (its defaults do not move it
// away from the configuration), a second manager's value for a field the
// first applied is a conflict, and --force-conflicts takes the field.
func TestServerSideApplyEveryKind(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	kubectlLine(t, srv, "apply", "--server-side", "-f", applyFixture("crd.yaml"))
	waitEstablished(t, srv, "gizmos.ssa.example.com")

	raw, err := os.ReadFile(applyFixture("every-kind.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(raw), "\n---\n")
	docs = append(docs, `
apiVersion: ssa.example.com/v1
kind: Gizmo
metadata: {name: g, namespace: ssa-every}
spec: {image: nginx, replicas: 1, ports: [{name: http, port: 80}]}`, fmt.Sprintf(`
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: every-csr}
spec:
  request: %s
  signerName: example.com/signer
  usages: [digital signature]`, csrPEM(t)))

	// Each object carries a label the conflict below is about; another
	// manager's configuration names the object and sets that label alone.
	var mine, others []string
	kinds := map[string]bool{} // "Kind.group"
	for _, d := range docs {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(d), &obj); err != nil {
			t.Fatalf("%v:\n%s", err, d)
		}
		md := obj["metadata"].(map[string]any)
		md["labels"] = map[string]any{"owner": "me"}
		mine = append(mine, toYAML(t, obj))
		other := map[string]any{"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": map[string]any{
			"name": md["name"], "labels": map[string]any{"owner": "other"}}}
		if ns, ok := md["namespace"]; ok {
			other["metadata"].(map[string]any)["namespace"] = ns
		}
		others = append(others, toYAML(t, other))
		group, _, _ := strings.Cut(obj["apiVersion"].(string), "/")
		if !strings.Contains(obj["apiVersion"].(string), "/") {
			group = ""
		}
		kinds[obj["kind"].(string)+"."+group] = true
	}
	kinds["CustomResourceDefinition.apiextensions.k8s.io"] = true // applied above

	// Every kind discovery lists with create and patch has an object.
	_, lists, err := srv.Client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lists {
		group, _, _ := strings.Cut(l.GroupVersion, "/")
		if !strings.Contains(l.GroupVersion, "/") {
			group = ""
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "create") || !slices.Contains(r.Verbs, "patch") {
				continue
			}
			if !kinds[r.Kind+"."+group] {
				t.Errorf("%s (%s) is served with create and patch, but every-kind.yaml has no object of it", r.Name, l.GroupVersion)
			}
		}
	}

	dir := t.TempDir()
	write := func(name string, docs []string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(docs, "\n---\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	all, theirs := write("mine.yaml", mine), write("others.yaml", others)

	applied := time.Now()
	out := kubectlLineWarned(t, srv, endpointsDeprecated, "apply", "--server-side", "-f", all)
	if lines := strings.Split(out, "\n"); len(lines) != len(docs) || strings.Count(out, " serverside-applied") != len(docs) {
		t.Fatalf("kubectl apply --server-side printed, for %d objects:\n%s", len(docs), out)
	}

	// Applied again, nothing changes. Controllers may still be writing
	// the status of a few (a migration's): wait until nothing moves. A
	// second on, a write would record a new time.
	before := settledVersions(t, srv, all)
	beforeObjs := kubectlItems(t, srv, all)
	time.Sleep(time.Until(applied.Add(1100 * time.Millisecond)))
	kubectlLineWarned(t, srv, endpointsDeprecated, "apply", "--server-side", "-f", all)
	after := resourceVersions(t, srv, all)
	afterObjs := map[string]map[string]any{}
	for _, obj := range kubectlItems(t, srv, all) {
		afterObjs[objectName(obj)] = obj
	}
	for _, was := range beforeObjs {
		k := objectName(was)
		if after[k] == before[k] {
			continue
		}
		// A policy's status is applied by its type checker, as
		// validatingadmissionpolicy-status, after kubectl's apply.
		// kubectl's atomic matchConstraints, applied again, moves its
		// time (the merged value lacks the defaults) and its entry after
		// the checker's: upstream stores that reordering, as
		// applynoop.txt in compat/e2e shows. Nothing else may change.
		if was["kind"] == "ValidatingAdmissionPolicy" && sameButEntryTimes(was, afterObjs[k]) {
			continue
		}
		t.Errorf("%s: applying the same configuration again moved resourceVersion %s to %s", k, before[k], after[k])
	}

	// Another manager's value for the label is a conflict for every
	// object, worded as upstream words it, and changes nothing.
	stderr := kubectlFails(t, srv, "apply", "--server-side", "--field-manager=other", "-f", theirs)
	if n := strings.Count(stderr, `conflict with "kubectl": .metadata.labels.owner`); n != len(docs) {
		t.Errorf("%d of %d objects reported the conflict; kubectl printed:\n%s", n, len(docs), stderr)
	}
	if moved := resourceVersions(t, srv, all); !maps.Equal(moved, after) {
		t.Errorf("the refused applies changed objects")
	}

	// Forced, the other manager takes the label from kubectl.
	kubectlLineWarned(t, srv, endpointsDeprecated, "apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", theirs)
	for _, obj := range kubectlItems(t, srv, all) {
		name := objectName(obj)
		if got := lookup(obj, "metadata.labels.owner"); got != "other" {
			t.Errorf("%s: label owner %v after the forced apply, want other", name, got)
		}
		owners := map[string]bool{}
		entries, _ := lookup(obj, "metadata.managedFields").([]any)
		for _, e := range entries {
			e := e.(map[string]any)
			if strings.Contains(fmt.Sprint(e["fieldsV1"]), "f:owner") {
				owners[fmt.Sprint(e["manager"], "/", e["operation"])] = true
			}
		}
		if !owners["other/Apply"] || owners["kubectl/Apply"] {
			t.Errorf("%s: the label is owned by %v, want other's apply alone", name, owners)
		}
	}
}

func toYAML(t *testing.T, obj map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameButEntryTimes reports whether two versions of an object differ only
// in their resourceVersion and in the times and order of their
// managedFields entries.
func sameButEntryTimes(a, b map[string]any) bool {
	norm := func(obj map[string]any) string {
		obj = runtime.DeepCopyJSON(obj)
		md := obj["metadata"].(map[string]any)
		delete(md, "resourceVersion")
		entries, _ := md["managedFields"].([]any)
		keys := make([]string, len(entries))
		for i, e := range entries {
			delete(e.(map[string]any), "time")
			b, _ := json.Marshal(e)
			keys[i] = string(b)
		}
		slices.Sort(keys)
		md["managedFields"] = keys
		b, _ := json.Marshal(obj)
		return string(b)
	}
	return b != nil && norm(a) == norm(b)
}

// kubectlItems gets the objects of a manifest file.
func kubectlItems(t *testing.T, srv *server, file string) []map[string]any {
	t.Helper()
	list := kubectlYAML(t, srv, "get", "--show-managed-fields", "-f", file, "-o", "json")
	var out []map[string]any
	for _, it := range list["items"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

func objectName(obj map[string]any) string {
	return fmt.Sprintf("%v %v/%v", obj["kind"], lookup(obj, "metadata.namespace"), lookup(obj, "metadata.name"))
}

// resourceVersions are the resourceVersions of a manifest's objects.
func resourceVersions(t *testing.T, srv *server, file string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, obj := range kubectlItems(t, srv, file) {
		out[objectName(obj)] = fmt.Sprint(lookup(obj, "metadata.resourceVersion"))
	}
	return out
}

// settledVersions is resourceVersions once two reads half a second apart
// agree.
func settledVersions(t *testing.T, srv *server, file string) map[string]string {
	t.Helper()
	prev := resourceVersions(t, srv, file)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		cur := resourceVersions(t, srv, file)
		if maps.Equal(cur, prev) {
			return cur
		}
		prev = cur
	}
	t.Fatalf("the objects kept changing: %v", prev)
	return nil
}

// endpointsDeprecated is the warning kube-apiserver gives, as crdserver
// does, for each write of a core/v1 Endpoints, which every-kind.yaml has.
const endpointsDeprecated = "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
