package e2e

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/crdserver/crdserver/internal/webhook/webhooktest"
)

// The pizza restaurant of seed 003: Pizza v1alpha1 lists toppings by name
// (a name twice for extra), v1beta1 as name/quantity pairs; v1alpha1 is
// the storage version and a webhook converts.

const pizzaGroup = "restaurant.programming-kubernetes.info"

var (
	pizzasV1alpha1 = schema.GroupVersionResource{Group: pizzaGroup, Version: "v1alpha1", Resource: "pizzas"}
	pizzasV1beta1  = schema.GroupVersionResource{Group: pizzaGroup, Version: "v1beta1", Resource: "pizzas"}
)

// convertPizza is the seed's conversion, on unstructured objects.
func convertPizza(obj map[string]any, to string) (map[string]any, error) {
	from, _ := obj["apiVersion"].(string)
	spec, _ := obj["spec"].(map[string]any)
	tops, _ := spec["toppings"].([]any)
	out := []any{}
	switch {
	case from == pizzaGroup+"/v1alpha1" && to == pizzaGroup+"/v1beta1":
		idx := map[string]int{}
		for _, t := range tops {
			name, _ := t.(string)
			if i, ok := idx[name]; ok {
				m := out[i].(map[string]any)
				m["quantity"] = m["quantity"].(float64) + 1
				continue
			}
			idx[name] = len(out)
			out = append(out, map[string]any{"name": name, "quantity": float64(1)})
		}
	case from == pizzaGroup+"/v1beta1" && to == pizzaGroup+"/v1alpha1":
		for _, t := range tops {
			m, _ := t.(map[string]any)
			q, _ := m["quantity"].(float64)
			for range int(q) {
				out = append(out, m["name"])
			}
		}
	default:
		return nil, fmt.Errorf("cannot convert %s to %s", from, to)
	}
	if spec != nil {
		spec["toppings"] = out
	}
	obj["apiVersion"] = to
	return obj, nil
}

// convertCronTab is seed 001's example: v1beta1 hostPort "host:port", v1
// separate host and port.
func convertCronTab(obj map[string]any, to string) (map[string]any, error) {
	from, _ := obj["apiVersion"].(string)
	switch {
	case strings.HasSuffix(from, "/v1beta1") && strings.HasSuffix(to, "/v1"):
		hp, _ := obj["hostPort"].(string)
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			return nil, fmt.Errorf("hostPort could not be parsed into a separate host and port")
		}
		delete(obj, "hostPort")
		obj["host"], obj["port"] = host, port
	case strings.HasSuffix(from, "/v1") && strings.HasSuffix(to, "/v1beta1"):
		host, _ := obj["host"].(string)
		port, _ := obj["port"].(string)
		delete(obj, "host")
		delete(obj, "port")
		obj["hostPort"] = net.JoinHostPort(host, port)
	case from != to:
		return nil, fmt.Errorf("unexpected conversion from %s to %s", from, to)
	}
	obj["apiVersion"] = to
	return obj, nil
}

// conversionWebhook is the test's own HTTPS webhook server: pizzas at
// /convert/v1beta1/pizza (the seed's path), CronTabs at /crontab.
type conversionWebhook struct {
	*webhooktest.Server
	reviews atomic.Int64 // reviews received
	objects atomic.Int64 // objects converted
	// edit, when set, changes an answer before it goes out.
	mu   sync.Mutex
	edit func(*webhooktest.Review)
	// hang, when set, makes the webhook wait for the request to end.
	hang atomic.Bool
}

func startConversionWebhook(t *testing.T) *conversionWebhook {
	w := &conversionWebhook{}
	count := func(f webhooktest.ConvertFunc) webhooktest.ConvertFunc {
		return func(o map[string]any, to string) (map[string]any, error) {
			w.objects.Add(1)
			return f(o, to)
		}
	}
	edit := func(r *webhooktest.Review) {
		w.mu.Lock()
		e := w.edit
		w.mu.Unlock()
		if e != nil {
			e(r)
		}
	}
	pizza := webhooktest.Conversion(count(convertPizza), edit)
	crontab := webhooktest.Conversion(count(convertCronTab), edit)
	mux := http.NewServeMux()
	serve := func(h http.Handler) http.HandlerFunc {
		return func(rw http.ResponseWriter, r *http.Request) {
			w.reviews.Add(1)
			if w.hang.Load() {
				<-r.Context().Done()
				return
			}
			h.ServeHTTP(rw, r)
		}
	}
	mux.Handle("/convert/v1beta1/pizza", serve(pizza))
	mux.Handle("/crontab", serve(crontab))
	w.Server = webhooktest.Start(t, mux, "webhook.pizza-crd.svc")
	return w
}

func (w *conversionWebhook) setEdit(f func(*webhooktest.Review)) {
	w.mu.Lock()
	w.edit = f
	w.mu.Unlock()
}

func (w *conversionWebhook) port() string {
	_, port, _ := net.SplitHostPort(w.Listener.Addr().String())
	return port
}

// pizzaCRD is the seed's Pizza CRD in apiextensions.k8s.io/v1, its webhook
// reached through the Service pizza-crd/webhook.
func pizzaCRD(caBundle []byte, reviewVersions string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: pizzas.` + pizzaGroup + `
spec:
  group: ` + pizzaGroup + `
  names:
    kind: Pizza
    listKind: PizzaList
    plural: pizzas
    singular: pizza
  scope: Namespaced
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: ` + reviewVersions + `
      clientConfig:
        caBundle: ` + base64.StdEncoding.EncodeToString(caBundle) + `
        service:
          namespace: pizza-crd
          name: webhook
          path: /convert/v1beta1/pizza
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              toppings:
                type: array
                items: {type: string}
          status:
            type: object
            properties:
              cost: {type: number}
  - name: v1beta1
    served: true
    storage: false
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              toppings:
                type: array
                items:
                  type: object
                  properties:
                    name: {type: string}
                    quantity: {type: integer}
          status:
            type: object
            properties:
              cost: {type: number}
`
}

// webhookService is the Service the pizza CRD names, and the
// EndpointSlice that puts the test's webhook behind it (port 443 → the
// server's port).
func webhookService(port string) string {
	return `apiVersion: v1
kind: Namespace
metadata:
  name: pizza-crd
---
apiVersion: v1
kind: Service
metadata:
  name: webhook
  namespace: pizza-crd
spec:
  ports:
  - name: https
    port: 443
    targetPort: ` + port + `
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: webhook-1
  namespace: pizza-crd
  labels:
    kubernetes.io/service-name: webhook
addressType: IPv4
ports:
- name: https
  port: ` + port + `
endpoints:
- addresses: ["127.0.0.1"]
`
}

// writeManifest writes a manifest into the test's directory.
func writeManifest(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startPizzaRestaurant starts a server with the webhook, its Service and
// the Pizza CRD.
func startPizzaRestaurant(t *testing.T, reviewVersions string) (*server, *conversionWebhook) {
	srv := startServer(t, t.TempDir())
	hook := startConversionWebhook(t)
	kubectl(t, srv, "apply", "-f", writeManifest(t, "service.yaml", webhookService(hook.port())))
	kubectl(t, srv, "apply", "-f", writeManifest(t, "pizza-crd.yaml", pizzaCRD(hook.CABundle, reviewVersions)))
	waitEstablished(t, srv, "pizzas."+pizzaGroup)
	return srv, hook
}

const margheritaV1alpha1 = `apiVersion: ` + pizzaGroup + `/v1alpha1
kind: Pizza
metadata:
  name: margherita
spec:
  toppings:
  - mozzarella
  - tomato
`

func TestPizzaRestaurantConversion(t *testing.T) {
	t.Parallel()
	srv, hook := startPizzaRestaurant(t, `["v1beta1"]`)
	ns := "pizza-crd"

	// The seed's story: created as v1alpha1, read as v1beta1.
	if got := kubectlLine(t, srv, "create", "-n", ns, "-f", writeManifest(t, "margherita.yaml", margheritaV1alpha1)); got != "pizza."+pizzaGroup+"/margherita created" {
		t.Errorf("kubectl create printed %q", got)
	}
	alpha := kubectlYAML(t, srv, "get", "-n", ns, "pizzas.v1alpha1."+pizzaGroup, "margherita", "-o", "yaml")
	checkFields(t, "margherita at v1alpha1", alpha, []fieldCheck{
		{"apiVersion", pizzaGroup + "/v1alpha1"},
		{"spec.toppings", []any{"mozzarella", "tomato"}},
	})
	beta := kubectlYAML(t, srv, "get", "-n", ns, "pizzas.v1beta1."+pizzaGroup, "margherita", "-o", "yaml")
	checkFields(t, "margherita at v1beta1", beta, []fieldCheck{
		{"apiVersion", pizzaGroup + "/v1beta1"},
		{"spec.toppings", []any{map[string]any{"name": "mozzarella", "quantity": 1}, map[string]any{"name": "tomato", "quantity": 1}}},
		{"metadata.uid", lookup(alpha, "metadata.uid")},
		{"metadata.resourceVersion", lookup(alpha, "metadata.resourceVersion")},
	})
	// kubectl get pizza picks the preferred version, v1beta1.
	pref := kubectlYAML(t, srv, "get", "-n", ns, "pizza", "margherita", "-o", "yaml")
	checkFields(t, "margherita (preferred version)", pref, []fieldCheck{{"apiVersion", pizzaGroup + "/v1beta1"}})

	// Created as v1beta1 with an extra cheese: stored as v1alpha1.
	kubectl(t, srv, "apply", "-n", ns, "-f", writeManifest(t, "quattro.yaml", `apiVersion: `+pizzaGroup+`/v1beta1
kind: Pizza
metadata:
  name: quattro-formaggi
spec:
  toppings:
  - name: mozzarella
    quantity: 2
  - name: gorgonzola
    quantity: 1
`))
	stored := kubectlYAML(t, srv, "get", "-n", ns, "pizzas.v1alpha1."+pizzaGroup, "quattro-formaggi", "-o", "yaml")
	checkFields(t, "quattro-formaggi at v1alpha1", stored, []fieldCheck{{"spec.toppings", []any{"mozzarella", "mozzarella", "gorgonzola"}}})

	// Updated as v1beta1 (kubectl apply again: a patch in v1beta1).
	kubectl(t, srv, "apply", "-n", ns, "-f", writeManifest(t, "quattro2.yaml", `apiVersion: `+pizzaGroup+`/v1beta1
kind: Pizza
metadata:
  name: quattro-formaggi
spec:
  toppings:
  - name: mozzarella
    quantity: 3
`))
	stored = kubectlYAML(t, srv, "get", "-n", ns, "pizzas.v1alpha1."+pizzaGroup, "quattro-formaggi", "-o", "yaml")
	checkFields(t, "quattro-formaggi at v1alpha1 after the update", stored, []fieldCheck{{"spec.toppings", []any{"mozzarella", "mozzarella", "mozzarella"}}})
	// Status through /status in v1beta1.
	kubectl(t, srv, "patch", "-n", ns, "pizzas.v1beta1."+pizzaGroup, "quattro-formaggi", "--subresource=status", "--type=merge", "-p", `{"status":{"cost":12.5}}`)
	stored = kubectlYAML(t, srv, "get", "-n", ns, "pizzas.v1alpha1."+pizzaGroup, "quattro-formaggi", "-o", "yaml")
	checkFields(t, "quattro-formaggi status", stored, []fieldCheck{{"status.cost", 12.5}, {"spec.toppings", []any{"mozzarella", "mozzarella", "mozzarella"}}})

	// Watches at v1beta1 while pizzas are written as v1alpha1: each event
	// comes converted, once for all the watchers.
	ctx := testContext(t, time.Minute)
	var watches []watch.Interface
	for range 5 {
		w, err := srv.Dynamic.Resource(pizzasV1beta1).Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: lookup(stored, "metadata.resourceVersion").(string)})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		watches = append(watches, w)
	}
	before := hook.reviews.Load()
	salami := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": pizzaGroup + "/v1alpha1", "kind": "Pizza",
		"metadata": map[string]any{"name": "salami"},
		"spec":     map[string]any{"toppings": []any{"salami", "salami", "tomato"}},
	}}
	if _, err := srv.Dynamic.Resource(pizzasV1alpha1).Namespace(ns).Create(ctx, salami, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, w := range watches {
		select {
		case ev := <-w.ResultChan():
			u, _ := ev.Object.(*unstructured.Unstructured)
			if ev.Type != watch.Added || u == nil {
				t.Fatalf("watch event %s %v", ev.Type, ev.Object)
			}
			checkFields(t, "watched salami", u.Object, []fieldCheck{
				{"apiVersion", pizzaGroup + "/v1beta1"},
				{"spec.toppings", []any{map[string]any{"name": "salami", "quantity": int64(2)}, map[string]any{"name": "tomato", "quantity": int64(1)}}},
			})
		case <-ctx.Done():
			t.Fatal("no watch event")
		}
	}
	if n := hook.reviews.Load() - before; n != 1 {
		t.Errorf("5 watchers of one event took %d reviews, want 1", n)
	}
	for _, w := range watches {
		w.Stop()
	}

	// 1,000 pizzas, listed in the other version: a few reviews of at most
	// 500 objects each, none again for a second list of unchanged pizzas.
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	sem := make(chan struct{}, 16)
	for i := range 1000 {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			p := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": pizzaGroup + "/v1alpha1", "kind": "Pizza",
				"metadata": map[string]any{"name": "p-" + strconv.Itoa(i)},
				"spec":     map[string]any{"toppings": []any{"tomato", "tomato", "basil"}},
			}}
			if _, err := srv.Dynamic.Resource(pizzasV1alpha1).Namespace(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating pizzas: %v", err)
	}
	before = hook.reviews.Load()
	list := kubectlYAML(t, srv, "get", "-n", ns, "pizzas.v1beta1."+pizzaGroup, "-o", "json")
	items, _ := list["items"].([]any)
	if len(items) != 1003 {
		t.Fatalf("listed %d pizzas, want 1003", len(items))
	}
	for _, it := range items {
		m := it.(map[string]any)
		if !strings.HasPrefix(lookup(m, "metadata.name").(string), "p-") {
			continue
		}
		checkFields(t, "listed pizza", m, []fieldCheck{
			{"apiVersion", pizzaGroup + "/v1beta1"},
			{"spec.toppings", []any{map[string]any{"name": "tomato", "quantity": 2}, map[string]any{"name": "basil", "quantity": 1}}},
		})
	}
	// Nothing converted the new pizzas before: the list takes
	// ceil(1000/500) reviews.
	if n := hook.reviews.Load() - before; n > 3 {
		t.Errorf("listing 1003 pizzas took %d reviews, want at most 3", n)
	}
	before = hook.reviews.Load()
	kubectl(t, srv, "get", "-n", ns, "pizzas.v1beta1."+pizzaGroup, "-o", "name")
	if n := hook.reviews.Load() - before; n != 0 {
		t.Errorf("listing unchanged pizzas again took %d reviews, want 0", n)
	}
	// And back: a list at the storage version calls nobody.
	kubectl(t, srv, "get", "-n", ns, "pizzas.v1alpha1."+pizzaGroup, "-o", "name")
	if n := hook.reviews.Load() - before; n != 0 {
		t.Errorf("listing at the storage version took %d reviews", n)
	}

	// A long list whose last review fails is that failure, though the
	// objects before it were ready (compressed as they came) first.
	kubectl(t, srv, "label", "-n", ns, "pizzas.v1alpha1."+pizzaGroup, "p-998", "oven=cold")
	hook.setEdit(func(r *webhooktest.Review) {
		r.Response.ConvertedObjects = nil
		r.Response.Result = webhooktest.Result{Status: "Failed", Message: "the oven is cold"}
	})
	if got := kubectlFails(t, srv, "get", "-n", ns, "pizzas.v1beta1."+pizzaGroup, "-o", "name"); !strings.Contains(got, "conversion webhook for "+pizzaGroup+"/v1alpha1, Kind=PizzaList failed: the oven is cold") {
		t.Errorf("a long list with a failing review: %s", got)
	}
	hook.setEdit(nil)

	// A dry run at v1beta1 converts both ways and stores nothing.
	dry := kubectlYAML(t, srv, "create", "-n", ns, "--dry-run=server", "-o", "yaml", "-f", writeManifest(t, "dry.yaml", `apiVersion: `+pizzaGroup+`/v1beta1
kind: Pizza
metadata: {name: dry}
spec:
  toppings: [{name: basil, quantity: 2}]
`))
	checkFields(t, "dry run", dry, []fieldCheck{{"apiVersion", pizzaGroup + "/v1beta1"}, {"spec.toppings", []any{map[string]any{"name": "basil", "quantity": 2}}}})
	kubectlFails(t, srv, "get", "-n", ns, "pizza", "dry")

	// Delete them all at v1beta1: the answer lists them in v1beta1.
	if err := srv.Dynamic.Resource(pizzasV1beta1).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("deletecollection at v1beta1: %v", err)
	}
	left, err := srv.Dynamic.Resource(pizzasV1alpha1).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(left.Items) != 0 {
		t.Errorf("after deletecollection: %d pizzas left (%v)", len(left.Items), err)
	}
}

// cronTabCRD is seed 001's CronTab with v1beta1 (hostPort) and v1
// (host/port), converted by the webhook at url.
func cronTabCRD(url string, caBundle []byte, storage string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.example.com
spec:
  group: example.com
  names: {kind: CronTab, plural: crontabs, singular: crontab}
  scope: Namespaced
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: ["v1", "v1beta1"]
      clientConfig:
        url: ` + url + `
        caBundle: ` + base64.StdEncoding.EncodeToString(caBundle) + `
  versions:
  - name: v1beta1
    served: true
    deprecated: true
    storage: ` + strconv.FormatBool(storage == "v1beta1") + `
    schema:
      openAPIV3Schema:
        type: object
        properties:
          hostPort: {type: string}
  - name: v1
    served: true
    storage: ` + strconv.FormatBool(storage == "v1") + `
    schema:
      openAPIV3Schema:
        type: object
        properties:
          host: {type: string}
          port: {type: string}
`
}

// TestCronTabHostPortConversion is seed 001's webhook example, reached
// by URL, with ConversionReview v1.
func TestCronTabHostPortConversion(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	hook := startConversionWebhook(t)
	kubectl(t, srv, "apply", "-f", writeManifest(t, "crd.yaml", cronTabCRD(hook.URL+"/crontab", hook.CABundle, "v1beta1")))
	waitEstablished(t, srv, "crontabs.example.com")
	kubectl(t, srv, "apply", "-f", writeManifest(t, "local.yaml", `apiVersion: example.com/v1beta1
kind: CronTab
metadata: {name: local-crontab, namespace: default}
hostPort: "localhost:1234"
`))
	v1 := kubectlYAML(t, srv, "get", "crontabs.v1.example.com", "local-crontab", "-o", "yaml")
	checkFields(t, "local-crontab at v1", v1, []fieldCheck{{"apiVersion", "example.com/v1"}, {"host", "localhost"}, {"port", "1234"}})
	if v1["hostPort"] != nil {
		t.Errorf("v1 object keeps hostPort: %v", v1)
	}
	kubectl(t, srv, "apply", "-f", writeManifest(t, "remote.yaml", `apiVersion: example.com/v1
kind: CronTab
metadata: {name: remote-crontab, namespace: default}
host: example.com
port: "2345"
`))
	b := kubectlYAML(t, srv, "get", "crontabs.v1beta1.example.com", "remote-crontab", "-o", "yaml")
	checkFields(t, "remote-crontab at v1beta1", b, []fieldCheck{{"hostPort", "example.com:2345"}})
	// v1beta1 is deprecated: every request to it warns, naming v1.
	_, stderr, err := kubectlResult(srv, "get", "crontabs.v1beta1.example.com", "remote-crontab")
	if want := "Warning: example.com/v1beta1 CronTab is deprecated; use example.com/v1 CronTab"; err != nil || !strings.Contains(stderr, want) {
		t.Errorf("kubectl get at v1beta1 (%v) printed %q, want the warning %q", err, stderr, want)
	}

	// The webhook's own failure reaches the user with its message.
	kubectl(t, srv, "apply", "-f", writeManifest(t, "bad.yaml", `apiVersion: example.com/v1beta1
kind: CronTab
metadata: {name: bad, namespace: default}
hostPort: "no-port"
`)) // stored at v1beta1: no conversion on create; the read fails
	msg := kubectlFails(t, srv, "get", "crontabs.v1.example.com", "bad")
	if want := "conversion webhook for example.com/v1beta1, Kind=CronTab failed: hostPort could not be parsed into a separate host and port"; !strings.Contains(msg, want) {
		t.Errorf("kubectl get printed %q, want it to contain %q", msg, want)
	}
}
