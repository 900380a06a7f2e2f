package builtin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file holds upstream's checks of security contexts, a container's
// and a pod's, with the defaults of kube-apiserver 1.37.2's feature gates
// (every policy field known, SELinux MountOption allowed). Privileged
// containers are allowed, as on a cluster started with
// --allow-privileged=true (kubeadm's and most distributions' setting).

// validateContainerSecurityContext checks the user and group IDs, the
// proc mount (Unmasked needs hostUsers false), seccomp and AppArmor
// profiles, the Windows options, and that allowPrivilegeEscalation false
// does not come with privileged or the CAP_SYS_ADMIN capability.
func validateContainerSecurityContext(sc *corev1.SecurityContext, s *corev1.PodSpec, p *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		for _, msg := range validation.IsValidUserID(*sc.RunAsUser) {
			errs = append(errs, field.Invalid(p.Child("runAsUser"), *sc.RunAsUser, msg))
		}
	}
	if sc.RunAsGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.RunAsGroup) {
			errs = append(errs, field.Invalid(p.Child("runAsGroup"), *sc.RunAsGroup, msg))
		}
	}
	if pm := sc.ProcMount; pm != nil {
		pp := p.Child("procMount")
		if *pm != corev1.DefaultProcMount && *pm != corev1.UnmaskedProcMount {
			errs = append(errs, field.NotSupported(pp, *pm, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}))
		}
		if hostUsers := s.HostUsers == nil || *s.HostUsers; hostUsers && *pm == corev1.UnmaskedProcMount {
			errs = append(errs, field.Invalid(pp, pm, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, p.Child("seccompProfile"))...)
	if ape := sc.AllowPrivilegeEscalation; ape != nil && !*ape {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(p, internalValue{sc}, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(p, internalValue{sc}, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	errs = append(errs, validateWindowsOptions(sc.WindowsOptions, p.Child("windowsOptions"))...)
	return append(errs, validateAppArmorProfile(sc.AppArmorProfile, p.Child("appArmorProfile"))...)
}

// validatePodSecurityContext checks a pod's security context (IDs,
// sysctls, policies, profiles).
func validatePodSecurityContext(s *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sc := s.SecurityContext; sc != nil {
		p := specPath.Child("securityContext")
		if sc.FSGroup != nil {
			for _, msg := range validation.IsValidGroupID(*sc.FSGroup) {
				errs = append(errs, field.Invalid(p.Child("fsGroup"), *sc.FSGroup, msg))
			}
		}
		if sc.RunAsUser != nil {
			for _, msg := range validation.IsValidUserID(*sc.RunAsUser) {
				errs = append(errs, field.Invalid(p.Child("runAsUser"), *sc.RunAsUser, msg))
			}
		}
		if sc.RunAsGroup != nil {
			for _, msg := range validation.IsValidGroupID(*sc.RunAsGroup) {
				errs = append(errs, field.Invalid(p.Child("runAsGroup"), *sc.RunAsGroup, msg))
			}
		}
		for i, g := range sc.SupplementalGroups {
			for _, msg := range validation.IsValidGroupID(g) {
				errs = append(errs, field.Invalid(p.Child("supplementalGroups").Index(i), g, msg))
			}
		}
		errs = append(errs, validateSysctls(sc.Sysctls, s, p.Child("sysctls"))...)
		if v := sc.FSGroupChangePolicy; v != nil {
			errs = append(errs, notSupportedPtr(v, p.Child("fsGroupChangePolicy"), corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch)...)
		}
		errs = append(errs, validateSeccompProfile(sc.SeccompProfile, p.Child("seccompProfile"))...)
		errs = append(errs, validateWindowsOptions(sc.WindowsOptions, p.Child("windowsOptions"))...)
		errs = append(errs, validateAppArmorProfile(sc.AppArmorProfile, p.Child("appArmorProfile"))...)
		if v := sc.SupplementalGroupsPolicy; v != nil {
			errs = append(errs, notSupportedPtr(v, p.Child("supplementalGroupsPolicy"), corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict)...)
		}
		if v := sc.SELinuxChangePolicy; v != nil && *v != corev1.SELinuxChangePolicyMountOption && *v != corev1.SELinuxChangePolicyRecursive {
			errs = append(errs, field.NotSupported(p.Child("seLinuxChangePolicy"), *v, []corev1.PodSELinuxChangePolicy{corev1.SELinuxChangePolicyMountOption, corev1.SELinuxChangePolicyRecursive}))
		}
	}
	return errs
}

// notSupportedPtr refuses a value not among supported (sorted, as
// upstream lists them), the value given as the pointer upstream passes.
func notSupportedPtr[T ~string](v *T, p *field.Path, supported ...T) field.ErrorList {
	for _, s := range supported {
		if *v == s {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(p, v, supported)}
}

const sysctlMaxLength = 253

var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

// validateSysctls: valid unique names, none of the network namespace with
// hostNetwork nor of the IPC one with hostIPC.
func validateSysctls(ss []corev1.Sysctl, s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, sc := range ss {
		np := p.Index(i).Child("name")
		switch {
		case sc.Name == "":
			errs = append(errs, field.Required(np, ""))
		case len(sc.Name) > sysctlMaxLength || !sysctlName.MatchString(sc.Name):
			errs = append(errs, field.Invalid(np, sc.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlName)))
		case names.Has(sc.Name):
			errs = append(errs, field.Duplicate(np, sc.Name))
		}
		switch ns := sysctlNamespace(sc.Name); {
		case s.HostNetwork && ns == "Net":
			errs = append(errs, field.Invalid(np, sc.Name, "may not be specified when 'hostNetwork' is true"))
		case s.HostIPC && ns == "IPC":
			errs = append(errs, field.Invalid(np, sc.Name, "may not be specified when 'hostIPC' is true"))
		}
		names.Insert(sc.Name)
	}
	return errs
}

// sysctlNamespace is the kernel namespace a sysctl belongs to ("Net",
// "IPC", "UTS", "User", or "" when not known), as the kubelet sees it.
func sysctlNamespace(name string) string {
	// A name with slashes (and no dot before the first one) uses them as
	// separators, dots then being part of a segment.
	if i := strings.IndexAny(name, "./"); i >= 0 && name[i] == '/' {
		name = strings.Map(func(r rune) rune {
			switch r {
			case '.':
				return '/'
			case '/':
				return '.'
			}
			return r
		}, name)
	}
	if i := strings.Index(name, "*"); i >= 0 {
		name = name[:i]
	}
	switch name {
	case "kernel.domainname":
		return "UTS"
	case "kernel.sem", "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced", "kernel.shm",
		"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.msg":
		return "IPC"
	}
	for prefix, ns := range map[string]string{"net.": "Net", "fs.mqueue.": "IPC", "user.": "User"} {
		if strings.HasPrefix(name, prefix) {
			return ns
		}
	}
	return ""
}

var seccompTypes = []corev1.SeccompProfileType{corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}

// validateSeccompProfile: a known type; a relative descending
// localhostProfile for Localhost, and none for the others.
func validateSeccompProfile(sp *corev1.SeccompProfile, p *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(p.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), sp.Type, seccompTypes))
	}
	lp := p.Child("localhostProfile")
	switch {
	case sp.Type == corev1.SeccompProfileTypeLocalhost && sp.LocalhostProfile == nil:
		errs = append(errs, field.Required(lp, "must be set when seccomp type is Localhost"))
	case sp.Type == corev1.SeccompProfileTypeLocalhost:
		errs = append(errs, localDescendingPath(*sp.LocalhostProfile, lp)...)
	case sp.LocalhostProfile != nil:
		errs = append(errs, field.Invalid(lp, internalValue{sp}, "can only be set when seccomp type is Localhost"))
	}
	return errs
}

// validateAppArmorProfile: a known type; for Localhost a profile name, not
// blank, not padded, at most 4095 bytes; for the others none.
func validateAppArmorProfile(ap *corev1.AppArmorProfile, p *field.Path) field.ErrorList {
	if ap == nil {
		return nil
	}
	var errs field.ErrorList
	lp := p.Child("localhostProfile")
	switch ap.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		if ap.LocalhostProfile == nil {
			return field.ErrorList{field.Required(lp, "must be set when AppArmor type is Localhost")}
		}
		v := *ap.LocalhostProfile
		if t := strings.TrimSpace(v); t != v {
			errs = append(errs, field.Invalid(lp, v, "must not be padded with whitespace"))
		} else if t == "" {
			errs = append(errs, field.Required(lp, "must be set when AppArmor type is Localhost"))
		}
		if len(v) > 4095 {
			errs = append(errs, field.TooLong(lp, "", 4095))
		}
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if ap.LocalhostProfile != nil {
			errs = append(errs, field.Invalid(lp, ap.LocalhostProfile, "can only be set when AppArmor type is Localhost"))
		}
	case "":
		errs = append(errs, field.Required(p.Child("type"), "type is required when appArmorProfile is set"))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), ap.Type, []corev1.AppArmorProfileType{
			corev1.AppArmorProfileTypeLocalhost, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined}))
	}
	return errs
}

const (
	maxGMSACredentialSpecKiB = 64
	maxWindowsDomainLength   = 256
	maxWindowsUserLength     = 104
)

var (
	controlChars      = regexp.MustCompile(`[[:cntrl:]]+`)
	netBIOSDomain     = regexp.MustCompile(`^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$`)
	dnsDomain         = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$`)
	windowsUserChars  = regexp.MustCompile(`["/\\:;|=,\+\*\?<>@\[\]]`)
	windowsUserBlanks = regexp.MustCompile(`^[\. ]+$`)
)

// validateWindowsOptions checks the GMSA credential spec's name and size
// and the run-as user name (DOMAIN\USER, each part's length and
// characters).
func validateWindowsOptions(w *corev1.WindowsSecurityContextOptions, p *field.Path) field.ErrorList {
	if w == nil {
		return nil
	}
	var errs field.ErrorList
	if n := w.GMSACredentialSpecName; n != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*n) {
			errs = append(errs, field.Invalid(p.Child("gmsaCredentialSpecName"), n, msg))
		}
	}
	if cs := w.GMSACredentialSpec; cs != nil {
		if l := len(*cs); l == 0 {
			errs = append(errs, field.Invalid(p.Child("gmsaCredentialSpec"), cs, "gmsaCredentialSpec cannot be an empty string"))
		} else if l > maxGMSACredentialSpecKiB*1024 {
			errs = append(errs, field.Invalid(p.Child("gmsaCredentialSpec"), cs, fmt.Sprintf("gmsaCredentialSpec size must be under %d KiB", maxGMSACredentialSpecKiB)))
		}
	}
	u := w.RunAsUserName
	if u == nil {
		return errs
	}
	up := p.Child("runAsUserName")
	invalid := func(msg string) { errs = append(errs, field.Invalid(up, u, msg)) }
	parts := strings.Split(*u, "\\")
	switch {
	case *u == "":
		invalid("runAsUserName cannot be an empty string")
	case controlChars.MatchString(*u):
		invalid("runAsUserName cannot contain control characters")
	case len(parts) > 2:
		invalid("runAsUserName cannot contain more than one backslash")
	default:
		domain, user := "", parts[0]
		if len(parts) == 2 {
			domain, user = parts[0], parts[1]
		}
		if len(domain) >= maxWindowsDomainLength {
			invalid(fmt.Sprintf("runAsUserName's Domain length must be under %d characters", maxWindowsDomainLength))
		}
		if len(parts) == 2 && !netBIOSDomain.MatchString(domain) && !dnsDomain.MatchString(domain) {
			invalid("runAsUserName's Domain doesn't match the NetBios nor the DNS format")
		}
		if l := len(user); l == 0 {
			invalid("runAsUserName's User cannot be empty")
		} else if l > maxWindowsUserLength {
			invalid(fmt.Sprintf("runAsUserName's User length must not be longer than %d characters", maxWindowsUserLength))
		}
		if windowsUserBlanks.MatchString(user) {
			invalid(`runAsUserName's User cannot contain only periods or spaces`)
		}
		if windowsUserChars.MatchString(user) {
			invalid(`runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]`)
		}
	}
	return errs
}

// internalValue renders a value the way upstream's errors show its
// internal types, which have no JSON tags: every field, named as in Go,
// in order, nil pointers and slices as null.
type internalValue struct{ v any }

func (iv internalValue) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := writeInternal(&b, reflect.ValueOf(iv.v)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeInternal(b *bytes.Buffer, v reflect.Value) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		return writeInternal(b, v.Elem())
	case reflect.Struct:
		b.WriteByte('{')
		for i := 0; i < v.NumField(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			name, _ := json.Marshal(v.Type().Field(i).Name)
			b.Write(name)
			b.WriteByte(':')
			if err := writeInternal(b, v.Field(i)); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case reflect.Slice:
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		b.WriteByte('[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeInternal(b, v.Index(i)); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	}
	out, err := json.Marshal(v.Interface())
	if err != nil {
		return err
	}
	b.Write(out)
	return nil
}

// visitContainers calls f with every container of s and its path: init
// containers, then regular, then ephemeral ones, as upstream visits them.
func visitContainers(s *corev1.PodSpec, p *field.Path, f func(*corev1.Container, *field.Path)) {
	for i := range s.InitContainers {
		f(&s.InitContainers[i], p.Child("initContainers").Index(i))
	}
	for i := range s.Containers {
		f(&s.Containers[i], p.Child("containers").Index(i))
	}
	for i := range s.EphemeralContainers {
		c := corev1.Container(s.EphemeralContainers[i].EphemeralContainerCommon)
		f(&c, p.Child("ephemeralContainers").Index(i))
	}
}

// validateHostProcessPod is upstream's check of Windows host process
// containers: all of the pod's or none, with the host's network.
func validateHostProcessPod(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	var podHP *bool
	if sc := s.SecurityContext; sc != nil && sc.WindowsOptions != nil {
		podHP = sc.WindowsOptions.HostProcess
	}
	n, hp := 0, 0
	visitContainers(s, p, func(c *corev1.Container, cp *field.Path) {
		n++
		var ctrHP *bool
		if sc := c.SecurityContext; sc != nil && sc.WindowsOptions != nil {
			ctrHP = sc.WindowsOptions.HostProcess
		}
		if podHP != nil && ctrHP != nil && *podHP != *ctrHP {
			errs = append(errs, field.Invalid(cp.Child("securityContext", "windowsOptions", "hostProcess"), *ctrHP,
				fmt.Sprintf("pod hostProcess value must be identical if both are specified, was %v", *podHP)))
		}
		if (ctrHP != nil && *ctrHP) || (ctrHP == nil && podHP != nil && *podHP) {
			hp++
		}
	})
	if hp > 0 {
		if hp != n {
			errs = append(errs, field.Invalid(p, "", "If pod contains any hostProcess containers then all containers must be HostProcess containers"))
		}
		if !s.HostNetwork {
			errs = append(errs, field.Invalid(p.Child("hostNetwork"), s.HostNetwork, "hostNetwork must be true if pod contains any hostProcess containers"))
		}
	}
	return errs
}
