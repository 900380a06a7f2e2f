package builtin

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crdserver/crdserver/internal/registry"
)

// The warnings of each kind's writes, as the handler asks for them once
// a write passed validation: the objects are defaulted and carry the
// generation the handler gave them.
func TestWarnings(t *testing.T) {
	const (
		deployment = `{apiVersion: apps/v1, kind: Deployment, metadata: {name: %s, generation: %d},
  spec: {replicas: %d, selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}},
  spec: {nodeSelector: {beta.kubernetes.io/os: linux}, containers: [{name: c, image: i}]}}}}`
		osLabel = `spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`
		dots    = `metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]`
	)
	for _, tc := range []struct {
		name     string
		def      *registry.Definition
		old, obj string
		sub      string
		want     []string
	}{
		{
			name: "deployment create",
			def:  Deployments(),
			obj:  fmt.Sprintf(deployment, "a.b", 1, 1),
			want: []string{dots, osLabel},
		},
		{
			name: "deployment update keeping the spec",
			def:  Deployments(),
			old:  fmt.Sprintf(deployment, "a.b", 1, 1),
			obj:  fmt.Sprintf(deployment, "a.b", 1, 1),
		},
		{
			name: "deployment update of the spec",
			def:  Deployments(),
			old:  fmt.Sprintf(deployment, "a.b", 1, 1),
			obj:  fmt.Sprintf(deployment, "a.b", 2, 2),
			want: []string{osLabel},
		},
		{
			name: "deployment scale",
			def:  Deployments(),
			old:  fmt.Sprintf(deployment, "a.b", 1, 1),
			obj:  fmt.Sprintf(deployment, "a.b", 2, 2),
			sub:  "scale",
			want: []string{osLabel},
		},
		{
			name: "deployment status",
			def:  Deployments(),
			old:  fmt.Sprintf(deployment, "a.b", 1, 1),
			obj:  fmt.Sprintf(deployment, "a.b", 1, 1),
			sub:  "status",
		},
		{
			name: "replicaset create",
			def:  ReplicaSets(),
			obj:  `{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: rs}, spec: {selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {nodeSelector: {beta.kubernetes.io/os: linux}, containers: [{name: c, image: i}]}}}}`,
			want: []string{osLabel},
		},
		{
			name: "statefulset create",
			def:  StatefulSets(),
			obj:  fmt.Sprintf(statefulSetYAML, 1),
			want: []string{
				`spec.volumeClaimTemplates[0].resources.requests[storage]: fractional byte value "1500m" is invalid, must be an integer`,
				"spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended",
			},
		},
		{
			name: "statefulset update keeping the spec",
			def:  StatefulSets(),
			old:  fmt.Sprintf(statefulSetYAML, 1),
			obj:  fmt.Sprintf(statefulSetYAML, 1),
			want: []string{
				`spec.volumeClaimTemplates[0].Spec.resources.requests[storage]: fractional byte value "1500m" is invalid, must be an integer`,
				"spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended",
			},
		},
		{
			name: "daemonset update of the spec, not the template",
			def:  DaemonSets(),
			old:  fmt.Sprintf(daemonSetYAML, 1, "1"),
			obj:  fmt.Sprintf(daemonSetYAML, 2, "1"),
		},
		{
			name: "daemonset update of the template",
			def:  DaemonSets(),
			old:  fmt.Sprintf(daemonSetYAML, 1, "1"),
			obj:  fmt.Sprintf(daemonSetYAML, 2, "2"),
			want: []string{`spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1`},
		},
		{
			name: "job create",
			def:  Jobs(),
			obj: `{apiVersion: batch/v1, kind: Job, metadata: {name: j.k}, spec: {completionMode: Indexed, completions: 100001, parallelism: 10001,
  template: {spec: {restartPolicy: Never, containers: [{name: c, image: i, resources: {requests: {memory: 0.5}}}]}}}}`,
			want: []string{
				dots,
				"spec: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes fail",
				`spec.template.spec.containers[0].resources.requests[memory]: fractional byte value "500m" is invalid, must be an integer`,
			},
		},
		{
			name: "cronjob update with a time zone in the schedule",
			def:  CronJobs(),
			old:  fmt.Sprintf(cronJobYAML, 1),
			obj:  fmt.Sprintf(cronJobYAML, 2),
			want: []string{
				`spec.jobTemplate.spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector: a null labelSelector results in matching no pod`,
				"cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details",
			},
		},
		{
			name: "podtemplate create",
			def:  PodTemplates(),
			obj:  `{apiVersion: v1, kind: PodTemplate, metadata: {name: p.t}, template: {spec: {hostAliases: [{ip: 010.0.0.1}], containers: [{name: c, image: i}]}}}`,
			want: []string{`template.spec.hostAliases[0].ip: non-standard IP address "010.0.0.1" is invalid: use "10.0.0.1"`},
		},
		{
			name: "headless service",
			def:  Services(nil, nil),
			obj: `{apiVersion: v1, kind: Service, metadata: {name: s, annotations: {service.kubernetes.io/topology-aware-hints: auto}},
  spec: {type: ClusterIP, clusterIP: None, sessionAffinity: ClientIP, externalName: x, trafficDistribution: PreferClose, ports: [{port: 80}]}}`,
			want: []string{
				"annotation service.kubernetes.io/topology-aware-hints is deprecated, please use service.kubernetes.io/topology-mode instead",
				"spec.SessionAffinity is ignored for headless services",
				`spec.externalName is ignored when spec.type is not "ExternalName"`,
				`spec.trafficDistribution: "PreferClose" is deprecated; use "PreferSameZone"`,
			},
		},
		{
			name: "service with external IPs",
			def:  Services(nil, nil),
			obj:  `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: ExternalName, externalName: x, externalIPs: ["2001:DB8::1"]}}`,
			want: []string{
				`spec.externalIPs[0]: IPv6 address "2001:DB8::1" should be in RFC 5952 canonical format ("2001:db8::1")`,
				`spec.externalIPs is ignored when spec.type is "ExternalName"`,
			},
		},
		{
			name: "service status",
			def:  Services(nil, nil),
			old:  `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: LoadBalancer, ports: [{port: 80}]}}`,
			obj:  `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: LoadBalancer, ports: [{port: 80}]}, status: {loadBalancer: {ingress: [{hostname: h}, {ip: "::ffff:1.2.3.4"}]}}}`,
			sub:  "status",
			want: []string{`status.loadBalancer.ingress[1]: non-standard IP address "::ffff:1.2.3.4" is invalid: use "1.2.3.4"`},
		},
		{
			name: "endpoints",
			def:  Endpoints(),
			obj:  `{apiVersion: v1, kind: Endpoints, metadata: {name: e}, subsets: [{addresses: [{ip: 1.2.3.4}], notReadyAddresses: [{ip: "2001:DB8::1"}]}]}`,
			want: []string{`subsets[0].notReadyAddresses[0].ip: IPv6 address "2001:DB8::1" should be in RFC 5952 canonical format ("2001:db8::1")`},
		},
		{
			name: "endpoints of the controller",
			def:  Endpoints(),
			obj:  `{apiVersion: v1, kind: Endpoints, metadata: {name: e, labels: {endpoints.kubernetes.io/managed-by: endpoint-controller}}, subsets: [{addresses: [{ip: "2001:DB8::1"}]}]}`,
		},
		{
			name: "fqdn endpointslice create",
			def:  EndpointSlices(),
			obj:  `{apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: e}, addressType: FQDN, endpoints: [{addresses: [example.com]}]}`,
			want: []string{"spec.addressType: FQDN endpoints are deprecated"},
		},
		{
			name: "fqdn endpointslice update",
			def:  EndpointSlices(),
			old:  `{apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: e}, addressType: FQDN, endpoints: [{addresses: [example.com]}]}`,
			obj:  `{apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: e}, addressType: FQDN, endpoints: [{addresses: [example.com]}]}`,
		},
		{
			name: "tls secret",
			def:  Secrets(),
			obj:  `{apiVersion: v1, kind: Secret, metadata: {name: s}, type: kubernetes.io/tls, stringData: {tls.crt: cert, tls.key: key}}`,
			want: []string{"tls: failed to find any PEM data in certificate input"},
		},
		{
			name: "serviceaccount gaining the annotation",
			def:  ServiceAccounts(),
			old:  `{apiVersion: v1, kind: ServiceAccount, metadata: {name: s}}`,
			obj:  `{apiVersion: v1, kind: ServiceAccount, metadata: {name: s, annotations: {kubernetes.io/enforce-mountable-secrets: "true"}}}`,
			want: []string{"metadata.annotations[kubernetes.io/enforce-mountable-secrets]: deprecated in v1.32+; prefer separate namespaces to isolate access to mounted secrets"},
		},
		{
			name: "serviceaccount keeping the annotation",
			def:  ServiceAccounts(),
			old:  `{apiVersion: v1, kind: ServiceAccount, metadata: {name: s, annotations: {kubernetes.io/enforce-mountable-secrets: "true"}}}`,
			obj:  `{apiVersion: v1, kind: ServiceAccount, metadata: {name: s, annotations: {kubernetes.io/enforce-mountable-secrets: "true"}}}`,
		},
		{
			name: "resourcequota create",
			def:  ResourceQuotas(),
			obj:  `{apiVersion: v1, kind: ResourceQuota, metadata: {name: q}, spec: {hard: {cpu: "2", limits.cpu: "1", requests.memory: 1Gi, limits.memory: 2Gi, requests.storage: 3Gi, limits.storage: 2Gi}}}`,
			want: []string{
				"ResourceQuota cpu (2) should be less than limits.cpu (1)",
				"ResourceQuota requests.storage (3Gi) should be less than limits.storage (2Gi)",
			},
		},
		{
			name: "resourcequota update",
			def:  ResourceQuotas(),
			old:  `{apiVersion: v1, kind: ResourceQuota, metadata: {name: q}, spec: {hard: {requests.cpu: "2", limits.cpu: "1"}}}`,
			obj:  `{apiVersion: v1, kind: ResourceQuota, metadata: {name: q}, spec: {hard: {requests.cpu: "2", limits.cpu: "1"}}}`,
		},
		{
			name: "networkpolicy",
			def:  NetworkPolicies(),
			obj: `{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: np}, spec: {podSelector: {},
  egress: [{to: [{ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.1/16]}}]}]}}`,
			want: []string{`spec.egress[0].to[0].ipBlock.except[0]: CIDR value "10.1.0.1/16" is ambiguous in this context (should be "10.1.0.0/16" or "10.1.0.1/32"?)`},
		},
		{
			name: "ingress with the class annotation",
			def:  Ingresses(nil),
			obj:  `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: i, annotations: {kubernetes.io/ingress.class: x}}, spec: {defaultBackend: {service: {name: s, port: {number: 80}}}}}`,
			want: []string{`annotation "kubernetes.io/ingress.class" is deprecated, please use 'spec.ingressClassName' instead`},
		},
		{
			name: "ingress with the class annotation and field",
			def:  Ingresses(nil),
			obj:  `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: i, annotations: {kubernetes.io/ingress.class: x}}, spec: {ingressClassName: x, defaultBackend: {service: {name: s, port: {number: 80}}}}}`,
		},
		{
			name: "runtimeclass",
			def:  RuntimeClasses(),
			obj:  `{apiVersion: node.k8s.io/v1, kind: RuntimeClass, metadata: {name: r}, handler: h, scheduling: {nodeSelector: {beta.kubernetes.io/arch: amd64, kubernetes.io/os: linux}}}`,
			want: []string{`scheduling.nodeSelector: deprecated since v1.14; use "kubernetes.io/arch" instead`},
		},
		{
			name: "webhook rules",
			def:  MutatingWebhookConfigurations(),
			obj: `{apiVersion: admissionregistration.k8s.io/v1, kind: MutatingWebhookConfiguration, metadata: {name: w}, webhooks: [
  {name: a.example.com, rules: [{apiGroups: [""], resources: [pods]}]},
  {name: b.example.com, rules: [{apiGroups: ["*"], resources: [tokenreviews]},
    {apiGroups: [authentication.k8s.io, authorization.k8s.io], resources: [tokenreviews, subjectaccessreviews, tokenreviews]}]}]}`,
			want: []string{
				"webhooks[1].rules[1]: tokenreviews.authentication.k8s.io is excluded from admission webhooks; this rule will have no effect",
				"webhooks[1].rules[1]: subjectaccessreviews.authorization.k8s.io is excluded from admission webhooks; this rule will have no effect",
			},
		},
		{
			name: "admission policy update with a static name",
			def:  ValidatingAdmissionPolicies(),
			old:  `{apiVersion: admissionregistration.k8s.io/v1, kind: ValidatingAdmissionPolicy, metadata: {name: p.static.k8s.io}}`,
			obj:  `{apiVersion: admissionregistration.k8s.io/v1, kind: ValidatingAdmissionPolicy, metadata: {name: p.static.k8s.io}}`,
			want: []string{`metadata.name: names ending with ".static.k8s.io" are reserved for static manifest-based configurations and cannot be managed via the API`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, ok := tc.def.Hooks.(registry.Warner)
			if !ok {
				t.Fatalf("%s: no warnings", tc.def.Resource)
			}
			var old map[string]any
			if tc.old != "" {
				old = defaulted(t, tc.def, tc.old)
			}
			got := w.Warnings(defaulted(t, tc.def, tc.obj), old, tc.sub)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

const (
	statefulSetYAML = `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: %d},
  spec: {serviceName: s, revisionHistoryLimit: -1, selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: i}]}},
  volumeClaimTemplates: [{metadata: {name: d}, spec: {resources: {requests: {storage: 1500m}}}}]}}`
	daemonSetYAML = `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, generation: %d, annotations: {deprecated.daemonset.template.generation: "%s"}},
  spec: {selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {terminationGracePeriodSeconds: -1, containers: [{name: c, image: i}]}}}}`
	cronJobYAML = `{apiVersion: batch/v1, kind: CronJob, metadata: {name: c, generation: %d}, spec: {schedule: "TZ=UTC * * * * *",
  jobTemplate: {spec: {template: {spec: {restartPolicy: Never, affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: k}]}},
  containers: [{name: c, image: i}]}}}}}}`
)

// defaulted decodes y and applies the kind's defaults, as the handler
// has before it asks for warnings.
func defaulted(t *testing.T, def *registry.Definition, y string) map[string]any {
	t.Helper()
	obj := decodeYAML(t, y)
	if d, ok := def.Hooks.(registry.Defaulter); ok {
		d.Default(obj)
	}
	return obj
}

// Kinds whose strategies give no warnings have none.
func TestNoWarnings(t *testing.T) {
	for _, def := range []*registry.Definition{ConfigMaps(), Leases(), Namespaces(), LimitRanges(), PriorityClasses(), PodDisruptionBudgets()} {
		if w, ok := def.Hooks.(registry.Warner); ok {
			obj := decodeYAML(t, `{metadata: {name: a.b}}`)
			if got := w.Warnings(obj, nil, ""); len(got) > 0 {
				t.Errorf("%s: warnings %q", def.Resource, got)
			}
		}
	}
}

// A create of admission configuration with a name kept for static
// configuration is refused; an update of a stored one is warned of.
func TestStaticNames(t *testing.T) {
	for _, def := range []*registry.Definition{
		ValidatingWebhookConfigurations(), MutatingWebhookConfigurations(),
		ValidatingAdmissionPolicies(), ValidatingAdmissionPolicyBindings(),
		MutatingAdmissionPolicies(), MutatingAdmissionPolicyBindings(),
	} {
		v := def.Hooks.(registry.Validator)
		obj := decodeYAML(t, `{metadata: {name: x.static.k8s.io}}`)
		errs := v.Validate(obj)
		if len(errs) == 0 || errs[len(errs)-1].Field != "metadata.name" {
			t.Errorf("%s create: %v, want metadata.name refused", def.Resource, errs)
		}
		for _, e := range v.ValidateUpdate(obj, obj) {
			if e.Field == "metadata.name" {
				t.Errorf("%s update: %v", def.Resource, e)
			}
		}
	}
}
