package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/webhook/webhooktest"
)

// The pizza restaurant's admission (seed 003): a mutating webhook defaults
// an empty pizza to tomato, mozzarella and salami; a validating webhook
// refuses pizzas whose toppings have no Topping object. The registrations
// are the seed's, in admissionregistration.k8s.io/v1beta1, reaching the
// webhook through the Service pizza-crd/webhook; only the address differs.

var toppingsGVR = schema.GroupVersionResource{Group: pizzaGroup, Version: "v1alpha1", Resource: "toppings"}

const toppingCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: toppings.` + pizzaGroup + `
spec:
  group: ` + pizzaGroup + `
  names:
    kind: Topping
    listKind: ToppingList
    plural: toppings
    singular: topping
  scope: Cluster
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              cost: {type: number}
`

func pizzaRegistrations(caBundle []byte) string {
	ca := base64.StdEncoding.EncodeToString(caBundle)
	reg := func(kind, path string) string {
		return `apiVersion: admissionregistration.k8s.io/v1beta1
kind: ` + kind + `
metadata:
  name: restaurant.programming-kubernetes.info
webhooks:
- name: restaurant.programming-kubernetes.info
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions:
  - v1beta1
  rules:
  - apiGroups:
    - "restaurant.programming-kubernetes.info"
    apiVersions:
    - v1alpha1
    - v1beta1
    operations:
    - CREATE
    - UPDATE
    resources:
    - pizzas
  clientConfig:
    service:
      namespace: pizza-crd
      name: webhook
      path: ` + path + `
    caBundle: ` + ca + `
`
	}
	return reg("ValidatingWebhookConfiguration", "/validate/v1beta1/pizza") + "---\n" + reg("MutatingWebhookConfiguration", "/admit/v1beta1/pizza")
}

// pizzaAdmit is the seed's ServePizzaAdmit: empty toppings become tomato,
// mozzarella and salami, in either version.
func pizzaAdmit(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	obj := objectOf(req.Object.Raw)
	spec, _ := obj["spec"].(map[string]any)
	if tops, _ := spec["toppings"].([]any); len(tops) > 0 {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	var defaults any = []string{"tomato", "mozzarella", "salami"}
	if strings.HasSuffix(req.Kind.Version, "v1beta1") {
		defaults = []map[string]any{{"name": "tomato", "quantity": 1}, {"name": "mozzarella", "quantity": 1}, {"name": "salami", "quantity": 1}}
	}
	op := fmt.Sprintf(`{"op":"add","path":"/spec","value":{"toppings":%s}}`, mustJSON(defaults))
	if spec != nil {
		op = fmt.Sprintf(`{"op":"add","path":"/spec/toppings","value":%s}`, mustJSON(defaults))
	}
	// A v1beta1 answer carries its patch without a patchType.
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte("[" + op + "]")}
}

// pizzaValidate is the seed's ServePizzaValidation: every topping must
// have a Topping object.
func pizzaValidate(srv *server) admitFunc {
	return func(r *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		obj := objectOf(req.Object.Raw)
		spec, _ := obj["spec"].(map[string]any)
		tops, _ := spec["toppings"].([]any)
		for _, t := range tops {
			name, _ := t.(string)
			if m, ok := t.(map[string]any); ok {
				name, _ = m["name"].(string)
			}
			_, err := srv.Dynamic.Resource(toppingsGVR).Get(r.Context(), name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: fmt.Sprintf("topping %q not known", name), Status: metav1.StatusFailure}}
			}
			if err != nil {
				return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: fmt.Sprintf("failed to lookup topping %q: %v", name, err), Status: metav1.StatusFailure}}
			}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
}

func topping(name string) string {
	return `apiVersion: ` + pizzaGroup + `/v1alpha1
kind: Topping
metadata:
  name: ` + name + `
spec:
  cost: 1
`
}

func TestPizzaRestaurantAdmission(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	hook := startAdmissionWebhook(t, "webhook.pizza-crd.svc")
	hook.mux.Handle("/convert/v1beta1/pizza", webhooktest.Conversion(convertPizza, nil))
	hook.handle("/admit/v1beta1/pizza", pizzaAdmit)
	hook.handle("/validate/v1beta1/pizza", pizzaValidate(srv))
	kubectl(t, srv, "apply", "-f", writeManifest(t, "service.yaml", webhookService(hookPort(hook.Server))))
	kubectl(t, srv, "apply", "-f", writeManifest(t, "pizza-crd.yaml", pizzaCRD(hook.CABundle, `["v1beta1"]`)))
	kubectl(t, srv, "apply", "-f", writeManifest(t, "topping-crd.yaml", toppingCRD))
	waitEstablished(t, srv, "pizzas."+pizzaGroup)
	waitEstablished(t, srv, "toppings."+pizzaGroup)
	ns := "pizza-crd"

	// The registrations use the removed v1beta1 API: kubectl warns.
	stdout, stderr, err := kubectlResult(srv, "create", "-f", writeManifest(t, "registrations.yaml", pizzaRegistrations(hook.CABundle)))
	if err != nil {
		t.Fatalf("creating the registrations: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "validatingwebhookconfiguration.admissionregistration.k8s.io/restaurant.programming-kubernetes.info created") ||
		!strings.Contains(stdout, "mutatingwebhookconfiguration.admissionregistration.k8s.io/restaurant.programming-kubernetes.info created") {
		t.Errorf("kubectl create printed %q", stdout)
	}
	if !strings.Contains(stderr, "admissionregistration.k8s.io/v1beta1 ValidatingWebhookConfiguration is deprecated") {
		t.Errorf("kubectl create warned %q", stderr)
	}
	// v1beta1's defaults, read back at v1.
	reg := kubectlYAML(t, srv, "get", "validatingwebhookconfigurations.v1.admissionregistration.k8s.io", "restaurant.programming-kubernetes.info", "-o", "yaml")
	checkFields(t, "registration at v1", reg, []fieldCheck{{"apiVersion", "admissionregistration.k8s.io/v1"}})
	regHook, _ := reg["webhooks"].([]any)[0].(map[string]any)
	checkFields(t, "registration's webhook at v1", regHook, []fieldCheck{
		{"failurePolicy", "Fail"},
		{"matchPolicy", "Exact"},
		{"timeoutSeconds", 30},
		{"sideEffects", "None"},
		{"admissionReviewVersions", []any{"v1beta1"}},
		{"clientConfig.service.port", 443},
	})
	if rule, _ := regHook["rules"].([]any)[0].(map[string]any); rule["scope"] != "*" {
		t.Errorf("rule scope %v, want *", rule["scope"])
	}
	syncWebhooks(t, srv)
	table := strings.Fields(kubectl(t, srv, "get", "mutatingwebhookconfigurations"))
	if len(table) != 6 || strings.Join(table[:5], " ") != "NAME WEBHOOKS AGE restaurant.programming-kubernetes.info 1" {
		t.Errorf("kubectl get mutatingwebhookconfigurations: %q", table)
	}

	// The restaurant knows mozzarella from before; the margherita's
	// tomato is unknown.
	kubectl(t, srv, "create", "-f", writeManifest(t, "mozzarella.yaml", topping("mozzarella")))
	margherita := writeManifest(t, "margherita-pizza.yaml", margheritaV1alpha1)
	got := kubectlFails(t, srv, "create", "-n", ns, "-f", margherita)
	want := `Error from server: error when creating "` + margherita + `": admission webhook "restaurant.programming-kubernetes.info" denied the request: topping "tomato" not known`
	if got != want {
		t.Errorf("margherita without tomatoes:\n got %s\nwant %s", got, want)
	}
	if _, err := srv.Dynamic.Resource(pizzasV1alpha1).Namespace(ns).Get(testContext(t, startTimeout), "margherita", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused pizza was stored: %v", err)
	}

	for _, top := range []string{"tomato", "salami"} {
		if got := kubectlLine(t, srv, "create", "-f", writeManifest(t, "topping-"+top+".yaml", topping(top))); got != "topping."+pizzaGroup+"/"+top+" created" {
			t.Errorf("creating topping %s printed %q", top, got)
		}
	}
	if got := kubectlLine(t, srv, "create", "-n", ns, "-f", margherita); got != "pizza."+pizzaGroup+"/margherita created" {
		t.Errorf("margherita: %q", got)
	}

	// An empty pizza is a salami pizza.
	empty := writeManifest(t, "empty-pizza.yaml", `apiVersion: `+pizzaGroup+`/v1alpha1
kind: Pizza
metadata:
  name: salami
spec:
`)
	if got := kubectlLine(t, srv, "create", "-n", ns, "-f", empty); got != "pizza."+pizzaGroup+"/salami created" {
		t.Errorf("empty pizza: %q", got)
	}
	salami := kubectlYAML(t, srv, "get", "-n", ns, "pizza", "salami", "-o", "yaml")
	checkFields(t, "salami", salami, []fieldCheck{
		{"apiVersion", pizzaGroup + "/v1beta1"},
		{"spec.toppings", []any{
			map[string]any{"name": "tomato", "quantity": 1},
			map[string]any{"name": "mozzarella", "quantity": 1},
			map[string]any{"name": "salami", "quantity": 1},
		}},
	})

	// Both webhooks received v1beta1 reviews of pizzas.
	reqs := hook.received("/admit/v1beta1/pizza")
	if len(reqs) == 0 {
		t.Fatal("the mutating webhook was never called")
	}
	last := reqs[len(reqs)-1]
	if last.Operation != admissionv1.Create || last.Resource.Resource != "pizzas" || last.Namespace != ns || last.Name != "salami" ||
		last.Kind.Kind != "Pizza" || last.Kind.Version != "v1alpha1" || last.UserInfo.Username == "" || last.DryRun == nil || *last.DryRun {
		t.Errorf("the mutating webhook's last request: %+v", last)
	}
}

func hookPort(s *webhooktest.Server) string {
	addr := s.Listener.Addr().String()
	return addr[strings.LastIndex(addr, ":")+1:]
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
