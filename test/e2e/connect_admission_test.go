package e2e

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestConnectAdmission: webhooks see a pod's exec, attach, portforward
// and proxy, and nodes/proxy, as kube-apiserver sends them: a CONNECT of
// the subresource's options, decoded from the query, with oldObject null
// and the name as the request's path gives it, before the object is
// read; the options a mutating webhook leaves are those the request is
// answered with. A dry run is refused before any webhook is called.
func TestConnectAdmission(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	hook := startAdmissionWebhook(t)
	const ns = "connected"
	kubectl(t, srv, "create", "namespace", ns)
	ctx := testContext(t, 3*time.Minute)
	waitServiceAccount(t, srv, ns)
	if _, err := srv.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "duo"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}, {Name: "side", Image: "side:1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The mutating webhook names the container "ghost" is not.
	hook.handle("/mutate", func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if objectOf(req.Object.Raw)["container"] == "ghost" {
			return jsonPatch(`[{"op": "replace", "path": "/container", "value": "side"}]`)
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	hook.handle("/validate", allow)
	rules := `  rules:
  - apiGroups: [""]
    apiVersions: [v1]
    operations: [CONNECT]
    resources: [pods/exec, pods/attach, pods/portforward, pods/proxy, pods/log, nodes/proxy]
`
	registerWebhooks(t, srv, webhookConfig("MutatingWebhookConfiguration", "connect-mutate.example.com", hook.URL+"/mutate", hook.CABundle, rules)+
		webhookConfig("ValidatingWebhookConfiguration", "connect-validate.example.com", hook.URL+"/validate", hook.CABundle, rules))

	for _, tc := range []struct {
		path, answer string
		// what the validating webhook sees: the subresource, its
		// options' kind, the name, the namespace and the options.
		sub, kind, name, namespace, object string
	}{
		{"/api/v1/namespaces/" + ns + "/pods/duo/exec?command=ls&command=-l&container=ghost&stdin=true",
			"pod duo does not have a host assigned",
			"exec", "PodExecOptions", "duo", ns, `{"apiVersion":"v1","command":["ls","-l"],"container":"side","kind":"PodExecOptions","stdin":true}`},
		{"/api/v1/namespaces/" + ns + "/pods/missing/attach?stdout=1&container=ghost",
			`pods "missing" not found`,
			"attach", "PodAttachOptions", "missing", ns, `{"apiVersion":"v1","container":"side","kind":"PodAttachOptions","stdout":true}`},
		{"/api/v1/namespaces/" + ns + "/pods/duo/portforward?ports=80,443&ports=22",
			"pod duo does not have a host assigned",
			"portforward", "PodPortForwardOptions", "duo", ns, `{"apiVersion":"v1","kind":"PodPortForwardOptions","ports":[80,443,22]}`},
		{"/api/v1/namespaces/" + ns + "/pods/duo:8080/proxy/a//b?path=/x",
			"address not allowed",
			"proxy", "PodProxyOptions", "duo:8080", ns, `{"apiVersion":"v1","kind":"PodProxyOptions","path":"/a//b"}`},
		{"/api/v1/nodes/https:n1:10250/proxy/metrics",
			`nodes "n1" not found`,
			"proxy", "NodeProxyOptions", "https:n1:10250", "", `{"apiVersion":"v1","kind":"NodeProxyOptions","path":"/metrics"}`},
	} {
		before := len(hook.received("/validate"))
		if stderr := kubectlFails(t, srv, "get", "--raw", tc.path); !strings.Contains(stderr, tc.answer) {
			t.Errorf("%s: %s, want %q", tc.path, stderr, tc.answer)
		}
		dry := tc.path + "?dryRun=All"
		if strings.Contains(tc.path, "?") {
			dry = tc.path + "&dryRun=All"
		}
		if stderr := kubectlFails(t, srv, "get", "--raw", dry); !strings.Contains(stderr, "dryRun is not supported") {
			t.Errorf("%s with dryRun: %s", tc.path, stderr)
		}
		got := hook.received("/validate")
		if len(got) != before+1 {
			t.Errorf("%s: the validating webhook saw %d requests, want 1", tc.path, len(got)-before)
			continue
		}
		r := got[before]
		resource := "pods"
		if tc.kind == "NodeProxyOptions" {
			resource = "nodes"
		}
		kind := metav1.GroupVersionKind{Version: "v1", Kind: tc.kind}
		gvr := metav1.GroupVersionResource{Version: "v1", Resource: resource}
		if r.Operation != admissionv1.Connect || r.Kind != kind || r.RequestKind == nil || *r.RequestKind != kind ||
			r.Resource != gvr || r.RequestResource == nil || *r.RequestResource != gvr || r.SubResource != tc.sub || r.RequestSubResource != tc.sub ||
			r.Name != tc.name || r.Namespace != tc.namespace || r.UserInfo.Username == "" || (r.DryRun != nil && *r.DryRun) {
			t.Errorf("%s: the webhook saw %s %v (asked %v) %v/%s (asked %v/%s) %s/%s by %q, dryRun %v",
				tc.path, r.Operation, r.Kind, r.RequestKind, r.Resource, r.SubResource, r.RequestResource, r.RequestSubResource, r.Namespace, r.Name, r.UserInfo.Username, r.DryRun)
		}
		var obj, want map[string]any
		if err := json.Unmarshal(r.Object.Raw, &obj); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tc.object), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(obj, want) || len(r.OldObject.Raw) != 0 || len(r.Options.Raw) != 0 {
			t.Errorf("%s: the webhook saw the object %s, oldObject %s, options %s; want %s, none, none", tc.path, r.Object.Raw, r.OldObject.Raw, r.Options.Raw, tc.object)
		}
	}
	// A pod's log is read, not connected to: no webhook sees it.
	before := len(hook.received("/validate"))
	kubectl(t, srv, "get", "--raw", "/api/v1/namespaces/"+ns+"/pods/duo/log?container=app")
	if n := len(hook.received("/validate")) - before; n != 0 {
		t.Errorf("the webhook saw %d requests for a pod's log", n)
	}
}
