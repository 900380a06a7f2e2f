package handler_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const gadgetCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"gadgets.lists.example.com"},
 "spec":{"group":"lists.example.com","scope":"Namespaced",
  "names":{"plural":"gadgets","singular":"gadget","kind":"Gadget"},
  "versions":[
   {"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"x":{"type":"string"}}}}}}},
   {"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"x":{"type":"string"}}}}}}}]}}`

// A list of objects stored at two versions answers each in the version
// asked for, whether it is cached in that version or rewritten (None
// conversion), in every form a list takes: the objects in the first
// places of the list are as cached, the next ones not.
func TestListMixedStoredVersions(t *testing.T) {
	e := newEnv(t)
	const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.lists.example.com"
	if r := e.do(req{method: "POST", path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body: gadgetCRD}); r.code != 201 {
		t.Fatalf("creating the CRD: %d %s", r.code, r.body)
	}
	create := func(version, name string) {
		t.Helper()
		body := `{"apiVersion":"lists.example.com/` + version + `","kind":"Gadget","metadata":{"name":"` + name + `"},"spec":{"x":"` + name + `"}}`
		for i := 0; ; i++ {
			r := e.do(req{method: "POST", path: "/apis/lists.example.com/" + version + "/namespaces/default/gadgets", body: body})
			if r.code == 201 {
				return
			}
			if r.code != 404 || i == 300 {
				t.Fatalf("creating %s: %d %s", name, r.code, r.body)
			}
			sleep() // the CRD is served once the registry has seen it
		}
	}
	create("v1", "c")
	create("v1", "d")
	// Stored at v2 from now on; the change is served once discovery
	// gives the resource another storage version hash.
	hash := func() string {
		var l struct {
			Resources []struct{ Name, StorageVersionHash string }
		}
		r := e.do(req{method: "GET", path: "/apis/lists.example.com/v2"})
		if err := json.Unmarshal(r.body, &l); err != nil {
			t.Fatalf("discovery: %v: %s", err, r.body)
		}
		for _, res := range l.Resources {
			if res.Name == "gadgets" {
				return res.StorageVersionHash
			}
		}
		return ""
	}
	before := hash()
	patch := `[{"op":"replace","path":"/spec/versions/0/storage","value":false},{"op":"replace","path":"/spec/versions/1/storage","value":true}]`
	if r := e.do(jsonPatch(crdPath, patch)); r.code != 200 {
		t.Fatalf("moving storage to v2: %d %s", r.code, r.body)
	}
	for i := 0; hash() == before; i++ {
		if i == 300 {
			t.Fatal("the storage version hash did not change")
		}
		sleep()
	}
	create("v2", "a")
	create("v2", "b")
	create("v2", "e")

	names := []string{"a", "b", "c", "d", "e"}
	for _, version := range []string{"v1", "v2"} {
		path := "/apis/lists.example.com/" + version + "/namespaces/default/gadgets"
		r := e.do(req{method: "GET", path: path})
		var list struct {
			Items []struct {
				APIVersion string
				Metadata   struct{ Name string }
				Spec       struct{ X string }
			}
		}
		if r.code != http.StatusOK || json.Unmarshal(r.body, &list) != nil {
			t.Fatalf("list at %s: %d %s", version, r.code, r.body)
		}
		var got []string
		for _, it := range list.Items {
			if it.APIVersion != "lists.example.com/"+version || it.Spec.X != it.Metadata.Name {
				t.Errorf("list at %s: item %+v", version, it)
			}
			got = append(got, it.Metadata.Name)
		}
		if strings.Join(got, ",") != strings.Join(names, ",") {
			t.Errorf("list at %s: %v, want %v", version, got, names)
		}

		tbl := e.table(t, path+"?includeObject=Object")
		got = got[:0]
		for _, row := range tbl.Rows {
			got = append(got, row.Cells[0].(string))
			if want := `"apiVersion":"lists.example.com/` + version + `"`; !strings.Contains(string(row.Object.Raw), want) {
				t.Errorf("Table at %s: row object %s, want %s", version, row.Object.Raw, want)
			}
		}
		if strings.Join(got, ",") != strings.Join(names, ",") {
			t.Errorf("Table at %s: rows %v, want %v", version, got, names)
		}

		r = e.do(req{method: "GET", path: path, accept: "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"})
		var metas struct {
			Items []struct{ Metadata struct{ Name string } }
		}
		if r.code != http.StatusOK || json.Unmarshal(r.body, &metas) != nil {
			t.Fatalf("metadata list at %s: %d %s", version, r.code, r.body)
		}
		got = got[:0]
		for _, it := range metas.Items {
			got = append(got, it.Metadata.Name)
		}
		if strings.Join(got, ",") != strings.Join(names, ",") {
			t.Errorf("metadata list at %s: %v, want %v", version, got, names)
		}
	}

	// A delete collection answers with the objects as deleted, which are
	// no cache items, as a Table if asked.
	r := e.do(req{method: "DELETE", path: "/apis/lists.example.com/v1/namespaces/default/gadgets", accept: tableAccept + ";includeObject=Metadata"})
	var tbl metav1.Table
	if r.code != http.StatusOK || json.Unmarshal(r.body, &tbl) != nil {
		t.Fatalf("delete collection as a Table: %d %s", r.code, r.body)
	}
	var got []string
	for _, row := range tbl.Rows {
		var pm metav1.PartialObjectMetadata
		if err := json.Unmarshal(row.Object.Raw, &pm); err != nil || pm.Name != row.Cells[0] {
			t.Errorf("delete collection as a Table: row %v with object %s", row.Cells, row.Object.Raw)
		}
		got = append(got, pm.Name)
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("delete collection as a Table: rows %v, want %v", got, names)
	}
}
