package builtin

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// CertificateSigningRequests is the certificates.k8s.io/v1
// certificatesigningrequests resource. No signer runs here: requests are
// stored with their requester, approved or denied through /approval, and
// a client may write a certificate to /status. Validation covers the
// request (a signed PEM CERTIFICATE REQUEST), usages, the signer name and
// expirationSeconds; writes to /status and /approval have their
// conditions and certificate checked as upstream's strategies check them.
func CertificateSigningRequests() *registry.Definition {
	k := kindDef{
		group: "certificates.k8s.io", version: "v1", resource: "certificatesigningrequests", kind: "CertificateSigningRequest",
		shortNames: []string{"csr"}, scope: registry.Cluster, status: true, noGeneration: true,
		statusMetadata: registry.UserMetadata,
		selectable:     []string{"spec.signerName"},
	}
	def := k.definition(csrHooks{kindHooksNoGeneration[certificatesv1.CertificateSigningRequest, csrRules]{
		kindHooks: newKindHooks[certificatesv1.CertificateSigningRequest](k, csrRules{}),
	}})
	def.Versions[0].Subresources.Other = []registry.OtherSubresource{{Name: "approval", Verbs: []string{"get", "patch", "update"}}}
	return def
}

type csrHooks struct {
	kindHooksNoGeneration[certificatesv1.CertificateSigningRequest, csrRules]
}

var (
	_ registry.RequestPreparer      = csrHooks{}
	_ registry.UpdatePreparer       = csrHooks{}
	_ registry.SubresourceUpdater   = csrHooks{}
	_ registry.FieldResetter        = csrHooks{}
	_ registry.StatusUpdatePreparer = csrHooks{}
	_ registry.NameValidator        = csrHooks{}
	_ registry.StatusValidator      = csrHooks{}
	_ registry.SubresourceValidator = csrHooks{}
)

// ValidateName: upstream puts no rule on CSR names beyond metadata's.
func (csrHooks) ValidateName(string, bool) []string { return nil }

// PrepareForCreateIn records the requester in spec, replacing what the
// body said, as upstream does.
func (csrHooks) PrepareForCreateIn(ctx context.Context, obj map[string]any) {
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		obj["spec"] = spec
	}
	for _, f := range []string{"username", "uid", "groups", "extra"} {
		delete(spec, f)
	}
	u, ok := authn.UserFrom(ctx)
	if !ok {
		return
	}
	u.SetFields(spec)
}

// PrepareForUpdate: only metadata changes through the main resource.
func (h csrHooks) PrepareForUpdate(obj, old map[string]any) {
	for _, f := range []string{"spec", "status"} {
		if v, ok := old[f]; ok {
			obj[f] = runtime.DeepCopyJSONValue(v)
		} else {
			delete(obj, f)
		}
	}
}

// ResetFields are upstream's CSR strategies': a write of the main
// resource owns neither spec nor status, one through /status neither
// spec nor conditions, one through /approval neither spec nor
// certificate.
func (csrHooks) ResetFields(subresource string) [][]string {
	switch subresource {
	case "":
		return [][]string{{"spec"}, {"status"}}
	case "status":
		return [][]string{{"spec"}, {"status", "conditions"}}
	case "approval":
		return [][]string{{"spec"}, {"status", "certificate"}}
	}
	return nil
}

// UpdateSubresource serves /approval as upstream's approval strategy
// prepares it, once the write's fields are recorded (less its reset
// fields, ResetFields) and mutating admission saw it whole: the
// conditions written are kept, the times they lack set; the spec and the
// rest of the status are old's. The metadata is the write's, as the main
// resource's.
func (csrHooks) Updates(sub string) bool { return sub == "approval" }

func (csrHooks) UpdateSubresource(name string, obj, old map[string]any) map[string]any {
	if name != "approval" {
		return obj
	}
	if spec, ok := old["spec"].(map[string]any); ok {
		obj["spec"] = codec.DeepCopy(spec)
	} else {
		delete(obj, "spec")
	}
	oldStatus, _ := old["status"].(map[string]any)
	status := codec.DeepCopy(oldStatus)
	if status == nil {
		status = map[string]any{}
	}
	newStatus, _ := obj["status"].(map[string]any)
	if c, ok := newStatus["conditions"]; ok {
		was, _ := oldStatus["conditions"].([]any)
		stampConditions(c, was, time.Now())
		status["conditions"] = c
	} else {
		delete(status, "conditions")
	}
	obj["status"] = status
	return obj
}

// PrepareForStatusUpdate keeps the stored Approved and Denied conditions
// where the write has as many of each (their number changed is refused
// by validation), then sets the times the conditions lack, as upstream's
// status strategy does.
func (csrHooks) PrepareForStatusUpdate(obj, old map[string]any) {
	status, _ := obj["status"].(map[string]any)
	oldStatus, _ := old["status"].(map[string]any)
	was, _ := oldStatus["conditions"].([]any)
	conds, _ := status["conditions"].([]any)
	for _, t := range []string{string(certificatesv1.CertificateApproved), string(certificatesv1.CertificateDenied)} {
		now, before := conditionIndices(conds, t), conditionIndices(was, t)
		if len(now) != len(before) {
			continue
		}
		for i, at := range now {
			conds[at] = runtime.DeepCopyJSONValue(was[before[i]])
		}
	}
	stampConditions(status["conditions"], was, time.Now())
}

// conditionIndices are the places of the conditions of type t.
func conditionIndices(conds []any, t string) []int {
	var out []int
	for i, c := range conds {
		if c, ok := c.(map[string]any); ok && c["type"] == t {
			out = append(out, i)
		}
	}
	return out
}

// stampConditions sets the times a CSR's conditions lack, as upstream's
// approval and status strategies do: lastUpdateTime now, and
// lastTransitionTime that of the stored condition of the same type and
// status, or now.
func stampConditions(conditions any, was []any, now time.Time) {
	list, _ := conditions.([]any)
	stamp := metav1.NewTime(now).Rfc3339Copy().UTC().Format(time.RFC3339)
	for _, c := range list {
		c, ok := c.(map[string]any)
		if !ok {
			continue
		}
		if c["lastUpdateTime"] == nil {
			c["lastUpdateTime"] = stamp
		}
		if c["lastTransitionTime"] != nil {
			continue
		}
		c["lastTransitionTime"] = stamp
		for _, w := range was {
			if w, ok := w.(map[string]any); ok && w["type"] == c["type"] && w["status"] == c["status"] && w["lastTransitionTime"] != nil {
				c["lastTransitionTime"] = w["lastTransitionTime"]
				break
			}
		}
	}
}

// ValidateStatusUpdate checks a /status write as upstream's status
// strategy does: the conditions, a certificate that is set or changed,
// and no Approved or Denied condition added, changed or removed.
func (h csrHooks) ValidateStatusUpdate(obj, old map[string]any) field.ErrorList {
	return h.validateSubresource(obj, old, false)
}

// ValidateSubresourceUpdate checks an /approval write as upstream's
// approval strategy does: as a /status write, but Approved and Denied may
// be added (not both) and the certificate is not the writer's.
func (h csrHooks) ValidateSubresourceUpdate(name string, obj, old map[string]any) field.ErrorList {
	if name != "approval" {
		return nil
	}
	return h.validateSubresource(obj, old, true)
}

func (h csrHooks) validateSubresource(obj, old map[string]any, approval bool) field.ErrorList {
	csr, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	was, _, err := h.Decode(old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateCSRStatus(csr, was, approval)
}

// validateCSRStatus is upstream's check of a CSR's status on update. What
// the stored object already breaks (Approved beside Denied, a type twice,
// an empty type, a certificate that does not parse) is tolerated, as
// upstream tolerates it for compatibility.
func validateCSRStatus(csr, was *certificatesv1.CertificateSigningRequest, approval bool) field.ErrorList {
	p := field.NewPath("status", "conditions")
	errs := validateCSRConditions(p, csr.Status.Conditions, was.Status.Conditions)
	certChanged := !bytes.Equal(csr.Status.Certificate, was.Status.Certificate)
	if certChanged && checkCertificates(was.Status.Certificate) == nil {
		if err := checkCertificates(csr.Status.Certificate); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
		}
	}
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		if len(conditionsOf(csr, t)) < len(conditionsOf(was, t)) {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if !approval {
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			now, before := conditionsOf(csr, t), conditionsOf(was, t)
			switch {
			case len(now) < len(before):
				// a removal, refused above
			case len(now) > len(before):
				errs = append(errs, field.Forbidden(p, fmt.Sprintf("updates may not add a condition of type %q", t)))
			case !equality.Semantic.DeepEqual(now, before):
				errs = append(errs, field.Forbidden(p, fmt.Sprintf("updates may not modify a condition of type %q", t)))
			}
		}
	}
	if certChanged {
		switch {
		case approval:
			errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not set certificate content"))
		case len(was.Status.Certificate) > 0:
			errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not modify existing certificate content"))
		}
	}
	// Upstream's declarative rule, listed after the others: at most one
	// of Approved and Denied (unless the stored object has both already).
	both := func(c *certificatesv1.CertificateSigningRequest) bool {
		return len(conditionsOf(c, certificatesv1.CertificateApproved)) > 0 && len(conditionsOf(c, certificatesv1.CertificateDenied)) > 0
	}
	if both(csr) && !both(was) {
		errs = append(errs, field.Invalid(p, `{conditions[{"type":"Approved"}], conditions[{"type":"Denied"}]}`,
			"must specify at most one of: `conditions[{\"type\":\"Approved\"}]`, `conditions[{\"type\":\"Denied\"}]`"))
	}
	return errs
}

// validateCSRConditions checks each condition's type and status and that
// no type is there twice, tolerating in each what the stored conditions
// already do.
func validateCSRConditions(p *field.Path, conds, was []certificatesv1.CertificateSigningRequestCondition) field.ErrorList {
	var dupBefore, emptyBefore bool
	seenBefore := map[certificatesv1.RequestConditionType]bool{}
	for _, c := range was {
		dupBefore = dupBefore || seenBefore[c.Type]
		seenBefore[c.Type] = true
		emptyBefore = emptyBefore || c.Type == ""
	}

	var errs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	for i, c := range conds {
		cp := p.Index(i)
		if !emptyBefore && c.Type == "" {
			errs = append(errs, field.Required(cp.Child("type"), ""))
		}
		allowed := []string{string(corev1.ConditionFalse), string(corev1.ConditionTrue), string(corev1.ConditionUnknown)}
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			allowed = []string{string(corev1.ConditionTrue)}
		}
		switch {
		case c.Status == "":
			errs = append(errs, field.Required(cp.Child("status"), ""))
		case !slices.Contains(allowed, string(c.Status)):
			errs = append(errs, field.NotSupported(cp.Child("status"), c.Status, allowed))
		}
		if !dupBefore {
			if seen[c.Type] {
				errs = append(errs, field.Duplicate(cp.Child("type"), c.Type))
			}
			seen[c.Type] = true
		}
	}
	return errs
}

func conditionsOf(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			out = append(out, c)
		}
	}
	return out
}

// checkCertificates checks a status.certificate as upstream does: empty,
// or one or more CERTIFICATE PEM blocks without headers, each holding
// certificates that parse.
func checkCertificates(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		blocks++
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return errors.New("found CERTIFICATE PEM block containing 0 certificates")
		}
		data = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

type csrRules struct{}

func (csrRules) defaults(*certificatesv1.CertificateSigningRequest) {}

// csrUsages are the key usages upstream accepts.
var csrUsages = []string{
	"any", "cert sign", "client auth", "code signing", "content commitment", "crl sign", "data encipherment",
	"decipher only", "digital signature", "email protection", "encipher only", "ipsec end system", "ipsec tunnel",
	"ipsec user", "key agreement", "key encipherment", "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime",
	"server auth", "signing", "timestamping",
}

// legacyUnknownSignerName is refused by the v1 API.
const legacyUnknownSignerName = "kubernetes.io/legacy-unknown"

func (csrRules) validate(csr, was *certificatesv1.CertificateSigningRequest) field.ErrorList {
	if was != nil {
		return nil // spec and status are the stored ones (PrepareForUpdate)
	}
	p := field.NewPath("spec")
	var errs field.ErrorList
	if err := checkCSR(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(p.Child("request"), csr.Spec.Request, err.Error()))
	}
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(p.Child("usages"), ""))
	}
	seen := map[certificatesv1.KeyUsage]bool{}
	for i, u := range csr.Spec.Usages {
		up := p.Child("usages").Index(i)
		if !slices.Contains(csrUsages, string(u)) {
			errs = append(errs, field.NotSupported(up, u, csrUsages))
		}
		if seen[u] {
			errs = append(errs, field.Duplicate(up, u))
		}
		seen[u] = true
	}
	if csr.Spec.SignerName == legacyUnknownSignerName {
		errs = append(errs, field.Invalid(p.Child("signerName"), csr.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, validateSignerName(p.Child("signerName"), csr.Spec.SignerName)...)
	}
	if s := csr.Spec.ExpirationSeconds; s != nil && *s < 600 {
		errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *s, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	return errs
}

// checkCSR parses a PEM certificate request and checks its signature.
func checkCSR(pemBytes []byte) error {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return err
	}
	return req.CheckSignature()
}

// validateSignerName checks the form domain/path of a signer name: the
// domain's labels and length, the path's labels, the whole length.
func validateSignerName(p *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	segments := strings.Split(name, "/")
	if len(segments) != 2 {
		return field.ErrorList{field.Invalid(p, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	if len(segments[0]) > validation.DNS1123SubdomainMaxLength {
		errs = append(errs, field.TooLong(p, "", validation.DNS1123SubdomainMaxLength))
	}
	labels := strings.Split(segments[0], ".")
	for _, l := range labels {
		if msgs := validation.IsDNS1123Label(l); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(p, segments[0], fmt.Sprintf("validating label %q: %s", l, msg)))
			}
			break
		}
	}
	if len(labels) < 2 {
		errs = append(errs, field.Invalid(p, segments[0], "should be a domain with at least two segments separated by dots"))
	}
	for _, l := range strings.Split(segments[1], ".") {
		if msgs := validation.IsDNS1123Subdomain(l); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(p, segments[1], fmt.Sprintf("validating label %q: %s", l, msg)))
			}
			break
		}
	}
	// The path fits a DNS label, a dot and a subdomain.
	if maxLen := 2*validation.DNS1123SubdomainMaxLength + validation.DNS1123LabelMaxLength + 2; len(name) > maxLen {
		errs = append(errs, field.TooLong(p, "", maxLen))
	}
	return errs
}

// columns are upstream's, described by the v1beta1 types' docs, as its
// printer describes them.
func (csrRules) columns() []metav1.TableColumnDefinition {
	spec, status := certificatesv1beta1.CertificateSigningRequestSpec{}.SwaggerDoc(), certificatesv1beta1.CertificateSigningRequestStatus{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn, ageColumn,
		{Name: "SignerName", Type: "string", Description: spec["signerName"]},
		{Name: "Requestor", Type: "string", Description: spec["request"]},
		{Name: "RequestedDuration", Type: "string", Description: spec["expirationSeconds"]},
		{Name: "Condition", Type: "string", Description: status["conditions"]},
	}
}

func (csrRules) cells(csr *certificatesv1.CertificateSigningRequest) []any {
	signer := "<none>"
	if csr.Spec.SignerName != "" {
		signer = csr.Spec.SignerName
	}
	requested := "<none>"
	if s := csr.Spec.ExpirationSeconds; s != nil {
		requested = duration.HumanDuration(time.Duration(*s) * time.Second)
	}
	return []any{csr.Name, age(&csr.ObjectMeta), signer, csr.Spec.Username, requested, csrCondition(csr)}
}

// csrCondition is upstream's Condition cell: Denied over Approved over
// Pending, then Failed and Issued.
func csrCondition(csr *certificatesv1.CertificateSigningRequest) string {
	var approved, denied, failed bool
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			failed = true
		}
	}
	s := "Pending"
	switch {
	case denied:
		s = "Denied"
	case approved:
		s = "Approved"
	}
	if failed {
		s += ",Failed"
	}
	if len(csr.Status.Certificate) > 0 {
		s += ",Issued"
	}
	return s
}
