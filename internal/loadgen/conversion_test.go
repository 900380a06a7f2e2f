package loadgen

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/registry"
	crschema "github.com/crdserver/crdserver/internal/schema"
	"github.com/crdserver/crdserver/internal/webhook"
)

// BenchmarkWidgetListConversion converts a list of 10,000 Widgets of 2KB
// to v2, nothing cached, by the load generator's webhook (both sides in
// this process) and by None. cpu-ms/op is the process's CPU time per
// list, which a loaded machine does not inflate as it does wall time.
func BenchmarkWidgetListConversion(b *testing.B) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(widgetsCRDYAML, &crd); err != nil {
		b.Fatal(err)
	}
	s, err := crschema.Compile(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
	if err != nil {
		b.Fatal(err)
	}
	raw, _ := json.Marshal(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
	objs := make([]conversion.Object, 10000)
	for i := range objs {
		w := newWidget("bench-"+strconv.Itoa(i), "ns", "run", i)
		if err := padTo(w, 2048); err != nil {
			b.Fatal(err)
		}
		md := w.Object["metadata"].(map[string]any)
		md["uid"], md["resourceVersion"] = "uid-"+strconv.Itoa(i), strconv.Itoa(i+1)
		js, err := codec.Marshal(w.Object)
		if err != nil {
			b.Fatal(err)
		}
		objs[i] = conversion.Object{JSON: js, Key: "/widgets/ns/bench-" + strconv.Itoa(i), Revision: int64(i + 1)} // stored, as a list's
	}
	hook, err := startBenchWebhook()
	if err != nil {
		b.Fatal(err)
	}
	defer hook.close()
	for _, strategy := range []string{ConversionWebhook, ConversionNone} {
		b.Run(strategy, func(b *testing.B) {
			def := &registry.Definition{
				Group: widgetsGVR.Group, Resource: "widgets", Kind: "Widget", ListKind: "WidgetList", Scope: registry.Namespaced,
				Versions: []registry.Version{
					{Name: "v1", Served: true, Storage: true, Schema: s, OpenAPISchema: raw},
					{Name: "v2", Served: true, Schema: s, OpenAPISchema: raw},
				},
			}
			if strategy == ConversionWebhook {
				def.Conversion = &registry.Conversion{URL: hook.url, CABundle: hook.caBundle, ReviewVersions: []string{"v1"}}
			}
			m := &webhook.Manager{}
			var cpu time.Duration
			for b.Loop() {
				conv := conversion.New(def, m) // nothing cached
				start := selfCPU()
				if _, err := conv.Convert(context.Background(), widgetsGVR.Group+"/v2", objs); err != nil {
					b.Fatal(err)
				}
				cpu += selfCPU() - start
			}
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

func TestConvertReview(t *testing.T) {
	review := `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"u1","desiredAPIVersion":"g/v2","objects":[` +
		`{"apiVersion":"g/v1","kind":"W","metadata":{"name":"a"}},{"apiVersion":"g/v1","kind":"W","metadata":{"name":"b"},"spec":{"x":[1]}}]}}`
	ans, n, err := convertReview([]byte(review), nil)
	want := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u1","result":{"status":"Success"},"convertedObjects":[` +
		`{"apiVersion":"g/v2","kind":"W","metadata":{"name":"a"}},{"apiVersion":"g/v2","kind":"W","metadata":{"name":"b"},"spec":{"x":[1]}}]}}`
	if err != nil || n != 2 || string(ans) != want {
		t.Errorf("convertReview = %s, %d, %v\nwant %s", ans, n, err, want)
	}
	// Members in another order, and others beside them.
	reordered := `{"request":{"objects":[{"apiVersion":"g/v1","kind":"W","metadata":{"name":"a"}}],"x":{"uid":"no"},"desiredAPIVersion":"g/v2","uid":"u1"},"apiVersion":"apiextensions.k8s.io/v1"}`
	want = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u1","result":{"status":"Success"},"convertedObjects":[` +
		`{"apiVersion":"g/v2","kind":"W","metadata":{"name":"a"}}]}}`
	if ans, n, err := convertReview([]byte(reordered), nil); err != nil || n != 1 || string(ans) != want {
		t.Errorf("convertReview = %s, %d, %v\nwant %s", ans, n, err, want)
	}
	// Into the buffer of an earlier answer, as the webhook reuses them.
	if ans, n, err := convertReview([]byte(reordered), ans[:0]); err != nil || n != 1 || string(ans) != want {
		t.Errorf("convertReview into a used buffer = %s, %d, %v\nwant %s", ans, n, err, want)
	}
	for _, bad := range []string{
		`{"apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"u1","desiredAPIVersion":"g/v2","objects":[]}}x`,
		`{"apiVersion":"apiextensions.k8s.io/v1","request":{"desiredAPIVersion":"g/v2","objects":[]}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"u1","desiredAPIVersion":"g/v2"}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"u1","desiredAPIVersion":"g/v2","objects":[{"kind":"W","apiVersion":"g/v1"}]}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"u1","desiredAPIVersion":"g/v2","objects":[{"apiVersion":"g/v1"},]}}`,
	} {
		if _, _, err := convertReview([]byte(bad), nil); err == nil {
			t.Errorf("convertReview(%s) succeeded", bad)
		}
	}
}

func TestConversionNote(t *testing.T) {
	got := conversionNote("list-v2-cold", 1, 10000, 20, 10000, 315*time.Millisecond)
	want := "list-v2-cold: 1 lists of 10000 objects at v2 took 20 conversion reviews of 10000 objects in all, 20.0 reviews of 10000 objects per list; the load generator (its webhook and client) used 315ms CPU per list"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := conversionNote("list-v2", 3, 10000, 0, 0, 0); !strings.Contains(got, "0.0 reviews of 0 objects per list") {
		t.Errorf("warm lists: %s", got)
	}
}

func TestWebhookNote(t *testing.T) {
	got := webhookNote(377*time.Millisecond, 75*time.Millisecond)
	want := "list-v2-cold: the webhook used about 302ms CPU (the load generator's 377ms per cold list less 75ms per warm list)"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := webhookNote(50*time.Millisecond, 75*time.Millisecond); !strings.Contains(got, "about 0s CPU") {
		t.Errorf("a warm list dearer than the cold one: %s", got)
	}
}
