package e2e

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"

	"github.com/crdserver/crdserver/internal/webhook/webhooktest"
)

// The conformance specs "CustomResourceConversionWebhook" of upstream's
// test/e2e/apimachinery/crd_conversion_webhook.go, with the webhook in the
// test process instead of a pod behind a Service: the Service is there,
// with an EndpointSlice pointing at the test's server.

// convertV1V2 is what upstream's sample conversion webhook does: v1
// hostPort "host:port", v2 host and port.
func convertV1V2(obj map[string]any, to string) (map[string]any, error) {
	from, _ := obj["apiVersion"].(string)
	switch {
	case strings.HasSuffix(from, "/v1") && strings.HasSuffix(to, "/v2"):
		if hp, ok := obj["hostPort"].(string); ok {
			parts := strings.Split(hp, ":")
			if len(parts) != 2 {
				return nil, fmt.Errorf("invalid hostPort value `%v`", hp)
			}
			delete(obj, "hostPort")
			obj["host"], obj["port"] = parts[0], parts[1]
		}
	case strings.HasSuffix(from, "/v2") && strings.HasSuffix(to, "/v1"):
		host, hasHost := obj["host"].(string)
		port, hasPort := obj["port"].(string)
		if hasHost || hasPort {
			delete(obj, "host")
			delete(obj, "port")
			obj["hostPort"] = host + ":" + port
		}
	case from != to:
		return nil, fmt.Errorf("unexpected conversion from %s to %s", from, to)
	}
	obj["apiVersion"] = to
	return obj, nil
}

// conformanceCRD sets up what upstream's BeforeEach does: a namespace, the
// webhook's Service and (instead of a pod) an EndpointSlice to the test's
// server, and a CRD with versions v1 and v2, storage at storage.
func conformanceCRD(t *testing.T, srv *server, storage string) (*apiextensionsv1.CustomResourceDefinition, map[string]dynamic.ResourceInterface) {
	t.Helper()
	ctx := testContext(t, time.Minute)
	hook := webhooktest.Start(t, webhooktest.Conversion(convertV1V2, nil), "e2e-test-crd-conversion-webhook.conformance.svc")
	ns := "conformance"
	if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port := int32(hook.Listener.Addr().(*net.TCPAddr).Port)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-test-crd-conversion-webhook", Labels: map[string]string{"test": "crd-webhook"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"crd-webhook": "true"},
			Ports:    []corev1.ServicePort{{Protocol: "TCP", Port: 9443, TargetPort: intstr.FromInt32(port)}},
		},
	}
	if _, err := srv.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "e2e-test-crd-conversion-webhook-1", Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: &port}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}}},
	}
	if _, err := srv.Client.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	validation := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", XPreserveUnknownFields: ptr(true),
	}}
	svcPort, path := int32(9443), "/crdconvert"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-test-crds.stable.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "stable.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "e2e-test-crds", Singular: "e2e-test-crd", Kind: "E2eTestCrd", ListKind: "E2eTestCrdList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: storage == "v1", Schema: validation},
				{Name: "v2", Served: true, Storage: storage == "v2", Schema: validation},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig: &apiextensionsv1.WebhookClientConfig{
						CABundle: hook.CABundle,
						Service:  &apiextensionsv1.ServiceReference{Namespace: ns, Name: svc.Name, Path: &path, Port: &svcPort},
					},
					ConversionReviewVersions: []string{"v1", "v1beta1"},
				},
			},
		},
	}
	crd, clients := createCRD(ctx, t, srv, crd, ns)
	// waitWebhookConversionReady: a stub object created at v2 converts.
	waitFor(t, 30*time.Second, "webhook conversion ready", func() (bool, error) {
		stub := &unstructured.Unstructured{Object: map[string]any{"kind": "E2eTestCrd", "apiVersion": "stable.example.com/v2", "metadata": map[string]any{"name": "stub"}}}
		if _, err := clients["v2"].Create(ctx, stub, metav1.CreateOptions{}); err != nil {
			return false, err
		}
		return true, clients["v2"].Delete(ctx, "stub", metav1.DeleteOptions{})
	})
	return crd, clients
}

func TestConversionWebhookConformanceCRv1ToCRv2(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	_, clients := conformanceCRD(t, srv, "v1")
	ctx := testContext(t, time.Minute)
	cr := &unstructured.Unstructured{Object: map[string]any{
		"kind": "E2eTestCrd", "apiVersion": "stable.example.com/v1",
		"metadata": map[string]any{"name": "cr-instance-1"}, "hostPort": "localhost:8080",
	}}
	if _, err := clients["v1"].Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v2, err := clients["v2"].Get(ctx, "cr-instance-1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting v2 of the custom resource: %v", err)
	}
	verifyV2Object(t, v2)
}

func TestConversionWebhookConformanceNonHomogeneousList(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	crd, clients := conformanceCRD(t, srv, "v1")
	ctx := testContext(t, time.Minute)
	newCR := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"kind": "E2eTestCrd", "apiVersion": "stable.example.com/v1",
			"metadata": map[string]any{"name": name}, "hostPort": "localhost:8080",
		}}
	}
	if _, err := clients["v1"].Create(ctx, newCR("cr-instance-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// cr-instance-1 is stored at v1; now v2 is the storage version.
	ext := apiextensionsclient.NewForConfigOrDie(srv.Config)
	waitFor(t, 30*time.Second, "storage version v2", func() (bool, error) {
		cur, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cur.Spec.Versions[0].Storage, cur.Spec.Versions[1].Storage = false, true
		_, err = ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, cur, metav1.UpdateOptions{})
		return err == nil, err
	})
	// Storage version changes are not instant: retry the create, as
	// upstream does.
	var err error
	for range 5 {
		if _, err = clients["v1"].Create(ctx, newCR("cr-instance-2"), metav1.CreateOptions{}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"v1", "v2"} {
		list, err := clients[v].List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list at %s: %v", v, err)
		}
		if len(list.Items) != 2 {
			t.Fatalf("list at %s has %d items, want 2", v, len(list.Items))
		}
		for i := range list.Items {
			if v == "v1" {
				verifyV1Object(t, &list.Items[i])
			} else {
				verifyV2Object(t, &list.Items[i])
			}
		}
	}
}

func verifyV1Object(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	if obj.GetAPIVersion() != "stable.example.com/v1" || obj.Object["hostPort"] != "localhost:8080" || obj.Object["host"] != nil || obj.Object["port"] != nil {
		t.Errorf("not the v1 object: %v", obj.Object)
	}
}

func verifyV2Object(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	if obj.GetAPIVersion() != "stable.example.com/v2" || obj.Object["hostPort"] != nil || obj.Object["host"] != "localhost" || obj.Object["port"] != "8080" {
		t.Errorf("not the v2 object: %v", obj.Object)
	}
}
