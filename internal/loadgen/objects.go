package loadgen

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Labels and annotations the load generator puts on what it creates.
const (
	// LabelRun marks every object of one run, so lists and watches of a
	// cluster-scoped resource see only that run's objects.
	LabelRun = "bench.crdserver.io/run"
	// annotationSeq carries the index of the update that wrote the object,
	// which the watch workload matches to the update's start time.
	annotationSeq = "bench.crdserver.io/seq"
	// annotationPadding fills an object up to the requested size.
	annotationPadding = "bench.crdserver.io/padding"
)

// Resources the load generator knows how to build objects for.
const (
	ResourceNamespaces = "namespaces"
	ResourceWidgets    = "widgets"
	// ResourceCELWidgets is the Widget CRD under another name with four
	// x-kubernetes-validations rules added, to measure what rules cost.
	ResourceCELWidgets = "celwidgets"
)

var (
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	widgetsGVR    = schema.GroupVersionResource{Group: "bench.crdserver.io", Version: "v1", Resource: "widgets"}
	celWidgetsGVR = schema.GroupVersionResource{Group: "bench.crdserver.io", Version: "v1", Resource: "celwidgets"}
	crdsGVR       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

//go:embed widgets-crd.yaml
var widgetsCRDYAML []byte

// WidgetsCRD returns the CustomResourceDefinition of the Widget resource, as
// YAML.
func WidgetsCRD() []byte { return widgetsCRDYAML }

// celRules are the rules the celwidgets variant adds, by the path of the
// schema node they sit on: a comparison of two fields, a list macro over
// a list-map, a transition rule, and a bound on a nested field. Every
// object the load generator writes passes them.
var celRules = []struct {
	path []string
	rule map[string]any
}{
	{[]string{"spec"}, map[string]any{"rule": "self.replicas <= 1000 || self.size == 'large'", "message": "at most 1000 replicas unless large"}},
	{[]string{"spec", "properties", "endpoints"}, map[string]any{"rule": "self.all(e, e.url.startsWith('https://') || e.protocol == 'TCP')", "message": "plain HTTP endpoints must use TCP"}},
	{[]string{"spec", "properties", "owner"}, map[string]any{"rule": "self == oldSelf", "message": "owner is immutable"}},
	{[]string{"spec", "properties", "config"}, map[string]any{"rule": "!has(self.retries) || self.retries <= 10", "message": "at most 10 retries"}},
}

// WidgetsCRDFor returns the CRD of resource (widgets or celwidgets) as an
// object to create.
func WidgetsCRDFor(resource string) (*unstructured.Unstructured, error) {
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(widgetsCRDYAML, &crd.Object); err != nil {
		return nil, fmt.Errorf("decoding embedded CRD: %w", err)
	}
	if resource != ResourceCELWidgets {
		return crd, nil
	}
	crd.SetName(celWidgetsGVR.GroupResource().String())
	names := map[string]any{"plural": "celwidgets", "singular": "celwidget", "kind": celWidgetKind, "listKind": celWidgetKind + "List", "shortNames": []any{"cwg"}}
	if err := unstructured.SetNestedMap(crd.Object, names, "spec", "names"); err != nil {
		return nil, err
	}
	// Walk the decoded maps in place (the Nested* helpers return copies).
	v := crd.Object["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)
	props := v["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)
	for _, r := range celRules {
		node := props
		for _, p := range r.path {
			node = node[p].(map[string]any)
		}
		rules, _ := node["x-kubernetes-validations"].([]any)
		node["x-kubernetes-validations"] = append(rules, r.rule)
	}
	// Bounded URLs keep the endpoints rule's estimated cost in budget, as
	// a real CRD author would be told to do.
	url := props["spec"].(map[string]any)["properties"].(map[string]any)["endpoints"].(map[string]any)["items"].(map[string]any)["properties"].(map[string]any)["url"].(map[string]any)
	url["maxLength"] = int64(2048)
	return crd, nil
}

const celWidgetKind = "CELWidget"

// newNamespace returns a namespace carrying labels and annotations of the
// kind real clusters have; padTo brings it to size.
func newNamespace(name, runID string, i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata": map[string]any{
			"name": name,
			"labels": map[string]any{
				LabelRun:                     runID,
				"app.kubernetes.io/name":     "bench",
				"app.kubernetes.io/instance": name,
				"app.kubernetes.io/part-of":  "crdserver-bench",
				"team":                       "team-" + strconv.Itoa(i%7),
				"environment":                []string{"dev", "staging", "prod"}[i%3],
			},
			"annotations": map[string]any{
				"description": "namespace " + strconv.Itoa(i) + " created by crdserver bench",
				annotationSeq: "0",
			},
		},
	}}
}

// newWidget returns a Widget that sets every field of the schema with valid
// values; padTo brings it to size.
func newWidget(name, namespace, runID string, i int) *unstructured.Unstructured {
	endpoints := make([]any, 0, 3)
	for j, proto := range []string{"TCP", "UDP", "TCP"} {
		endpoints = append(endpoints, map[string]any{
			"name":     "ep-" + strconv.Itoa(j),
			"url":      fmt.Sprintf("https://ep-%d.%s.example.com/api", j, name),
			"port":     int64(8080 + j),
			"protocol": proto,
		})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.crdserver.io/v1",
		"kind":       "Widget",
		"metadata": map[string]any{
			"name":      name,
			"namespace": namespace,
			"labels": map[string]any{
				LabelRun:                     runID,
				"app.kubernetes.io/name":     "widget",
				"app.kubernetes.io/instance": name,
				"tier":                       []string{"frontend", "backend", "data"}[i%3],
			},
			"annotations": map[string]any{
				annotationSeq: "0",
			},
		},
		"spec": map[string]any{
			"displayName": "Widget number " + strconv.Itoa(i),
			"size":        []string{"small", "medium", "large"}[i%3],
			"replicas":    int64(i % 100),
			"paused":      i%10 == 0,
			"owner":       "team-" + strconv.Itoa(i%7),
			"image":       "registry.example.com/widgets/widget:v1." + strconv.Itoa(i%20),
			"port":        "http",
			"priority":    int64(i%201 - 100),
			"weight":      float64(i%1000) / 10,
			"schedule":    "*/5 * * * *",
			"tags":        []any{"bench", "widget", "tag-" + strconv.Itoa(i%13)},
			"selector": map[string]any{
				"app":  "widget",
				"name": name,
			},
			"resources": map[string]any{
				"limits":   map[string]any{"cpu": "500m", "memory": "256Mi"},
				"requests": map[string]any{"cpu": int64(1), "memory": "128Mi"},
			},
			"endpoints": endpoints,
			"config": map[string]any{
				"retries": int64(5),
				"timeout": "45s",
				"backoff": map[string]any{"initial": "100ms", "max": "10s", "multiplier": 1.5},
			},
			"template": map[string]any{
				"metadata": map[string]any{
					"labels":      map[string]any{"app": "widget", "widget": name},
					"annotations": map[string]any{"bench.crdserver.io/generated": "true"},
				},
				"notes": "Generated by crdserver bench for load testing; safe to delete.",
			},
		},
	}}
}

// padTo grows obj's JSON encoding to exactly size bytes with a padding
// annotation. An object already at least that large is left without one.
func padTo(obj *unstructured.Unstructured, size int) error {
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[annotationPadding] = ""
	obj.SetAnnotations(annotations)
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return fmt.Errorf("encoding object: %w", err)
	}
	if missing := size - len(data); missing > 0 {
		// 'x' needs no JSON escaping, so each adds exactly one byte.
		annotations[annotationPadding] = strings.Repeat("x", missing)
	} else {
		delete(annotations, annotationPadding)
	}
	obj.SetAnnotations(annotations)
	return nil
}
