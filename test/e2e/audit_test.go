package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// auditEvent is the part of an audit.k8s.io/v1 Event the tests read.
type auditEvent struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Level      string `json:"level"`
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	SourceIPs        []string `json:"sourceIPs"`
	UserAgent        string   `json:"userAgent"`
	ImpersonatedUser *struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"impersonatedUser"`
	ObjectRef *struct {
		Resource, Namespace, Name, APIVersion string
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code   int    `json:"code"`
		Reason string `json:"reason"`
	} `json:"responseStatus"`
	RequestObject            json.RawMessage   `json:"requestObject"`
	ResponseObject           json.RawMessage   `json:"responseObject"`
	RequestReceivedTimestamp string            `json:"requestReceivedTimestamp"`
	StageTimestamp           string            `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations"`
}

// readAuditLog decodes every complete line of the log; each must be an
// event.
func readAuditLog(t *testing.T, path string) ([]auditEvent, string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var evs []auditEvent
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit log line %q: %v", sc.Text(), err)
		}
		evs = append(evs, ev)
	}
	return evs, string(data)
}

const e2eAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["/readyz*", "/healthz*", "/livez*"]
- level: None
  resources: [{group: "", resources: [events]}]
- level: Metadata
  verbs: [get, list, watch]
- level: RequestResponse
  resources: [{group: "", resources: [configmaps]}]
# Everything else, secrets included, at RequestResponse: secrets must
# still be logged at Metadata, as no rule names them.
- level: RequestResponse
`

// endpointsWarning is what kubectl prints for requests to core/v1
// Endpoints, deprecated upstream since 1.33.
const endpointsWarning = "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"

func TestAuditLog(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(e2eAuditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "audit", "audit.log")
	srv := startServerArgs(t, filepath.Join(dir, "data"), "--audit-policy-file", policy, "--audit-log-path", logPath,
		"--audit-log-maxsize", "1", "--audit-log-maxbackup", "2")

	// kubectl sends built-ins as protobuf; the log holds them as JSON.
	kubectl(t, srv, "create", "configmap", "audited", "--from-literal=colour=blue")
	kubectl(t, srv, "get", "configmap", "audited")
	kubectl(t, srv, "create", "secret", "generic", "hidden", "--from-literal=password=hunter2")
	kubectl(t, srv, "get", "secret", "hidden", "-o", "yaml")
	// Impersonation: bob may not list secrets, and the event names both.
	kubectlResult(srv, "get", "secrets", "--as", "bob", "--as-group", "auditors")
	kubectl(t, srv, "delete", "configmap", "audited")
	// A deprecated version is warned about, annotated and counted.
	if _, stderr, err := kubectlResult(srv, "get", "endpoints"); err != nil || !strings.Contains(stderr, endpointsWarning) {
		t.Errorf("kubectl get endpoints: %v, stderr %q, want the warning %q", err, stderr, endpointsWarning)
	}
	deprecated := map[string]string{"group": "", "version": "v1", "resource": "endpoints", "subresource": "", "removed_release": ""}
	if got := value(scrapeMetrics(t, srv), "apiserver_requested_deprecated_apis", deprecated); got != 1 {
		t.Errorf("apiserver_requested_deprecated_apis%v = %v, want 1", deprecated, got)
	}

	// A client's own Audit-ID is used and answered.
	req, _ := http.NewRequestWithContext(context.Background(), "GET", srv.URL+"/api/v1/namespaces/default/configmaps", nil)
	req.Header.Set("Audit-ID", "e2e-trace-42")
	client, err := rest.HTTPClientFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Audit-Id"); got != "e2e-trace-42" {
		t.Errorf("Audit-Id response header %q, want the client's e2e-trace-42", got)
	}

	// Refused requests carry an audit ID too.
	anon, err := rest.HTTPClientFor(rest.AnonymousClientConfig(srv.Config))
	if err != nil {
		t.Fatal(err)
	}
	resp, err = anon.Get(srv.URL + "/api/v1/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Audit-Id") == "" {
		t.Errorf("anonymous request: %d with Audit-Id %q, want 401 with an audit ID", resp.StatusCode, resp.Header.Get("Audit-Id"))
	}

	var evs []auditEvent
	var raw string
	find := func(verb, resource, name string) *auditEvent {
		for i := range evs {
			ev := &evs[i]
			if ev.Verb == verb && ev.Stage == "ResponseComplete" && ev.ObjectRef != nil && ev.ObjectRef.Resource == resource && (name == "" || ev.ObjectRef.Name == name) {
				return ev
			}
		}
		return nil
	}
	waitFor(t, 10*time.Second, "audit events of the kubectl commands", func() (bool, error) {
		evs, raw = readAuditLog(t, logPath)
		return find("delete", "configmaps", "audited") != nil && find("list", "endpoints", "") != nil && strings.Contains(raw, "e2e-trace-42"), nil
	})
	if ev := find("list", "endpoints", ""); ev.Annotations["k8s.io/deprecated"] != "true" {
		t.Errorf("kubectl get endpoints: event annotations %v, want k8s.io/deprecated true", ev.Annotations)
	}
	if ev := find("list", "configmaps", ""); ev != nil && ev.Annotations["k8s.io/deprecated"] != "" {
		t.Errorf("configmaps list annotated deprecated: %v", ev.Annotations)
	}

	create := find("create", "configmaps", "")
	if create == nil {
		t.Fatal("no event for kubectl create configmap")
	}
	if create.Kind != "Event" || create.APIVersion != "audit.k8s.io/v1" || create.Level != "RequestResponse" ||
		create.User.Username != "admin" || !strings.HasPrefix(create.UserAgent, "kubectl") || len(create.SourceIPs) == 0 ||
		create.ResponseStatus == nil || create.ResponseStatus.Code != 201 || create.AuditID == "" ||
		create.ObjectRef.Namespace != "default" || create.ObjectRef.APIVersion != "v1" || create.RequestReceivedTimestamp == "" ||
		create.Annotations["authorization.k8s.io/decision"] != "allow" {
		t.Errorf("create event: %+v", create)
	}
	if !strings.Contains(string(create.RequestObject), `"colour":"blue"`) || !strings.Contains(string(create.ResponseObject), `"resourceVersion"`) {
		t.Errorf("create event objects: request %s response %s", create.RequestObject, create.ResponseObject)
	}
	if get := find("get", "configmaps", "audited"); get == nil || get.Level != "Metadata" || get.ResponseObject != nil {
		t.Errorf("get event %+v, want Metadata without objects", get)
	}
	for _, ev := range evs {
		if ev.Stage == "RequestReceived" {
			t.Errorf("omitted stage RequestReceived logged: %+v", ev)
		}
		if ev.ObjectRef != nil && ev.ObjectRef.Resource == "events" {
			t.Errorf("events are at level None, yet logged: %+v", ev)
		}
	}
	if ev := find("create", "secrets", ""); ev == nil || ev.Level != "Metadata" {
		t.Errorf("secret create event %+v, want Metadata", ev)
	}
	// "hunter2" base64-encoded: neither appears anywhere in the log.
	if strings.Contains(raw, "aHVudGVyMg==") || strings.Contains(raw, "hunter2") {
		t.Error("the secret's data is in the audit log")
	}
	var impersonated *auditEvent
	for i, ev := range evs {
		if ev.Verb == "list" && ev.ObjectRef != nil && ev.ObjectRef.Resource == "secrets" && ev.ImpersonatedUser != nil {
			impersonated = &evs[i]
		}
	}
	if impersonated == nil || impersonated.User.Username != "admin" || impersonated.ImpersonatedUser.Username != "bob" ||
		!slices.Contains(impersonated.ImpersonatedUser.Groups, "auditors") || impersonated.ResponseStatus == nil || impersonated.ResponseStatus.Code != 403 ||
		impersonated.Annotations["authorization.k8s.io/decision"] != "forbid" {
		t.Errorf("kubectl --as bob: event %+v, want user admin impersonating bob (group auditors), 403, decision forbid", impersonated)
	}
	var traced bool
	for _, ev := range evs {
		traced = traced || ev.AuditID == "e2e-trace-42" && ev.Verb == "list"
	}
	if !traced {
		t.Error("no list event with the client's audit ID e2e-trace-42")
	}
}
