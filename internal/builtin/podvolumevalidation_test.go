package builtin

import "testing"

func TestPodVolumeSourceValidation(t *testing.T) {
	const c = "containers: [{name: app, image: busybox}]"
	vols := func(v string) string { return "spec: {volumes: [" + v + "], " + c + "}" }
	checkValidation(t, Pods(nil, nil), []validateCase{
		{name: line(), obj: vols("{name: a, emptyDir: {sizeLimit: 1Gi}}, {name: b, hostPath: {path: /var/log, type: Directory}}, " +
			"{name: c, secret: {secretName: s, items: [{key: k, path: dir/f, mode: 0600}]}}, {name: d, persistentVolumeClaim: {claimName: x}}, " +
			"{name: e, downwardAPI: {items: [{path: l, fieldRef: {fieldPath: \"metadata.labels['a']\"}}]}}, {name: f, image: {reference: busybox}}, " +
			"{name: g, ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}}}")},
		// The first source is checked, a later one refused; emptyDir comes
		// first.
		{name: line(), obj: vols("{name: a, hostPath: {path: ''}, emptyDir: {sizeLimit: -1}}"), want: []string{
			"spec.volumes[0].emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid resource quantity",
			"spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type"}},
		{name: line(), obj: vols("{name: a, hostPath: {path: /a/../b, type: Nope}}"), want: []string{
			`spec.volumes[0].hostPath.path: Invalid value: "/a/../b": must not contain '..'`,
			`spec.volumes[0].hostPath.type: Unsupported value: "Nope": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"`}},
		{name: line(), obj: vols("{name: a, configMap: {defaultMode: 01000, items: [{key: '', path: /abs}, {key: k, path: ..x, mode: -1}]}}"), want: []string{
			"spec.volumes[0].configMap.name: Required value",
			"spec.volumes[0].configMap.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive",
			"spec.volumes[0].configMap.items[0].key: Required value",
			`spec.volumes[0].configMap.items[0].path: Invalid value: "/abs": must be a relative path`,
			`spec.volumes[0].configMap.items[1].path: Invalid value: "..x": must not start with '..'`,
			"spec.volumes[0].configMap.items[1].mode: Invalid value: -1: must be a number between 0 and 0777 (octal), both inclusive"}},
		// Upstream's paths: a GCE disk's under persistentDisk, a downward
		// API file's at the volume's.
		{name: line(), obj: vols("{name: a, gcePersistentDisk: {partition: 300}}"), want: []string{
			"spec.volumes[0].persistentDisk.pdName: Required value",
			"spec.volumes[0].persistentDisk.partition: Invalid value: 300: must be between 1 and 255, inclusive"}},
		{name: line(), obj: vols("{name: a, downwardAPI: {items: [{path: p, fieldRef: {fieldPath: status.bogus}}, {path: q, resourceFieldRef: {containerName: c, resource: requests.cpu, divisor: 10m}}, {path: r}]}}"), want: []string{
			`spec.volumes[0].downwardAPI.fieldRef.fieldPath: Invalid value: "status.bogus": error converting fieldPath: field label not supported: status.bogus`,
			`spec.volumes[0].downwardAPI.resourceFieldRef.divisor: Invalid value: "requests.cpu": only divisor's values 1m and 1 are supported with the cpu resource`,
			"spec.volumes[0].downwardAPI: Required value: one of fieldRef and resourceFieldRef is required"}},
		{name: line(), obj: vols("{name: a, downwardAPI: {items: [{path: p, fieldRef: {fieldPath: spec.nodeName}}]}}"), want: []string{
			`spec.volumes[0].downwardAPI.fieldRef.fieldPath: Unsupported value: "spec.nodeName": supported values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"`}},
		{name: line(), obj: vols("{name: a, projected: {sources: [{secret: {name: s, items: [{key: k, path: x}]}}, {configMap: {name: c, items: [{key: k, path: x}]}}, {serviceAccountToken: {expirationSeconds: 60, path: /t}}]}}"), want: []string{
			`spec.volumes[0].projected: Invalid value: "c": conflicting duplicate paths`,
			"spec.volumes[0].projected.sources[2].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
			`spec.volumes[0].projected.path: Invalid value: "/t": must be a relative path`}},
		{name: line(), obj: vols("{name: a, projected: {sources: [{secret: {name: s}, configMap: {name: c}}, {clusterTrustBundle: {path: x}}, {podCertificate: {signerName: example.com/s, keyType: ED25519}}]}}"), want: []string{
			"spec.volumes[0].projected.sources[0]: Forbidden: may not specify more than 1 volume type per source",
			"spec.volumes[0].projected.sources[1].clusterTrustBundle: Required value: either name or signerName must be specified",
			"spec.volumes[0].projected.sources[2].podCertificate: Required value: specify at least one of credentialBundlePath, keyPath, and certificateChainPath"}},
		{name: line(), obj: vols("{name: a, ephemeral: {volumeClaimTemplate: {metadata: {name: x}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}}}"), want: []string{
			"spec.volumes[0].ephemeral.volumeClaimTemplate.metadata.name: Forbidden: cannot be set"}},
		{name: line(), obj: vols("{name: a, image: {reference: '', pullPolicy: Sometimes}}"), want: []string{
			"spec.volumes[0].image.reference: Required value",
			`spec.volumes[0].image.pullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`}},
		// A volume with bad fields is not there for a mount.
		{name: line(), obj: "spec: {volumes: [{name: a, nfs: {server: s, path: rel}}], containers: [{name: app, image: x, volumeMounts: [{name: a, mountPath: /a}]}]}", want: []string{
			`spec.volumes[0].nfs.path: Invalid value: "rel": must be an absolute path`,
			`spec.containers[0].volumeMounts[0].name: Not found: "a"`}},
	})
}
