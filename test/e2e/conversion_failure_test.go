package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/webhook/webhooktest"
)

// TestConversionWebhookFailures: a webhook that cannot be reached, hangs,
// or answers badly gives every request that needs it a clear error,
// changes nothing stored, and affects only its own CRD.
func TestConversionWebhookFailures(t *testing.T) {
	t.Parallel()
	srv, hook := startPizzaRestaurant(t, `["v2", "v1", "v1beta1"]`)
	ns := "pizza-crd"
	kubectl(t, srv, "create", "-n", ns, "-f", writeManifest(t, "margherita.yaml", margheritaV1alpha1))
	stored := kubectl(t, srv, "get", "-n", ns, "pizzas.v1alpha1."+pizzaGroup, "margherita", "-o", "json")
	// Another kind in the same server, without conversion.
	applyCRD(t, srv, "crontab-crd.yaml", "crontabs.stable.example.com", "created")

	const alpha = pizzaGroup + "/v1alpha1, Kind=Pizza"
	const beta = pizzaGroup + "/v1beta1, Kind=Pizza"
	const url = `"https://webhook.pizza-crd.svc:443/convert/v1beta1/pizza?timeout=30s"`
	newPizza := writeManifest(t, "new.yaml", `apiVersion: `+pizzaGroup+`/v1beta1
kind: Pizza
metadata: {name: funghi}
spec:
  toppings: [{name: mushrooms, quantity: 1}]
`)
	for _, tc := range []struct {
		name  string
		setup func()
		// read is the error reading margherita at v1beta1; write the
		// error creating a pizza at v1beta1.
		read, write string
	}{
		{
			name: "unreachable",
			setup: func() {
				kubectl(t, srv, "patch", "-n", ns, "endpointslice", "webhook-1", "--type=json", "-p", `[{"op":"replace","path":"/ports/0/port","value":1}]`)
			},
			read:  "conversion webhook for " + alpha + " failed: Post " + url + ": dial tcp 127.0.0.1:1: connect: connection refused",
			write: "conversion webhook for " + beta + " failed: Post " + url + ": dial tcp 127.0.0.1:1: connect: connection refused",
		},
		{
			name:  "no endpoints",
			setup: func() { kubectl(t, srv, "delete", "-n", ns, "endpointslice", "webhook-1") },
			read:  "conversion webhook for " + alpha + ` failed: Post ` + url + `: no endpoints available for service "webhook"`,
			write: "conversion webhook for " + beta + ` failed: Post ` + url + `: no endpoints available for service "webhook"`,
		},
		{
			name:  "wrong uid",
			setup: func() { hook.setEdit(func(r *webhooktest.Review) { r.Response.UID = "not-the-uid" }) },
			read:  "conversion webhook for " + alpha + ` failed: expected response.uid=`,
			write: "conversion webhook for " + beta + ` failed: expected response.uid=`,
		},
		{
			name: "changed name",
			setup: func() {
				hook.setEdit(func(r *webhooktest.Review) {
					for _, o := range r.Response.ConvertedObjects {
						o["metadata"].(map[string]any)["name"] = "capricciosa"
					}
				})
			},
			read:  "conversion webhook for " + alpha + " returned invalid object: must have the same name: margherita != capricciosa",
			write: "conversion webhook for " + beta + " returned invalid object: must have the same name: funghi != capricciosa",
		},
		{
			name:  "missing object",
			setup: func() { hook.setEdit(func(r *webhooktest.Review) { r.Response.ConvertedObjects = nil }) },
			read:  "conversion webhook for " + alpha + " returned 0 objects, expected 1",
			write: "conversion webhook for " + beta + " returned 0 objects, expected 1",
		},
		{
			name: "failed",
			setup: func() {
				hook.setEdit(func(r *webhooktest.Review) {
					r.Response.ConvertedObjects = nil
					r.Response.Result = webhooktest.Result{Status: "Failed", Message: "the oven is cold"}
				})
			},
			read:  "conversion webhook for " + alpha + " failed: the oven is cold",
			write: "conversion webhook for " + beta + " failed: the oven is cold",
		},
		{
			name:  "timeout",
			setup: func() { hook.hang.Store(true) },
			read:  "conversion webhook for " + alpha + " failed: Post " + url + ": context deadline exceeded",
			write: "conversion webhook for " + beta + " failed: Post " + url + ": context deadline exceeded",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			defer func() {
				hook.setEdit(nil)
				hook.hang.Store(false)
				kubectl(t, srv, "apply", "-f", writeManifest(t, "service.yaml", webhookService(hook.port())))
			}()
			start := time.Now()
			if got := kubectlFails(t, srv, "get", "-n", ns, "pizzas.v1beta1."+pizzaGroup, "margherita"); got != "Error from server: "+tc.read && !strings.HasPrefix(got, "Error from server: "+tc.read) {
				t.Errorf("get at v1beta1:\n got %s\nwant Error from server: %s", got, tc.read)
			}
			if tc.name == "timeout" {
				if d := time.Since(start); d < 25*time.Second || d > 50*time.Second {
					t.Errorf("the timeout came after %v, want 30s", d)
				}
				return // one wait of 30 seconds is enough
			}
			if got := kubectlFails(t, srv, "get", "-n", ns, "pizzas.v1beta1."+pizzaGroup); !strings.Contains(got, tc.read) && !strings.Contains(got, strings.Replace(tc.read, "Kind=Pizza", "Kind=PizzaList", 1)) {
				t.Errorf("list at v1beta1:\n got %s\nwant %s", got, tc.read)
			}
			if got := kubectlFails(t, srv, "create", "-n", ns, "-f", newPizza); !strings.Contains(got, tc.write) {
				t.Errorf("create at v1beta1:\n got %s\nwant %s", got, tc.write)
			}
			kubectlFails(t, srv, "patch", "-n", ns, "pizzas.v1beta1."+pizzaGroup, "margherita", "--type=merge", "-p", `{"metadata":{"labels":{"x":"y"}}}`)
			// Nothing stored changed.
			if got := kubectl(t, srv, "get", "-n", ns, "pizzas.v1alpha1."+pizzaGroup, "margherita", "-o", "json"); got != stored {
				t.Errorf("margherita changed:\n%s\nwas\n%s", got, stored)
			}
			if _, stderr, err := kubectlResult(srv, "get", "-n", ns, "pizzas.v1alpha1."+pizzaGroup, "funghi"); err == nil || !strings.Contains(stderr, "NotFound") {
				t.Errorf("funghi exists after a failed create (%v): %s", err, stderr)
			}
			// Other kinds work.
			kubectl(t, srv, "apply", "-f", crdFixture("my-crontab.yaml"))
			kubectl(t, srv, "get", "crontabs")
		})
	}
	// Working again, margherita reads as v1beta1.
	beta1 := kubectlYAML(t, srv, "get", "-n", ns, "pizzas.v1beta1."+pizzaGroup, "margherita", "-o", "yaml")
	checkFields(t, "margherita at v1beta1", beta1, []fieldCheck{{"spec.toppings", []any{map[string]any{"name": "mozzarella", "quantity": 1}, map[string]any{"name": "tomato", "quantity": 1}}}})

	// With the webhook broken, the namespace and the CRD still go.
	hook.setEdit(func(r *webhooktest.Review) { r.Response.UID = "broken" })
	kubectl(t, srv, "delete", "namespace", ns, "--timeout=30s")
	kubectl(t, srv, "delete", "crd", "pizzas."+pizzaGroup, "--timeout=30s")
}
