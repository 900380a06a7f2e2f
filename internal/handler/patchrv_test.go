package handler_test

import (
	"fmt"
	"testing"
)

// A patch that sets metadata.resourceVersion applies only to that
// revision, as upstream's: controller-runtime's MergeFromWithOptimisticLock
// sends the object's resourceVersion in a merge patch to get a 409 rather
// than overwrite a change it has not seen. Every patch type, for a custom
// resource and a built-in.
func TestPatchWithResourceVersion(t *testing.T) {
	e := newCronTabEnv(t)
	if r := e.do(req{method: "POST", path: "/api/v1/namespaces", body: ns("patched")}); r.code != 201 {
		t.Fatalf("create namespace: %d %s", r.code, r.body)
	}
	cases := []struct {
		name, path, ct string
		body           func(rv string) string
	}{
		{"merge", cronTabs + "/m1", "application/merge-patch+json", func(rv string) string {
			return fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"spec":{"replicas":7}}`, rv)
		}},
		{"json", cronTabs + "/m1", "application/json-patch+json", func(rv string) string {
			return fmt.Sprintf(`[{"op":"replace","path":"/metadata/resourceVersion","value":%q},{"op":"replace","path":"/spec/replicas","value":8}]`, rv)
		}},
		{"apply", cronTabs + "/m1?fieldManager=t&force=true", "application/apply-patch+yaml", func(rv string) string {
			return fmt.Sprintf(`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"m1","resourceVersion":%q},"spec":{"replicas":9}}`, rv)
		}},
		{"merge, built-in", "/api/v1/namespaces/patched", "application/merge-patch+json", func(rv string) string {
			return fmt.Sprintf(`{"metadata":{"resourceVersion":%q,"labels":{"a":"b"}}}`, rv)
		}},
		{"strategic, built-in", "/api/v1/namespaces/patched", "application/strategic-merge-patch+json", func(rv string) string {
			return fmt.Sprintf(`{"metadata":{"resourceVersion":%q,"labels":{"c":"d"}}}`, rv)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := c.path
			if i := len(base) - len("?fieldManager=t&force=true"); i > 0 && base[i:] == "?fieldManager=t&force=true" {
				base = base[:i]
			}
			cur := e.do(req{method: "GET", path: base})
			rv := str(cur.obj(t), "metadata", "resourceVersion")
			stale := e.do(req{method: "PATCH", path: c.path, body: c.body("1"), contentType: c.ct})
			if stale.code != 409 || stale.status(t).Reason != "Conflict" {
				t.Errorf("with a stale resourceVersion: %d %s", stale.code, stale.body)
			}
			if after := e.do(req{method: "GET", path: base}); str(after.obj(t), "metadata", "resourceVersion") != rv {
				t.Errorf("the refused patch changed the object: %s", after.body)
			}
			current := e.do(req{method: "PATCH", path: c.path, body: c.body(rv), contentType: c.ct})
			if current.code != 200 || str(current.obj(t), "metadata", "resourceVersion") == rv {
				t.Errorf("with the current resourceVersion: %d %s", current.code, current.body)
			}
		})
	}
}

// An apply's force reads as upstream's parameter codec reads booleans:
// false when absent, "0" or "false" in any case, true for anything else.
func TestApplyForceParameter(t *testing.T) {
	e := newCronTabEnv(t)
	// m1's spec.replicas belongs to its creator; another manager's apply
	// of a new value conflicts unless forced.
	body := func(n int) string {
		return fmt.Sprintf(`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"m1"},"spec":{"replicas":%d}}`, n)
	}
	for i, c := range []struct {
		force string
		code  int
	}{{"", 409}, {"&force=false", 409}, {"&force=FALSE", 409}, {"&force=0", 409}, {"&force=yes", 200}, {"&force=", 200}, {"&force=true", 200}} {
		// Each forced apply takes replicas over: the next case's manager
		// is another again.
		r := e.do(req{method: "PATCH", path: fmt.Sprintf("%s/m1?fieldManager=m%d%s", cronTabs, i, c.force), body: body(10 + i), contentType: "application/apply-patch+yaml"})
		if r.code != c.code {
			t.Errorf("apply with %q: %d, want %d: %s", c.force, r.code, c.code, r.body)
		}
	}
}
