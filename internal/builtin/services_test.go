package builtin

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func decodeYAML(t *testing.T, y string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(y), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// checkErrors fails the case unless got is nil when want is "", or else
// contains want.
func checkErrors(t *testing.T, name string, got error, want string) {
	t.Helper()
	switch {
	case want == "" && got != nil:
		t.Errorf("%s: refused: %v", name, got)
	case want != "" && (got == nil || !strings.Contains(got.Error(), want)):
		t.Errorf("%s: errors %v, want %q", name, got, want)
	}
}

// line names a case by the line it is written on.
func line() string {
	_, _, l, _ := runtime.Caller(1)
	return "line " + strconv.Itoa(l)
}

func TestServiceDefaultsAndValidation(t *testing.T) {
	h := Services(nil, nil).Hooks.(serviceHooks)
	obj := decodeYAML(t, `
apiVersion: v1
kind: Service
metadata: {name: webhook, namespace: pizza-crd}
spec:
  ports: [{port: 443, targetPort: 8443}]
`)
	h.PrepareForCreate(obj)
	spec := obj["spec"].(map[string]any)
	port := spec["ports"].([]any)[0].(map[string]any)
	if spec["type"] != "ClusterIP" || spec["sessionAffinity"] != "None" || port["protocol"] != "TCP" || port["targetPort"] != int64(8443) {
		t.Errorf("defaults: %v", obj)
	}
	if errs := h.Validate(obj); len(errs) > 0 {
		t.Errorf("valid service refused: %v", errs)
	}
	for _, tc := range []struct {
		name, spec, want string
	}{
		{line(), `{}`, "spec.ports: Required value"},
		{line(), `{clusterIP: None}`, ""},
		{line(), `{type: ExternalName}`, "spec.externalName: Required value"},
		{line(), `{type: ExternalName, externalName: Not_A_Host}`, "spec.externalName: Invalid value"},
		{line(), `{type: Weird, ports: [{port: 1}]}`, `spec.type: Unsupported value: "Weird"`},
		{line(), `{ports: [{port: 0}]}`, "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"},
		{line(), `{ports: [{port: 1, name: a}, {port: 2}]}`, "spec.ports[1].name: Required value"},
		{line(), `{ports: [{port: 1, name: a}, {port: 2, name: a}]}`, `spec.ports[1].name: Duplicate value: "a"`},
		{line(), `{ports: [{port: 1, protocol: ICMP}]}`, `spec.ports[0].protocol: Unsupported value: "ICMP"`},
		{line(), `{clusterIP: 10.0.0.300, ports: [{port: 1}]}`, "spec.clusterIPs[0]: Invalid value"},
	} {
		obj := decodeYAML(t, "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: "+tc.spec)
		h.PrepareForCreate(obj)
		errs := h.Validate(obj)
		got := errs.ToAggregate()
		checkErrors(t, tc.name, got, tc.want)
	}
	if msgs := h.ValidateName("Not-A-Label", false); len(msgs) == 0 {
		t.Error("a name that is no DNS-1035 label was accepted")
	}
}

// Upstream defaults a Service's session affinity whatever its type, its
// internal traffic policy unless it is an ExternalName, its external
// traffic policy when it is reachable from outside (a node port, a load
// balancer, external IPs), and a load balancer's node ports.
func TestServiceDefaultsByType(t *testing.T) {
	h := Services(nil, nil).Hooks.(serviceHooks)
	for _, tc := range []struct {
		name, spec                                   string
		affinity, trafficPolicy, external, allocates any
	}{
		{line(), `{ports: [{port: 80}]}`, "None", "Cluster", nil, nil},
		{line(), `{type: ExternalName, externalName: example.com}`, "None", nil, nil, nil},
		{line(), `{type: ExternalName, externalName: example.com, sessionAffinity: ClientIP}`, "ClientIP", nil, nil, nil},
		{line(), `{type: NodePort, ports: [{port: 80}], internalTrafficPolicy: Local}`, "None", "Local", "Cluster", nil},
		{line(), `{type: NodePort, ports: [{port: 80}], externalTrafficPolicy: Local}`, "None", "Cluster", "Local", nil},
		{line(), `{type: LoadBalancer, ports: [{port: 80}]}`, "None", "Cluster", "Cluster", true},
		{line(), `{type: LoadBalancer, ports: [{port: 80}], allocateLoadBalancerNodePorts: false}`, "None", "Cluster", "Cluster", false},
		{line(), `{ports: [{port: 80}], externalIPs: [192.0.2.1]}`, "None", "Cluster", "Cluster", nil},
	} {
		obj := decodeYAML(t, `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: `+tc.spec+`}`)
		h.Default(obj)
		spec := obj["spec"].(map[string]any)
		if spec["sessionAffinity"] != tc.affinity || spec["internalTrafficPolicy"] != tc.trafficPolicy ||
			spec["externalTrafficPolicy"] != tc.external || spec["allocateLoadBalancerNodePorts"] != tc.allocates {
			t.Errorf("%s: sessionAffinity %v, internalTrafficPolicy %v, externalTrafficPolicy %v, allocateLoadBalancerNodePorts %v; want %v, %v, %v, %v", tc.name,
				spec["sessionAffinity"], spec["internalTrafficPolicy"], spec["externalTrafficPolicy"], spec["allocateLoadBalancerNodePorts"],
				tc.affinity, tc.trafficPolicy, tc.external, tc.allocates)
		}
	}
}

func TestEndpointsAndSlicesValidation(t *testing.T) {
	eh := Endpoints().Hooks.(endpointsHooks)
	eps := decodeYAML(t, `{apiVersion: v1, kind: Endpoints, metadata: {name: e}, subsets: [{addresses: [{ip: "10.0.0.300"}], ports: [{port: 70000}]}]}`)
	eh.PrepareForCreate(eps)
	if got := eh.Validate(eps).ToAggregate(); got == nil || !strings.Contains(got.Error(), "subsets[0].addresses[0].ip") || !strings.Contains(got.Error(), "subsets[0].ports[0].port") {
		t.Errorf("endpoints errors %v", got)
	}
	sh := EndpointSlices().Hooks.(endpointSliceHooks)
	for _, tc := range []struct{ name, body, want string }{
		{line(), `{addressType: IPv4, endpoints: [{addresses: ["10.0.0.1"]}], ports: [{port: 443}]}`, ""},
		{line(), `{endpoints: [{addresses: ["127.0.0.1"]}]}`, "addressType: Required value"},
		{line(), `{addressType: IPv4, endpoints: [{addresses: ["::1"]}]}`, `endpoints[0].addresses: Invalid value: "::1": must be an IPv4 address`},
		{line(), `{addressType: IPv4, endpoints: [{addresses: []}]}`, "endpoints[0].addresses: Required value"},
		{line(), `{addressType: IPv6, endpoints: [{addresses: ["::1"]}], ports: [{port: 0}]}`, "ports[0].port: Invalid value"},
	} {
		obj := decodeYAML(t, tc.body)
		obj["apiVersion"], obj["kind"], obj["metadata"] = "discovery.k8s.io/v1", "EndpointSlice", map[string]any{"name": "s"}
		sh.PrepareForCreate(obj)
		got := sh.Validate(obj).ToAggregate()
		checkErrors(t, tc.name, got, tc.want)
	}
}

func TestEndpointSliceDefaults(t *testing.T) {
	sh := EndpointSlices().Hooks.(endpointSliceHooks)
	obj := decodeYAML(t, `{addressType: IPv4, ports: [{port: 80}, {name: https, port: 443, protocol: UDP}]}`)
	sh.PrepareForCreate(obj)
	want := "[map[name: port:80 protocol:TCP] map[name:https port:443 protocol:UDP]]"
	if got := fmt.Sprint(obj["ports"]); got != want {
		t.Errorf("ports %s, want %s", got, want)
	}
}

func TestServiceTableRow(t *testing.T) {
	h := Services(nil, nil).Hooks.(serviceHooks)
	for _, tc := range []struct{ name, spec, want string }{
		{line(), `{clusterIP: 10.0.0.1, clusterIPs: [10.0.0.1], ports: [{name: https, port: 443, targetPort: 6443}]}`, "ClusterIP 10.0.0.1 <none> 443/TCP"},
		{line(), `{type: NodePort, clusterIPs: [10.0.0.9], ports: [{name: a, port: 80, nodePort: 30080}, {name: b, port: 53, protocol: UDP}]}`, "NodePort 10.0.0.9 <none> 80:30080/TCP,53/UDP"},
		{line(), `{type: LoadBalancer, clusterIPs: [10.0.0.9], ports: [{port: 80}]}`, "LoadBalancer 10.0.0.9 <pending> 80/TCP"},
		{line(), `{type: ExternalName, externalName: example.com}`, "ExternalName <none> example.com <none>"},
	} {
		obj := decodeYAML(t, "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: "+tc.spec)
		h.PrepareForCreate(obj)
		row := h.TableRow(obj)
		if got := strings.Join(strings.Fields(fmt.Sprintln(row[1:5]...)), " "); got != tc.want {
			t.Errorf("%s: cells %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A replacement keeps the Service's allocation where it leaves it out:
// the cluster IP, and with the same cluster IP its clusterIPs and IP
// families, as upstream's update does.
func TestServiceUpdateKeepsAllocation(t *testing.T) {
	h := Services(nil, nil).Hooks.(serviceHooks)
	old := decodeYAML(t, `{apiVersion: v1, kind: Service, metadata: {name: web},
  spec: {clusterIP: 10.0.0.77, clusterIPs: [10.0.0.77], ipFamilies: [IPv4], ipFamilyPolicy: SingleStack, ports: [{port: 80}]}}`)
	for _, body := range []string{
		`{apiVersion: v1, kind: Service, metadata: {name: web}, spec: {ports: [{port: 80}]}}`,
		`{apiVersion: v1, kind: Service, metadata: {name: web}, spec: {clusterIP: 10.0.0.77, ports: [{port: 80}]}}`,
	} {
		obj := decodeYAML(t, body)
		h.PrepareForUpdate(obj, old)
		spec := obj["spec"].(map[string]any)
		if fmt.Sprintf("%v %v %v %v", spec["clusterIP"], spec["clusterIPs"], spec["ipFamilies"], spec["ipFamilyPolicy"]) != "10.0.0.77 [10.0.0.77] [IPv4] SingleStack" {
			t.Errorf("%s: spec %v, want the allocation kept", body, spec)
		}
	}
}

// A changed cluster IP is refused naming the cluster IPs the update
// leaves, as upstream's validation names them.
func TestServiceClusterIPChange(t *testing.T) {
	h := Services(nil, nil).Hooks.(serviceHooks)
	for _, tc := range []struct {
		name, old, spec, want string
	}{
		{line(), `{clusterIP: None, clusterIPs: [None], ports: [{port: 80}]}`, `{clusterIP: 10.0.0.5, clusterIPs: [None], ports: [{port: 80}]}`,
			`spec.clusterIPs[0]: Invalid value: ["10.0.0.5"]: may not change once set`},
		{line(), `{clusterIP: 10.0.0.7, clusterIPs: [10.0.0.7], ports: [{port: 80}]}`, `{clusterIP: 10.0.0.8, clusterIPs: [10.0.0.8], ports: [{port: 80}]}`,
			`spec.clusterIPs[0]: Invalid value: ["10.0.0.8"]: may not change once set`},
		{line(), `{clusterIP: 10.0.0.7, clusterIPs: [10.0.0.7], ports: [{port: 80}]}`, `{clusterIP: 10.0.0.7, clusterIPs: [10.0.0.7], ports: [{port: 81}]}`, ""},
	} {
		old := decodeYAML(t, "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: "+tc.old)
		obj := decodeYAML(t, "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: "+tc.spec)
		h.PrepareForCreate(old)
		h.PrepareForUpdate(obj, old)
		checkErrors(t, tc.name, h.ValidateUpdate(obj, old).ToAggregate(), tc.want)
	}
}

// TestServiceSourceRanges checks a load balancer's source ranges against
// kube-apiserver 1.37's answers: spaces around a range are allowed, bits
// beyond the prefix and what is no CIDR are not, unless the stored
// Service has the range already; only a LoadBalancer may have them, or
// the legacy annotation.
func TestServiceSourceRanges(t *testing.T) {
	const lb = "spec: {type: LoadBalancer, ports: [{port: 80}], loadBalancerSourceRanges: "
	checkValidation(t, Services(nil, nil), []validateCase{
		{name: line(), obj: lb + "['10.0.0.0/8', ' 192.168.0.0/16 ']}"},
		{name: line(), obj: lb + "['10.0.0.1/8', '192.168.1.0/24', bogus]}", want: []string{
			`spec.LoadBalancerSourceRanges[0]: Invalid value: "10.0.0.1/8": must not have bits set beyond the prefix length`,
			`spec.LoadBalancerSourceRanges[2]: Invalid value: "bogus": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`}},
		{name: line(), old: lb + "['10.0.0.1/8']}", obj: lb + "['10.0.0.1/8', '10.1.0.1/16']}", want: []string{
			`spec.LoadBalancerSourceRanges[1]: Invalid value: "10.1.0.1/16": must not have bits set beyond the prefix length`}},
		{name: line(), obj: "spec: {ports: [{port: 80}], loadBalancerSourceRanges: ['10.0.0.0/8']}", want: []string{
			"spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'"}},
		{name: line(), obj: "metadata: {name: x, namespace: ns, annotations: {service.beta.kubernetes.io/load-balancer-source-ranges: '10.0.0.0/8, 10.0.0.1/8'}}\n" + lb + "[]}", want: []string{
			`metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]: Invalid value: "10.0.0.1/8": must not have bits set beyond the prefix length`}},
	})
}

// TestEndpointAddresses checks addresses against kube-apiserver 1.37's
// answers: an EndpointSlice's strictly (IPv6 in canonical form, IPv4
// without leading zeros or an IPv6 mapping), of its type, and no
// link-local one; an Endpoints' strictly too. A loopback address is
// allowed, unlike upstream: webhooks beside crdserver listen there.
func TestEndpointAddresses(t *testing.T) {
	checkValidation(t, EndpointSlices(), []validateCase{
		{name: line(), obj: "addressType: IPv6\nendpoints: [{addresses: [\"2001:db8:0::1\"]}, {addresses: [\"2001:DB8::2\"]}, {addresses: [\"2001:db8::3\"]}]", want: []string{
			`endpoints[0].addresses[0]: Invalid value: "2001:db8:0::1": must be in canonical form ("2001:db8::1")`,
			`endpoints[1].addresses[0]: Invalid value: "2001:DB8::2": must be in canonical form ("2001:db8::2")`}},
		{name: line(), obj: "addressType: IPv4\nendpoints: [{addresses: [\"010.000.000.001\"]}, {addresses: [\"10.0.0.1\"]}, {addresses: [\"::ffff:10.0.0.2\"]}, {addresses: [\"169.254.0.1\"]}, {addresses: [\"2001:db8::1\"]}, {addresses: [\"127.0.0.1\"]}]", want: []string{
			`endpoints[0].addresses[0]: Invalid value: "010.000.000.001": must not have leading 0s`,
			`endpoints[2].addresses[0]: Invalid value: "::ffff:10.0.0.2": must not be an IPv4-mapped IPv6 address`,
			`endpoints[3].addresses[0]: Invalid value: "169.254.0.1": may not be in the link-local range (169.254.0.0/16, fe80::/10)`,
			`endpoints[4].addresses: Invalid value: "2001:db8::1": must be an IPv4 address`}},
	})
	checkValidation(t, Endpoints(), []validateCase{
		{name: line(), obj: `subsets: [{addresses: [{ip: "010.0.0.1"}, {ip: "2001:db8:0::1"}, {ip: bogus}, {ip: "127.0.0.1"}], ports: [{port: 80}]}]`, want: []string{
			`subsets[0].addresses[0].ip: Invalid value: "010.0.0.1": must not have leading 0s`,
			`subsets[0].addresses[2].ip: Invalid value: "bogus": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
			`subsets[0].addresses[2].ip: Invalid value: "bogus": must be a valid IP address`}},
	})
}

// TestServiceStatusValidation checks status writes against kube-apiserver
// 1.37's answers: only a LoadBalancer has ingress points, whose IPs are
// checked strictly and modes defaulted, whose hostnames are DNS names.
func TestServiceStatusValidation(t *testing.T) {
	h := Services(nil, nil).Hooks.(serviceHooks)
	for _, tc := range []struct {
		name, typ, ingress string
		want               []string
	}{
		{line(), "ClusterIP", `[{ip: 1.2.3.4}]`, []string{"status.loadBalancer.ingress: Forbidden: may only be used when `spec.type` is 'LoadBalancer'"}},
		{line(), "ClusterIP", `[]`, nil},
		{line(), "LoadBalancer", `[{ip: 1.2.3.4}, {ip: 010.0.0.1}, {hostname: 1.2.3.4}, {hostname: x, ipMode: VIP}, {ip: 1.2.3.5, ipMode: Bogus}]`, []string{
			`status.loadBalancer.ingress[1].ip: Invalid value: "010.0.0.1": must not have leading 0s`,
			`status.loadBalancer.ingress[2].hostname: Invalid value: "1.2.3.4": must be a DNS name, not an IP address`,
			"status.loadBalancer.ingress[3].ipMode: Forbidden: may not be specified when `ip` is not set",
			`status.loadBalancer.ingress[4].ipMode: Unsupported value: "Bogus": supported values: "Proxy", "VIP"`}},
	} {
		spec := "{type: " + tc.typ + ", ports: [{port: 80}]}"
		old := decodeYAML(t, "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: ns}\nspec: "+spec)
		obj := decodeYAML(t, "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: ns}\nspec: "+spec+"\nstatus: {loadBalancer: {ingress: "+tc.ingress+"}}")
		h.Default(obj)
		var got []string
		for _, e := range h.ValidateStatusUpdate(obj, old) {
			got = append(got, e.Error())
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: errors:\n%s\nwant:\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}
