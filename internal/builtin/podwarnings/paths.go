package podwarnings

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A volume that maps keys to files (configMap, secret, downwardAPI,
// projected) fails to mount, or loses a file, when two of its files have
// the same path or one's path is a directory holding the other.

// file is a path a volume writes and what it comes from ("" for a volume
// with one source).
type file struct{ path, from string }

func (f file) String() string {
	if f.from == "" {
		return fmt.Sprintf("%q", f.path)
	}
	return fmt.Sprintf("%q (%s)", f.path, f.from)
}

// clashes are the files of earlier that f clashes with.
func (f file) clashes(earlier []file) []file {
	if f.path == "" {
		return nil
	}
	var out []file
	for _, e := range earlier {
		if e.path == "" {
			continue
		}
		// As directories: one holds the other, or both are the same.
		a, b := e.path+"/", f.path+"/"
		if strings.HasPrefix(a, b) || strings.HasPrefix(b, a) {
			out = append(out, e)
		}
	}
	return out
}

func keyFiles(items []corev1.KeyToPath, from string) []file {
	out := make([]file, 0, len(items))
	for _, it := range items {
		out = append(out, file{it.Path, from})
	}
	return out
}

func downwardFiles(items []corev1.DownwardAPIVolumeFile, from string) []file {
	out := make([]file, 0, len(items))
	for _, it := range items {
		out = append(out, file{it.Path, from})
	}
	return out
}

// overlaps are "NEW with EARLIER" for each clash of files with those
// seen before them, in order; seen grows by files.
func overlaps(seen *[]file, files []file) []string {
	var out []string
	for _, f := range files {
		f.path = strings.TrimRight(f.path, "/")
		for _, c := range f.clashes(*seen) {
			out = append(out, fmt.Sprintf("%s with %s", f, c))
		}
		*seen = append(*seen, f)
	}
	return out
}

// overlapsAmong are the clashes among files alone.
func overlapsAmong(files []file) []string { return overlaps(new([]file), files) }

// overlappingPaths warns of the clashing files of each volume.
func overlappingPaths(vs []corev1.Volume) []string {
	var out []string
	add := func(v *corev1.Volume, what string, clashes []string) {
		for _, c := range clashes {
			out = append(out, fmt.Sprintf("volume %q (%s): overlapping paths: %s", v.Name, what, c))
		}
	}
	for i := range vs {
		v := &vs[i]
		if cm := v.ConfigMap; cm != nil && cm.Items != nil {
			add(v, fmt.Sprintf("ConfigMap %q", cm.Name), overlapsAmong(keyFiles(cm.Items, "")))
		}
		if s := v.Secret; s != nil && s.Items != nil {
			add(v, fmt.Sprintf("Secret %q", s.SecretName), overlapsAmong(keyFiles(s.Items, "")))
		}
		if d := v.DownwardAPI; d != nil && d.Items != nil {
			add(v, "DownwardAPI", overlapsAmong(downwardFiles(d.Items, "")))
		}
		if v.Projected == nil {
			continue
		}
		// An empty source is warned of in its place among the clashes.
		var seen []file
		for _, src := range v.Projected.Sources {
			if src == (corev1.VolumeProjection{}) {
				out = append(out, fmt.Sprintf("volume %q (Projected) has no sources provided", v.Name))
				continue
			}
			add(v, "Projected", overlaps(&seen, projectedFiles(&src)))
		}
	}
	return out
}

// projectedFiles are the files one source of a projected volume writes.
// Sources are checked in this order; one sets a single kind.
func projectedFiles(src *corev1.VolumeProjection) []file {
	switch {
	case src.ConfigMap != nil && src.ConfigMap.Items != nil:
		return keyFiles(src.ConfigMap.Items, fmt.Sprintf("ConfigMap %q", src.ConfigMap.Name))
	case src.Secret != nil && src.Secret.Items != nil:
		return keyFiles(src.Secret.Items, fmt.Sprintf("Secret %q", src.Secret.Name))
	case src.DownwardAPI != nil && src.DownwardAPI.Items != nil:
		return downwardFiles(src.DownwardAPI.Items, "DownwardAPI")
	case src.ServiceAccountToken != nil:
		return []file{{src.ServiceAccountToken.Path, "ServiceAccountToken"}}
	case src.ClusterTrustBundle != nil:
		b := src.ClusterTrustBundle
		name := ""
		switch {
		case b.Name != nil:
			name = *b.Name
		case b.SignerName != nil:
			name = *b.SignerName
		}
		return []file{{b.Path, fmt.Sprintf("ClusterTrustBundle %q", name)}}
	case src.PodCertificate != nil:
		pc := src.PodCertificate
		var out []file
		for _, f := range []file{
			{pc.CertificateChainPath, "PodCertificate chain"},
			{pc.KeyPath, "PodCertificate key"},
			{pc.CredentialBundlePath, "PodCertificate credential bundle"},
		} {
			if f.path != "" {
				out = append(out, f)
			}
		}
		return out
	}
	return nil
}
