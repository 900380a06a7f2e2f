package podwarnings

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// template decodes a pod template from JSON, as the handler's objects
// reach the hooks.
func template(t *testing.T, s string) *corev1.PodTemplateSpec {
	t.Helper()
	pt := new(corev1.PodTemplateSpec)
	if err := json.Unmarshal([]byte(s), pt); err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
	return pt
}

func TestTemplate(t *testing.T) {
	for _, tc := range []struct {
		name, template string
		want           []string
	}{
		{
			name:     "plain",
			template: `{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":80,"protocol":"TCP"}]}]}}`,
		},
		{
			name: "deprecated node labels",
			template: `{"spec":{"nodeSelector":{"kubernetes.io/os":"linux","beta.kubernetes.io/os":"linux","beta.kubernetes.io/arch":"amd64"},
				"affinity":{"nodeAffinity":{
					"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"failure-domain.beta.kubernetes.io/zone","operator":"In","values":["a"]}]}]},
					"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"preference":{"matchExpressions":[{"key":"node-role.kubernetes.io/master","operator":"In","values":["ok","not ok"]}]}}]}},
				"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"failure-domain.beta.kubernetes.io/region","whenUnsatisfiable":"DoNotSchedule"}]}}`,
			want: []string{
				`spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" instead`,
				`spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`,
				`spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
				`spec.template.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].key: node-role.kubernetes.io/master is use "node-role.kubernetes.io/control-plane" instead`,
				`spec.template.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values[1]: not ok is invalid, a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
				`spec.template.spec.topologySpreadConstraints[0].topologyKey: failure-domain.beta.kubernetes.io/region is deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
				`spec.template.spec.topologySpreadConstraints[0].labelSelector: a null labelSelector results in matching no pod`,
			},
		},
		{
			name: "annotations",
			template: `{"metadata":{"annotations":{
					"security.alpha.kubernetes.io/sysctls":"a=b",
					"scheduler.alpha.kubernetes.io/critical-pod":"",
					"seccomp.security.alpha.kubernetes.io/pod":"runtime/default",
					"container.seccomp.security.alpha.kubernetes.io/c":"runtime/default",
					"container.seccomp.security.alpha.kubernetes.io/d":"runtime/default",
					"container.apparmor.security.beta.kubernetes.io/c":"runtime/default",
					"container.apparmor.security.beta.kubernetes.io/d":"runtime/default",
					"container.apparmor.security.beta.kubernetes.io/e":"unconfined"}},
				"spec":{"securityContext":{"appArmorProfile":{"type":"RuntimeDefault"}},
					"initContainers":[{"name":"e","image":"i"}],
					"containers":[{"name":"c","image":"i"},{"name":"d","image":"i","securityContext":{"seccompProfile":{"type":"RuntimeDefault"}}}]}}`,
			want: []string{
				`spec.template.metadata.annotations[scheduler.alpha.kubernetes.io/critical-pod]: non-functional in v1.16+; use the "priorityClassName" field instead`,
				`spec.template.metadata.annotations[security.alpha.kubernetes.io/sysctls]: non-functional in v1.11+; use the "sysctls" field instead`,
				`spec.template.metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: non-functional in v1.27+; use the "seccompProfile" field instead`,
				// e's AppArmor annotation is not the pod's profile; c's
				// and d's are.
				`spec.template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/e]: deprecated since v1.30; use the "appArmorProfile" field instead`,
				`spec.template.metadata.annotations[container.seccomp.security.alpha.kubernetes.io/c]: non-functional in v1.27+; use the "seccompProfile" field instead`,
			},
		},
		{
			name: "annotations with their fields",
			template: `{"metadata":{"annotations":{
					"seccomp.security.alpha.kubernetes.io/pod":"runtime/default",
					"container.apparmor.security.beta.kubernetes.io/c":"localhost/p"}},
				"spec":{"securityContext":{"seccompProfile":{"type":"RuntimeDefault"}},
					"containers":[{"name":"c","image":"i","securityContext":{"appArmorProfile":{"type":"Localhost","localhostProfile":"q"}}}]}}`,
		},
		{
			name: "volumes",
			template: `{"spec":{"volumes":[
					{"name":"a","gitRepo":{"repository":"r"}},
					{"name":"b","cephfs":{"monitors":["m"]}},
					{"name":"c","ephemeral":{"volumeClaimTemplate":{"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1500m"},"limits":{"storage":"1.5"}}}}}},
					{"name":"d","configMap":{"name":"cm","items":[{"key":"k1","path":"p"},{"key":"k2","path":"p/q"},{"key":"k3","path":"p/"}]}},
					{"name":"e","secret":{"secretName":"s","items":[{"key":"k1","path":"x"},{"key":"k2","path":"xy"}]}},
					{"name":"f","projected":{"sources":[{},
						{"configMap":{"name":"cm","items":[{"key":"k","path":"token"}]}},
						{"serviceAccountToken":{"path":"token"}},
						{"downwardAPI":{"items":[{"path":"token/x","fieldRef":{"fieldPath":"metadata.name"}}]}}]}},
					{"name":"g","downwardAPI":{"items":[{"path":"n","fieldRef":{"fieldPath":"metadata.name"}},{"path":"n","fieldRef":{"fieldPath":"metadata.namespace"}}]}},
					{"name":"h","projected":{"sources":[{"serviceAccountToken":{"path":"t"}},{"serviceAccountToken":{"path":"t/"}},{}]}}]}}`,
			want: []string{
				`spec.template.spec.volumes[0].gitRepo: deprecated in v1.11, and disabled by default in v1.33+`,
				`spec.template.spec.volumes[1].cephfs: deprecated in v1.28, non-functional in v1.31+`,
				`spec.template.spec.volumes[2].ephemeral.volumeClaimTemplate.spec.resources.requests[storage]: fractional byte value "1500m" is invalid, must be an integer`,
				`spec.template.spec.volumes[2].ephemeral.volumeClaimTemplate.spec.resources.limits[storage]: fractional byte value "1500m" is invalid, must be an integer`,
				`volume "d" (ConfigMap "cm"): overlapping paths: "p/q" with "p"`,
				`volume "d" (ConfigMap "cm"): overlapping paths: "p" with "p"`,
				`volume "d" (ConfigMap "cm"): overlapping paths: "p" with "p/q"`,
				`volume "f" (Projected) has no sources provided`,
				`volume "f" (Projected): overlapping paths: "token" (ServiceAccountToken) with "token" (ConfigMap "cm")`,
				`volume "f" (Projected): overlapping paths: "token/x" (DownwardAPI) with "token" (ConfigMap "cm")`,
				`volume "f" (Projected): overlapping paths: "token/x" (DownwardAPI) with "token" (ServiceAccountToken)`,
				`volume "g" (DownwardAPI): overlapping paths: "n" with "n"`,
				// An empty source after a clash is warned of after it.
				`volume "h" (Projected): overlapping paths: "t" (ServiceAccountToken) with "t" (ServiceAccountToken)`,
				`volume "h" (Projected) has no sources provided`,
			},
		},
		{
			name: "host aliases, pull secrets, overhead, grace period, DNS",
			template: `{"spec":{
				"hostAliases":[{"ip":"10.0.0.1"},{"ip":"010.0.0.1"},{"ip":"10.0.0.1"}],
				"imagePullSecrets":[{"name":"a"},{"name":""},{"name":"a"},{"name":""}],
				"overhead":{"memory":"100m","ephemeral-storage":"1k","cpu":"100m"},
				"terminationGracePeriodSeconds":-1,
				"dnsConfig":{"nameservers":["1.2.3.4","2001:DB8::1","::ffff:1.2.3.4"]}}}`,
			want: []string{
				`spec.template.spec.hostAliases[2].ip: duplicate ip "10.0.0.1"`,
				`spec.template.spec.imagePullSecrets[2].name: duplicate name "a"`,
				`spec.template.spec.imagePullSecrets[3].name: duplicate name ""`,
				`spec.template.spec.imagePullSecrets[1].name: invalid empty name ""`,
				`spec.template.spec.imagePullSecrets[3].name: invalid empty name ""`,
				`spec.template.spec.overhead[memory]: fractional byte value "100m" is invalid, must be an integer`,
				`spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1`,
				`spec.template.spec.dnsConfig.nameservers[1]: IPv6 address "2001:DB8::1" should be in RFC 5952 canonical format ("2001:db8::1")`,
				`spec.template.spec.dnsConfig.nameservers[2]: non-standard IP address "::ffff:1.2.3.4" is invalid: use "1.2.3.4"`,
				`spec.template.spec.hostAliases[1].ip: non-standard IP address "010.0.0.1" is invalid: use "10.0.0.1"`,
			},
		},
		{
			name: "containers",
			template: `{"spec":{
				"initContainers":[{"name":"i","image":"i","resources":{"requests":{"memory":"1.5"}}}],
				"containers":[{"name":"c","image":"i",
					"resources":{"limits":{"memory":"0.5","ephemeral-storage":"1m"},"requests":{"memory":"1Gi","ephemeral-storage":"1.5m"}},
					"env":[{"name":"A","value":"1"},{"name":"B","value":"x"},{"name":"A","value":"$(A)2"},{"name":"B","value":"$(B)"},
						{"name":"A","value":"3"},{"name":"A","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}]}]}}`,
			want: []string{
				`spec.template.spec.initContainers[0].resources.requests[memory]: fractional byte value "1500m" is invalid, must be an integer`,
				`spec.template.spec.containers[0].resources.limits[memory]: fractional byte value "500m" is invalid, must be an integer`,
				`spec.template.spec.containers[0].resources.limits[ephemeral-storage]: fractional byte value "1m" is invalid, must be an integer`,
				`spec.template.spec.containers[0].resources.requests[ephemeral-storage]: fractional byte value "1500u" is invalid, must be an integer`,
				`spec.template.spec.containers[0].env[3]: hides previous definition of "B", which may be dropped when using apply`,
				`spec.template.spec.containers[0].env[4]: hides previous definition of "A", which may be dropped when using apply`,
				`spec.template.spec.containers[0].env[5]: hides previous definition of "A", which may be dropped when using apply`,
			},
		},
		{
			name: "ports",
			template: `{"spec":{
				"initContainers":[{"name":"i","image":"i","restartPolicy":"Always","ports":[{"name":"http","containerPort":80,"protocol":"TCP"}]}],
				"containers":[{"name":"c","image":"i","ports":[
					{"containerPort":80,"protocol":"TCP"},
					{"name":"http","containerPort":81,"protocol":"TCP","hostIP":"1.2.3.4"},
					{"containerPort":82,"protocol":"TCP","hostPort":82},
					{"containerPort":82,"protocol":"TCP","hostPort":82,"hostIP":"1.2.3.4"},
					{"containerPort":82,"protocol":"UDP","hostPort":82}]},
					{"name":"d","image":"i","ports":[{"containerPort":82,"protocol":"TCP","hostPort":83}]}]}}`,
			want: []string{
				`spec.template.spec.containers[0].ports[0]: duplicate port definition with spec.template.spec.initContainers[0].ports[0]`,
				`spec.template.spec.containers[0].ports[1]: hostIP set without hostPort: {Name:http HostPort:0 ContainerPort:81 Protocol:TCP HostIP:1.2.3.4}`,
				`spec.template.spec.containers[0].ports[3]: dangerously ambiguous port definition with spec.template.spec.containers[0].ports[2]`,
				`spec.template.spec.containers[0].ports[1]: duplicate port name "http" with spec.template.spec.initContainers[0].ports[0], services and probes that select ports by name will use spec.template.spec.initContainers[0].ports[0]`,
			},
		},
		{
			name: "overlapping host ports",
			template: `{"spec":{"containers":[{"name":"c","image":"i","ports":[
					{"containerPort":82,"protocol":"TCP","hostPort":82},
					{"containerPort":82,"protocol":"TCP"}]}]}}`,
			want: []string{
				`spec.template.spec.containers[0].ports[1]: overlapping port definition with spec.template.spec.containers[0].ports[0]`,
			},
		},
		{
			name: "pod affinity",
			template: `{"spec":{"affinity":{
				"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"topologyKey":"k"},{"topologyKey":"k","labelSelector":{}}]},
				"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"podAffinityTerm":{"topologyKey":"k"}}]}}}}`,
			want: []string{
				`spec.template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector: a null labelSelector results in matching no pod`,
				`spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.labelSelector: a null labelSelector results in matching no pod`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Template(field.NewPath("spec", "template"), template(t, tc.template))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// A PodTemplate's template is at "template", a CronJob's deeper.
func TestTemplatePath(t *testing.T) {
	pt := template(t, `{"spec":{"nodeSelector":{"beta.kubernetes.io/os":"linux"}}}`)
	for path, want := range map[*field.Path]string{
		field.NewPath("template"):                                `template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`,
		field.NewPath("spec", "jobTemplate", "spec", "template"): `spec.jobTemplate.spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`,
	} {
		if diff := cmp.Diff([]string{want}, Template(path, pt)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", path, diff)
		}
	}
}

func TestClaimSpec(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		{name: "whole", spec: `{"resources":{"requests":{"storage":"1Gi"},"limits":{"storage":"2Gi"}}}`},
		{name: "none", spec: `{}`},
		{
			name: "fractional",
			spec: `{"resources":{"requests":{"storage":"0.5"},"limits":{"storage":"1100m"}}}`,
			want: []string{
				`p.resources.requests[storage]: fractional byte value "500m" is invalid, must be an integer`,
				`p.resources.limits[storage]: fractional byte value "1100m" is invalid, must be an integer`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := new(corev1.PersistentVolumeClaimSpec)
			if err := json.Unmarshal([]byte(tc.spec), s); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ClaimSpec(field.NewPath("p"), s)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIPAndCIDR(t *testing.T) {
	p := field.NewPath("f")
	for _, tc := range []struct {
		got  []string
		want []string
	}{
		{IP(p, "1.2.3.4"), nil},
		{IP(p, "not an IP"), nil},
		{IP(p, "01.2.3.4"), []string{`f: non-standard IP address "01.2.3.4" is invalid: use "1.2.3.4"`}},
		{CIDR(p, "10.0.0.0/8"), nil},
		{CIDR(p, "nonsense"), nil},
		{CIDR(p, "10.0.0.1/8"), []string{`f: CIDR value "10.0.0.1/8" is ambiguous in this context (should be "10.0.0.0/8" or "10.0.0.1/32"?)`}},
	} {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	}
}
