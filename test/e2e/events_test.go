package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestEventsBothAPIs: core/v1 and events.k8s.io/v1 events are one
// storage seen through two APIs, as upstream serves them. What one
// writes the other reads and watches, kubectl shows both, field
// selectors use each API's names, and events.k8s.io/v1 writes get
// upstream's strict validation.
func TestEventsBothAPIs(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	const ns = "ev"
	kubectl(t, srv, "create", "namespace", ns)
	ctx := testContext(t, 120*time.Second)
	core := srv.Client.CoreV1().Events(ns)
	v1 := srv.Client.EventsV1().Events(ns)

	// Watches through each API, from now, before anything is written.
	list, err := core.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	coreWatch, err := core.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer coreWatch.Stop()
	v1Watch, err := v1.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer v1Watch.Stop()

	now := metav1.Now()
	_, err = core.Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "old-style"},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "web", APIVersion: "v1"},
		Reason:         "Tested", Message: "written as core/v1", Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "e2e", Host: "here"},
		FirstTimestamp: now, LastTimestamp: now, Count: 2,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v1.Create(ctx, &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "new-style"},
		EventTime:           metav1.NowMicro(),
		ReportingController: "example.com/e2e", ReportingInstance: "e2e-1",
		Action: "Check", Reason: "Checked", Note: "written as events.k8s.io/v1", Type: corev1.EventTypeWarning,
		Regarding: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "db", APIVersion: "v1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("read through the other API", func(t *testing.T) {
		e, err := v1.Get(ctx, "old-style", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if e.Regarding.Name != "web" || e.Note != "written as core/v1" || e.DeprecatedCount != 2 ||
			e.DeprecatedSource.Component != "e2e" || e.DeprecatedFirstTimestamp.IsZero() || e.APIVersion != "" && e.APIVersion != "events.k8s.io/v1" {
			t.Errorf("core event through events.k8s.io/v1: %+v", e)
		}
		c, err := core.Get(ctx, "new-style", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c.InvolvedObject.Name != "db" || c.Message != "written as events.k8s.io/v1" || c.ReportingController != "example.com/e2e" ||
			c.Action != "Check" || c.EventTime.IsZero() {
			t.Errorf("events.k8s.io event through core/v1: %+v", c)
		}
		l, err := v1.List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) != 2 {
			t.Fatalf("events.k8s.io list: %v %v", l, err)
		}
		// One object, one resourceVersion, whichever API answers.
		if e.ResourceVersion == "" || l.Items[1].Name != "old-style" || l.Items[1].ResourceVersion != e.ResourceVersion {
			t.Errorf("resourceVersions differ: %s vs %s", l.Items[1].ResourceVersion, e.ResourceVersion)
		}
	})

	t.Run("watch through either API sees both writes", func(t *testing.T) {
		for _, w := range []struct {
			name string
			w    watch.Interface
		}{{"core/v1", coreWatch}, {"events.k8s.io/v1", v1Watch}} {
			seen := map[string]bool{}
			for len(seen) < 2 {
				select {
				case ev := <-w.w.ResultChan():
					if ev.Type != watch.Added {
						t.Fatalf("%s watch: %s %v", w.name, ev.Type, ev.Object)
					}
					switch o := ev.Object.(type) {
					case *corev1.Event:
						seen[o.Name] = w.name == "core/v1" && o.InvolvedObject.Name != ""
					case *eventsv1.Event:
						seen[o.Name] = w.name == "events.k8s.io/v1" && o.Regarding.Name != ""
					}
				case <-ctx.Done():
					t.Fatalf("%s watch saw %v", w.name, seen)
				}
			}
			if !seen["old-style"] || !seen["new-style"] {
				t.Errorf("%s watch: %v", w.name, seen)
			}
		}
	})

	t.Run("field selectors", func(t *testing.T) {
		l, err := v1.List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=db"})
		if err != nil || len(l.Items) != 1 || l.Items[0].Name != "new-style" {
			t.Errorf("regarding.name=db: %v %v", l, err)
		}
		l, err = v1.List(ctx, metav1.ListOptions{FieldSelector: "reportingController=example.com/e2e,type=Warning"})
		if err != nil || len(l.Items) != 1 {
			t.Errorf("reportingController: %v %v", l, err)
		}
		_, err = v1.List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=db"})
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "field label not supported: involvedObject.name") {
			t.Errorf("involvedObject.name on events.k8s.io: %v", err)
		}
		cl, err := core.List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=db,reportingComponent=example.com/e2e"})
		if err != nil || len(cl.Items) != 1 {
			t.Errorf("core involvedObject.name=db: %v %v", cl, err)
		}
	})

	t.Run("kubectl", func(t *testing.T) {
		for _, args := range [][]string{
			{"get", "events", "-n", ns},
			{"get", "events.events.k8s.io", "-n", ns},
			{"events", "-n", ns},
		} {
			out := kubectl(t, srv, args...)
			if !strings.Contains(out, "written as core/v1") || !strings.Contains(out, "written as events.k8s.io/v1") ||
				!strings.Contains(out, "configmap/db") && !strings.Contains(out, "ConfigMap/db") {
				t.Errorf("kubectl %s:\n%s", strings.Join(args, " "), out)
			}
		}
		out := kubectl(t, srv, "get", "events.v1.events.k8s.io", "-n", ns, "--field-selector", "regarding.name=web", "-o", "name")
		if strings.TrimSpace(out) != "event.events.k8s.io/old-style" {
			t.Errorf("kubectl get events.v1.events.k8s.io --field-selector regarding.name=web:\n%s", out)
		}
		out = kubectl(t, srv, "api-resources", "--no-headers")
		var rows []string
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == "events" {
				rows = append(rows, strings.Join(f, " "))
			}
		}
		if strings.Join(rows, "\n") != "events ev v1 true Event\nevents ev events.k8s.io/v1 true Event" {
			t.Errorf("kubectl api-resources, events rows:\n%s", strings.Join(rows, "\n"))
		}
	})

	t.Run("strict validation through events.k8s.io", func(t *testing.T) {
		_, err := v1.Create(ctx, &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: "incomplete"},
			Regarding:  corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "db"},
			Type:       corev1.EventTypeNormal, DeprecatedCount: 1,
		}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "eventTime: Required value") ||
			!strings.Contains(err.Error(), "count: Invalid value: \"\": needs to be unset") {
			t.Errorf("incomplete events.k8s.io event: %v", err)
		}
		// The same event is an acceptable old-style core event.
		_, err = core.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "incomplete"},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "db"},
			Type:           corev1.EventTypeNormal, Count: 1,
		}, metav1.CreateOptions{})
		if err != nil {
			t.Errorf("old-style core event: %v", err)
		}
		// Updates through events.k8s.io may not change what happened.
		e, err := v1.Get(ctx, "new-style", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e.Note = "rewritten"
		if _, err := v1.Update(ctx, e, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "message: Invalid value: \"rewritten\": field is immutable") {
			t.Errorf("changing the note: %v", err)
		}
		e.Note = "written as events.k8s.io/v1"
		e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NowMicro()}
		if _, err := v1.Update(ctx, e, metav1.UpdateOptions{}); err != nil {
			t.Errorf("adding a series: %v", err)
		}
	})

	t.Run("managed fields of both APIs", func(t *testing.T) {
		// A write through one API keeps the entries recorded through the
		// other.
		kubectl(t, srv, "label", "-n", ns, "events.v1.events.k8s.io", "old-style", "seen=yes")
		kubectl(t, srv, "label", "-n", ns, "events.v1.", "new-style", "seen=yes")
		for _, name := range []string{"old-style", "new-style"} {
			e, err := core.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			versions := map[string]bool{}
			for _, f := range e.ManagedFields {
				versions[f.APIVersion] = true
			}
			if !versions["v1"] || !versions["events.k8s.io/v1"] {
				t.Errorf("%s: managedFields %+v, want entries of both APIs", name, e.ManagedFields)
			}
		}
	})

	t.Run("deleted through the other API", func(t *testing.T) {
		if err := v1.Delete(ctx, "old-style", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := core.Get(ctx, "old-style", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("core get after events.k8s.io delete: %v", err)
		}
	})

	t.Run("storage migration", func(t *testing.T) {
		// Migrating events.k8s.io events rewrites the core events they
		// are stored as, still in the core form.
		out, err := exec.CommandContext(ctx, binary, "migrate", "--kubeconfig", srv.Kubeconfig, "--poll", "10ms", "events.events.k8s.io").CombinedOutput()
		if err != nil {
			t.Fatalf("crdserver migrate events.events.k8s.io: %v\n%s", err, out)
		}
		e, err := core.Get(ctx, "new-style", metav1.GetOptions{})
		if err != nil || e.InvolvedObject.Name != "db" || e.Message != "written as events.k8s.io/v1" {
			t.Errorf("core event after the migration: %+v %v", e, err)
		}
	})

	t.Run("namespace deletion", func(t *testing.T) {
		// The namespace controller deletes the events through the core
		// resource only, and the namespace goes.
		kubectl(t, srv, "delete", "namespace", ns, "--timeout=60s")
		if l, err := v1.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
			t.Errorf("events left in the deleted namespace: %v %v", l, err)
		}
	})
}

// TestEventTTL: events expire --event-ttl after their last write,
// whichever API wrote them, and watchers see them go.
func TestEventTTL(t *testing.T) {
	t.Parallel()
	const ttl = 3 * time.Second
	srv := startServerArgs(t, t.TempDir(), "--event-ttl", ttl.String())
	ctx := testContext(t, 90*time.Second)
	core := srv.Client.CoreV1().Events("default")
	v1 := srv.Client.EventsV1().Events("default")
	cms := srv.Client.CoreV1().ConfigMaps("default")

	w, err := v1.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	start := time.Now()
	if _, err := core.Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "short"},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "x"},
		Reason:         "Tested",
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := v1.Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "short-v1"}, EventTime: metav1.NowMicro(),
		ReportingController: "example.com/e2e", ReportingInstance: "e2e-1", Action: "Check", Reason: "Checked",
		Type: corev1.EventTypeNormal, Regarding: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "x"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Other resources keep their objects.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := map[string]time.Duration{}
	for len(deleted) < 2 {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Deleted {
				deleted[ev.Object.(*eventsv1.Event).Name] = time.Since(start)
			}
		case <-ctx.Done():
			t.Fatalf("events deleted so far: %v", deleted)
		}
	}
	for name, after := range deleted {
		if after < ttl-time.Second/2 { // etcd counts from its own clock
			t.Errorf("%s deleted after %v, before the TTL of %v", name, after, ttl)
		}
	}
	if l, err := core.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("events left: %v %v", l, err)
	}
	if _, err := cms.Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("a ConfigMap after the event TTL: %v", err)
	}
}
