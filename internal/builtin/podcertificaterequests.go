package builtin

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/mail"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/request"
)

// PodCertificateRequests is the certificates.k8s.io/v1
// podcertificaterequests resource. No kubelet asks for certificates here
// and no signer issues them: requests are stored with upstream's checks
// of the key and its proof of possession, their spec immutable, and a
// signer (who may "sign" for the request's signer, asked of signers)
// writes the outcome to /status, checked as upstream checks it.
func PodCertificateRequests(signers SignerAuthorizer) *registry.Definition {
	k := kindDef{
		group: "certificates.k8s.io", version: "v1", resource: "podcertificaterequests", kind: "PodCertificateRequest",
		scope: registry.Namespaced, status: true, noGeneration: true, conditional: true,
		selectable: []string{"spec.signerName", "spec.podName", "spec.nodeName"},
	}
	def := k.definition(podCertificateRequestHooks{
		kindHooksNoGeneration: kindHooksNoGeneration[certificatesv1.PodCertificateRequest, podCertificateRequestRules]{
			kindHooks: newKindHooks[certificatesv1.PodCertificateRequest](k, podCertificateRequestRules{}),
		},
		signers: signers,
	})
	// kube-apiserver 1.37 stores requests at v1beta1.
	def.HashedStorageVersion = "v1beta1"
	return def
}

// podCertificateRequestHooks word a refused field selector as upstream's
// field label conversion of requests does.
type podCertificateRequestHooks struct {
	kindHooksNoGeneration[certificatesv1.PodCertificateRequest, podCertificateRequestRules]
	coreFieldLabels
	signers SignerAuthorizer
}

var (
	_ registry.StatusValidator   = podCertificateRequestHooks{}
	_ registry.WriteChecker      = podCertificateRequestHooks{}
	_ registry.FieldLabelRefuser = podCertificateRequestHooks{}
)

// ValidateStatusUpdate checks a /status write as upstream's status
// strategy does.
func (h podCertificateRequestHooks) ValidateStatusUpdate(obj, old map[string]any) field.ErrorList {
	r, was, err := h.decodeUpdate(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validatePodCertificateRequestStatus(r, was, time.Now())
}

// CheckWrite refuses a valid change of the status through /status by a
// writer who may not "sign" for the request's signer. Upstream asks after
// the status checks: an invalid write is left to them.
func (h podCertificateRequestHooks) CheckWrite(ctx context.Context, obj, old map[string]any) error {
	info, ok := request.InfoFrom(ctx)
	if old == nil || h.signers == nil || !ok || info.Subresource != "status" {
		return nil
	}
	r, was, err := h.decodeUpdate(obj, old)
	if err != nil {
		return nil
	}
	r.Spec = was.Spec // what the status write keeps
	if equality.Semantic.DeepEqual(r.Status, was.Status) || len(validatePodCertificateRequestStatus(r, was, time.Now())) > 0 {
		return nil
	}
	if h.signers.AuthorizedForSigner(ctx, "sign", was.Spec.SignerName) {
		return nil
	}
	name := ""
	if u, ok := authn.UserFrom(ctx); ok {
		name = u.Name
	}
	return apierrors.NewInvalid(certificatesv1.Kind("PodCertificateRequest"), r.Name, field.ErrorList{
		field.Forbidden(field.NewPath("spec", "signerName"), fmt.Sprintf("User %q is not permitted to \"sign\" for signer %q", name, was.Spec.SignerName)),
	})
}

type podCertificateRequestRules struct{}

// defaults: a day's maxExpirationSeconds, as upstream's v1 defaulter.
func (podCertificateRequestRules) defaults(r *certificatesv1.PodCertificateRequest) {
	if r.Spec.MaxExpirationSeconds == nil {
		r.Spec.MaxExpirationSeconds = ptr.To[int32](24 * 60 * 60)
	}
}

// Upstream's bounds on pod certificate requests.
const (
	pcrMaxKeySize              = 10 * 1024
	pcrMinMaxExpiration        = 60 * 60
	pcrMaxMaxExpiration        = 91 * 24 * 60 * 60
	pcrKubernetesMaxExpiration = 24 * 60 * 60
	pcrMaxUIDLength            = 128
	pcrMaxCertificateChain     = 100 * 1024
)

var (
	pkcs10Path     = field.NewPath("spec", "stubPKCS10Request")
	certChainPath  = field.NewPath("status", "certificateChain")
	notBeforePath  = field.NewPath("status", "notBefore")
	notAfterPath   = field.NewPath("status", "notAfter")
	refreshAtPath  = field.NewPath("status", "beginRefreshAt")
	pcrOmittedSpec = field.OmitValueType{}
)

// validate checks a new request's fields, key and proof of possession;
// an update may not change the spec.
func (podCertificateRequestRules) validate(r, was *certificatesv1.PodCertificateRequest) field.ErrorList {
	p := field.NewPath("spec")
	if was != nil {
		if !equality.Semantic.DeepEqual(r.Spec, was.Spec) {
			return field.ErrorList{field.Invalid(p, internalPCRSpec(&r.Spec), "field is immutable")}
		}
		return nil
	}
	s := &r.Spec
	errs := validateSignerName(p.Child("signerName"), s.SignerName)
	if s.UnverifiedUserAnnotations != nil {
		ap := p.Child("unverifiedUserAnnotations")
		for k := range s.UnverifiedUserAnnotations {
			errs = append(errs, validation.IsDomainPrefixedKey(ap, strings.ToLower(k))...)
		}
		if err := apivalidation.ValidateAnnotationsSize(s.UnverifiedUserAnnotations); err != nil {
			errs = append(errs, field.TooLong(ap, "", apivalidation.TotalAnnotationSizeLimitB))
		}
	}
	for _, check := range []struct {
		name, value, uidName, uid string
	}{
		{"podName", s.PodName, "podUID", string(s.PodUID)},
		{"serviceAccountName", s.ServiceAccountName, "serviceAccountUID", string(s.ServiceAccountUID)},
		{"nodeName", string(s.NodeName), "nodeUID", string(s.NodeUID)},
	} {
		for _, msg := range apivalidation.NameIsDNSSubdomain(check.value, false) {
			errs = append(errs, field.Invalid(p.Child(check.name), check.value, msg))
		}
		if check.uid == "" {
			errs = append(errs, field.Invalid(p.Child(check.uidName), check.uid, "must not be empty"))
		}
		if len(check.uid) > pcrMaxUIDLength {
			errs = append(errs, field.TooLong(p.Child(check.uidName), check.uid, pcrMaxUIDLength))
		}
	}
	if s.MaxExpirationSeconds == nil {
		return append(errs, field.Required(p.Child("maxExpirationSeconds"), "must be set"))
	}
	maxSeconds := int32(pcrMaxMaxExpiration)
	if domain, _, _ := strings.Cut(s.SignerName, "/"); domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io") {
		maxSeconds = pcrKubernetesMaxExpiration
	}
	if e := *s.MaxExpirationSeconds; e < pcrMinMaxExpiration || e > maxSeconds {
		errs = append(errs, field.Invalid(p.Child("maxExpirationSeconds"), s.MaxExpirationSeconds, fmt.Sprintf("must be in the range [%d, %d]", pcrMinMaxExpiration, maxSeconds)))
	}
	// v1 carries the stub request alone (upstream's older public key and
	// proof of possession are not in it).
	if len(s.StubPKCS10Request) == 0 {
		return append(errs, field.Invalid(p, pcrOmittedSpec, "exactly one of (stubPKCS10Request) or (pkixPublicKey, proofOfPossession) must be set"))
	}
	return append(errs, validateStubPKCS10(s.StubPKCS10Request)...)
}

// validateStubPKCS10 checks the stub request's key and signature; its
// contents are the signer's to judge.
func validateStubPKCS10(der []byte) field.ErrorList {
	if len(der) > pcrMaxKeySize {
		return field.ErrorList{field.TooLong(pkcs10Path, der, pcrMaxKeySize)}
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return field.ErrorList{field.Invalid(pkcs10Path, pcrOmittedSpec, "must be a valid PKCS#10 CSR")}
	}
	switch pub := req.PublicKey.(type) {
	case ed25519.PublicKey:
	case *ecdsa.PublicKey:
		if pub.Curve != elliptic.P256() && pub.Curve != elliptic.P384() && pub.Curve != elliptic.P521() {
			return field.ErrorList{field.Invalid(pkcs10Path, "curve "+pub.Curve.Params().Name, "elliptic public keys must use curve P256, P384, or P521")}
		}
	case *rsa.PublicKey:
		if bits := pub.Size() * 8; bits != 3072 && bits != 4096 {
			return field.ErrorList{field.Invalid(pkcs10Path, fmt.Sprintf("%d-bit modulus", bits), "RSA keys must have modulus size 3072 or 4096")}
		}
	default:
		return field.ErrorList{field.Invalid(pkcs10Path, pcrOmittedSpec, "unknown public key type; supported types are Ed25519, ECDSA, and RSA")}
	}
	if req.CheckSignature() != nil {
		return field.ErrorList{field.Invalid(pkcs10Path, pcrOmittedSpec, "invalid signature")}
	}
	return nil
}

// pcrOutcomes are the condition types of a request's outcome, at most
// one of them, each True.
var pcrOutcomes = []string{certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed}

func pcrHas(r *certificatesv1.PodCertificateRequest, t string) bool {
	for _, c := range r.Status.Conditions {
		if c.Type == t && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

func pcrDone(r *certificatesv1.PodCertificateRequest) bool {
	return pcrHas(r, pcrOutcomes[0]) || pcrHas(r, pcrOutcomes[1]) || pcrHas(r, pcrOutcomes[2])
}

// validatePodCertificateRequestStatus is upstream's check of a status
// write: the conditions, then an outcome's status (an issued chain, its
// key and times against now).
func validatePodCertificateRequestStatus(r, was *certificatesv1.PodCertificateRequest, now time.Time) field.ErrorList {
	var errs field.ErrorList
	outcomes := 0
	for i, c := range r.Status.Conditions {
		// Upstream names the index as a child of its own ("conditions.[0]").
		cp := field.NewPath("status", "conditions", fmt.Sprintf("[%d]", i))
		switch c.Type {
		case pcrOutcomes[0], pcrOutcomes[1], pcrOutcomes[2]:
			if outcomes++; outcomes > 1 {
				errs = append(errs, field.Invalid(cp.Child("type"), c.Type, `There may be at most one condition with type "Issued", "Denied", or "Failed"`))
			}
			if c.Status != metav1.ConditionTrue {
				errs = append(errs, field.NotSupported(cp.Child("status"), c.Status, []metav1.ConditionStatus{metav1.ConditionTrue}))
			}
		default:
			errs = append(errs, field.NotSupported(cp.Child("type"), c.Type, pcrOutcomes))
		}
	}
	errs = append(errs, metav1validation.ValidateConditions(r.Status.Conditions, field.NewPath("status", "conditions"))...)
	if len(errs) > 0 {
		return errs
	}
	p := field.NewPath("status")
	unchanged := func(want certificatesv1.PodCertificateRequestStatus, detail string) field.ErrorList {
		if equality.Semantic.DeepEqual(r.Status, want) {
			return nil
		}
		return field.ErrorList{field.Invalid(p, field.OmitValueType{}, detail)}
	}
	switch {
	case pcrDone(was):
		return unchanged(was.Status, "immutable after PodCertificateRequest is issued, denied, or failed")
	case pcrHas(r, pcrOutcomes[1]) || pcrHas(r, pcrOutcomes[2]):
		return unchanged(certificatesv1.PodCertificateRequestStatus{Conditions: r.Status.Conditions},
			"non-condition status fields must be empty when denying or failing the PodCertificateRequest")
	case pcrHas(r, pcrOutcomes[0]):
		return validateIssued(r, was, now)
	}
	return unchanged(was.Status, `status is immutable unless transitioning to "Issued", "Denied", or "Failed"`)
}

// validateIssued checks an issued chain: PEM certificates, the leaf's
// names, its key the requested one, its times those of the status, a
// lifetime within the request's and a refresh time well inside it.
func validateIssued(r, was *certificatesv1.PodCertificateRequest, now time.Time) field.ErrorList {
	s := &r.Status
	chain := s.CertificateChain
	invalid := func(p *field.Path, v any, msg string) field.ErrorList {
		return field.ErrorList{field.Invalid(p, v, msg)}
	}
	if len(chain) > pcrMaxCertificateChain {
		return field.ErrorList{field.TooLong(certChainPath, chain, pcrMaxCertificateChain)}
	}
	block, rest := pem.Decode([]byte(chain))
	switch {
	case block == nil:
		return invalid(certChainPath, chain, "issued certificate chain must contain at least one certificate")
	case block.Type != "CERTIFICATE":
		return invalid(certChainPath, chain, "issued certificate chain must consist entirely of CERTIFICATE PEM blocks")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return invalid(certChainPath, chain, "leaf certificate does not parse as valid X.509")
	}
	var errs field.ErrorList
	for _, name := range leaf.DNSNames {
		if name == "" {
			errs = append(errs, field.Invalid(certChainPath, name, "leaf certificate should not contain empty DNSName"))
		}
		if strings.Contains(name, "..") {
			errs = append(errs, field.Invalid(certChainPath, name, "leaf certificate's DNSName should not contain '..'"))
		}
		if strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") {
			errs = append(errs, field.Invalid(certChainPath, name, "leaf certificate's DNSName should not start or end with '.'"))
		}
	}
	for _, addr := range leaf.EmailAddresses {
		if _, err := mail.ParseAddress(addr); err != nil {
			errs = append(errs, field.Invalid(certChainPath, addr, "leaf certificate should not contain invalid EmailAddress"))
		}
	}
	req, err := x509.ParseCertificateRequest(was.Spec.StubPKCS10Request)
	if err != nil {
		return append(errs, field.Invalid(pkcs10Path, field.OmitValueType{}, "must be a valid PKCS#10 CSR"))
	}
	if k, ok := req.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); ok && !k.Equal(leaf.PublicKey) {
		return append(errs, field.Invalid(certChainPath, chain, "leaf certificate was not issued to the requested public key"))
	}
	if s.NotBefore == nil {
		errs = append(errs, field.Required(notBeforePath, "must be present and consistent with the issued certificate"))
	}
	if s.NotAfter == nil {
		errs = append(errs, field.Required(notAfterPath, "must be present and consistent with the issued certificate"))
	}
	if s.BeginRefreshAt == nil {
		errs = append(errs, field.Required(refreshAtPath, "must be present and in the range [notbefore+10min, notafter-10min]"))
	}
	if len(errs) > 0 {
		return errs
	}
	lifetime := leaf.NotAfter.Sub(leaf.NotBefore)
	switch {
	case !s.NotBefore.Time.Equal(leaf.NotBefore):
		return invalid(notBeforePath, s.NotBefore.Time, "must be set to the NotBefore time encoded in the leaf certificate")
	case s.NotBefore.Time.Sub(now).Abs() > 5*time.Minute:
		return invalid(notBeforePath, s.NotBefore.Time, "must be set to within 5 minutes of kube-apiserver's current time")
	case !s.NotAfter.Time.Equal(leaf.NotAfter):
		return invalid(notAfterPath, s.NotAfter.Time, "must be set to the NotAfter time encoded in the leaf certificate")
	case lifetime < time.Hour:
		return invalid(certChainPath, lifetime, "leaf certificate lifetime must be >= 1 hour")
	case lifetime > time.Duration(*r.Spec.MaxExpirationSeconds)*time.Second:
		return invalid(certChainPath, lifetime, fmt.Sprintf("leaf certificate lifetime must be <= spec.maxExpirationSeconds (%v)", *r.Spec.MaxExpirationSeconds))
	case s.BeginRefreshAt.Time.Before(s.NotBefore.Time.Add(10 * time.Minute)):
		return invalid(refreshAtPath, s.BeginRefreshAt.Time, "must be at least 10 minutes after status.notBefore")
	case s.BeginRefreshAt.Time.After(s.NotAfter.Time.Add(-10 * time.Minute)):
		return invalid(refreshAtPath, s.BeginRefreshAt.Time, "must be at least 10 minutes before status.notAfter")
	}
	for {
		var next *pem.Block
		if next, rest = pem.Decode(rest); next == nil {
			return nil
		}
		if next.Type != "CERTIFICATE" {
			// Upstream's words, its typo kept.
			return invalid(certChainPath, chain, "issued certificate chain must consist entirely of CERTFICATE PEM blocks")
		}
		if _, err := x509.ParseCertificate(next.Bytes); err != nil {
			return invalid(certChainPath, chain, "intermediate certificate does not parse as valid X.509")
		}
	}
}

// internalPCRSpec is a spec as upstream quotes its internal form: Go
// field names, none omitted, with the key fields v1 no longer has.
func internalPCRSpec(s *certificatesv1.PodCertificateRequestSpec) map[string]any {
	var maxSeconds any
	if s.MaxExpirationSeconds != nil {
		maxSeconds = *s.MaxExpirationSeconds
	}
	var annotations any
	if s.UnverifiedUserAnnotations != nil {
		annotations = s.UnverifiedUserAnnotations
	}
	var stub any
	if s.StubPKCS10Request != nil {
		stub = s.StubPKCS10Request
	}
	return map[string]any{
		"SignerName": s.SignerName, "PodName": s.PodName, "PodUID": s.PodUID,
		"ServiceAccountName": s.ServiceAccountName, "ServiceAccountUID": s.ServiceAccountUID,
		"NodeName": s.NodeName, "NodeUID": s.NodeUID, "MaxExpirationSeconds": maxSeconds,
		"PKIXPublicKey": nil, "ProofOfPossession": nil, "StubPKCS10Request": stub,
		"UnverifiedUserAnnotations": annotations,
	}
}

func (podCertificateRequestRules) columns() []metav1.TableColumnDefinition {
	doc := certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "PodName", Type: "string", Description: doc["podName"]},
		{Name: "ServiceAccountName", Type: "string", Description: doc["serviceAccountName"]},
		{Name: "NodeName", Type: "string", Description: doc["nodeName"]},
		{Name: "SignerName", Type: "string", Description: doc["signerName"]},
		{Name: "State", Type: "string", Description: "Is the request Pending, Issued, Denied, or Failed?"},
		{Name: "UnverifiedUserAnnotations", Type: "string", Description: doc["unverifiedUserAnnotations"]},
	}
}

// cells are upstream's wide row, which its server always prints.
func (podCertificateRequestRules) cells(r *certificatesv1.PodCertificateRequest) []any {
	state := "Pending"
	for _, c := range r.Status.Conditions {
		switch c.Type {
		case pcrOutcomes[0]:
			state = "Issued"
		case pcrOutcomes[1]:
			state = "Denied"
		case pcrOutcomes[2]:
			state = "Failed"
		}
	}
	return []any{r.Name, r.Spec.PodName, r.Spec.ServiceAccountName, string(r.Spec.NodeName), r.Spec.SignerName, state,
		labels.FormatLabels(r.Spec.UnverifiedUserAnnotations)}
}
