package builtin

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

func decodePod(t *testing.T, y string) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	if err := yaml.UnmarshalStrict([]byte(y), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func TestPodSecurityAnnotations(t *testing.T) {
	for _, tc := range []struct {
		name, pod string
		want      []string
	}{
		{line(), `{metadata: {annotations: {seccomp.security.alpha.kubernetes.io/pod: runtime/default, container.apparmor.security.beta.kubernetes.io/a: localhost/p}},
			spec: {containers: [{name: a}]}}`, nil},
		{line(), `{metadata: {annotations: {seccomp.security.alpha.kubernetes.io/pod: bogus, container.seccomp.security.alpha.kubernetes.io/a: localhost/../x}},
			spec: {containers: [{name: a}]}}`, []string{
			`metadata.annotations.seccomp.security.alpha.kubernetes.io/pod: Invalid value: "bogus": must be a valid seccomp profile`,
			`metadata.annotations.container.seccomp.security.alpha.kubernetes.io/a: Invalid value: "../x": must not contain '..'`}},
		{line(), `{metadata: {annotations: {container.apparmor.security.beta.kubernetes.io/ghost: bogus}}, spec: {containers: [{name: a}]}}`, []string{
			`metadata.annotations[container.apparmor.security.beta.kubernetes.io/ghost]: Invalid value: "ghost": container not found`,
			`metadata.annotations[container.apparmor.security.beta.kubernetes.io/ghost]: Invalid value: "bogus": invalid AppArmor profile name: "bogus"`}},
	} {
		p := decodePod(t, tc.pod)
		var got []string
		for _, e := range validatePodSecurityAnnotations(p.Annotations, &p.Spec, field.NewPath("metadata", "annotations")) {
			got = append(got, e.Error())
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: errors\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}

func TestPodSecurityAnnotationsMatch(t *testing.T) {
	p := decodePod(t, `{metadata: {annotations: {seccomp.security.alpha.kubernetes.io/pod: unconfined,
		container.apparmor.security.beta.kubernetes.io/a: localhost/x, container.apparmor.security.beta.kubernetes.io/b: unconfined}},
		spec: {securityContext: {seccompProfile: {type: RuntimeDefault}, appArmorProfile: {type: RuntimeDefault}},
		containers: [{name: a, securityContext: {appArmorProfile: {type: Localhost, localhostProfile: y}}}, {name: b}]}}`)
	var got []string
	for _, e := range validatePodSecurityAnnotationsMatch(p.Annotations, &p.Spec, field.NewPath("spec")) {
		got = append(got, e.Error())
	}
	want := []string{
		"spec.securityContext.seccompProfile.type: Forbidden: seccomp type in annotation and field must match",
		"spec.containers[0].securityContext.appArmorProfile.localhostProfile: Forbidden: apparmor profile in annotation and field must match",
		"spec.containers[1].securityContext.appArmorProfile.type: Forbidden: apparmor type in annotation and field must match",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A new pod's AppArmor annotations become its containers' fields, with a
// warning, unless invalid (warned of, not copied) or the pod's profile
// already (neither).
func TestAppArmorAnnotationsSync(t *testing.T) {
	p := decodePod(t, `{metadata: {annotations: {container.apparmor.security.beta.kubernetes.io/a: localhost/p,
		container.apparmor.security.beta.kubernetes.io/b: runtime/default, container.apparmor.security.beta.kubernetes.io/c: localhost/,
		container.apparmor.security.beta.kubernetes.io/d: unconfined}},
		spec: {securityContext: {appArmorProfile: {type: RuntimeDefault}}, containers: [{name: a}, {name: b}, {name: c},
		{name: d, securityContext: {appArmorProfile: {type: Localhost, localhostProfile: own}}}]}}`)
	const note = `: deprecated since v1.30; use the "appArmorProfile" field instead`
	wantWarnings := []string{
		"metadata.annotations[container.apparmor.security.beta.kubernetes.io/a]" + note,
		"metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]" + note,
	}
	if got := appArmorAnnotationWarnings(p); !reflect.DeepEqual(got, wantWarnings) {
		t.Errorf("warnings %q, want %q", got, wantWarnings)
	}
	syncAppArmorAnnotations(p)
	var got []string
	for _, c := range p.Spec.Containers {
		s := "none"
		if sc := c.SecurityContext; sc != nil && sc.AppArmorProfile != nil {
			s = string(sc.AppArmorProfile.Type)
			if lp := sc.AppArmorProfile.LocalhostProfile; lp != nil {
				s += "/" + *lp
			}
		}
		got = append(got, c.Name+"="+s)
	}
	if want := []string{"a=Localhost/p", "b=none", "c=none", "d=Localhost/own"}; !reflect.DeepEqual(got, want) {
		t.Errorf("profiles %v, want %v", got, want)
	}
}
