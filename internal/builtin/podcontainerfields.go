package builtin

import (
	"regexp"
	"strings"
)

// dropDisabledContainerFields clears, in the pod spec at path of a
// request body, the container fields whose feature gates are off in
// kube-apiserver 1.37.2: lifecycle stop signals (ContainerStopSignals; a
// lifecycle left empty goes too), gRPC probe modes
// (GRPCContainerProbeTLS), HTTP probe and hook protocols
// (H2CContainerProbe) and volume mounts' bind options
// (VolumeBindMountOptions). Upstream's strategy drops them after the
// field manager has recorded the writer's fields (which keep naming
// them), so this runs in PrepareForCreate and PrepareForUpdate, not with
// the defaults. Upstream keeps them when the old object already used
// them; crdserver never stores them, so none does.
func dropDisabledContainerFields(obj map[string]any, path ...string) {
	spec, _ := nested(obj, path...).(map[string]any)
	for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
		cs, _ := spec[list].([]any)
		for _, c := range cs {
			if c, ok := c.(map[string]any); ok {
				dropDisabledFieldsOf(c)
			}
		}
	}
}

func dropDisabledFieldsOf(c map[string]any) {
	if l, ok := c["lifecycle"].(map[string]any); ok {
		if _, had := l["stopSignal"]; had {
			delete(l, "stopSignal")
			if len(l) == 0 {
				delete(c, "lifecycle")
			}
		}
		deleteAt(l, "postStart", "httpGet", "protocol")
		deleteAt(l, "preStop", "httpGet", "protocol")
	}
	for _, probe := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
		deleteAt(c[probe], "httpGet", "protocol")
		deleteAt(c[probe], "grpc", "mode")
	}
	ms, _ := c["volumeMounts"].([]any)
	for _, m := range ms {
		deleteAt(m, "bindMountOptions")
	}
}

// deleteAt deletes the last of keys from the map the others lead to from
// m, if they lead to one.
func deleteAt(m any, keys ...string) {
	for _, k := range keys[:len(keys)-1] {
		mm, ok := m.(map[string]any)
		if !ok {
			return
		}
		m = mm[k]
	}
	if mm, ok := m.(map[string]any); ok {
		delete(mm, keys[len(keys)-1])
	}
}

// The grammar of a container image reference (github.com/distribution/
// reference, which upstream's pull policy default parses with).
var (
	imageRefDomain   = `(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[(?:[a-fA-F0-9:]+)\])(?::[0-9]+)?`
	imageRefPath     = `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*)*`
	imageRef         = regexp.MustCompile(`^((?:` + imageRefDomain + `/)?` + imageRefPath + `)(?::([\w][\w.-]{0,127}))?(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}))?$`)
	imageRefName     = regexp.MustCompile(`^(?:(` + imageRefDomain + `)/)?(` + imageRefPath + `)$`)
	imageRefID       = regexp.MustCompile(`^[a-f0-9]{64}$`)
	imageDigestSizes = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}
)

// imageTag is the tag of a container image reference as upstream parses
// it: "latest" for one with neither tag nor digest, "" for one with a
// digest alone or that does not parse (a digest-only ID, a repository not
// in lower case, a malformed name, tag or digest).
func imageTag(image string) string {
	if imageRefID.MatchString(image) {
		return ""
	}
	domain, rest := "docker.io", image
	if first, after, ok := strings.Cut(image, "/"); ok {
		switch {
		case first == "index.docker.io":
			rest = after
		case first == "localhost" || strings.ContainsAny(first, ".:") || strings.ToLower(first) != first:
			domain, rest = first, after
		}
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	if repo, _, _ := strings.Cut(rest, ":"); strings.ToLower(repo) != repo {
		return ""
	}
	m := imageRef.FindStringSubmatch(domain + "/" + rest)
	if m == nil {
		return ""
	}
	if n := imageRefName.FindStringSubmatch(m[1]); len(n) == 3 && len(n[2]) > 255 {
		return ""
	}
	tag, digest := m[2], m[3]
	if digest != "" {
		alg, hex, _ := strings.Cut(digest, ":")
		size, ok := imageDigestSizes[alg]
		if !ok || len(hex) != size || strings.ToLower(hex) != hex {
			return ""
		}
	}
	if tag == "" && digest == "" {
		return "latest"
	}
	return tag
}
