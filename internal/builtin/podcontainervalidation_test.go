package builtin

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// podSpecErrors defaults the pod spec in y as a request's and answers
// validatePodSpec's errors, in order.
func podSpecErrors(t *testing.T, y string) []string {
	t.Helper()
	var tpl corev1.PodTemplateSpec
	if err := yaml.UnmarshalStrict([]byte("spec: "+y), &tpl); err != nil {
		t.Fatal(err)
	}
	defaultPodTemplate(&tpl)
	for i := range tpl.Spec.EphemeralContainers {
		c := corev1.Container(tpl.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		defaultContainer(&c)
		tpl.Spec.EphemeralContainers[i].EphemeralContainerCommon = corev1.EphemeralContainerCommon(c)
	}
	var got []string
	for _, e := range validatePodSpec(&tpl.Spec, field.NewPath("spec")) {
		got = append(got, e.Error())
	}
	return got
}

func TestPodContainerValidation(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		{line(), `{containers: [{name: a, image: i, livenessProbe: {httpGet: {port: 80}}, readinessProbe: {tcpSocket: {port: http}},
			startupProbe: {grpc: {port: 9000}}, lifecycle: {preStop: {sleep: {seconds: 30}}}}]}`, nil},
		{line(), `{containers: [{name: a, image: i, livenessProbe: {}}]}`,
			[]string{"spec.containers[0].livenessProbe: Required value: must specify a handler type"}},
		{line(), `{containers: [{name: a, image: i, readinessProbe: {exec: {}, tcpSocket: {port: 0}, grpc: {port: 1}}}]}`, []string{
			"spec.containers[0].readinessProbe.exec.command: Required value",
			"spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type",
			"spec.containers[0].readinessProbe.grpc: Forbidden: may not specify more than 1 handler type"}},
		{line(), `{containers: [{name: a, image: i, livenessProbe: {exec: {command: [x]}, successThreshold: 2, periodSeconds: -1}}]}`, []string{
			"spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
			"spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"}},
		{line(), `{containers: [{name: a, image: i, readinessProbe: {httpGet: {port: Not_Valid, scheme: FTP}, terminationGracePeriodSeconds: 3}}]}`, []string{
			`spec.containers[0].readinessProbe.httpGet.port: Invalid value: "Not_Valid": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
			`spec.containers[0].readinessProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"`,
			"spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 3: must not be set for readinessProbes"}},
		{line(), `{containers: [{name: a, image: i, lifecycle: {preStop: {sleep: {seconds: 31}}, postStart: {}}}]}`, []string{
			"spec.containers[0].lifecycle.postStart: Required value: must specify a handler type",
			"spec.containers[0].lifecycle.preStop.sleep: Invalid value: 31: must be non-negative and less than terminationGracePeriodSeconds (30)"}},
		{line(), `{initContainers: [{name: i, image: i, livenessProbe: {exec: {command: [x]}}}], containers: [{name: a, image: i}]}`,
			[]string{"spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"}},
		{line(), `{initContainers: [{name: i, image: i, restartPolicy: Always, livenessProbe: {exec: {command: [x]}}}], containers: [{name: a, image: i}]}`, nil},
		{line(), `{containers: [{name: a, image: i, restartPolicy: Sometimes}]}`,
			[]string{`spec.containers[0].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"`}},
		{line(), `{containers: [{name: a, image: i, restartPolicyRules: [{action: Restart}]}]}`, []string{
			"spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used",
			"spec.containers[0].restartPolicyRules[0].exitCodes: Required value: must be specified"}},
		{line(), `{containers: [{name: a, image: i, env: [{name: A, value: x, valueFrom: {fieldRef: {fieldPath: spec.restartPolicy}}}]}]}`, []string{
			`spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "spec.restartPolicy": supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"`,
			"spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty"}},
		{line(), `{containers: [{name: a, image: i, env: [{name: A, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: "2"}}}]}]}`, []string{
			`spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.cpu": only divisor's values 1m and 1 are supported with the cpu resource`}},
		{line(), `{containers: [{name: a, image: i, envFrom: [{prefix: "a=b"}]}]}`, []string{
			`spec.containers[0].envFrom[0].prefix: Invalid value: "a=b": a valid environment variable name must consist only of printable ASCII characters other than '='`,
			"spec.containers[0].envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`"}},
		{line(), `{volumes: [{name: d, emptyDir: {}}], containers: [{name: a, image: i, volumeMounts: [{name: d, mountPath: /m, subPath: /abs}],
			volumeDevices: [{name: d, devicePath: /m}]}]}`, []string{
			`spec.containers[0].volumeMounts[0].name: Invalid value: "d": must not already exist in volumeDevices`,
			`spec.containers[0].volumeMounts[0].mountPath: Invalid value: "/m": must not already exist as a path in volumeDevices`,
			`spec.containers[0].volumeMounts.subPath: Invalid value: "/abs": must be a relative path`,
			`spec.containers[0].volumeDevices[0].name: Invalid value: "d": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode`,
			`spec.containers[0].volumeDevices[0].name: Invalid value: "d": must not already exist in volumeMounts`,
			`spec.containers[0].volumeDevices[0].devicePath: Invalid value: "/m": must not already exist as a path in volumeMounts`}},
		{line(), `{restartPolicy: Never, containers: [{name: a, image: i, resizePolicy: [{resourceName: cpu, restartPolicy: RestartContainer}]}]}`, []string{
			`spec.containers[0].resizePolicy: Invalid value: "RestartContainer": must be 'NotRequired' when pod ` + "`restartPolicy`" + ` is 'Never'`}},
		{line(), `{containers: [{name: a, image: i, ports: [{containerPort: 1, hostPort: 8}]}, {name: b, image: i, ports: [{containerPort: 2, hostPort: 8}]}]}`,
			[]string{`spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8"`}},
		{line(), `{hostNetwork: true, containers: [{name: a, image: i, ports: [{containerPort: 1, hostPort: 8}]}]}`,
			[]string{"spec.containers[0].ports[0].hostPort: Invalid value: 8: must match `containerPort` when `hostNetwork` is true"}},
		{line(), `{volumes: [{name: c, configMap: {name: c}}], containers: [{name: a, image: i, env: [
			{name: A, valueFrom: {fileKeyRef: {volumeName: c, path: a.env, key: A}}}, {name: B, valueFrom: {fileKeyRef: {volumeName: g, path: ../b, key: B}}}]}]}`, []string{
			`spec.containers[0].env[1].valueFrom.fileKeyRef.path: Invalid value: "../b": must not contain '..'`,
			`spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Invalid value: "c": referenced volume must be of type emptyDir`,
			`spec.containers[0].env[1].valueFrom.fileKeyRef.volumeName: Not found: "g"`}},
		{line(), `{containers: [{name: a, image: i}], ephemeralContainers: [{name: e, image: " i", targetContainerName: ghost, ports: [{containerPort: 1}],
			restartPolicy: Always, volumeMounts: [{name: d, mountPath: /d, subPath: x}]}]}`, []string{
			`spec.ephemeralContainers[0].volumeMounts[0].name: Not found: "d"`,
			`spec.ephemeralContainers[0].image: Invalid value: " i": must not have leading or trailing whitespace`,
			`spec.ephemeralContainers[0].targetContainerName: Not found: "ghost"`,
			"spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container",
			"spec.ephemeralContainers[0].restartPolicy: Forbidden: cannot be set for an Ephemeral Container",
			"spec.ephemeralContainers[0].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container"}},
	} {
		if got := podSpecErrors(t, tc.spec); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: errors\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}

func TestDropDisabledContainerFields(t *testing.T) {
	obj := decodeYAML(t, `
spec:
  template:
    spec:
      containers:
      - name: a
        lifecycle: {stopSignal: SIGUSR1}
        livenessProbe: {grpc: {port: 1, mode: TLS}}
        readinessProbe: {httpGet: {port: 1, protocol: HTTP2}}
        volumeMounts: [{name: d, mountPath: /d, bindMountOptions: [noexec]}]
      initContainers:
      - name: b
        lifecycle: {stopSignal: SIGUSR1, preStop: {httpGet: {port: 1, protocol: HTTP2}}}
`)
	dropDisabledContainerFields(obj, "spec", "template", "spec")
	want := decodeYAML(t, `
spec:
  template:
    spec:
      containers:
      - name: a
        livenessProbe: {grpc: {port: 1}}
        readinessProbe: {httpGet: {port: 1}}
        volumeMounts: [{name: d, mountPath: /d}]
      initContainers:
      - name: b
        lifecycle: {preStop: {httpGet: {port: 1}}}
`)
	if !reflect.DeepEqual(obj, want) {
		t.Errorf("got %v, want %v", obj, want)
	}
}

func TestPullPolicyParsesTheReference(t *testing.T) {
	digest := "@sha256:" + strings.Repeat("a", 64)
	for _, tc := range []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"busybox", corev1.PullAlways},
		{"busybox:latest", corev1.PullAlways},
		{"busybox:1.36", corev1.PullIfNotPresent},
		{"registry.example.com:5000/app", corev1.PullAlways},
		{"localhost/app:latest", corev1.PullAlways},
		{"app" + digest, corev1.PullIfNotPresent},
		{"app:latest" + digest, corev1.PullAlways},
		{"app:latest@sha256:abc", corev1.PullIfNotPresent},
		{"Busybox", corev1.PullIfNotPresent},
		{" busybox", corev1.PullIfNotPresent},
		{"UPPER/app", corev1.PullAlways},
		{"ns/App", corev1.PullIfNotPresent},
		{strings.Repeat("a", 64), corev1.PullIfNotPresent},
	} {
		if got := pullPolicy(tc.image); got != tc.want {
			t.Errorf("pullPolicy(%q) = %s, want %s", tc.image, got, tc.want)
		}
	}
}
