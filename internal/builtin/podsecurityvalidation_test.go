package builtin

import (
	"reflect"
	"strings"
	"testing"
)

func TestPodSecurityValidation(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		{line(), `{hostUsers: false, securityContext: {runAsUser: 1000, fsGroup: 2000, sysctls: [{name: net.core.somaxconn, value: "1"}],
			seccompProfile: {type: Localhost, localhostProfile: p.json}, seLinuxChangePolicy: MountOption},
			containers: [{name: a, image: i, securityContext: {privileged: true, procMount: Unmasked, capabilities: {add: [CAP_SYS_ADMIN]}}}]}`, nil},
		{line(), `{containers: [{name: a, image: i, securityContext: {runAsUser: -1, runAsGroup: -1}}]}`, []string{
			"spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
			"spec.containers[0].securityContext.runAsGroup: Invalid value: -1: must be between 0 and 2147483647, inclusive"}},
		{line(), `{containers: [{name: a, image: i, securityContext: {privileged: true, allowPrivilegeEscalation: false}}]}`, []string{
			`spec.containers[0].securityContext: Invalid value: {"Capabilities":null,"Privileged":true,"SELinuxOptions":null,"WindowsOptions":null,` +
				`"RunAsUser":null,"RunAsGroup":null,"RunAsNonRoot":null,"ReadOnlyRootFilesystem":null,"AllowPrivilegeEscalation":false,` +
				`"ProcMount":null,"SeccompProfile":null,"AppArmorProfile":null}: cannot set ` + "`allowPrivilegeEscalation`" + ` to false and ` + "`privileged`" + ` to true`}},
		{line(), `{containers: [{name: a, image: i, securityContext: {procMount: Unmasked, seccompProfile: {type: RuntimeDefault, localhostProfile: x}}}]}`, []string{
			"spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`",
			`spec.containers[0].securityContext.seccompProfile.localhostProfile: Invalid value: {"Type":"RuntimeDefault","LocalhostProfile":"x"}: can only be set when seccomp type is Localhost`}},
		{line(), `{containers: [{name: a, image: i, securityContext: {appArmorProfile: {type: Localhost, localhostProfile: " p"}, windowsOptions: {runAsUserName: 'a\b\c'}}}]}`, []string{
			`spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: "a\\b\\c": runAsUserName cannot contain more than one backslash`,
			`spec.containers[0].securityContext.appArmorProfile.localhostProfile: Invalid value: " p": must not be padded with whitespace`}},
		{line(), `{hostNetwork: true, securityContext: {fsGroup: -1, supplementalGroups: [-1], sysctls: [{name: "Bad!"}, {name: net.core.x}, {name: net.core.x}],
			fsGroupChangePolicy: Bogus}, containers: [{name: a, image: i}]}`, []string{
			"spec.securityContext.fsGroup: Invalid value: -1: must be between 0 and 2147483647, inclusive",
			"spec.securityContext.supplementalGroups[0]: Invalid value: -1: must be between 0 and 2147483647, inclusive",
			`spec.securityContext.sysctls[0].name: Invalid value: "Bad!": must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`,
			`spec.securityContext.sysctls[1].name: Invalid value: "net.core.x": may not be specified when 'hostNetwork' is true`,
			`spec.securityContext.sysctls[2].name: Duplicate value: "net.core.x"`,
			`spec.securityContext.sysctls[2].name: Invalid value: "net.core.x": may not be specified when 'hostNetwork' is true`,
			`spec.securityContext.fsGroupChangePolicy: Unsupported value: "Bogus": supported values: "Always", "OnRootMismatch"`}},
		{line(), `{hostUsers: false, hostPID: true, shareProcessNamespace: true, volumes: [{name: c, persistentVolumeClaim: {claimName: c}}],
			containers: [{name: a, image: i, volumeDevices: [{name: c, devicePath: /dev/c}]}]}`, []string{
			"spec.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled",
			"spec.HostPID: Forbidden: when `hostUsers` is false",
			"spec.containers[0].volumeDevices: Forbidden: when `hostUsers` is false"}},
		{line(), `{containers: [{name: a, image: i, securityContext: {windowsOptions: {hostProcess: true}}}, {name: b, image: i}]}`, []string{
			`spec: Invalid value: "": If pod contains any hostProcess containers then all containers must be HostProcess containers`,
			"spec.hostNetwork: Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers"}},
	} {
		if got := podSpecErrors(t, tc.spec); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: errors\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}

func TestSysctlNamespace(t *testing.T) {
	for name, want := range map[string]string{
		"net.core.somaxconn": "Net", "net/ipv4/conf/eth0.100/rp_filter": "Net", "kernel.shm_rmid_forced": "IPC",
		"kernel/shmmax": "IPC", "fs.mqueue.msg_max": "IPC", "kernel.domainname": "UTS", "user.max_user_namespaces": "User",
		"vm.swappiness": "", "kernel.msg*": "IPC",
	} {
		if got := sysctlNamespace(name); got != want {
			t.Errorf("sysctlNamespace(%q) = %q, want %q", name, got, want)
		}
	}
}
