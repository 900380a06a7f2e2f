package builtin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/registry"
)

func TestHTTPComponent(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			w.Write([]byte("ok"))
		default:
			http.Error(w, "nope", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	for _, tc := range []struct {
		name, url   string
		status      corev1.ConditionStatus
		message     string // a prefix
		messageFull bool
	}{
		{line(), srv.URL + "/healthz", corev1.ConditionTrue, "ok", true},
		{line(), srv.URL + "/broken", corev1.ConditionFalse, "HTTP probe failed with statuscode: 500", true},
		{line(), closedURL + "/healthz", corev1.ConditionFalse, `Get "` + closedURL + `/healthz": dial tcp `, false},
	} {
		status, msg, err := HTTPComponent("c", tc.url).Probe(context.Background())
		if status != tc.status || err != nil || tc.messageFull && msg != tc.message || !strings.HasPrefix(msg, tc.message) {
			t.Errorf("%s: Probe = %s, %q, %v; want %s, %q", tc.name, status, msg, err, tc.status, tc.message)
		}
	}
}

func TestComponentStatuses(t *testing.T) {
	probe := func(status corev1.ConditionStatus, msg string, err error) func(context.Context) (corev1.ConditionStatus, string, error) {
		return func(context.Context) (corev1.ConditionStatus, string, error) { return status, msg, err }
	}
	def := ComponentStatuses([]Component{
		{Name: "etcd-0", Probe: probe(corev1.ConditionTrue, "ok", nil)},
		{Name: "scheduler", Probe: probe(corev1.ConditionFalse, "refused", nil)},
		{Name: "odd", Probe: probe(corev1.ConditionUnknown, "", errors.New("broken"))},
	})
	if !def.Versions[0].Deprecated || def.Versions[0].DeprecationWarning != "v1 ComponentStatus is deprecated in v1.19+" {
		t.Errorf("version %+v, want deprecated with upstream's warning", def.Versions[0])
	}
	h := def.Hooks.(registry.Reader)
	got, err := h.Get(context.Background(), "etcd-0")
	want := map[string]any{
		"apiVersion": "v1", "kind": "ComponentStatus", "metadata": map[string]any{"name": "etcd-0"},
		"conditions": []any{map[string]any{"type": "Healthy", "status": "True", "message": "ok"}},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Get(etcd-0) = %v, %v; want %v", got, err, want)
	}
	if _, err := h.Get(context.Background(), "nosuch"); !apierrors.IsNotFound(err) || err.Error() != `componentstatus "nosuch" not found` {
		t.Errorf("Get(nosuch) error %v, want upstream's NotFound", err)
	}
	list, err := h.List(context.Background())
	if err != nil || len(list) != 3 {
		t.Fatalf("List = %v, %v; want 3 objects", list, err)
	}
	tp := def.Hooks.(registry.TablePrinter)
	var rows [][]any
	for _, obj := range list {
		rows = append(rows, tp.TableRow(obj))
	}
	wantRows := [][]any{{"etcd-0", "Healthy", "ok", ""}, {"scheduler", "Unhealthy", "refused", ""}, {"odd", "Unhealthy", "", "broken"}}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Errorf("rows %v, want %v", rows, wantRows)
	}
}

func TestComponents(t *testing.T) {
	names := func(cs []Component) (out []string) {
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	if got := names(Components(nil)); !reflect.DeepEqual(got, []string{"controller-manager", "scheduler"}) {
		t.Errorf("without etcd: %v", got)
	}
	cs := Components(func(context.Context) error { return errors.New("no leader") })
	if got := names(cs); !reflect.DeepEqual(got, []string{"controller-manager", "scheduler", "etcd-0"}) {
		t.Errorf("with etcd: %v", got)
	}
	if status, _, err := cs[2].Probe(context.Background()); status != corev1.ConditionFalse || err == nil || err.Error() != "no leader" {
		t.Errorf("etcd probe = %s, %v; want False, no leader", status, err)
	}
}
