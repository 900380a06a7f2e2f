package builtin

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A pod's deprecated seccomp and AppArmor annotations, as upstream's pod
// strategy and validation treat them: AppArmor ones are copied to the
// containers' fields on create, both kinds must name valid profiles, and
// on create they must agree with the fields they would have set.

// appArmorOfAnnotation is the profile an AppArmor annotation's value
// names, nil for an empty localhost profile or an unknown value.
func appArmorOfAnnotation(v string) *corev1.AppArmorProfile {
	switch {
	case v == corev1.DeprecatedAppArmorBetaProfileNameUnconfined:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	case v == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	case strings.HasPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix) && v != corev1.DeprecatedAppArmorBetaProfileNamePrefix:
		name := strings.TrimPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix)
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
	}
	return nil
}

// syncAppArmorAnnotations gives each container of a new (non-Windows)
// pod that has no AppArmor profile of its own the one its annotation
// names, when valid and not the pod's already.
func syncAppArmorAnnotations(p *corev1.Pod) {
	if p.Spec.OS != nil && p.Spec.OS.Name == corev1.Windows {
		return
	}
	var podProfile *corev1.AppArmorProfile
	if sc := p.Spec.SecurityContext; sc != nil {
		podProfile = sc.AppArmorProfile
	}
	sync := func(c *corev1.Container) {
		v, ok := p.Annotations[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name]
		if !ok || (c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil) {
			return
		}
		prof := appArmorOfAnnotation(v)
		if prof == nil || len(validateAppArmorProfile(prof, field.NewPath(""))) > 0 || apiequality.Semantic.DeepEqual(prof, podProfile) {
			return
		}
		if c.SecurityContext == nil {
			c.SecurityContext = &corev1.SecurityContext{}
		}
		c.SecurityContext.AppArmorProfile = prof
	}
	for i := range p.Spec.InitContainers {
		sync(&p.Spec.InitContainers[i])
	}
	for i := range p.Spec.Containers {
		sync(&p.Spec.Containers[i])
	}
	for i := range p.Spec.EphemeralContainers {
		c := corev1.Container(p.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		sync(&c)
		p.Spec.EphemeralContainers[i].EphemeralContainerCommon = corev1.EphemeralContainerCommon(c)
	}
}

// appArmorAnnotationWarnings are upstream's warnings of a new pod's
// AppArmor annotations, given as it copies them to fields: one for each
// container without a profile of its own whose annotation names no valid
// profile, or one other than the pod's.
func appArmorAnnotationWarnings(p *corev1.Pod) []string {
	if p.Spec.OS != nil && p.Spec.OS.Name == corev1.Windows {
		return nil
	}
	var podProfile *corev1.AppArmorProfile
	if sc := p.Spec.SecurityContext; sc != nil {
		podProfile = sc.AppArmorProfile
	}
	var out []string
	visitContainers(&p.Spec, field.NewPath("spec"), func(c *corev1.Container, _ *field.Path) {
		key := corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + c.Name
		v, ok := p.Annotations[key]
		if !ok || (c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil) {
			return
		}
		prof := appArmorOfAnnotation(v)
		if prof != nil && len(validateAppArmorProfile(prof, field.NewPath(""))) > 0 {
			prof = nil
		}
		if prof == nil || !apiequality.Semantic.DeepEqual(prof, podProfile) {
			out = append(out, fmt.Sprintf(`%s: deprecated since v1.30; use the "appArmorProfile" field instead`, field.NewPath("metadata", "annotations").Key(key)))
		}
	})
	return out
}

// validatePodSecurityAnnotations checks the profiles of a pod's seccomp
// annotations (the pod's, then its containers') and that each AppArmor
// annotation names a container of the pod and a valid profile. Upstream
// visits the annotations in map order; crdserver in sorted order.
func validatePodSecurityAnnotations(ann map[string]string, s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if v, ok := ann[corev1.SeccompPodAnnotationKey]; ok {
		errs = append(errs, validateSeccompAnnotation(v, p.Child(corev1.SeccompPodAnnotationKey))...)
	}
	keys := slices.Sorted(maps.Keys(ann))
	for _, k := range keys {
		if strings.HasPrefix(k, corev1.SeccompContainerAnnotationKeyPrefix) {
			errs = append(errs, validateSeccompAnnotation(ann[k], p.Child(k))...)
		}
	}
	for _, k := range keys {
		name, ok := strings.CutPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix)
		if !ok {
			continue
		}
		found := false
		visitContainers(s, field.NewPath("spec"), func(c *corev1.Container, _ *field.Path) { found = found || c.Name == name })
		if !found {
			errs = append(errs, field.Invalid(p.Key(k), name, "container not found"))
		}
		if v := ann[k]; v != "" && v != corev1.DeprecatedAppArmorBetaProfileRuntimeDefault && v != corev1.DeprecatedAppArmorBetaProfileNameUnconfined &&
			!strings.HasPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix) {
			errs = append(errs, field.Invalid(p.Key(k), v, `invalid AppArmor profile name: "`+v+`"`))
		}
	}
	return errs
}

func validateSeccompAnnotation(v string, p *field.Path) field.ErrorList {
	switch {
	case v == corev1.SeccompProfileRuntimeDefault || v == corev1.DeprecatedSeccompProfileDockerDefault || v == corev1.SeccompProfileNameUnconfined:
		return nil
	case strings.HasPrefix(v, corev1.SeccompLocalhostProfileNamePrefix):
		return localDescendingPath(strings.TrimPrefix(v, corev1.SeccompLocalhostProfileNamePrefix), p)
	}
	return field.ErrorList{field.Invalid(p, v, "must be a valid seccomp profile")}
}

// validatePodSecurityAnnotationsMatch is upstream's check of a new pod:
// where a seccomp or AppArmor annotation and the profile field it stands
// for (the container's, or the pod's it inherits) are both set, they
// agree.
func validatePodSecurityAnnotationsMatch(ann map[string]string, s *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sc := s.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		if v, ok := ann[corev1.SeccompPodAnnotationKey]; ok {
			errs = append(errs, seccompAnnotationMatches(v, sc.SeccompProfile, specPath.Child("securityContext", "seccompProfile"))...)
		}
	}
	visitContainers(s, specPath, func(c *corev1.Container, cp *field.Path) {
		if sc := c.SecurityContext; sc != nil && sc.SeccompProfile != nil {
			if v, ok := ann[corev1.SeccompContainerAnnotationKeyPrefix+c.Name]; ok {
				errs = append(errs, seccompAnnotationMatches(v, sc.SeccompProfile, cp.Child("securityContext", "seccompProfile"))...)
			}
		}
	})
	if s.OS != nil && s.OS.Name == corev1.Windows {
		return errs
	}
	var podProfile *corev1.AppArmorProfile
	if sc := s.SecurityContext; sc != nil {
		podProfile = sc.AppArmorProfile
	}
	visitContainers(s, specPath, func(c *corev1.Container, cp *field.Path) {
		prof := podProfile
		if sc := c.SecurityContext; sc != nil && sc.AppArmorProfile != nil {
			prof = sc.AppArmorProfile
		}
		v, ok := ann[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name]
		if prof == nil || !ok {
			return
		}
		ap := cp.Child("securityContext", "appArmorProfile")
		switch prof.Type {
		case corev1.AppArmorProfileTypeUnconfined, corev1.AppArmorProfileTypeRuntimeDefault:
			want := corev1.DeprecatedAppArmorBetaProfileNameUnconfined
			if prof.Type == corev1.AppArmorProfileTypeRuntimeDefault {
				want = corev1.DeprecatedAppArmorBetaProfileRuntimeDefault
			}
			if v != want {
				errs = append(errs, field.Forbidden(ap.Child("type"), "apparmor type in annotation and field must match"))
			}
		case corev1.AppArmorProfileTypeLocalhost:
			if name, ok := strings.CutPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix); !ok {
				errs = append(errs, field.Forbidden(ap.Child("type"), "apparmor type in annotation and field must match"))
			} else if prof.LocalhostProfile == nil || name != *prof.LocalhostProfile {
				errs = append(errs, field.Forbidden(ap.Child("localhostProfile"), "apparmor profile in annotation and field must match"))
			}
		}
	})
	return errs
}

func seccompAnnotationMatches(v string, sp *corev1.SeccompProfile, p *field.Path) field.ErrorList {
	switch sp.Type {
	case corev1.SeccompProfileTypeUnconfined:
		if v != corev1.SeccompProfileNameUnconfined {
			return field.ErrorList{field.Forbidden(p.Child("type"), "seccomp type in annotation and field must match")}
		}
	case corev1.SeccompProfileTypeRuntimeDefault:
		if v != corev1.SeccompProfileRuntimeDefault && v != corev1.DeprecatedSeccompProfileDockerDefault {
			return field.ErrorList{field.Forbidden(p.Child("type"), "seccomp type in annotation and field must match")}
		}
	case corev1.SeccompProfileTypeLocalhost:
		name, ok := strings.CutPrefix(v, corev1.SeccompLocalhostProfileNamePrefix)
		if !ok {
			return field.ErrorList{field.Forbidden(p.Child("type"), "seccomp type in annotation and field must match")}
		}
		if sp.LocalhostProfile == nil || name != *sp.LocalhostProfile {
			return field.ErrorList{field.Forbidden(p.Child("localhostProfile"), "seccomp profile in annotation and field must match")}
		}
	}
	return nil
}
