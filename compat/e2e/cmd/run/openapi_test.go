package main

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestLeftOut(t *testing.T) {
	for _, c := range []struct {
		server, path string
		want         bool
	}{
		{"kube-apiserver", "/api/v1/namespaces/{namespace}/configmaps/{name}", false},
		{"kube-apiserver", "/api/v1/namespaces/{name}/finalize", false},
		{"kube-apiserver", "/api/v1/namespaces/{namespace}/pods/{name}/log", true},
		{"kube-apiserver", "/api/v1/componentstatuses", false},
		{"kube-apiserver", "/api/v1/nodes", false},
		// Served: its paths refer to no model, as nodes/proxy's.
		{"kube-apiserver", "/api/v1/namespaces/{namespace}/services/{name}/proxy/{path}", false},
		{"kube-apiserver", "/api/v1/namespaces/{namespace}/pods/{name}/proxy/{path}", true},
		{"kube-apiserver", "/api/v1/namespaces/{namespace}/services/{name}/status", false},
		{"kube-apiserver", "/apis/apps/v1/namespaces/{namespace}/controllerrevisions", false},
		{"kube-apiserver", "/apis/certificates.k8s.io/v1/clustertrustbundles", false},
		{"kube-apiserver", "/apis/apps/v1/deployments", false},
		{"kube-apiserver", "/apis/apps/v1/watch/deployments", true},
		{"kube-apiserver", "/apis/apps/v1/", true},
		{"kube-apiserver", "/apis/apps/", true},
		{"kube-apiserver", "/version/", true},
		{"kube-apiserver", "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", false},
		{"crdserver", "/apis/apiextensions.k8s.io/v1beta1/customresourcedefinitions", true},
		{"crdserver", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", false},
	} {
		if got := leftOut(c.server, c.path); got != c.want {
			t.Errorf("leftOut(%s, %s) = %v, want %v", c.server, c.path, got, c.want)
		}
	}
}

// A model only left-out paths refer to goes, through shared parameters
// too; one a kept path refers to stays, and so does one no path refers to.
func TestComparableOpenAPI(t *testing.T) {
	// A resource not served, whatever crdserver comes to serve.
	defer func(old map[string][]string) { unservedResources = old }(unservedResources)
	unservedResources = map[string][]string{"v1": {"componentstatuses"}}
	const doc = `{
	  "paths": {
	    "/api/v1/namespaces/{namespace}/configmaps/{name}": {"delete": {"parameters": [{"$ref": "#/parameters/body"}]}, "get": {"responses": {"200": {"schema": {"$ref": "#/definitions/ConfigMap"}}}}},
	    "/api/v1/componentstatuses/{name}": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/ComponentStatus"}}}}, "delete": {"parameters": [{"$ref": "#/parameters/body"}]}},
	    "/api/v1/watch/configmaps": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/WatchEvent"}}}}}
	  },
	  "parameters": {"body": {"in": "body", "schema": {"$ref": "#/definitions/DeleteOptions"}}},
	  "definitions": {
	    "ConfigMap": {"properties": {"metadata": {"$ref": "#/definitions/ObjectMeta"}}},
	    "ComponentStatus": {"properties": {"metadata": {"$ref": "#/definitions/ObjectMeta"}, "conditions": {"$ref": "#/definitions/ComponentCondition"}}},
	    "ComponentCondition": {"properties": {"next": {"$ref": "#/definitions/ComponentCondition"}}},
	    "ObjectMeta": {},
	    "DeleteOptions": {},
	    "WatchEvent": {},
	    "Orphan": {}
	  }
	}`
	var d any
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatal(err)
	}
	models := comparableOpenAPI("kube-apiserver", d).(map[string]any)
	var got []string
	for name := range models {
		got = append(got, name)
	}
	slices.Sort(got)
	if want := []string{"ConfigMap", "DeleteOptions", "ObjectMeta", "Orphan"}; !reflect.DeepEqual(got, want) {
		t.Errorf("models %q, want %q", got, want)
	}
}

func TestModelsDiff(t *testing.T) {
	got := modelsDiff(`object {"A":{"type":"object"},"B":{"description":"x","type":"string"}}`,
		`object {"B":{"description":"y","type":"string","enum":["a"]},"C":{}}`)
	for _, want := range []string{"  A: crdserver's alone", "  C: kube-apiserver's alone", "  B/description:", `kube-apiserver: ["a"]`} {
		if !strings.Contains(got, want) {
			t.Errorf("modelsDiff lacks %q:\n%s", want, got)
		}
	}
}

// The paths both servers describe otherwise are left out of both.
func TestLeftOutUnlisted(t *testing.T) {
	for _, c := range []struct {
		server, path string
		want         bool
	}{
		{"kube-apiserver", "/api/v1/namespaces/{namespace}/pods/{name}/binding", true},
		{"crdserver", "/api/v1/namespaces/{namespace}/pods/{name}/binding", true},
		{"crdserver", "/api/v1/namespaces/{namespace}/bindings", true},
		{"crdserver", "/api/v1/namespaces/{namespace}/pods/{name}/status", false},
		{"crdserver", "/api/v1/namespaces/{namespace}/pods/{name}", false},
	} {
		if got := leftOut(c.server, c.path); got != c.want {
			t.Errorf("leftOut(%s, %s) = %v, want %v", c.server, c.path, got, c.want)
		}
	}
}
