package handler_test

import (
	"maps"
	"slices"
	"testing"
)

// A status write keeps the metadata the resource's status strategy keeps,
// as upstream's: a CronJob's labels and annotations, a Deployment's
// annotations but not its labels, nothing of a custom resource's. The
// field manager owns what was kept, and nothing that was not.
func TestStatusWriteMetadata(t *testing.T) {
	e := newWidgetEnv(t)
	const (
		cronJobs    = "/apis/batch/v1/namespaces/default/cronjobs"
		deployments = "/apis/apps/v1/namespaces/default/deployments"
	)
	cj := `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"cj"},"spec":{"schedule":"*/1 * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}}}`
	dep := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`
	for _, c := range []struct{ path, body string }{{cronJobs, cj}, {deployments, dep}} {
		if r := e.do(req{method: "POST", path: c.path, body: c.body}); r.code != 201 {
			t.Fatalf("creating in %s: %d %s", c.path, r.code, r.body)
		}
	}
	patch := `{"metadata":{"labels":{"set":"yes"},"annotations":{"set":"yes"}},"status":{}}`
	for _, tc := range []struct {
		path                string
		labels, annotations bool
	}{
		{cronJobs + "/cj", true, true},
		{deployments + "/d", false, true},
		{widgetPath, false, false},
	} {
		r := e.do(req{method: "PATCH", path: tc.path + "/status?fieldManager=statuser", body: patch, contentType: "application/merge-patch+json"})
		if r.code != 200 {
			t.Fatalf("status patch of %s: %d %s", tc.path, r.code, r.body)
		}
		obj := e.do(req{method: "GET", path: tc.path}).obj(t)
		if got := str(obj, "metadata", "labels", "set") == "yes"; got != tc.labels {
			t.Errorf("%s: label kept %v, want %v", tc.path, got, tc.labels)
		}
		if got := str(obj, "metadata", "annotations", "set") == "yes"; got != tc.annotations {
			t.Errorf("%s: annotation kept %v, want %v", tc.path, got, tc.annotations)
		}
		var owned []string
		mfs, _ := obj["metadata"].(map[string]any)["managedFields"].([]any)
		for _, mf := range mfs {
			if m := mf.(map[string]any); m["manager"] == "statuser" {
				fields, _ := m["fieldsV1"].(map[string]any)
				md, _ := fields["f:metadata"].(map[string]any)
				owned = slices.Sorted(maps.Keys(md))
			}
		}
		var want []string
		if tc.annotations {
			want = append(want, "f:annotations")
		}
		if tc.labels {
			want = append(want, "f:labels")
		}
		if !slices.Equal(owned, want) {
			t.Errorf("%s: statuser owns metadata %q, want %q", tc.path, owned, want)
		}
	}
}

// A CRD's managedFields are those kube-apiserver records: its creator
// owns what defaulting added (conversion.strategy, names.listKind) and no
// "." for the structs an empty CRD has already (spec, names), and the
// status the server wrote establishing it is kube-apiserver's, through
// the status subresource.
func TestCRDManagedFieldsAsUpstream(t *testing.T) {
	e := newWidgetEnv(t)
	const path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.patch.example.com"
	var entries map[string]map[string]any
	for i := 0; ; i++ {
		obj := e.do(req{method: "GET", path: path}).obj(t)
		entries = map[string]map[string]any{}
		mfs, _ := obj["metadata"].(map[string]any)["managedFields"].([]any)
		for _, mf := range mfs {
			m := mf.(map[string]any)
			entries[m["manager"].(string)+"/"+str(m, "subresource")] = m
		}
		if _, ok := entries["kube-apiserver/status"]; ok || i == 300 {
			break
		}
		sleep()
	}
	status, ok := entries["kube-apiserver/status"]
	if !ok {
		t.Fatalf("no kube-apiserver status entry in %v", entries)
	}
	st, _ := status["fieldsV1"].(map[string]any)["f:status"].(map[string]any)
	conditions, _ := st["f:conditions"].(map[string]any)
	if str(status, "operation") != "Update" || conditions[`k:{"type":"Established"}`] == nil || st["f:acceptedNames"] == nil {
		t.Errorf("kube-apiserver's status entry %v, want conditions and accepted names", status)
	}
	var creator map[string]any
	for k, m := range entries {
		if k != "kube-apiserver/status" {
			creator = m
		}
	}
	spec, _ := creator["fieldsV1"].(map[string]any)["f:spec"].(map[string]any)
	names, _ := spec["f:names"].(map[string]any)
	conv, _ := spec["f:conversion"].(map[string]any)
	if spec["."] != nil || names["."] != nil || names["f:listKind"] == nil || conv["f:strategy"] == nil {
		t.Errorf("creator's spec fields %v, want no \".\" for spec and names, with names.listKind and conversion.strategy", spec)
	}
}
