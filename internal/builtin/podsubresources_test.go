package builtin

import (
	"strings"
	"testing"

	"github.com/crdserver/crdserver/internal/registry"
)

// A write through pods/ephemeralcontainers may add ephemeral containers
// but neither remove nor change one; a change is shown as the diff of the
// container as upstream's internal type encodes it, its fields by their
// Go names, EphemeralContainerCommon's among them. A static (mirror) pod
// is refused alone, whatever else is wrong.
func TestPodEphemeralContainersValidation(t *testing.T) {
	def := Pods(nil, nil)
	const (
		dbg     = "{name: dbg, image: busybox, targetContainerName: app}"
		mirror  = "annotations: {kubernetes.io/config.mirror: abc}"
		static  = "[]: Forbidden: static pods do not support ephemeral containers"
		removed = "spec.ephemeralContainers: Forbidden: existing ephemeral containers \"dbg\" may not be removed\n"
	)
	spec := func(ephemeral string) string {
		return "spec: {nodeName: node-1, containers: [{name: app, image: nginx}], ephemeralContainers: [" + ephemeral + "]}"
	}
	for _, tc := range []struct {
		name, oldMeta, old, obj string
		want                    []string
	}{
		{name: line(), old: spec(""), obj: spec(dbg)},
		{name: line(), old: spec(dbg), obj: spec(dbg + ", {name: dbg2, image: busybox}")},
		{name: line(), old: spec(dbg), obj: spec(""), want: []string{removed}},
		{name: line(), old: spec(dbg), obj: spec("{name: dbg, image: alpine, targetContainerName: app, stdin: true}"), want: []string{
			"spec.ephemeralContainers: Forbidden: existing ephemeral containers \"dbg\" may not be changed\n" +
				"@@ -1,6 +1,6 @@\n" +
				" {\n" +
				"  \"Name\": \"dbg\",\n" +
				"- \"Image\": \"busybox\",\n" +
				"+ \"Image\": \"alpine\",\n" +
				"  \"Command\": null,\n" +
				"  \"Args\": null,\n" +
				"  \"WorkingDir\": \"\",\n" +
				"@@ -25,7 +25,7 @@\n" +
				"  \"TerminationMessagePolicy\": \"File\",\n" +
				"  \"ImagePullPolicy\": \"Always\",\n" +
				"  \"SecurityContext\": null,\n" +
				"- \"Stdin\": false,\n" +
				"+ \"Stdin\": true,\n" +
				"  \"StdinOnce\": false,\n" +
				"  \"TTY\": false,\n" +
				"  \"TargetContainerName\": \"app\"\n",
		}},
		// A removal and a bad new container are both refused.
		{name: line(), old: spec(dbg), obj: spec("{name: Bad, image: busybox}"), want: []string{"spec.ephemeralContainers[0].name: Invalid value", removed}},
		{name: line(), oldMeta: mirror, old: spec(""), obj: spec(dbg), want: []string{static}},
		{name: line(), oldMeta: mirror, old: spec(dbg), obj: spec("{name: Bad, image: busybox}"), want: []string{static}},
	} {
		head := "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns, " + tc.oldMeta + "}\n"
		o := decodeYAML(t, head+tc.old)
		def.Hooks.(registry.Defaulter).Default(o)
		def.Hooks.(registry.CreatePreparer).PrepareForCreate(o)
		n := decodeYAML(t, head+tc.obj)
		def.Hooks.(registry.Defaulter).Default(n)
		next := def.Hooks.(registry.SubresourceUpdater).UpdateSubresource("ephemeralcontainers", n, o)
		errs := def.Hooks.(registry.SubresourceValidator).ValidateSubresourceUpdate("ephemeralcontainers", next, o)
		if len(errs) != len(tc.want) {
			t.Errorf("%s: errors %v, want %d", tc.name, errs, len(tc.want))
			continue
		}
		for i, e := range errs {
			if got := e.Error(); !strings.HasPrefix(got, tc.want[i]) || strings.HasSuffix(tc.want[i], "\n") && got != tc.want[i] {
				t.Errorf("%s: error %d:\n%s\nwant\n%s", tc.name, i, got, tc.want[i])
			}
		}
	}
}
