package handler_test

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestCRDNameChecked: a new CRD's name is checked to be <plural>.<group>
// with the rest of its metadata, as upstream checks it: right after the
// name's own rule, before the labels.
func TestCRDNameChecked(t *testing.T) {
	e := newEnv(t)
	r := e.do(req{method: "POST", path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
		body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		 "metadata":{"name":"Wrong.name.example.com","labels":{"bad key!":"x"}},
		 "spec":{"group":"name.example.com","scope":"Namespaced","names":{"plural":"rights","kind":"Right"},
		  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`})
	var status struct {
		Details struct {
			Causes []struct{ Field, Message string }
		}
	}
	if err := json.Unmarshal([]byte(r.body), &status); err != nil || r.code != 422 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	var got []string
	for _, c := range status.Details.Causes {
		got = append(got, c.Field)
	}
	if want := []string{"metadata.name", "metadata.name", "metadata.labels"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("causes at %q, want %q\n%s", got, want, r.body)
	}
}
