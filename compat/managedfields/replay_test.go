// Package managedfields replays one object's history of writes against
// crdserver and through kube-apiserver's own field manager code
// (k8s.io/apimachinery/pkg/util/managedfields, built from the same CRD as
// apiextensions-apiserver builds it), and compares the managedFields after
// every write, entry by entry, ignoring only their times.
//
//	cd compat && go test ./managedfields
package managedfields

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

type op int

const (
	opCreate      op = iota // POST
	opUpdate                // PUT of the object read back, edited
	opStatus                // PUT to /status of the object read back, edited
	opMergePatch            // PATCH application/merge-patch+json
	opJSONPatch             // PATCH application/json-patch+json
	opApply                 // PATCH application/apply-patch+yaml
	opApplyStatus           // the same to /status
	opScale                 // PATCH of /scale setting replicas
)

// step is one request. The manager is fieldManager when set, else what
// the server derives from userAgent.
type step struct {
	name      string
	line      string
	op        op
	version   string // default v1
	manager   string
	userAgent string
	body      string               // create: object; patches: patch; apply: configuration
	edit      func(map[string]any) // update, status
	force     bool
	replicas  int64
	conflict  bool // the request fails with 409
}

func (s step) sub() string {
	switch s.op {
	case opStatus, opApplyStatus:
		return "status"
	case opScale:
		return "scale"
	}
	return ""
}

// at annotates a step with the line that declares it.
func at(s step) step {
	_, file, line, _ := runtime.Caller(1)
	s.line = fmt.Sprintf("%s:%d", file[strings.LastIndex(file, "/")+1:], line)
	if s.version == "" {
		s.version = "v1"
	}
	if s.userAgent == "" {
		s.userAgent = "compat.test/v0.0.0"
	}
	return s
}

func set(path string, v any) func(map[string]any) {
	return func(obj map[string]any) {
		keys := strings.Split(path, ".")
		if err := unstructured.SetNestedField(obj, v, keys...); err != nil {
			panic(err)
		}
	}
}

// The configurations the appliers send.
const applyBConfig = `
apiVersion: mf.example.com/v1
kind: Widget
metadata: {name: w, namespace: default}
spec:
  replicas: 5
  image: nginx:2
  args: [debug]
`

func applyAConfig(version string) string {
	return `
apiVersion: mf.example.com/` + version + `
kind: Widget
metadata: {name: w, namespace: default, labels: {owner: a}}
spec:
  ports: [{name: http, port: 80}]
  tags: [a, d]
  env: {A: "1"}
`
}

func imageConfig(image string) string {
	return "apiVersion: mf.example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\nspec: {image: " + image + "}\n"
}

func statusConfig(phase string) string {
	return "apiVersion: mf.example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\nstatus: {phase: " + phase + "}\n"
}

func steps() []step {
	var out []step
	add := func(s ...step) { out = append(out, s...) }
	add(
		at(step{name: "kubectl create", op: opCreate, userAgent: "kubectl-create/v1.37.2 (linux/amd64) kubernetes/abcdef", body: `
apiVersion: mf.example.com/v1
kind: Widget
metadata:
  name: w
  namespace: default
  labels: {app: w}
spec:
  replicas: 1
  image: nginx:1
  port: 8080
  ports: [{name: http, port: 80}]
  tags: [a, b]
  args: [run, serve]
  selector: {app: w}
status:
  phase: Ignored
`}),
		at(step{name: "kubectl apply (client-side)", op: opMergePatch, userAgent: "kubectl-client-side-apply/v1.37.2 (linux/amd64) kubernetes/abcdef", body: `{
  "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"mf.example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\",\"namespace\":\"default\"},\"spec\":{\"image\":\"nginx:1.1\",\"tags\":[\"a\",\"b\",\"c\"]}}\n"}},
  "spec": {"image": "nginx:1.1", "tags": ["a", "b", "c"]}}`}),
		at(step{name: "kubectl edit", op: opUpdate, userAgent: "kubectl-edit/v1.37.2 (linux/amd64) kubernetes/abcdef", edit: func(o map[string]any) {
			set("spec.port", "http")(o)
			set("metadata.labels.edited", "yes")(o)
			set("spec.env.A", "1")(o)
		}}),
		at(step{name: "merge patch", op: opMergePatch, manager: "patcher", body: `{"spec": {"args": ["run", "serve", "fast"], "selector": {"app": "w", "tier": "web"}, "env": {"B": "2"}}}`}),
		at(step{name: "JSON patch", op: opJSONPatch, manager: "json-patcher", body: `[{"op": "add", "path": "/spec/ports/-", "value": {"name": "https", "port": 443}}]`}),
		at(step{name: "status update", op: opStatus, manager: "status-writer", edit: func(o map[string]any) {
			set("status.replicas", int64(1))(o)
			set("status.phase", "Running")(o)
			set("spec.image", "ignored-by-status")(o)
		}}),
		at(step{name: "scale", op: opScale, manager: "scaler", replicas: 3}),
		at(step{name: "merge patch of status through the resource", op: opMergePatch, manager: "patcher", body: `{"status": {"phase": "Ignored"}, "spec": {"env": {"B": "2b"}}}`}),
		at(step{name: "apply a: shares values, adds an item", op: opApply, manager: "apply-a", body: applyAConfig("v1")}),
		at(step{name: "apply b conflicts with three managers", op: opApply, manager: "apply-b", conflict: true, body: applyBConfig}),
		at(step{name: "apply b conflicts with one manager", op: opApply, manager: "apply-b", conflict: true, body: imageConfig("nginx:2")}),
		at(step{name: "apply b forced", op: opApply, manager: "apply-b", force: true, body: applyBConfig}),
		at(step{name: "apply b again, unchanged", op: opApply, manager: "apply-b", body: applyBConfig}),
		at(step{name: "apply b again, changing only values it alone owns", op: opApply, manager: "apply-b",
			body: strings.NewReplacer("replicas: 5", "replicas: 6", "nginx:2", "nginx:2b", "[debug]", "[debug, trace]").Replace(applyBConfig)}),
		at(step{name: "apply a conflicts with an applier", op: opApply, manager: "apply-a", conflict: true, body: imageConfig("nginx:3")}),
		at(step{name: "apply a again at v2", op: opApply, manager: "apply-a", version: "v2", body: applyAConfig("v2")}),
		at(step{name: "apply a at v2 drops what it no longer applies", op: opApply, manager: "apply-a", version: "v2", body: `
apiVersion: mf.example.com/v2
kind: Widget
metadata: {name: w, namespace: default}
spec:
  tags: [a]
`}),
		at(step{name: "kubectl edit at v2", op: opUpdate, version: "v2", userAgent: "kubectl-edit/v1.37.2 (linux/amd64) kubernetes/abcdef", edit: set("spec.env.C", "3")}),
		at(step{name: "status update at v2", op: opStatus, version: "v2", manager: "status-writer", edit: set("status.phase", "Ready")}),
		at(step{name: "scale at v2", op: opScale, version: "v2", manager: "scaler", replicas: 4}),
		at(step{name: "apply b at v2 takes replicas back", op: opApply, manager: "apply-b", version: "v2", force: true, body: `
apiVersion: mf.example.com/v2
kind: Widget
metadata: {name: w, namespace: default}
spec:
  replicas: 6
  image: nginx:2
`}),
		at(step{name: "status apply conflicts with the status writer", op: opApplyStatus, manager: "status-applier", conflict: true, body: statusConfig("Degraded")}),
		at(step{name: "status apply, forced", op: opApplyStatus, manager: "status-applier", force: true, body: statusConfig("Degraded")}),
	)
	// Twelve more update managers: the oldest updates merge into
	// ancient-changes, one entry per apiVersion.
	for i := range 12 {
		add(at(step{name: fmt.Sprintf("update manager %d of 12", i+1), op: opMergePatch, manager: fmt.Sprintf("mgr-%02d", i),
			body: fmt.Sprintf(`{"metadata": {"labels": {"mgr-%02d": "x"}}}`, i)}))
	}
	add(
		at(step{name: "invalid managedFields are ignored", op: opUpdate, manager: "bad-fields", edit: func(o map[string]any) {
			set("metadata.labels.bad", "x")(o)
			o["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "m", "operation": "Bogus", "apiVersion": "mf.example.com/v1"}}
		}}),
		at(step{name: "managedFields: [] clears them", op: opUpdate, manager: "resetter", edit: func(o map[string]any) {
			set("metadata.labels.reset", "x")(o)
			o["metadata"].(map[string]any)["managedFields"] = []any{}
		}}),
		at(step{name: "update after a reset", op: opMergePatch, manager: "late-patcher", body: `{"spec": {"env": {"D": "4"}}}`}),
		at(step{name: "status update after a reset", op: opStatus, manager: "status-writer", edit: set("status.phase", "Reset")}),
		at(step{name: "scale after a reset", op: opScale, manager: "scaler", replicas: 7}),
		at(step{name: "apply after a reset conflicts with before-first-apply", op: opApply, manager: "apply-a", conflict: true, body: imageConfig("nginx:4")}),
		at(step{name: "apply after a reset, forced", op: opApply, manager: "apply-a", force: true, body: imageConfig("nginx:4")}),
		at(step{name: "update after the apply", op: opMergePatch, manager: "late-patcher", body: `{"spec": {"env": {"E": "5"}}}`}),
		at(step{name: "JSON patch removes replicas", op: opJSONPatch, manager: "json-patcher", body: `[{"op": "remove", "path": "/spec/replicas"}]`}),
		at(step{name: "scale when nobody owns replicas", op: opScale, manager: "scaler", replicas: 2}),
		at(step{name: "scale when the scaler owns replicas", op: opScale, manager: "scaler", version: "v2", replicas: 3}),
	)
	return out
}

func readCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile("testdata/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

func TestManagedFieldsMatchUpstream(t *testing.T) {
	crd := readCRD(t)
	seen := replay(t, newCRDServer(t, crd, "w"), newUpstream(t, crd), steps())
	// The replay reaches what it is meant to reach.
	for _, m := range []string{"ancient-changes", "before-first-apply", "scaler", "status-writer", "apply-a", "apply-b"} {
		if !seen[m] {
			t.Errorf("no step left an entry of %s", m)
		}
	}
}

// An apply that creates the object, at the second version, then writes
// by others and by the applier at the first version.
func TestApplyCreateMatchesUpstream(t *testing.T) {
	crd := readCRD(t)
	config := func(version, spec string) string {
		return "apiVersion: mf.example.com/" + version + "\nkind: Widget\nmetadata: {name: c, namespace: default}\n" + spec + "\n"
	}
	replay(t, newCRDServer(t, crd, "c"), newUpstream(t, crd), []step{
		at(step{name: "apply creates", op: opApply, version: "v2", manager: "creator",
			body: config("v2", "spec: {replicas: 2, ports: [{name: http, port: 80}], selector: {app: c}}\nstatus: {phase: Ignored}")}),
		at(step{name: "kubectl edit", op: opUpdate, userAgent: "kubectl-edit/v1.37.2", edit: set("spec.image", "nginx")}),
		at(step{name: "status", op: opStatus, manager: "status-writer", edit: set("status.phase", "Ready")}),
		at(step{name: "scale", op: opScale, version: "v2", manager: "scaler", replicas: 4}),
		at(step{name: "apply again, without the ports, at v1", op: opApply, manager: "creator",
			body: config("v1", "spec: {selector: {app: c}}")}),
	})
}

// A built-in: a namespace's labels and status conditions, written by
// updaters and appliers.
func TestNamespaceManagedFieldsMatchUpstream(t *testing.T) {
	config := func(labels string) string {
		return "apiVersion: v1\nkind: Namespace\nmetadata: {name: mf, labels: {" + labels + "}}\n"
	}
	replay(t, newNamespaceServer(t, "mf"), newNamespaceUpstream(), []step{
		at(step{name: "kubectl create", op: opCreate, userAgent: "kubectl-create/v1.37.2", body: config("app: x")}),
		at(step{name: "merge patch", op: opMergePatch, manager: "patcher", body: `{"metadata": {"labels": {"tier": "web"}, "annotations": {"note": "n"}}}`}),
		at(step{name: "apply a", op: opApply, manager: "apply-a", body: config("owner: a, app: x")}),
		at(step{name: "apply b conflicts", op: opApply, manager: "apply-b", conflict: true, body: config("owner: b, tier: db")}),
		at(step{name: "apply b forced", op: opApply, manager: "apply-b", force: true, body: config("owner: b, tier: db")}),
		at(step{name: "status", op: opStatus, manager: "status-writer", edit: func(o map[string]any) {
			o["status"] = map[string]any{"phase": "Active", "conditions": []any{
				map[string]any{"type": "NamespaceDeletionDiscoveryFailure", "status": "False", "reason": "ResourcesDiscovered", "message": "ok"},
			}}
		}}),
		at(step{name: "apply a drops app", op: opApply, manager: "apply-a", body: config("owner: b")}),
		at(step{name: "managedFields: [] clears them", op: opUpdate, manager: "resetter", edit: func(o map[string]any) {
			o["metadata"].(map[string]any)["managedFields"] = []any{}
		}}),
		at(step{name: "apply after a reset", op: opApply, manager: "apply-a", conflict: true, body: config("owner: a")}),
	})
}

// replay runs the steps on both sides and compares their results after
// each, and returns the managers crdserver's entries named on the way.
func replay(t *testing.T, ours *crdserver, theirs *upstream, steps []step) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, s := range steps {
		errOurs := ours.do(t, s)
		errTheirs := theirs.do(t, s)
		where := fmt.Sprintf("%s: %s", s.line, s.name)
		if msg := compareErrors(errOurs, errTheirs, s.conflict); msg != "" {
			t.Errorf("%s: %s", where, msg)
		}
		for _, e := range ours.managedFields() {
			seen[e.Manager] = true
		}
		if a, b := lastApplied(ours.last), lastApplied(theirs.obj); a != b {
			t.Errorf("%s: the last-applied-configuration annotation differs:\n  crdserver %s\n  upstream  %s", where, a, b)
		}
		theirs.syncTimes(ours.managedFields())
		if diff := compareEntries(ours.managedFields(), theirs.managedFields()); diff != "" {
			t.Errorf("%s: managedFields differ (crdserver vs upstream):\n%s", where, diff)
			// Go on from crdserver's entries, so that one difference
			// does not make every later step differ.
			if theirs.obj != nil {
				theirs.obj.SetManagedFields(ours.managedFields())
			}
		}
	}
	return seen
}

// lastApplied is kubectl's client-side apply annotation, which a
// server-side apply by kubectl keeps up to date, as JSON with sorted keys.
func lastApplied(obj *unstructured.Unstructured) string {
	if obj == nil {
		return ""
	}
	a, ok := obj.GetAnnotations()[lastAppliedKey]
	if !ok {
		return ""
	}
	var v any
	if err := json.Unmarshal([]byte(a), &v); err != nil {
		return a
	}
	b, _ := json.Marshal(v)
	return string(b)
}

const lastAppliedKey = "kubectl.kubernetes.io/last-applied-configuration"

// kubectl apply --server-side (manager "kubectl") on an object that
// kubectl apply made client-side: upstream lets it take over the fields
// of the last applied configuration without conflicts, and keeps the
// annotation up to date.
func TestClientSideApplyUpgradeMatchesUpstream(t *testing.T) {
	crd := readCRD(t)
	replay(t, newCRDServer(t, crd, "w"), newUpstream(t, crd), append(steps()[:2:2],
		at(step{name: "kubectl apply --server-side after client-side", op: opApply, manager: "kubectl", body: imageConfig("nginx:5")}),
		at(step{name: "kubectl apply --server-side again", op: opApply, manager: "kubectl", body: imageConfig("nginx:6")}),
	))
}

// compareErrors checks that both sides failed alike: a 409 with the same
// message and causes where a conflict is expected, no error elsewhere.
func compareErrors(ours, theirs error, conflict bool) string {
	if !conflict {
		if ours != nil || theirs != nil {
			return fmt.Sprintf("unexpected errors: crdserver %v; upstream %v", ours, theirs)
		}
		return ""
	}
	if !apierrors.IsConflict(ours) || !apierrors.IsConflict(theirs) {
		return fmt.Sprintf("want 409 from both: crdserver %v; upstream %v", ours, theirs)
	}
	so, st := ours.(apierrors.APIStatus).Status(), theirs.(apierrors.APIStatus).Status()
	var msgs []string
	if so.Message != st.Message {
		msgs = append(msgs, fmt.Sprintf("message:\n  crdserver %q\n  upstream  %q", so.Message, st.Message))
	}
	if so.Reason != st.Reason {
		msgs = append(msgs, fmt.Sprintf("reason: crdserver %q, upstream %q", so.Reason, st.Reason))
	}
	co, ct := causes(so), causes(st)
	if co != ct {
		msgs = append(msgs, fmt.Sprintf("causes:\n  crdserver %s\n  upstream  %s", co, ct))
	}
	return strings.Join(msgs, "\n")
}

// causes lists a Status's causes sorted: upstream lists them in map order.
func causes(s metav1.Status) string {
	if s.Details == nil {
		return "[]"
	}
	var out []string
	for _, c := range s.Details.Causes {
		b, _ := json.Marshal(c)
		out = append(out, string(b))
	}
	sort.Strings(out)
	return "[" + strings.Join(out, ",") + "]"
}

// entry is a managedFields entry without its time, but with whether it
// has one.
type entry struct {
	Manager, Operation, APIVersion, Subresource, FieldsType string
	HasTime                                                 bool
	FieldsV1                                                string
}

func entries(mf []metav1.ManagedFieldsEntry) []entry {
	out := make([]entry, len(mf))
	for i, e := range mf {
		out[i] = entry{Manager: e.Manager, Operation: string(e.Operation), APIVersion: e.APIVersion,
			Subresource: e.Subresource, FieldsType: e.FieldsType, HasTime: e.Time != nil}
		if e.FieldsV1 != nil {
			var v any
			if err := json.Unmarshal(e.FieldsV1.Raw, &v); err != nil {
				panic(err)
			}
			b, _ := json.Marshal(v) // sorted keys
			out[i].FieldsV1 = string(b)
		}
	}
	return out
}

// sortAsUpstream orders entries as upstream encodes them: by operation,
// time (seconds), manager, apiVersion and subresource. Upstream's copy is
// re-sorted after its times were made crdserver's.
func sortAsUpstream(mf []metav1.ManagedFieldsEntry) {
	secs := func(e metav1.ManagedFieldsEntry) int64 {
		if e.Time == nil {
			return 0
		}
		return e.Time.Unix()
	}
	sort.SliceStable(mf, func(i, j int) bool {
		p, q := mf[i], mf[j]
		if p.Operation != q.Operation {
			return p.Operation < q.Operation
		}
		if secs(p) != secs(q) {
			return secs(p) < secs(q)
		}
		if p.Manager != q.Manager {
			return p.Manager < q.Manager
		}
		if p.APIVersion != q.APIVersion {
			return p.APIVersion < q.APIVersion
		}
		return p.Subresource < q.Subresource
	})
}

func compareEntries(ours, theirs []metav1.ManagedFieldsEntry) string {
	theirs = append([]metav1.ManagedFieldsEntry(nil), theirs...)
	sortAsUpstream(theirs)
	eo, et := entries(ours), entries(theirs)
	var b strings.Builder
	for i := 0; i < max(len(eo), len(et)); i++ {
		var o, u *entry
		if i < len(eo) {
			o = &eo[i]
		}
		if i < len(et) {
			u = &et[i]
		}
		if o != nil && u != nil && *o == *u {
			continue
		}
		fmt.Fprintf(&b, "  entry %d:\n    crdserver %s\n    upstream  %s\n", i, show(o), show(u))
	}
	return b.String()
}

func show(e *entry) string {
	if e == nil {
		return "(none)"
	}
	return fmt.Sprintf("%s %s %s sub=%q type=%s time=%v %s", e.Manager, e.Operation, e.APIVersion, e.Subresource, e.FieldsType, e.HasTime, e.FieldsV1)
}
