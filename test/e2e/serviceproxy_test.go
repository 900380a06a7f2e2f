package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
)

// hostIP is a unicast address of this machine that is not loopback nor
// link-local: services/proxy forwards only to such pod IPs. The test is
// skipped on a machine that has none.
func hostIP(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var v6 net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() {
			if n.IP.To4() != nil {
				return n.IP
			}
			if v6 == nil {
				v6 = n.IP
			}
		}
	}
	if v6 == nil {
		t.Skip("this machine has no non-loopback unicast address for a backend that services/proxy may reach")
	}
	return v6
}

// echoUpgraded switches protocols to "echo": it sends back each line.
func echoUpgraded(w http.ResponseWriter) {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	rw.Flush()
	for {
		line, err := rw.ReadString('\n')
		if err != nil {
			return
		}
		rw.WriteString(line)
		rw.Flush()
	}
}

// proxied is what the backend saw of a request.
type proxied struct {
	Method, Path, Query, ForwardedURI string
	Authorized                        bool  // an Authorization header reached it
	Impersonated                      bool  // an Impersonate-User header reached it
	Length                            int64 // of the body
}

// TestServiceProxy reaches a Service's backend, an HTTP server on an
// address of this machine, through services/proxy: with kubectl get --raw
// and client-go's ProxyGet, by port number and name, with the path and
// query the client gave; a POST of any size; an upgraded connection. As
// upstream, the backend is an EndpointSlice's ready endpoint whose pod
// has its address; an Endpoints object is not read. Admission policies
// see a CONNECT; RBAC authorizes the request's verb on services/proxy.
func TestServiceProxy(t *testing.T) {
	t.Parallel()
	ip := hostIP(t)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	backend := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "echo" {
			echoUpgraded(w)
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(proxied{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("X-Forwarded-Uri"), r.Header.Get("Authorization") != "", r.Header.Get("Impersonate-User") != "", n})
	}), ReadHeaderTimeout: 10 * time.Second}
	go backend.Serve(ln) //nolint:errcheck // ends with Close
	t.Cleanup(func() { backend.Close() })
	port := int32(ln.Addr().(*net.TCPAddr).Port)

	srv := startServer(t, t.TempDir())
	const ns = "proxied"
	kubectl(t, srv, "create", "namespace", ns)
	ctx := testContext(t, 3*time.Minute)
	waitServiceAccount(t, srv, ns)

	svc := func(name string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(port)}},
		}}
	}
	for _, name := range []string{"web", "legacy"} {
		if _, err := srv.Client.CoreV1().Services(ns).Create(ctx, svc(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod, err := srv.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP, pod.Status.PodIPs = ip.String(), []corev1.PodIP{{IP: ip.String()}}
	if _, err := srv.Client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	family := discoveryv1.AddressTypeIPv4
	if ip.To4() == nil {
		family = discoveryv1.AddressTypeIPv6
	}
	target := &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web-0"}
	if _, err := srv.Client.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: family,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: &port}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip.String()}, TargetRef: target}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The same backend in Endpoints alone, for legacy.
	dir := t.TempDir()
	endpoints := filepath.Join(dir, "endpoints.json")
	if err := os.WriteFile(endpoints, fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"legacy","namespace":%[1]q},
"subsets":[{"addresses":[{"ip":%[2]q,"targetRef":{"kind":"Pod","namespace":%[1]q,"name":"web-0"}}],"ports":[{"name":"http","port":%[3]d}]}]}`,
		ns, ip.String(), port), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectlLineWarned(t, srv, "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice", "create", "-f", endpoints)

	read := func(t *testing.T, raw []byte) proxied {
		t.Helper()
		var p proxied
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatalf("answer %s: %v", raw, err)
		}
		return p
	}
	for _, id := range []string{"web:80", "web:http"} {
		path := fmt.Sprintf("/api/v1/namespaces/%s/services/%s/proxy/hello/there?q=1", ns, id)
		got := read(t, []byte(kubectl(t, srv, "get", "--raw", path)))
		want := proxied{"GET", "/hello/there", "q=1", strings.TrimSuffix(path, "?q=1"), false, false, 0}
		if got != want {
			t.Errorf("%s: backend saw %+v, want %+v", id, got, want)
		}
	}

	// client-go names the port in the service's id: http:web:80.
	raw, err := srv.Client.CoreV1().Services(ns).ProxyGet("http", "web", "80", "a/b", map[string]string{"x": "y z"}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, raw); got.Path != "/a/b" || got.Query != "x=y+z" {
		t.Errorf("ProxyGet: backend saw %+v", got)
	}

	// A body goes with a POST.
	body := filepath.Join(dir, "body.json")
	if err := os.WriteFile(body, []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := read(t, []byte(kubectl(t, srv, "create", "--raw", "/api/v1/namespaces/"+ns+"/services/web:http/proxy/submit", "-f", body))); got.Method != "POST" || got.Path != "/submit" {
		t.Errorf("POST: backend saw %+v", got)
	}

	// A body beyond what the API takes (3 MiB) is the backend's to judge.
	big := bytes.Repeat([]byte("x"), 5<<20)
	raw, err = srv.Client.CoreV1().RESTClient().Post().AbsPath("/api/v1/namespaces", ns, "services/web:http/proxy/upload").Body(big).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, raw); got.Path != "/upload" || got.Length != int64(len(big)) {
		t.Errorf("a large POST: backend saw %+v", got)
	}

	// An upgraded connection (a WebSocket's) is spliced to the backend.
	t.Run("upgrade", func(t *testing.T) {
		tlsCfg, err := rest.TLSConfigFor(srv.Config)
		if err != nil {
			t.Fatal(err)
		}
		tlsCfg.NextProtos = []string{"http/1.1"}
		conn, err := tls.Dial("tcp", strings.TrimPrefix(srv.URL, "https://"), tlsCfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(conn, "GET /api/v1/namespaces/%s/services/web:80/proxy/up HTTP/1.1\r\nHost: crdserver\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n", ns)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusSwitchingProtocols {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("upgrade answered %s: %s", resp.Status, b)
		}
		fmt.Fprint(conn, "ping\n")
		if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
			t.Errorf("echoed %q, %v; want ping", line, err)
		}
	})

	// Refusals, in upstream's words.
	for _, tc := range []struct{ path, want string }{
		{"/services/legacy:80/proxy/", `no endpoints available for service \"legacy\"`},
		{"/services/web:8080/proxy/", `no service port 8080 found for service \"web\"`},
		{"/services/missing:80/proxy/", `services \"missing\" not found`},
		{"/services/ftp:web:80/proxy/", `invalid service request \"ftp:web:80\"`},
	} {
		stderr := kubectlFails(t, srv, "get", "--raw", "/api/v1/namespaces/"+ns+tc.path)
		if !strings.Contains(stderr, tc.want) && !strings.Contains(stderr, strings.ReplaceAll(tc.want, `\"`, `"`)) {
			t.Errorf("%s: kubectl said %s, want %s", tc.path, stderr, tc.want)
		}
	}

	// Admission sees a CONNECT of ServiceProxyOptions that names the path.
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: proxy-paths}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CONNECT], resources: [services/proxy]}]
  validations:
  - expression: "!has(object.path) || object.path != '/admin'"
    messageExpression: "request.name + ' may not reach ' + object.path"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: proxy-paths}
spec: {policyName: proxy-paths, validationActions: [Deny]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, srv, "create", "-f", policy)
	syncPolicies(t, srv)
	if stderr := kubectlFails(t, srv, "get", "--raw", "/api/v1/namespaces/"+ns+"/services/web:80/proxy/admin"); !strings.Contains(stderr, "web:80 may not reach /admin") {
		t.Errorf("a denied path: %s", stderr)
	}
	kubectl(t, srv, "get", "--raw", "/api/v1/namespaces/"+ns+"/services/web:80/proxy/public")
	kubectl(t, srv, "delete", "-f", policy)

	// RBAC: get on services/proxy lets jane read, not post.
	path := "/api/v1/namespaces/" + ns + "/services/web:80/proxy/private"
	if stderr := kubectlFails(t, srv, "get", "--raw", path, "--as", "jane"); !strings.Contains(stderr, `cannot get resource "services/proxy"`) {
		t.Errorf("jane without a role: %s", stderr)
	}
	kubectl(t, srv, "create", "role", "proxier", "-n", ns, "--verb=get", "--resource=services/proxy")
	kubectl(t, srv, "create", "rolebinding", "proxier", "-n", ns, "--role=proxier", "--user=jane")
	waitFor(t, 30*time.Second, "jane may get services/proxy", func() (bool, error) {
		_, _, err := kubectlResult(srv, "get", "--raw", path, "--as", "jane")
		return err == nil, nil
	})
	// The client's credentials stay with the server: kubectl sends the
	// token beside its client certificate, which authenticates it.
	if got := read(t, []byte(kubectl(t, srv, "get", "--raw", path, "--as", "jane", "--token", "not-for-the-backend"))); got.Path != "/private" || got.Authorized || got.Impersonated {
		t.Errorf("jane: backend saw %+v, want no Authorization or Impersonate-User header", got)
	}
	if stderr := kubectlFails(t, srv, "create", "--raw", path, "-f", body, "--as", "jane"); !strings.Contains(stderr, `cannot create resource "services/proxy"`) {
		t.Errorf("jane's POST: %s", stderr)
	}
}
