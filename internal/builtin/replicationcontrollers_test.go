package builtin

import (
	"reflect"
	"testing"

	"github.com/crdserver/crdserver/internal/registry"
)

const replicationController = `
apiVersion: v1
kind: ReplicationController
metadata: {name: web, namespace: default}
spec:
  template:
    metadata: {labels: {app: web, tier: front}}
    spec: {containers: [{name: nginx, image: "nginx:1.27"}]}
status: {replicas: 4}
`

func TestReplicationControllerDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      map[string]any
	}{
		{line(), replicationController, map[string]any{
			"spec.replicas":                                   int64(1),
			"spec.selector":                                   map[string]any{"app": "web", "tier": "front"},
			"metadata.labels":                                 map[string]any{"app": "web", "tier": "front"},
			"spec.template.spec.restartPolicy":                "Always",
			"spec.template.spec.dnsPolicy":                    "ClusterFirst",
			"spec.template.spec.containers.0.imagePullPolicy": "IfNotPresent",
			"status": map[string]any{"replicas": int64(0)},
		}},
		// The object's labels and the selector, when given, are kept.
		{line(), `
apiVersion: v1
kind: ReplicationController
metadata: {name: web, namespace: default, labels: {team: a}}
spec:
  replicas: 0
  selector: {app: web}
  template:
    metadata: {labels: {app: web, tier: front}}
    spec: {containers: [{name: nginx, image: nginx}]}
`, map[string]any{
			"spec.replicas":   int64(0),
			"spec.selector":   map[string]any{"app": "web"},
			"metadata.labels": map[string]any{"team": "a"},
		}},
		// Without a template there is nothing to default them from.
		{line(), "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: web, namespace: default}\nspec: {}\n", map[string]any{
			"spec.replicas":   int64(1),
			"spec.selector":   nil,
			"metadata.labels": nil,
			"spec.template":   nil,
		}},
	} {
		obj := decodeYAML(t, tc.doc)
		ReplicationControllers().Hooks.(registry.CreatePreparer).PrepareForCreate(obj)
		for path, want := range tc.want {
			if got := lookup(obj, path); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s = %#v, want %#v", tc.name, path, got, want)
			}
		}
	}
}

func TestReplicationControllerValidation(t *testing.T) {
	const tmpl = `template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}}`
	for _, tc := range []struct {
		name, spec string
		want       string // "" = valid
	}{
		{line(), `{` + tmpl + `}`, ""},
		{line(), `{selector: {app: a}, replicas: 0, ` + tmpl + `}`, ""},
		{line(), `{template: {spec: {containers: [{name: c, image: i}]}}}`, "spec.selector: Required value"},
		{line(), `{selector: {app: b}, ` + tmpl + `}`, "spec.template.metadata.labels: Invalid value: {\"app\":\"a\"}: `selector` does not match template `labels`"},
		{line(), `{replicas: -1, ` + tmpl + `}`, "spec.replicas: Invalid value: -1: must be greater than or equal to 0"},
		{line(), `{minReadySeconds: -1, ` + tmpl + `}`, "spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0"},
		{line(), `{selector: {app: a}}`, "spec.template: Required value"},
		{line(), `{template: {metadata: {labels: {app: a}}, spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}}`, `spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`},
		{line(), `{template: {metadata: {labels: {app: a}}, spec: {activeDeadlineSeconds: 3, containers: [{name: c, image: i}]}}}`, "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController is not Supported"},
		{line(), `{template: {metadata: {labels: {app: a}}, spec: {containers: []}}}`, "spec.template.spec.containers: Required value"},
		{line(), `{template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c}]}}}`, "spec.template.spec.containers[0].image: Required value"},
	} {
		obj := decodeYAML(t, "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: w, namespace: default}\nspec: "+tc.spec)
		hooks := ReplicationControllers().Hooks
		hooks.(registry.CreatePreparer).PrepareForCreate(obj)
		checkErrors(t, tc.name, hooks.(registry.Validator).Validate(obj).ToAggregate(), tc.want)
	}
}

// Unlike a ReplicaSet's, a ReplicationController's selector may change.
func TestReplicationControllerSelectorMutable(t *testing.T) {
	h := ReplicationControllers().Hooks
	old := decodeYAML(t, replicationController)
	h.(registry.CreatePreparer).PrepareForCreate(old)
	obj := decodeYAML(t, replicationController)
	obj["spec"].(map[string]any)["selector"] = map[string]any{"app": "web"}
	h.(registry.UpdatePreparer).PrepareForUpdate(obj, old)
	if errs := h.(registry.Validator).ValidateUpdate(obj, old); len(errs) != 0 {
		t.Errorf("ValidateUpdate = %v, want none", errs)
	}
}

func TestReplicationControllerStatusValidation(t *testing.T) {
	for _, tc := range []struct {
		name, status, want string
	}{
		{line(), `{replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 2, availableReplicas: 1}`, ""},
		{line(), `{replicas: -1}`, "status.replicas: Invalid value: -1: must be greater than or equal to 0"},
		{line(), `{replicas: 1, fullyLabeledReplicas: 2}`, "status.fullyLabeledReplicas: Invalid value: 2: cannot be greater than status.replicas"},
		{line(), `{replicas: 3, readyReplicas: 1, availableReplicas: 2}`, "status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas"},
		{line(), `{observedGeneration: -1}`, "status.observedGeneration: Invalid value: -1: must be greater than or equal to 0"},
	} {
		obj := decodeYAML(t, replicationController)
		obj["status"] = decodeYAML(t, tc.status)
		got := ReplicationControllers().Hooks.(registry.StatusValidator).ValidateStatusUpdate(obj, obj).ToAggregate()
		checkErrors(t, tc.name, got, tc.want)
	}
}

func TestReplicationControllerTable(t *testing.T) {
	obj := decodeYAML(t, replicationController)
	h := ReplicationControllers().Hooks
	h.(registry.CreatePreparer).PrepareForCreate(obj)
	obj["status"] = map[string]any{"replicas": int64(2), "readyReplicas": int64(1)}
	tp := h.(registry.TablePrinter)
	var names []string
	for _, c := range tp.TableColumns() {
		names = append(names, c.Name)
	}
	if want := []string{"Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns %v, want %v", names, want)
	}
	row := tp.TableRow(obj)
	want := []any{"web", int64(1), int64(2), int64(1), row[4], "nginx", "nginx:1.27", "app=web,tier=front"}
	if !reflect.DeepEqual(row, want) {
		t.Errorf("row %#v, want %#v", row, want)
	}
}
