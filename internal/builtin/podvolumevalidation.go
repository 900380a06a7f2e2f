package builtin

import (
	"fmt"
	"maps"
	"net"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file checks what a pod's volume source holds, as upstream's
// validateVolumeSource does for the first source it finds (the others
// are refused as more than one). The owner fields (defaultUser, user) of
// 1.37's alpha AtomicWriteVolumeUserFields are not checked, as upstream
// drops them. The paths are upstream's, its slips
// included: a GCE disk's fields under "persistentDisk", a downward API
// volume's items under the volume's path, a CSI secret's name under
// "csi.name".

// Upstream's details for a file mode and a disk partition out of range.
const (
	fileModeMsg      = "must be a number between 0 and 0777 (octal), both inclusive"
	diskPartitionMsg = "must be between 1 and 255, inclusive"
)

// validateVolumeSourceFields checks the fields of the first source s has,
// in upstream's order of sources (volumeSourceFields).
func validateVolumeSourceFields(s *corev1.VolumeSource, p *field.Path) field.ErrorList {
	switch {
	case s.EmptyDir != nil:
		if l := s.EmptyDir.SizeLimit; l != nil && l.Cmp(resource.Quantity{}) < 0 {
			return field.ErrorList{field.Forbidden(p.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity")}
		}
	case s.HostPath != nil:
		hp := p.Child("hostPath")
		if s.HostPath.Path == "" {
			return field.ErrorList{field.Required(hp.Child("path"), "")}
		}
		errs := noBacksteps(s.HostPath.Path, hp.Child("path"))
		if t := s.HostPath.Type; t != nil && !slices.Contains(hostPathTypes, string(*t)) {
			errs = append(errs, field.NotSupported(hp.Child("type"), t, hostPathTypes))
		}
		return errs
	case s.GitRepo != nil:
		var errs field.ErrorList
		if s.GitRepo.Repository == "" {
			errs = append(errs, field.Required(p.Child("gitRepo", "repository"), ""))
		}
		return append(errs, localDescendingPath(s.GitRepo.Directory, p.Child("gitRepo", "directory"))...)
	case s.GCEPersistentDisk != nil:
		return validateDisk(s.GCEPersistentDisk.PDName == "", "pdName", s.GCEPersistentDisk.Partition, p.Child("persistentDisk"))
	case s.AWSElasticBlockStore != nil:
		return validateDisk(s.AWSElasticBlockStore.VolumeID == "", "volumeID", s.AWSElasticBlockStore.Partition, p.Child("awsElasticBlockStore"))
	case s.Secret != nil:
		return validateKeyToPathSource(s.Secret.SecretName, "secretName", s.Secret.DefaultMode, s.Secret.Items, p.Child("secret"))
	case s.NFS != nil:
		return validateNFS(s.NFS, p.Child("nfs"))
	case s.ISCSI != nil:
		return validateISCSI(s.ISCSI, p.Child("iscsi"))
	case s.Glusterfs != nil:
		return requiredStrings(p.Child("glusterfs"), "endpoints", s.Glusterfs.EndpointsName, "path", s.Glusterfs.Path)
	case s.Flocker != nil:
		fp := p.Child("flocker")
		var errs field.ErrorList
		name, uuid := s.Flocker.DatasetName, s.Flocker.DatasetUUID
		if name == "" && uuid == "" {
			errs = append(errs, field.Required(fp, "one of datasetName and datasetUUID is required"))
		}
		if name != "" && uuid != "" {
			errs = append(errs, field.Invalid(fp, "resource", "datasetName and datasetUUID can not be specified simultaneously"))
		}
		if strings.Contains(name, "/") {
			errs = append(errs, field.Invalid(fp.Child("datasetName"), name, "must not contain '/'"))
		}
		return errs
	case s.PersistentVolumeClaim != nil:
		return requiredStrings(p.Child("persistentVolumeClaim"), "claimName", s.PersistentVolumeClaim.ClaimName)
	case s.RBD != nil:
		var errs field.ErrorList
		if len(s.RBD.CephMonitors) == 0 {
			errs = append(errs, field.Required(p.Child("rbd", "monitors"), ""))
		}
		return append(errs, requiredStrings(p.Child("rbd"), "image", s.RBD.RBDImage)...)
	case s.Cinder != nil:
		errs := requiredStrings(p.Child("cinder"), "volumeID", s.Cinder.VolumeID)
		if r := s.Cinder.SecretRef; r != nil && r.Name == "" {
			errs = append(errs, field.Required(p.Child("cinder", "secretRef", "name"), ""))
		}
		return errs
	case s.CephFS != nil:
		if len(s.CephFS.Monitors) == 0 {
			return field.ErrorList{field.Required(p.Child("cephfs", "monitors"), "")}
		}
	case s.Quobyte != nil:
		return validateQuobyte(s.Quobyte, p.Child("quobyte"))
	case s.DownwardAPI != nil:
		dp := p.Child("downwardAPI")
		errs := fileMode(s.DownwardAPI.DefaultMode, dp.Child("defaultMode"))
		for i := range s.DownwardAPI.Items {
			errs = append(errs, validateDownwardAPIFile(&s.DownwardAPI.Items[i], dp)...)
		}
		return errs
	case s.FC != nil:
		return validateFC(s.FC, p.Child("fc"))
	case s.FlexVolume != nil:
		return validateFlex(s.FlexVolume, p.Child("flexVolume"))
	case s.ConfigMap != nil:
		return validateKeyToPathSource(s.ConfigMap.Name, "name", s.ConfigMap.DefaultMode, s.ConfigMap.Items, p.Child("configMap"))
	case s.AzureFile != nil:
		return requiredStrings(p.Child("azureFile"), "secretName", s.AzureFile.SecretName, "shareName", s.AzureFile.ShareName)
	case s.VsphereVolume != nil:
		return requiredStrings(p.Child("vsphereVolume"), "volumePath", s.VsphereVolume.VolumePath)
	case s.PhotonPersistentDisk != nil:
		return requiredStrings(p.Child("photonPersistentDisk"), "pdID", s.PhotonPersistentDisk.PdID)
	case s.PortworxVolume != nil:
		return requiredStrings(p.Child("portworxVolume"), "volumeID", s.PortworxVolume.VolumeID)
	case s.AzureDisk != nil:
		return validateAzureDisk(s.AzureDisk, p.Child("azureDisk"))
	case s.StorageOS != nil:
		return validateStorageOS(s.StorageOS, p.Child("storageos"))
	case s.Projected != nil:
		pp := p.Child("projected")
		errs := fileMode(s.Projected.DefaultMode, pp.Child("defaultMode"))
		return append(errs, validateProjectionSources(s.Projected, pp)...)
	case s.ScaleIO != nil:
		return requiredStrings(p.Child("scaleIO"), "gateway", s.ScaleIO.Gateway, "system", s.ScaleIO.System, "volumeName", s.ScaleIO.VolumeName)
	case s.CSI != nil:
		cp := p.Child("csi")
		errs := validateCSIDriverName(s.CSI.Driver, cp.Child("driver"))
		if r := s.CSI.NodePublishSecretRef; r != nil {
			if r.Name == "" {
				errs = append(errs, field.Required(cp.Child("nodePublishSecretRef", "name"), ""))
			} else {
				errs = append(errs, dnsSubdomain(r.Name, cp.Child("name"))...)
			}
		}
		return errs
	case s.Ephemeral != nil:
		ep := p.Child("ephemeral")
		t := s.Ephemeral.VolumeClaimTemplate
		if t == nil {
			return field.ErrorList{field.Required(ep.Child("volumeClaimTemplate"), "")}
		}
		tp := ep.Child("volumeClaimTemplate")
		errs := validateTemplateMeta(&t.ObjectMeta, tp.Child("metadata"))
		return append(errs, validatePVCSpec(&t.Spec, tp.Child("spec"))...)
	case s.Image != nil:
		ip := p.Child("image")
		var errs field.ErrorList
		if s.Image.Reference == "" {
			errs = append(errs, field.Required(ip.Child("reference"), ""))
		}
		return append(errs, validateEnum(s.Image.PullPolicy, ip.Child("pullPolicy"),
			corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)...)
	}
	return nil
}

// requiredStrings takes pairs of a field's name and its value and
// requires each value, in order.
func requiredStrings(p *field.Path, pairs ...string) field.ErrorList {
	var errs field.ErrorList
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			errs = append(errs, field.Required(p.Child(pairs[i]), ""))
		}
	}
	return errs
}

func validateDisk(noID bool, idName string, partition int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if noID {
		errs = append(errs, field.Required(p.Child(idName), ""))
	}
	if partition < 0 || partition > 255 {
		errs = append(errs, field.Invalid(p.Child("partition"), partition, diskPartitionMsg))
	}
	return errs
}

func fileMode(m *int32, p *field.Path) field.ErrorList {
	if m != nil && (*m > 0777 || *m < 0) {
		return field.ErrorList{field.Invalid(p, *m, fileModeMsg)}
	}
	return nil
}

// localDescendingPath: relative, and no ".." element.
func localDescendingPath(target string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(p, target, "must be a relative path"))
	}
	return append(errs, noBacksteps(target, p)...)
}

// localNonReservedPath is localDescendingPath that also refuses a path
// starting "..".
func localNonReservedPath(target string, p *field.Path) field.ErrorList {
	errs := localDescendingPath(target, p)
	if strings.HasPrefix(target, "..") && !strings.HasPrefix(target, "../") {
		errs = append(errs, field.Invalid(p, target, "must not start with '..'"))
	}
	return errs
}

func validateKeyToPath(kp *corev1.KeyToPath, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if kp.Key == "" {
		errs = append(errs, field.Required(p.Child("key"), ""))
	}
	if kp.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	errs = append(errs, localNonReservedPath(kp.Path, p.Child("path"))...)
	return append(errs, fileMode(kp.Mode, p.Child("mode"))...)
}

// downwardVolumeFields are the pod fields a downward API volume file may
// hold (labels and annotations also by key).
var downwardVolumeFields = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}

// downwardFieldLabels are the fields of a v1 pod upstream converts for
// the downward API ("spec.host" is read as spec.nodeName).
var downwardFieldLabels = sets.New("metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace",
	"metadata.uid", "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
	"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")

// downwardResources are the container resources the downward API gives;
// hugepages are given too, by prefix.
var downwardResources = []string{"limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"}

// validateDownwardAPIFile checks one file of a downward API volume or
// projection; p is the volume's (or projection's) path, as upstream has
// it.
func validateDownwardAPIFile(f *corev1.DownwardAPIVolumeFile, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	errs = append(errs, localNonReservedPath(f.Path, p.Child("path"))...)
	switch {
	case f.FieldRef != nil:
		errs = append(errs, validateVolumeFieldRef(f.FieldRef, p.Child("fieldRef"))...)
		if f.ResourceFieldRef != nil {
			errs = append(errs, field.Invalid(p, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case f.ResourceFieldRef != nil:
		errs = append(errs, validateVolumeResourceRef(f.ResourceFieldRef, p.Child("resourceFieldRef"))...)
	default:
		errs = append(errs, field.Required(p, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(errs, fileMode(f.Mode, p.Child("mode"))...)
}

// subscripted matches a field path with a key, as metadata.labels['k'].
var subscripted = regexp.MustCompile(`^(.+)\['(.*)'\]$`)

func validateVolumeFieldRef(fs *corev1.ObjectFieldSelector, p *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(p.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(p.Child("fieldPath"), "")}
	}
	fp := fs.FieldPath
	m := subscripted.FindStringSubmatch(fp)
	var convErr string
	switch {
	case fs.APIVersion != "v1":
		convErr = "unsupported pod version: " + fs.APIVersion
	case m != nil && m[1] != "metadata.annotations" && m[1] != "metadata.labels":
		convErr = "field label does not support subscript: " + fp
	case m == nil && fp == "spec.host":
		fp = "spec.nodeName"
	case m == nil && !downwardFieldLabels.Has(fp):
		convErr = "field label not supported: " + fp
	}
	if convErr != "" {
		return field.ErrorList{field.Invalid(p.Child("fieldPath"), fs.FieldPath, "error converting fieldPath: "+convErr)}
	}
	if m != nil {
		key := m[2]
		if m[1] == "metadata.annotations" {
			key = strings.ToLower(key)
		}
		return qualifiedName(key, p)
	}
	if !slices.Contains(downwardVolumeFields, fp) {
		return field.ErrorList{field.NotSupported(p.Child("fieldPath"), fp, downwardVolumeFields)}
	}
	return nil
}

func validateVolumeResourceRef(fs *corev1.ResourceFieldSelector, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case fs.ContainerName == "":
		errs = append(errs, field.Required(p.Child("containerName"), ""))
	case fs.Resource == "":
		errs = append(errs, field.Required(p.Child("resource"), ""))
	case !slices.Contains(downwardResources, fs.Resource) && !strings.HasPrefix(fs.Resource, "requests.hugepages-") && !strings.HasPrefix(fs.Resource, "limits.hugepages-"):
		errs = append(errs, field.NotSupported(p.Child("resource"), fs.Resource, downwardResources))
	}
	return append(errs, validateResourceDivisor(fs.Resource, fs.Divisor, p)...)
}

// The divisors upstream allows for a resource given by the downward API.
var (
	cpuDivisors  = sets.New("1m", "1")
	byteDivisors = sets.New("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
)

const byteDivisorList = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"

func validateResourceDivisor(name string, d resource.Quantity, p *field.Path) field.ErrorList {
	if d.Cmp(resource.Quantity{}) == 0 {
		return nil
	}
	dp := p.Child("divisor")
	var errs field.ErrorList
	switch name {
	case "limits.cpu", "requests.cpu":
		if !cpuDivisors.Has(d.String()) {
			errs = append(errs, field.Invalid(dp, name, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
	case "limits.memory", "requests.memory":
		if !byteDivisors.Has(d.String()) {
			errs = append(errs, field.Invalid(dp, name, "only divisor's values "+byteDivisorList+" are supported with the memory resource"))
		}
	case "limits.ephemeral-storage", "requests.ephemeral-storage":
		if !byteDivisors.Has(d.String()) {
			errs = append(errs, field.Invalid(dp, name, "only divisor's values "+byteDivisorList+" are supported with the local ephemeral storage resource"))
		}
	}
	if (strings.HasPrefix(name, "requests.hugepages-") || strings.HasPrefix(name, "limits.hugepages-")) && !byteDivisors.Has(d.String()) {
		errs = append(errs, field.Invalid(dp, name, "only divisor's values "+byteDivisorList+" are supported with the hugepages resource"))
	}
	return errs
}

// validateKeyToPathSource checks a Secret or ConfigMap volume: the
// object's name (under nameField), the default mode and each item.
func validateKeyToPathSource(name, nameField string, mode *int32, items []corev1.KeyToPath, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p.Child(nameField), ""))
	}
	errs = append(errs, fileMode(mode, p.Child("defaultMode"))...)
	for i := range items {
		errs = append(errs, validateKeyToPath(&items[i], p.Child("items").Index(i))...)
	}
	return errs
}

// validateProjectionSources checks each source of a projected volume
// (one kind of projection a source) and that no two write the same path. Upstream names the paths of a
// service account token at the volume's path, not the source's.
func validateProjectionSources(v *corev1.ProjectedVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	claim := func(path string, bad any) {
		if paths.Has(path) {
			errs = append(errs, field.Invalid(p, bad, "conflicting duplicate paths"))
		}
		paths.Insert(path)
	}
	// keyToPaths checks a Secret's or ConfigMap's projection: the name,
	// then each item, whose path it claims.
	keyToPaths := func(name string, items []corev1.KeyToPath, pp *field.Path) {
		if name == "" {
			errs = append(errs, field.Required(pp.Child("name"), ""))
		}
		for j := range items {
			errs = append(errs, validateKeyToPath(&items[j], pp.Child("items").Index(j))...)
			if items[j].Path != "" {
				claim(items[j].Path, name)
			}
		}
	}
	for i, src := range v.Sources {
		sp := p.Child("sources").Index(i)
		n := 0
		for _, set := range []bool{src.Secret != nil, src.ConfigMap != nil, src.DownwardAPI != nil,
			src.ServiceAccountToken != nil, src.ClusterTrustBundle != nil, src.PodCertificate != nil} {
			if set {
				n++
			}
		}
		if s := src.Secret; s != nil {
			keyToPaths(s.Name, s.Items, sp.Child("secret"))
		}
		if s := src.ConfigMap; s != nil {
			keyToPaths(s.Name, s.Items, sp.Child("configMap"))
		}
		if s := src.DownwardAPI; s != nil {
			for j := range s.Items {
				errs = append(errs, validateDownwardAPIFile(&s.Items[j], sp.Child("downwardAPI"))...)
				if s.Items[j].Path != "" {
					claim(s.Items[j].Path, s.Items[j].Path)
				}
			}
		}
		if s := src.ServiceAccountToken; s != nil {
			pp := sp.Child("serviceAccountToken")
			if exp := s.ExpirationSeconds; exp == nil {
				errs = append(errs, field.Required(pp.Child("expirationSeconds"), ""))
			} else {
				if *exp < 10*60 {
					errs = append(errs, field.Invalid(pp.Child("expirationSeconds"), *exp, "may not specify a duration less than 10 minutes"))
				}
				if *exp > 1<<32 {
					errs = append(errs, field.Invalid(pp.Child("expirationSeconds"), *exp, "may not specify a duration larger than 2^32 seconds"))
				}
			}
			if s.Path == "" {
				errs = append(errs, field.Required(p.Child("path"), ""))
			} else {
				errs = append(errs, localNonReservedPath(s.Path, p.Child("path"))...)
			}
		}
		if s := src.ClusterTrustBundle; s != nil {
			errs = append(errs, validateClusterTrustBundleProjection(s, sp.Child("clusterTrustBundle"))...)
			claim(s.Path, s.Path)
		}
		if s := src.PodCertificate; s != nil {
			pp := sp.Child("podCertificate")
			errs = append(errs, validatePodCertificateProjection(s, pp)...)
			any := false
			for _, f := range []struct{ name, path string }{
				{"credentialBundlePath", s.CredentialBundlePath}, {"keyPath", s.KeyPath}, {"certificateChainPath", s.CertificateChainPath},
			} {
				if f.path == "" {
					continue
				}
				any = true
				errs = append(errs, localNonReservedPath(f.path, pp.Child(f.name))...)
				claim(f.path, f.path)
			}
			if !any {
				errs = append(errs, field.Required(pp, "specify at least one of credentialBundlePath, keyPath, and certificateChainPath"))
			}
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type per source"))
		}
	}
	return errs
}

// internalClusterTrustBundleProjection is a projection as upstream quotes
// it in an error: its internal type, whose fields have no JSON names.
type internalClusterTrustBundleProjection struct {
	Name          *string
	SignerName    *string
	LabelSelector *metav1.LabelSelector
	Optional      *bool
	Path          string
	User          *int64
}

// validateClusterTrustBundleProjection: a bundle by name (a valid bundle
// name, no selector) or by signer (a valid signer name, a valid
// selector), and a path.
func validateClusterTrustBundleProjection(s *corev1.ClusterTrustBundleProjection, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case s.Name != nil && s.SignerName != nil:
		errs = append(errs, field.Invalid(p, internalClusterTrustBundleProjection{s.Name, s.SignerName, s.LabelSelector, s.Optional, s.Path, s.User}, "only one of name and signerName may be used"))
	case s.Name != nil:
		name := *s.Name
		if name == "" {
			errs = append(errs, field.Required(p.Child("name"), "must be a valid object name"))
		}
		signer := ""
		if i := strings.LastIndex(name, ":"); i >= 0 {
			signer = strings.ReplaceAll(name[:i], ":", "/")
		}
		for _, msg := range bundleNameRule(signer)(name, false) {
			errs = append(errs, field.Invalid(p.Child("name"), name, "not a valid clustertrustbundlename: "+msg))
		}
		if s.LabelSelector != nil {
			errs = append(errs, field.Invalid(p.Child("labelSelector"), s.LabelSelector, "labelSelector must be unset if name is specified"))
		}
	case s.SignerName != nil:
		if *s.SignerName == "" {
			errs = append(errs, field.Required(p.Child("signerName"), "must be a valid signer name"))
		}
		errs = append(errs, validateSignerName(p.Child("signerName"), *s.SignerName)...)
		errs = append(errs, metav1validation.ValidateLabelSelector(s.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("labelSelector"))...)
	default:
		errs = append(errs, field.Required(p, "either name or signerName must be specified"))
	}
	if s.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	return append(errs, localNonReservedPath(s.Path, p.Child("path"))...)
}

// The longest certificate lifetime a pod certificate may ask for, and
// the longest from a kubernetes.io signer.
const (
	podCertMaxExpiration           = 91 * 24 * 60 * 60
	podCertKubernetesMaxExpiration = 24 * 60 * 60
)

var podCertKeyTypes = []string{"RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"}

// validatePodCertificateProjection checks a pod certificate's signer,
// annotations, key type and lifetime (its paths are checked with the
// others of the volume).
func validatePodCertificateProjection(s *corev1.PodCertificateProjection, p *field.Path) field.ErrorList {
	errs := validateSignerName(p.Child("signerName"), s.SignerName)
	if s.UserAnnotations != nil {
		ap := p.Child("userAnnotations")
		for _, k := range slices.Sorted(maps.Keys(s.UserAnnotations)) {
			errs = append(errs, validation.IsDomainPrefixedKey(ap, strings.ToLower(k))...)
		}
		if apivalidation.ValidateAnnotationsSize(s.UserAnnotations) != nil {
			errs = append(errs, field.TooLong(ap, "", apivalidation.TotalAnnotationSizeLimitB))
		}
	}
	if !slices.Contains(podCertKeyTypes, s.KeyType) {
		errs = append(errs, field.NotSupported(p.Child("keyType"), s.KeyType, podCertKeyTypes))
	}
	if m := s.MaxExpirationSeconds; m != nil {
		if *m < 3600 {
			errs = append(errs, field.Invalid(p.Child("maxExpirationSeconds"), *m, "if provided, maxExpirationSeconds must be >= 3600"))
		}
		limit := podCertMaxExpiration
		if host, _, _ := strings.Cut(s.SignerName, "/"); host == "kubernetes.io" || strings.HasSuffix(host, ".kubernetes.io") {
			limit = podCertKubernetesMaxExpiration
		}
		if *m > int32(limit) {
			errs = append(errs, field.Invalid(p.Child("maxExpirationSeconds"), *m, fmt.Sprintf("if provided, maxExpirationSeconds must be <= %d", limit)))
		}
	}
	return errs
}

// iSCSI names: qualified (iqn), EUI-64 (eui) and NAA (naa) forms.
var (
	iqnName = regexp.MustCompile(`iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$`)
	euiName = regexp.MustCompile(`^eui.[[:alnum:]]{16}$`)
	naaName = regexp.MustCompile(`^naa.[[:alnum:]]{32}$`)
)

// iscsiNameValid reports whether a name of a known form is well formed
// (and false for an unknown form).
func iscsiNameValid(n string) bool {
	switch {
	case strings.HasPrefix(n, "iqn"):
		return iqnName.MatchString(n)
	case strings.HasPrefix(n, "eui"):
		return euiName.MatchString(n)
	case strings.HasPrefix(n, "naa"):
		return naaName.MatchString(n)
	}
	return false
}

func knownISCSIForm(n string) bool {
	return strings.HasPrefix(n, "iqn") || strings.HasPrefix(n, "eui") || strings.HasPrefix(n, "naa")
}

func validateISCSI(s *corev1.ISCSIVolumeSource, p *field.Path) field.ErrorList {
	errs := requiredStrings(p, "targetPortal", s.TargetPortal)
	switch {
	case s.IQN == "":
		errs = append(errs, field.Required(p.Child("iqn"), ""))
	case !knownISCSIForm(s.IQN):
		errs = append(errs, field.Invalid(p.Child("iqn"), s.IQN, "must be valid format starting with iqn, eui, or naa"))
	case !iscsiNameValid(s.IQN):
		errs = append(errs, field.Invalid(p.Child("iqn"), s.IQN, "must be valid format"))
	}
	if s.Lun < 0 || s.Lun > 255 {
		errs = append(errs, field.Invalid(p.Child("lun"), s.Lun, validation.InclusiveRangeError(0, 255)))
	}
	if (s.DiscoveryCHAPAuth || s.SessionCHAPAuth) && s.SecretRef == nil {
		errs = append(errs, field.Required(p.Child("secretRef"), ""))
	}
	if in := s.InitiatorName; in != nil {
		if !knownISCSIForm(*in) {
			errs = append(errs, field.Invalid(p.Child("initiatorname"), *in, "must be valid format starting with iqn, eui, or naa"))
		} else if !iscsiNameValid(*in) {
			errs = append(errs, field.Invalid(p.Child("initiatorname"), *in, "must be valid format"))
		}
	}
	return errs
}

func validateQuobyte(s *corev1.QuobyteVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	const hostPorts = "must be a host:port pair or multiple pairs separated by commas"
	switch {
	case s.Registry == "":
		errs = append(errs, field.Required(p.Child("registry"), hostPorts))
	case len(s.Tenant) >= 65:
		errs = append(errs, field.Required(p.Child("tenant"), "must be a UUID and may not exceed a length of 64 characters"))
	default:
		for _, hp := range strings.Split(s.Registry, ",") {
			if _, _, err := net.SplitHostPort(hp); err != nil {
				errs = append(errs, field.Invalid(p.Child("registry"), s.Registry, hostPorts))
			}
		}
	}
	return append(errs, requiredStrings(p, "volume", s.Volume)...)
}

func validateFC(s *corev1.FCVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(s.TargetWWNs) < 1 && len(s.WWIDs) < 1 {
		errs = append(errs, field.Required(p.Child("targetWWNs"), "must specify either targetWWNs or wwids, but not both"))
	}
	if len(s.TargetWWNs) != 0 && len(s.WWIDs) != 0 {
		errs = append(errs, field.Invalid(p.Child("targetWWNs"), s.TargetWWNs, "targetWWNs and wwids can not be specified simultaneously"))
	}
	if len(s.TargetWWNs) != 0 {
		switch {
		case s.Lun == nil:
			errs = append(errs, field.Required(p.Child("lun"), "lun is required if targetWWNs is specified"))
		case *s.Lun < 0 || *s.Lun > 255:
			errs = append(errs, field.Invalid(p.Child("lun"), *s.Lun, validation.InclusiveRangeError(0, 255)))
		}
	}
	return errs
}

// validateFlex refuses options in the kubernetes.io and k8s.io
// namespaces. Upstream ranges over the map; crdserver names them in key
// order.
func validateFlex(s *corev1.FlexVolumeSource, p *field.Path) field.ErrorList {
	errs := requiredStrings(p, "driver", s.Driver)
	for _, k := range slices.Sorted(maps.Keys(s.Options)) {
		ns, _, _ := strings.Cut(k, "/")
		n := "." + strings.ToLower(ns)
		if strings.HasSuffix(n, ".kubernetes.io") || strings.HasSuffix(n, ".k8s.io") {
			errs = append(errs, field.Invalid(p.Child("options").Key(k), k, "kubernetes.io and k8s.io namespaces are reserved"))
		}
	}
	return errs
}

func validateAzureDisk(s *corev1.AzureDiskVolumeSource, p *field.Path) field.ErrorList {
	errs := requiredStrings(p, "diskName", s.DiskName, "diskURI", s.DataDiskURI)
	if m := s.CachingMode; m != nil && *m != corev1.AzureDataDiskCachingNone && *m != corev1.AzureDataDiskCachingReadOnly && *m != corev1.AzureDataDiskCachingReadWrite {
		errs = append(errs, field.NotSupported(p.Child("cachingMode"), *m, []corev1.AzureDataDiskCachingMode{corev1.AzureDataDiskCachingNone, corev1.AzureDataDiskCachingReadOnly, corev1.AzureDataDiskCachingReadWrite}))
	}
	if k := s.Kind; k != nil && *k != corev1.AzureDedicatedBlobDisk && *k != corev1.AzureManagedDisk && *k != corev1.AzureSharedBlobDisk {
		errs = append(errs, field.NotSupported(p.Child("kind"), *k, []corev1.AzureDataDiskKind{corev1.AzureDedicatedBlobDisk, corev1.AzureManagedDisk, corev1.AzureSharedBlobDisk}))
	}
	if k := s.Kind; k != nil && *k == corev1.AzureManagedDisk && !strings.HasPrefix(s.DataDiskURI, "/subscriptions/") {
		errs = append(errs, field.NotSupported(p.Child("diskURI"), s.DataDiskURI, []string{"/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"}))
	}
	if k := s.Kind; k != nil && *k != corev1.AzureManagedDisk && !strings.HasPrefix(s.DataDiskURI, "https://") {
		errs = append(errs, field.NotSupported(p.Child("diskURI"), s.DataDiskURI, []string{"https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"}))
	}
	return errs
}

func validateStorageOS(s *corev1.StorageOSVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.VolumeName == "" {
		errs = append(errs, field.Required(p.Child("volumeName"), ""))
	} else {
		errs = append(errs, dns1123Label(s.VolumeName, p.Child("volumeName"))...)
	}
	if s.VolumeNamespace != "" {
		errs = append(errs, dns1123Label(s.VolumeNamespace, p.Child("volumeNamespace"))...)
	}
	if r := s.SecretRef; r != nil && r.Name == "" {
		errs = append(errs, field.Required(p.Child("secretRef", "name"), ""))
	}
	return errs
}

// validateTemplateMeta is upstream's check of an embedded template's
// metadata: annotations and labels, and no other field set (each named,
// in the order of ObjectMeta's fields).
func validateTemplateMeta(m *metav1.ObjectMeta, p *field.Path) field.ErrorList {
	errs := apivalidation.ValidateAnnotations(m.Annotations, p.Child("annotations"))
	errs = append(errs, metav1validation.ValidateLabels(m.Labels, p.Child("labels"))...)
	v := reflect.ValueOf(*m)
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if f.Name == "Annotations" || f.Name == "Labels" || v.Field(i).IsZero() {
			continue
		}
		errs = append(errs, field.Forbidden(p.Child(strings.ToLower(f.Name[:1])+f.Name[1:]), "cannot be set"))
	}
	return errs
}

// validateNFS checks an NFS source, of a pod's volume or a persistent
// volume alike.
func validateNFS(s *corev1.NFSVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Server == "" {
		errs = append(errs, field.Required(p.Child("server"), ""))
	}
	if s.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	if !path.IsAbs(s.Path) {
		errs = append(errs, field.Invalid(p.Child("path"), s.Path, "must be an absolute path"))
	}
	return errs
}
