package builtin

import (
	"testing"

	"github.com/crdserver/crdserver/internal/registry"
)

func TestPodSchedulingValidation(t *testing.T) {
	const c = "containers: [{name: app, image: busybox}]"
	const qualified = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
	checkValidation(t, Pods(nil, nil), []validateCase{
		// Valid: preferred terms may hold any label value; match label keys
		// merge into the selector.
		{name: line(), obj: "metadata: {labels: {app: web}}\nspec: {affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: k, operator: In, values: ['a b']}]}}]}, " +
			"podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: {tier: db}}, matchLabelKeys: [app], topologyKey: zone}]}}, " +
			"tolerations: [{operator: Exists}, {key: k, value: v, effect: NoExecute, tolerationSeconds: 5}], " +
			"topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, minDomains: 2}], " + c + "}"},
		{name: line(), obj: "spec: {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: []}}}, " + c + "}", want: []string{
			"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term"}},
		{name: line(), obj: "spec: {affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 0, preference: {matchFields: [{key: spec.x, operator: Exists}]}}]}}, " + c + "}", want: []string{
			"spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
			`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchFields[0].operator: Invalid value: "Exists": not a valid selector operator`,
			`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchFields[0].key: Invalid value: "spec.x": not a valid field selector key`}},
		{name: line(), obj: "spec: {affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{namespaces: [Bad_NS]}]}}, " + c + "}", want: []string{
			`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespace: Invalid value: "Bad_NS": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			"spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty",
			`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: "": name part must be non-empty`,
			`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: "": ` + qualified}},
		// A matched key already in the selector: upstream's path lacks the
		// list's name, and each merged requirement (In, NotIn) finds it.
		{name: line(), obj: "metadata: {labels: {app: web}}\nspec: {affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [app], mismatchLabelKeys: [app], topologyKey: zone}]}}, " + c + "}", want: []string{
			`spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0][0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector`,
			`spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0][0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector`,
			`spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys[0]: Invalid value: "app": exists in both matchLabelKeys and mismatchLabelKeys`}},
		{name: line(), obj: "spec: {tolerations: [{operator: Equal, value: v}, {key: k, operator: Exists, value: v, effect: NoSchedule, tolerationSeconds: 1}, {key: k, operator: Lt, effect: Never}], " + c + "}", want: []string{
			"spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
			"spec.tolerations[1].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
			"spec.tolerations[1].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'",
			`spec.tolerations[2].operator: Unsupported value: "Lt": supported values: "Equal", "Exists", "Lt", "Gt"`,
			`spec.tolerations[2].effect: Unsupported value: "Never": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`}},
		{name: line(), obj: "spec: {topologySpreadConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, minDomains: 0, matchLabelKeys: [a]}, {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, nodeTaintsPolicy: Never}], " + c + "}", want: []string{
			"spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
			`spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: "{zone, ScheduleAnyway}"`,
			"spec.topologySpreadConstraints[0].minDomains: Invalid value: 0: must be greater than zero",
			"spec.topologySpreadConstraints[0].minDomains: Invalid value: 0: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
			"spec.topologySpreadConstraints[0].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
			`spec.topologySpreadConstraints[1].nodeTaintsPolicy: Unsupported value: "Never": supported values: "Honor", "Ignore"`}},
		{name: line(), obj: "spec: {dnsPolicy: None, " + c + "}", want: []string{"spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"}},
		{name: line(), obj: "spec: {dnsConfig: {nameservers: [1.1.1.1, 2.2.2.2, 3.3.3.3, 4.4.4.4], searches: [a_b.example., .], options: [{value: x}]}, " + c + "}", want: []string{
			`spec.dnsConfig.nameservers: Invalid value: ["1.1.1.1","2.2.2.2","3.3.3.3","4.4.4.4"]: must not have more than 3 nameservers`,
			"spec.dnsConfig.options[0]: Required value: must not be empty"}},
		{name: line(), obj: "spec: {readinessGates: [{conditionType: 'a b'}], schedulingGates: [{name: g}, {name: g}], " + c + "}", want: []string{
			`spec.readinessGates[0].conditionType: Invalid value: "a b": ` + qualified,
			`spec.schedulingGates[1]: Duplicate value: "g"`}},
		{name: line(), obj: "spec: {hostNetwork: true, hostPID: true, shareProcessNamespace: true, containers: [{name: app, image: x, ports: [{containerPort: 80, hostPort: 81}]}]}", want: []string{
			"spec.containers[0].ports[0].hostPort: Invalid value: 81: must match `containerPort` when `hostNetwork` is true",
			"spec.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"}},
		{name: line(), obj: "spec: {hostUsers: false, hostNetwork: true, hostIPC: true, " + c + "}", want: []string{
			"spec.hostNetwork: Forbidden: when `hostUsers` is false", "spec.HostIPC: Forbidden: when `hostUsers` is false"}},
		{name: line(), obj: "spec: {os: {name: windows}, hostPID: true, " + c + "}", want: []string{"spec.hostPID: Forbidden: cannot be set for a windows pod"}},
		{name: line(), obj: "spec: {os: {name: plan9}, " + c + "}", want: []string{`spec.os: Unsupported value: "plan9": supported values: "linux", "windows"`}},
		{name: line(), obj: "spec: {resourceClaims: [{name: r}], " + c + "}", want: []string{
			"spec.resourceClaims[0]: Invalid value: {\"Name\":\"r\",\"ResourceClaimName\":null,\"ResourceClaimTemplateName\":null}: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"}},
		// Updates: gates only removed; tolerations only added, and checked
		// again.
		{name: line(), old: "spec: {schedulingGates: [{name: a}], " + c + "}", obj: "spec: {schedulingGates: [{name: a}, {name: b}], " + c + "}", want: []string{
			"spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'b'"}},
		{name: line(), old: "spec: {schedulingGates: [{name: a}], " + c + "}", obj: "spec: {" + c + "}"},
		{name: line(), old: "spec: {" + c + "}", obj: "spec: {tolerations: [{key: k, operator: Exists, value: v}], " + c + "}", want: []string{
			"spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'",
			"spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'"}},
	})
}

// The fields of features off in 1.37 are gone from a defaulted pod.
func TestDropDisabledPodFields(t *testing.T) {
	obj := decodeYAML(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\n"+
		"spec: {schedulingGroup: {podGroupName: g}, evictionResponders: [{name: r, priority: 1}], containers: [{name: app, image: x}], "+
		"volumes: [{name: a, emptyDir: {mode: 0700}}, {name: b, secret: {secretName: s, defaultUser: 1, items: [{key: k, path: p, user: 2}]}}, "+
		"{name: c, projected: {defaultUser: 3, sources: [{serviceAccountToken: {path: t, user: 4}}]}}]}")
	def := Pods(nil, nil)
	def.Hooks.(registry.Defaulter).Default(obj)
	p, _, err := def.Hooks.(podHooks).Decode(obj)
	if err != nil {
		t.Fatal(err)
	}
	v := p.Spec.Volumes
	if p.Spec.SchedulingGroup != nil || p.Spec.EvictionResponders != nil || v[0].EmptyDir.Mode != nil ||
		v[1].Secret.DefaultUser != nil || v[1].Secret.Items[0].User != nil ||
		v[2].Projected.DefaultUser != nil || v[2].Projected.Sources[0].ServiceAccountToken.User != nil {
		t.Errorf("fields kept: %+v", p.Spec)
	}
}
