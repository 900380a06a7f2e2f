package builtin

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sort"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// SignerAuthorizer tells whether the writer of a request (its ctx) may do
// verb on a signer, as upstream asks it: the certificates.k8s.io
// "signers" resource named signerName, else named its domain and "/*".
type SignerAuthorizer interface {
	AuthorizedForSigner(ctx context.Context, verb, signerName string) bool
}

// ClusterTrustBundles is the certificates.k8s.io/v1 clustertrustbundles
// resource: stored PEM bundles of CA certificates, checked as upstream
// checks them. A bundle linked to a signer is named for it and may be
// written only by who may "attest" for the signer (upstream's
// ClusterTrustBundleAttest admission), asked of signers.
func ClusterTrustBundles(signers SignerAuthorizer) *registry.Definition {
	k := kindDef{
		group: "certificates.k8s.io", version: "v1", resource: "clustertrustbundles", kind: "ClusterTrustBundle",
		scope: registry.Cluster, noGeneration: true, conditional: true,
		selectable: []string{"spec.signerName"},
	}
	def := k.definition(clusterTrustBundleHooks{
		kindHooksNoGeneration: kindHooksNoGeneration[certificatesv1.ClusterTrustBundle, clusterTrustBundleRules]{
			kindHooks: newKindHooks[certificatesv1.ClusterTrustBundle](k, clusterTrustBundleRules{}),
		},
		signers: signers,
	})
	// kube-apiserver 1.37 stores bundles at v1beta1.
	def.HashedStorageVersion = "v1beta1"
	return def
}

// clusterTrustBundleHooks word a refused field selector as upstream's
// field label conversion of bundles does.
type clusterTrustBundleHooks struct {
	kindHooksNoGeneration[certificatesv1.ClusterTrustBundle, clusterTrustBundleRules]
	coreFieldLabels
	signers SignerAuthorizer
}

var (
	_ registry.NameValidator       = clusterTrustBundleHooks{}
	_ registry.CreateNameValidator = clusterTrustBundleHooks{}
	_ registry.WriteChecker        = clusterTrustBundleHooks{}
	_ registry.FieldLabelRefuser   = clusterTrustBundleHooks{}
)

// ValidateName accepts any name: a create checks it with
// CreateNameValidator, an update with the rules (the name's rule depends
// on the signer, which upstream checks again on update).
func (clusterTrustBundleHooks) ValidateName(string, bool) []string { return nil }

// CreateNameValidator: a bundle of a signer is named
// <signer with ':' for '/'>:<DNS subdomain>; one of none has no ':'.
func (clusterTrustBundleHooks) CreateNameValidator(obj map[string]any) func(string, bool) []string {
	spec, _ := obj["spec"].(map[string]any)
	signer, _ := spec["signerName"].(string)
	return bundleNameRule(signer)
}

func bundleNameRule(signer string) func(string, bool) []string {
	return func(name string, prefix bool) []string {
		if signer == "" {
			if strings.Contains(name, ":") {
				return []string{`ClusterTrustBundle without signer name must not have ":" in its name`}
			}
			return apivalidation.NameIsDNSSubdomain(name, prefix)
		}
		want := strings.ReplaceAll(signer, "/", ":") + ":"
		if !strings.HasPrefix(name, want) {
			return []string{fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signer, want)}
		}
		return apivalidation.NameIsDNSSubdomain(strings.TrimPrefix(name, want), prefix)
	}
}

// CheckWrite refuses a bundle of a signer the writer may not attest for.
// Upstream asks after validation (it is an admission plugin): an invalid
// bundle is left to validation's 422. A write that changes only what the
// garbage collector changes is not asked about.
func (h clusterTrustBundleHooks) CheckWrite(ctx context.Context, obj, old map[string]any) error {
	b, _, err := h.Decode(obj)
	if err != nil || h.signers == nil || b.Spec.SignerName == "" || onlyGCFields(obj, old) {
		return nil
	}
	var was *certificatesv1.ClusterTrustBundle
	if old != nil {
		if was, _, err = h.Decode(old); err != nil {
			return nil
		}
	}
	if len(h.rules.validate(b, was)) > 0 || len(apivalidation.ValidateObjectMeta(&b.ObjectMeta, false, h.CreateNameValidator(obj), field.NewPath("metadata"))) > 0 {
		return nil
	}
	if h.signers.AuthorizedForSigner(ctx, "attest", b.Spec.SignerName) {
		return nil
	}
	return apierrors.NewForbidden(certificatesv1.Resource("clustertrustbundles"), b.Name,
		fmt.Errorf("user not permitted to attest for signerName %q", b.Spec.SignerName))
}

type clusterTrustBundleRules struct{}

func (clusterTrustBundleRules) defaults(*certificatesv1.ClusterTrustBundle) {}

// maxTrustBundleSize is upstream's limit on a bundle's PEM text.
const maxTrustBundleSize = 1 << 20

// validate checks the signer name and the bundle (not parsed again when
// an update leaves it as it was); an update may not change the signer.
func (clusterTrustBundleRules) validate(b, was *certificatesv1.ClusterTrustBundle) field.ErrorList {
	p := field.NewPath("spec")
	var errs field.ErrorList
	if was != nil {
		for _, msg := range bundleNameRule(b.Spec.SignerName)(b.Name, false) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), b.Name, msg))
		}
	}
	if b.Spec.SignerName != "" {
		errs = append(errs, validateSignerName(p.Child("signerName"), b.Spec.SignerName)...)
	}
	if was == nil || b.Spec.TrustBundle != was.Spec.TrustBundle {
		errs = append(errs, validateTrustBundle(p.Child("trustBundle"), b.Spec.TrustBundle)...)
	}
	if was != nil {
		errs = append(errs, apivalidation.ValidateImmutableField(b.Spec.SignerName, was.Spec.SignerName, p.Child("signerName"))...)
	}
	return errs
}

// validateTrustBundle accepts one or more CERTIFICATE blocks without
// headers, each a CA certificate, none twice; other text between blocks
// is ignored, as upstream ignores it.
func validateTrustBundle(p *field.Path, bundle string) field.ErrorList {
	if len(bundle) > maxTrustBundleSize {
		return field.ErrorList{field.TooLong(p, "", maxTrustBundleSize)}
	}
	invalid := func(msg string, args ...any) *field.Error {
		return field.Invalid(p, "<value omitted>", fmt.Sprintf(msg, args...))
	}
	var errs field.ErrorList
	seen := map[string][]int{}
	rest := []byte(bundle)
	for i := 0; ; i++ {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			errs = append(errs, invalid("entry %d has bad block type: %v", i, b.Type))
			continue
		}
		if len(b.Headers) != 0 {
			errs = append(errs, invalid("entry %d has PEM block headers", i))
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		switch {
		case err != nil:
			errs = append(errs, invalid("entry %d does not parse as X.509", i))
			continue
		case !cert.IsCA:
			errs = append(errs, invalid("entry %d does not have the CA bit set", i))
			continue
		case !cert.BasicConstraintsValid:
			errs = append(errs, invalid("entry %d has invalid basic constraints", i))
			continue
		}
		seen[string(b.Bytes)] = append(seen[string(b.Bytes)], i)
	}
	if len(errs) > 0 {
		return errs
	}
	if len(seen) == 0 {
		return field.ErrorList{invalid("at least one trust anchor must be provided")}
	}
	// Upstream lists duplicates in its map's order, which varies: here
	// by first index.
	var dups [][]int
	for _, indices := range seen {
		if len(indices) > 1 {
			dups = append(dups, indices)
		}
	}
	sort.Slice(dups, func(i, j int) bool { return dups[i][0] < dups[j][0] })
	for _, indices := range dups {
		errs = append(errs, invalid("duplicate trust anchor (indices %v)", indices))
	}
	return errs
}

func (clusterTrustBundleRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "SignerName", Type: "string", Description: certificatesv1.ClusterTrustBundleSpec{}.SwaggerDoc()["signerName"]},
	}
}

func (clusterTrustBundleRules) cells(b *certificatesv1.ClusterTrustBundle) []any {
	signer := "<none>"
	if b.Spec.SignerName != "" {
		signer = b.Spec.SignerName
	}
	return []any{b.Name, signer}
}
