package builtin

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: nginx, image: nginx}]}
`

func TestDeploymentDefaults(t *testing.T) {
	h := Deployments().Hooks.(registry.CreatePreparer)
	obj := decodeYAML(t, deployment)
	h.PrepareForCreate(obj)
	for path, want := range map[string]any{
		"spec.replicas":                                          int64(1),
		"spec.revisionHistoryLimit":                              int64(10),
		"spec.progressDeadlineSeconds":                           int64(600),
		"spec.strategy.type":                                     "RollingUpdate",
		"spec.strategy.rollingUpdate.maxSurge":                   "25%",
		"spec.strategy.rollingUpdate.maxUnavailable":             "25%",
		"spec.template.spec.restartPolicy":                       "Always",
		"spec.template.spec.dnsPolicy":                           "ClusterFirst",
		"spec.template.spec.schedulerName":                       "default-scheduler",
		"spec.template.spec.terminationGracePeriodSeconds":       int64(30),
		"spec.template.spec.containers.0.imagePullPolicy":        "Always",
		"spec.template.spec.containers.0.terminationMessagePath": "/dev/termination-log",
	} {
		if got := lookup(obj, path); got != want {
			t.Errorf("%s = %#v, want %#v", path, got, want)
		}
	}
	if st, ok := obj["status"].(map[string]any); !ok || len(st) != 0 {
		t.Errorf("status = %#v, want {}", obj["status"])
	}
}

// lookup reads a dotted path, with list indexes as numbers.
func lookup(obj map[string]any, path string) any {
	var cur any = obj
	for _, p := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p]
		case []any:
			if len(c) == 0 || p != "0" {
				return nil
			}
			cur = c[0]
		default:
			return nil
		}
	}
	return cur
}

func TestPullPolicy(t *testing.T) {
	for image, want := range map[string]string{
		"nginx": "Always", "nginx:latest": "Always", "nginx:1.27": "IfNotPresent",
		"registry:5000/nginx": "Always", "registry:5000/nginx:1": "IfNotPresent", "nginx@sha256:abc": "IfNotPresent",
	} {
		if got := string(pullPolicy(image)); got != want {
			t.Errorf("pullPolicy(%q) = %s, want %s", image, got, want)
		}
	}
}

// Bad workloads get upstream's messages and field paths.
func TestAppsValidation(t *testing.T) {
	defs := map[string]*registry.Definition{
		"Deployment": Deployments(), "ReplicaSet": ReplicaSets(), "StatefulSet": StatefulSets(), "DaemonSet": DaemonSets(),
	}
	for _, tc := range []struct {
		name, kind, spec string
		want             string // "" = valid
	}{
		{line(), "Deployment", `{selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}}`, ""},
		{line(), "Deployment", `{template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}}`, "spec.selector: Required value"},
		{line(), "Deployment", `{selector: {}, template: {spec: {containers: [{name: c, image: i}]}}}`, "empty selector is invalid for deployment"},
		{line(), "Deployment", `{selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: b}}, spec: {containers: [{name: c, image: i}]}}}`, "spec.template.metadata.labels: Invalid value: {\"app\":\"b\"}: `selector` does not match template `labels`"},
		{line(), "Deployment", `{replicas: -1, selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}}`, "spec.replicas: Invalid value: -1: must be greater than or equal to 0"},
		{line(), "Deployment", `{selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: []}}}`, "spec.template.spec.containers: Required value"},
		{line(), "Deployment", `{selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c}]}}}`, "spec.template.spec.containers[0].image: Required value"},
		{line(), "Deployment", `{selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}}`, `spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`},
		{line(), "Deployment", `{strategy: {type: Recreate, rollingUpdate: {}}, selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}}`, "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"},
		{line(), "Deployment", `{strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 0}}, selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}}`, "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"},
		{line(), "Deployment", `{progressDeadlineSeconds: 5, minReadySeconds: 10, selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}}`, "spec.progressDeadlineSeconds: Invalid value: 5: must be greater than minReadySeconds"},
		{line(), "ReplicaSet", `{replicas: -2, selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}}`, "spec.replicas: Invalid value: -2: must be greater than or equal to 0"},
		{line(), "ReplicaSet", `{selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}}`, ""},
		{line(), "StatefulSet", `{selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}}`, ""},
		{line(), "StatefulSet", `{selector: {}, template: {spec: {containers: [{name: c, image: i}]}}}`, "empty selector is invalid for statefulset"},
		{line(), "StatefulSet", `{serviceName: Bad_Name, selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}}`, `spec.serviceName: Invalid value: "Bad_Name"`},
		// Mounts may name a claim template; not another volume.
		{line(), "StatefulSet", `{selector: {matchLabels: {app: a}}, volumeClaimTemplates: [{metadata: {name: data}}], template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i, volumeMounts: [{name: data, mountPath: /d}]}]}}}`, ""},
		{line(), "StatefulSet", `{selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i, volumeMounts: [{name: data, mountPath: /d}]}]}}}`, `spec.template.spec.containers[0].volumeMounts[0].name: Not found: "data"`},
		{line(), "DaemonSet", `{selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}}`, ""},
		{line(), "DaemonSet", `{selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {activeDeadlineSeconds: 5, containers: [{name: c, image: i}]}}}`, "activeDeadlineSeconds in DaemonSet is not Supported"},
	} {
		obj := decodeYAML(t, "apiVersion: apps/v1\nkind: "+tc.kind+"\nmetadata: {name: w, namespace: default}\nspec: "+tc.spec)
		hooks := defs[tc.kind].Hooks
		hooks.(registry.CreatePreparer).PrepareForCreate(obj)
		got := hooks.(registry.Validator).Validate(obj).ToAggregate()
		checkErrors(t, tc.name, got, tc.want)
	}
}

func TestAppsSelectorImmutable(t *testing.T) {
	h := Deployments().Hooks
	old := decodeYAML(t, deployment)
	h.(registry.CreatePreparer).PrepareForCreate(old)
	obj := decodeYAML(t, strings.ReplaceAll(deployment, "app: web", "app: other"))
	h.(registry.UpdatePreparer).PrepareForUpdate(obj, old)
	errs := h.(registry.Validator).ValidateUpdate(obj, old)
	want := field.NewPath("spec", "selector").String() + ": Invalid value"
	if got := errs.ToAggregate(); got == nil || !strings.Contains(got.Error(), want) || !strings.Contains(got.Error(), "field is immutable") {
		t.Errorf("errors %v, want %q ... field is immutable", got, want)
	}
}

func TestAppsTableRows(t *testing.T) {
	obj := decodeYAML(t, deployment)
	h := Deployments().Hooks
	h.(registry.CreatePreparer).PrepareForCreate(obj)
	obj["status"] = map[string]any{"readyReplicas": int64(1), "updatedReplicas": int64(1), "availableReplicas": int64(1)}
	tp := h.(registry.TablePrinter)
	cols, row := tp.TableColumns(), tp.TableRow(obj)
	var names []string
	for _, c := range cols {
		if c.Priority == 0 {
			names = append(names, c.Name)
		}
	}
	if got := strings.Join(names, " "); got != "Name Ready Up-to-date Available Age" {
		t.Errorf("columns %s", got)
	}
	if len(row) != len(cols) || row[0] != "web" || row[1] != "1/1" || row[2] != int64(1) || row[7] != "app=web" {
		t.Errorf("row %#v", row)
	}
}

// A typed JSON body's unknown and duplicate fields come in the body's
// order, as upstream's typed decoder lists them.
func TestStrictErrorsOrder(t *testing.T) {
	body := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"unknownField":"foo","replicas":2,"replicas":3}}`
	problems, decoded := Deployments().Hooks.(registry.StrictDecoder).StrictErrors([]byte(body))
	if !decoded {
		t.Errorf("StrictErrors: the body did not decode")
	}
	got := strings.Join(problems, ", ")
	if want := `unknown field "spec.unknownField", duplicate field "spec.replicas"`; got != want {
		t.Errorf("StrictErrors = %s, want %s", got, want)
	}
}

// An update keeps the empty status the stored object has.
func TestAppsUpdateKeepsEmptyStatus(t *testing.T) {
	h := Deployments().Hooks
	old := decodeYAML(t, deployment)
	h.(registry.CreatePreparer).PrepareForCreate(old)
	obj := decodeYAML(t, deployment)
	obj["status"] = old["status"] // the handler carries status over
	h.(registry.UpdatePreparer).PrepareForUpdate(obj, old)
	if st, ok := obj["status"].(map[string]any); !ok || len(st) != 0 {
		t.Errorf("status = %#v, want {}", obj["status"])
	}
}

// A DaemonSet's template generation, which apps/v1 carries in an
// annotation: 1 on create, kept on an update, one more when the pod
// template changes; a client's own value is not taken.
func TestDaemonSetTemplateGeneration(t *testing.T) {
	def := DaemonSets()
	h := def.Hooks.(daemonSetHooks)
	const ds = `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: a, annotations: {%s}},
  spec: {selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: %s}]}}}}`
	gen := func(obj map[string]any) any {
		return obj["metadata"].(map[string]any)["annotations"].(map[string]any)[templateGeneration]
	}
	old := decodeYAML(t, fmt.Sprintf(ds, "", "nginx"))
	h.PrepareForCreate(old)
	if g := gen(old); g != "1" {
		t.Fatalf("created at template generation %v, want 1", g)
	}
	for _, tc := range []struct {
		name, annotations, image string
		want                     string
	}{
		{"unchanged", "", "nginx", "1"},
		{"a client's value", templateGeneration + `: "5"`, "nginx", "1"},
		{"a new image", "", "nginx:2", "2"},
	} {
		obj := decodeYAML(t, fmt.Sprintf(ds, tc.annotations, tc.image))
		h.PrepareForUpdate(obj, old)
		if g := gen(obj); g != tc.want {
			t.Errorf("%s: template generation %v, want %s", tc.name, g, tc.want)
		}
	}
}
