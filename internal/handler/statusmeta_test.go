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
