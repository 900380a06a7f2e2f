package builtin

import (
	"testing"
)

// TestServiceValidation checks a created Service against kube-apiserver
// 1.37.2's answers for the same body (compat's services-validation.txt):
// each case's spec after the defaults, and the whole error list wanted,
// in upstream's order, or "" when it is valid.
func TestServiceValidation(t *testing.T) {
	h := Services(nil, nil).Hooks.(serviceHooks)
	for _, tc := range []struct {
		name, spec, want string
	}{
		{line(), `{ports: [{name: http, port: 80, nodePort: 30100}]}`,
			"spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"},
		{line(), `{type: NodePort, ports: [{name: a, port: 53, nodePort: 30102}, {name: b, port: 53, protocol: UDP, nodePort: 30102}]}`, ""},
		{line(), `{ports: [{name: a, port: 80}, {name: b, port: 80, targetPort: 81}]}`,
			`spec.ports[1]: Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,"TargetPort":0,"NodePort":0}`},
		{line(), `{ports: [{name: a, port: 0, targetPort: 70000}, {name: b, port: 81, targetPort: "bad name!"}]}`,
			"[spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive, spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive, " +
				`spec.ports[1].targetPort: Invalid value: "bad name!": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)]`},
		{line(), `{ports: []}`, "spec.ports: Required value"},
		{line(), `{clusterIP: None, ports: []}`, ""},
		{line(), `{ports: [{port: 80, appProtocol: "not valid!"}]}`, `spec.ports[0].appProtocol: Invalid value: "not valid!": name part must consist of alphanumeric characters, '-', '_' or '.', ` +
			`and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{line(), `{sessionAffinity: Sticky, ports: [{port: 80}]}`,
			`spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None"`},
		{line(), `{sessionAffinity: ClientIP, sessionAffinityConfig: {clientIP: {timeoutSeconds: 86401}}, ports: [{port: 80}]}`,
			"spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 86401: must be greater than 0 and less than 86400"},
		{line(), `{sessionAffinity: None, sessionAffinityConfig: {clientIP: {timeoutSeconds: 60}}, ports: [{port: 80}]}`, ""},
		{line(), `{sessionAffinity: ClientIP, ports: [{port: 80}]}`, ""},
		{line(), `{externalIPs: [1.2.3, 0.0.0.0, 127.0.0.1, 169.254.1.1, 224.0.0.1, 10.1.2.3], ports: [{port: 80}]}`,
			`[spec.externalIPs[0]: Invalid value: "1.2.3": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff), ` +
				`spec.externalIPs[1]: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0), ` +
				`spec.externalIPs[2]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128), ` +
				`spec.externalIPs[3]: Invalid value: "169.254.1.1": may not be in the link-local range (169.254.0.0/16, fe80::/10), ` +
				`spec.externalIPs[4]: Invalid value: "224.0.0.1": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)]`},
		{line(), `{externalTrafficPolicy: Local, ports: [{port: 80}]}`,
			`spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services`},
		{line(), `{externalTrafficPolicy: Local, externalIPs: [10.1.2.4], ports: [{port: 80}]}`, ""},
		{line(), `{type: NodePort, healthCheckNodePort: 30200, ports: [{port: 80}]}`,
			"spec.healthCheckNodePort: Invalid value: 30200: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"},
		{line(), `{type: LoadBalancer, externalTrafficPolicy: Local, ports: [{port: 80}]}`, "spec.healthCheckNodePort: Required value"},
		{line(), `{internalTrafficPolicy: Nearby, ports: [{port: 80}]}`,
			`spec.internalTrafficPolicy: Unsupported value: "Nearby": supported values: "Cluster", "Local"`},
		{line(), `{trafficDistribution: PreferSameZone, ports: [{port: 80}]}`, ""},
		{line(), `{loadBalancerClass: example.com/lb, ports: [{port: 80}]}`,
			"spec.loadBalancerClass: Forbidden: may only be used when `type` is 'LoadBalancer'"},
		{line(), `{allocateLoadBalancerNodePorts: true, ports: [{port: 80}]}`,
			"spec.allocateLoadBalancerNodePorts: Forbidden: may only be used when `type` is 'LoadBalancer'"},
		{line(), `{type: NodePort, clusterIP: None, ports: [{port: 80}]}`,
			`spec.clusterIPs[0]: Invalid value: "None": may not be set to 'None' for NodePort services`},
		{line(), `{type: ExternalName, externalName: example.com., clusterIP: 10.0.0.77, ipFamilies: [IPv4]}`,
			"[spec.clusterIPs: Forbidden: may not be set for ExternalName services, spec.ipFamilies: Forbidden: may not be set for ExternalName services]"},
		{line(), `{type: ExternalName, externalName: example.com.}`, ""},
		{line(), `{ipFamilies: [IPv5, IPv5], ipFamilyPolicy: TripleStack, ports: [{port: 80}]}`,
			`[spec.ipFamilies[0]: Unsupported value: "IPv5": supported values: "IPv4", "IPv6", spec.ipFamilies[1]: Unsupported value: "IPv5": supported values: "IPv4", "IPv6", ` +
				`spec.ipFamilies[1]: Duplicate value: "IPv5", spec.ipFamilyPolicy: Unsupported value: "TripleStack": supported values: "PreferDualStack", "RequireDualStack", "SingleStack"]`},
		{line(), `{clusterIP: 10.0.0.80, clusterIPs: [10.0.0.81], ports: [{port: 80}]}`,
			"spec.clusterIPs: Invalid value: [\"10.0.0.81\"]: first value must match `clusterIP`"},
		{line(), `{clusterIP: None, clusterIPs: [None, 10.0.0.85], ports: [{port: 80}]}`,
			`spec.clusterIPs: Invalid value: ["None","10.0.0.85"]: 'None' must be the first and only value`},
	} {
		obj := decodeYAML(t, "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: "+tc.spec)
		h.PrepareForCreate(obj)
		errs := h.Validate(obj)
		if tc.want == "" {
			checkErrors(t, tc.name, errs.ToAggregate(), "")
			continue
		}
		if got := errs.ToAggregate(); got == nil || got.Error() != tc.want {
			t.Errorf("%s: errors\n%v\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

// TestServiceUpdateTransitions: an update keeps a load balancer's class
// and its health check node port, as upstream's.
func TestServiceUpdateTransitions(t *testing.T) {
	h := Services(nil, nil).Hooks.(serviceHooks)
	const old = `{type: LoadBalancer, loadBalancerClass: example.com/one, externalTrafficPolicy: Local, healthCheckNodePort: 30210, clusterIP: 10.0.0.9, ports: [{port: 80, nodePort: 30001}]}`
	for _, tc := range []struct {
		name, spec, want string
	}{
		{line(), `{type: LoadBalancer, loadBalancerClass: example.com/two, externalTrafficPolicy: Local, healthCheckNodePort: 30210, ports: [{port: 80, nodePort: 30001}]}`,
			`spec.loadBalancerClass: Invalid value: "example.com/two": may not change once set`},
		{line(), `{type: LoadBalancer, loadBalancerClass: example.com/one, externalTrafficPolicy: Local, healthCheckNodePort: 30211, ports: [{port: 80, nodePort: 30001}]}`,
			"spec.healthCheckNodePort: Forbidden: field is immutable"},
		{line(), `{type: LoadBalancer, loadBalancerClass: example.com/one, externalTrafficPolicy: Local, healthCheckNodePort: 30210, ports: [{port: 81, nodePort: 30001}]}`, ""},
	} {
		was := decodeYAML(t, "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: "+old)
		obj := decodeYAML(t, "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: "+tc.spec)
		h.PrepareForCreate(was)
		h.PrepareForUpdate(obj, was)
		got := h.ValidateUpdate(obj, was).ToAggregate()
		if tc.want == "" {
			checkErrors(t, tc.name, got, "")
		} else if got == nil || got.Error() != tc.want {
			t.Errorf("%s: errors\n%v\nwant\n%s", tc.name, got, tc.want)
		}
	}
}
