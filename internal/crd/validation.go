package crd

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/transport"

	"github.com/crdserver/crdserver/internal/builtin"
)

// Upstream validates the internal form of a CRD, which a v1 CRD converts to
// by lifting every per-version schema, subresources, printer columns and
// selectable fields that all versions share to the top of the spec. Its
// field paths follow that form (spec.validation.openAPIV3Schema for a
// single-version CRD, spec.conversion.webhookClientConfig), and so do ours:
// clients and tests match on them.

var (
	printerColumnTypes   = []string{"boolean", "date", "integer", "number", "string"}
	printerColumnFormats = []string{"byte", "date", "date-time", "double", "float", "int32", "int64", "password"}
	// conversionReviewVersions the server can send, sorted.
	knownConversionReviewVersions = []string{"v1", "v1beta1"}
)

// options are the rules that depend on the stored object on update: an
// update may keep what an older server accepted.
type options struct {
	requireOpenAPISchema                     bool
	requireImmutableNames                    bool
	requireRecognizedConversionReviewVersion bool
	allowInvalidCABundle                     bool
	// allowNonStructural: a CRD written through v1beta1 that keeps unknown
	// fields and uses nothing that needs a structural schema may have a
	// non-structural one (the NonStructuralSchema condition reports it).
	allowNonStructural bool
	schemas            SchemaChecker
	oldSpec            *apiextensionsv1.CustomResourceDefinitionSpec
}

// validateCreate checks a new CRD written in version (v1 or v1beta1).
func validateCreate(c *apiextensionsv1.CustomResourceDefinition, version string, schemas SchemaChecker) field.ErrorList {
	opts := options{
		// v1beta1 makes schemas optional.
		requireOpenAPISchema:                     version != VersionV1beta1,
		requireRecognizedConversionReviewVersion: true,
		// A CRD that is not established yet may carry an invalid caBundle;
		// the establishing step refuses it instead.
		allowInvalidCABundle: true,
		schemas:              schemas,
		allowNonStructural:   version == VersionV1beta1 && mayBeNonStructural(&c.Spec),
	}
	errs := validateSpec(&c.Spec, opts, field.NewPath("spec"))
	errs = append(errs, validateStatus(&c.Status, field.NewPath("status"))...)
	errs = append(errs, validateStoredVersions(c.Status.StoredVersions, c.Spec.Versions, field.NewPath("status", "storedVersions"))...)
	errs = append(errs, validateAPIApproval(c, nil)...)
	if version != VersionV1beta1 {
		errs = append(errs, validatePreserveUnknownFields(c, nil)...)
	}
	return errs
}

// validateUpdate checks an update, written in version, of the stored CRD
// old.
func validateUpdate(c, old *apiextensionsv1.CustomResourceDefinition, version string, schemas SchemaChecker) field.ErrorList {
	var oldReviewVersions []string
	if old.Spec.Conversion != nil && old.Spec.Conversion.Webhook != nil {
		oldReviewVersions = old.Spec.Conversion.Webhook.ConversionReviewVersions
	}
	opts := options{
		requireOpenAPISchema:                     version != VersionV1beta1 && allVersionsHaveSchema(&old.Spec),
		requireImmutableNames:                    isEstablished(old),
		requireRecognizedConversionReviewVersion: old.Spec.Conversion == nil || len(oldReviewVersions) == 0 || hasKnownReviewVersion(oldReviewVersions),
		allowInvalidCABundle:                     allowInvalidCABundle(old),
		schemas:                                  schemas,
		oldSpec:                                  &old.Spec,
		allowNonStructural:                       version == VersionV1beta1 && mayBeNonStructural(&c.Spec),
	}
	sp := field.NewPath("spec")
	errs := validateSpec(&c.Spec, opts, sp)
	if opts.requireImmutableNames {
		// Scope and kind shape the stored objects once they exist.
		errs = append(errs, immutable(c.Spec.Scope, old.Spec.Scope, sp.Child("scope"))...)
		errs = append(errs, immutable(c.Spec.Names.Kind, old.Spec.Names.Kind, sp.Child("names", "kind"))...)
	}
	// Group and plural make the CRD's name, which never changes.
	errs = append(errs, immutable(c.Spec.Group, old.Spec.Group, sp.Child("group"))...)
	errs = append(errs, immutable(c.Spec.Names.Plural, old.Spec.Names.Plural, sp.Child("names", "plural"))...)
	errs = append(errs, validateStatus(&c.Status, field.NewPath("status"))...)
	errs = append(errs, validateStoredVersions(c.Status.StoredVersions, c.Spec.Versions, field.NewPath("status", "storedVersions"))...)
	errs = append(errs, validateAPIApproval(c, old)...)
	if version != VersionV1beta1 {
		errs = append(errs, validatePreserveUnknownFields(c, old)...)
	}
	return errs
}

func immutable[T comparable](v, old T, p *field.Path) field.ErrorList {
	if v == old {
		return nil
	}
	return field.ErrorList{field.Invalid(p, v, "field is immutable")}
}

// nameRule is the message of a CRD not named <plural>.<group>.
const nameRule = `must be spec.names.plural+"."+spec.group`

// CreateNameValidator implements registry.CreateNameValidator: a new
// CRD's name (and generateName) must be a DNS subdomain and
// <plural>.<group>, checked with the rest of its metadata, as upstream
// checks it. An update cannot change the name.
func (Hooks) CreateNameValidator(obj map[string]any) func(name string, prefix bool) []string {
	spec, _ := obj["spec"].(map[string]any)
	names, _ := spec["names"].(map[string]any)
	plural, _ := names["plural"].(string)
	group, _ := spec["group"].(string)
	want := plural + "." + group
	return func(name string, prefix bool) []string {
		msgs := apivalidation.NameIsDNSSubdomain(name, prefix)
		if name != want {
			msgs = append(msgs, nameRule)
		}
		return msgs
	}
}

// shared says which per-version fields every version has alike, and so
// which upstream validates once, at the top of the spec.
type shared struct {
	schema, subresources, columns, selectableFields bool
}

func sharedFields(versions []apiextensionsv1.CustomResourceDefinitionVersion) shared {
	if len(versions) == 0 {
		return shared{}
	}
	s := shared{true, true, true, true}
	first := versions[0]
	for _, v := range versions[1:] {
		s.schema = s.schema && equality.Semantic.DeepEqual(v.Schema, first.Schema)
		s.subresources = s.subresources && equality.Semantic.DeepEqual(v.Subresources, first.Subresources)
		s.columns = s.columns && equality.Semantic.DeepEqual(v.AdditionalPrinterColumns, first.AdditionalPrinterColumns)
		s.selectableFields = s.selectableFields && equality.Semantic.DeepEqual(v.SelectableFields, first.SelectableFields)
	}
	return s
}

// top returns the spec-level values of the internal form (nil where the
// versions differ).
func (s shared) top(versions []apiextensionsv1.CustomResourceDefinitionVersion) (schema *apiextensionsv1.CustomResourceValidation, sub *apiextensionsv1.CustomResourceSubresources, cols []apiextensionsv1.CustomResourceColumnDefinition, sel []apiextensionsv1.SelectableField) {
	if len(versions) == 0 {
		return
	}
	if s.schema {
		schema = versions[0].Schema
	}
	if s.subresources {
		sub = versions[0].Subresources
	}
	if s.columns {
		cols = versions[0].AdditionalPrinterColumns
	}
	if s.selectableFields {
		sel = versions[0].SelectableFields
	}
	return
}

// perVersion returns v as the internal form holds it: without the fields
// lifted to the top.
func (s shared) perVersion(v apiextensionsv1.CustomResourceDefinitionVersion) apiextensionsv1.CustomResourceDefinitionVersion {
	if s.schema {
		v.Schema = nil
	}
	if s.subresources {
		v.Subresources = nil
	}
	if s.columns {
		v.AdditionalPrinterColumns = nil
	}
	if s.selectableFields {
		v.SelectableFields = nil
	}
	return v
}

func validateSpec(spec *apiextensionsv1.CustomResourceDefinitionSpec, opts options, p *field.Path) field.ErrorList {
	var errs field.ErrorList

	switch {
	case spec.Group == "":
		errs = append(errs, field.Required(p.Child("group"), ""))
	case len(validation.IsDNS1123Subdomain(spec.Group)) > 0:
		errs = append(errs, field.Invalid(p.Child("group"), spec.Group, strings.Join(validation.IsDNS1123Subdomain(spec.Group), ",")))
	case !strings.Contains(spec.Group, "."):
		errs = append(errs, field.Invalid(p.Child("group"), spec.Group, "should be a domain with at least one dot"))
	}

	switch spec.Scope {
	case "":
		errs = append(errs, field.Required(p.Child("scope"), ""))
	case apiextensionsv1.ClusterScoped, apiextensionsv1.NamespaceScoped:
	default:
		errs = append(errs, field.NotSupported(p.Child("scope"), string(spec.Scope), []string{string(apiextensionsv1.ClusterScoped), string(apiextensionsv1.NamespaceScoped)}))
	}

	sh := sharedFields(spec.Versions)
	topSchema, topSub, topCols, topSel := sh.top(spec.Versions)
	vp := p.Child("versions")

	if topSchema == nil || topSchema.OpenAPIV3Schema == nil {
		for i, v := range spec.Versions {
			s := sh.perVersion(v).Schema
			missing := s == nil || s.OpenAPIV3Schema == nil
			switch {
			case opts.requireOpenAPISchema && missing:
				errs = append(errs, field.Required(vp.Index(i).Child("schema", "openAPIV3Schema"), ""))
			case !opts.requireOpenAPISchema && !spec.PreserveUnknownFields && v.Served && missing:
				errs = append(errs, field.Required(vp.Index(i).Child("schema", "openAPIV3Schema"), "because otherwise all fields are pruned"))
			}
		}
	}
	if spec.PreserveUnknownFields && specHasDefaults(spec) {
		errs = append(errs, field.Invalid(p.Child("preserveUnknownFields"), true, "must be false in order to use defaults in the schema"))
	}

	storageCount := 0
	seen := map[string]bool{}
	unique := true
	for i, v := range spec.Versions {
		if v.Storage {
			storageCount++
		}
		if seen[v.Name] {
			unique = false
		}
		seen[v.Name] = true
		if msgs := validation.IsDNS1035Label(v.Name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(vp.Index(i).Child("name"), v.Name, strings.Join(msgs, ",")))
		}
		sub := topSub
		if !sh.subresources {
			sub = v.Subresources
		}
		errs = append(errs, validateVersion(spec, sh.perVersion(v), sub != nil && sub.Status != nil, opts, vp.Index(i))...)
	}
	if !unique {
		errs = append(errs, field.Invalid(vp, internalVersions(spec.Versions, sh), "must contain unique version names"))
	}
	if storageCount != 1 {
		errs = append(errs, field.Invalid(vp, internalVersions(spec.Versions, sh), "must have exactly one version marked as storage version"))
	}
	if len(spec.Versions) > 0 {
		// The internal form repeats the first version as spec.version.
		if msgs := validation.IsDNS1035Label(spec.Versions[0].Name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("version"), spec.Versions[0].Name, strings.Join(msgs, ",")))
		}
	}

	np := p.Child("names")
	if spec.Names.Plural == "" {
		errs = append(errs, field.Required(np.Child("plural"), ""))
	}
	if spec.Names.Singular == "" {
		errs = append(errs, field.Required(np.Child("singular"), ""))
	}
	if spec.Names.Kind == "" {
		errs = append(errs, field.Required(np.Child("kind"), ""))
	}
	if spec.Names.ListKind == "" {
		errs = append(errs, field.Required(np.Child("listKind"), ""))
	}
	errs = append(errs, validateNames(&spec.Names, np)...)

	anyStatus := topSub != nil && topSub.Status != nil
	for _, v := range spec.Versions {
		anyStatus = anyStatus || (v.Subresources != nil && v.Subresources.Status != nil)
	}
	errs = append(errs, validateSchema(spec, topSchema, "", anyStatus, opts, p.Child("validation"))...)
	errs = append(errs, validateSubresources(topSub, p.Child("subresources"))...)
	for i := range topCols {
		errs = append(errs, validateColumn(&topCols[i], p.Child("additionalPrinterColumns").Index(i))...)
	}
	if len(topSel) > 0 {
		if topSchema == nil {
			errs = append(errs, field.Invalid(p.Child("selectableFields"), "", "may only be set when validations.schema is included"))
		} else if opts.schemas != nil {
			errs = append(errs, opts.schemas.CheckSelectableFields(selectableInput(spec, topSchema, "", topSel, opts), p.Child("selectableFields"))...)
		}
	}

	if spec.Conversion != nil && spec.Conversion.Strategy != apiextensionsv1.NoneConverter && spec.PreserveUnknownFields {
		errs = append(errs, field.Invalid(p.Child("conversion", "strategy"), spec.Conversion.Strategy, "must be None if spec.preserveUnknownFields is true"))
	}
	errs = append(errs, validateConversion(spec.Conversion, opts, p.Child("conversion"))...)
	return errs
}

// validateVersion checks one version, holding only the fields the versions
// do not share.
//
// Selectable fields of the version alone are checked against the
// version's own schema. When every version shares one schema, the
// version holds none, and they are refused, as upstream refuses them:
// they must then be alike on every version (and so lifted to the top of
// the spec).
func validateVersion(spec *apiextensionsv1.CustomResourceDefinitionSpec, v apiextensionsv1.CustomResourceDefinitionVersion, statusEnabled bool, opts options, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validateDeprecationWarning(v.Deprecated, v.DeprecationWarning) {
		errs = append(errs, field.Invalid(p.Child("deprecationWarning"), v.DeprecationWarning, msg))
	}
	errs = append(errs, validateSchema(spec, v.Schema, v.Name, statusEnabled, opts, p.Child("schema"))...)
	errs = append(errs, validateSubresources(v.Subresources, p.Child("subresources"))...)
	for i := range v.AdditionalPrinterColumns {
		errs = append(errs, validateColumn(&v.AdditionalPrinterColumns[i], p.Child("additionalPrinterColumns").Index(i))...)
	}
	if len(v.SelectableFields) > 0 {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			errs = append(errs, field.Invalid(p.Child("selectableFields"), "", "may only be set when `version.schema.openAPIV3Schema` is not included"))
		} else if opts.schemas != nil {
			errs = append(errs, opts.schemas.CheckSelectableFields(selectableInput(spec, v.Schema, v.Name, v.SelectableFields, opts), p.Child("selectableFields"))...)
		}
	}
	return errs
}

func validateDeprecationWarning(deprecated bool, warning *string) []string {
	if !deprecated && warning != nil {
		return []string{"can only be set for deprecated versions"}
	}
	if warning == nil {
		return nil
	}
	var msgs []string
	if len(*warning) > 256 {
		msgs = append(msgs, "must be <= 256 characters long")
	}
	if len(*warning) == 0 {
		msgs = append(msgs, "must not be an empty string")
	}
	for i, r := range *warning {
		if !unicode.IsPrint(r) {
			msgs = append(msgs, fmt.Sprintf("must only contain printable UTF-8 characters; non-printable character found at index %d", i))
			break
		}
		if unicode.IsControl(r) {
			msgs = append(msgs, fmt.Sprintf("must only contain printable UTF-8 characters; control character found at index %d", i))
			break
		}
	}
	if !utf8.ValidString(*warning) {
		msgs = append(msgs, "must only contain printable UTF-8 characters")
	}
	return msgs
}

// validateSchema hands a present schema to the schema checker; p is the
// path of the CustomResourceValidation (spec.validation or
// spec.versions[i].schema).
func validateSchema(spec *apiextensionsv1.CustomResourceDefinitionSpec, v *apiextensionsv1.CustomResourceValidation, version string, statusEnabled bool, opts options, p *field.Path) field.ErrorList {
	if v == nil || v.OpenAPIV3Schema == nil || opts.schemas == nil {
		return nil
	}
	return opts.schemas.CheckSchema(SchemaInput{
		Schema:             v.OpenAPIV3Schema,
		Version:            version,
		StatusEnabled:      statusEnabled,
		Spec:               spec,
		OldSpec:            opts.oldSpec,
		AllowNonStructural: opts.allowNonStructural,
	}, p)
}

func selectableInput(spec *apiextensionsv1.CustomResourceDefinitionSpec, v *apiextensionsv1.CustomResourceValidation, version string, fields []apiextensionsv1.SelectableField, opts options) SelectableFieldsInput {
	return SelectableFieldsInput{Fields: fields, Schema: v.OpenAPIV3Schema, Version: version, Spec: spec, OldSpec: opts.oldSpec}
}

// validateNames checks the shape of names; spec requires some of them,
// status.acceptedNames none.
func validateNames(n *apiextensionsv1.CustomResourceDefinitionNames, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	label := func(child, v string) {
		if msgs := validation.IsDNS1035Label(v); v != "" && len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child(child), v, strings.Join(msgs, ",")))
		}
	}
	kindLike := func(child, v string) {
		if msgs := validation.IsDNS1035Label(strings.ToLower(v)); v != "" && len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child(child), v, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
		}
	}
	label("plural", n.Plural)
	label("singular", n.Singular)
	kindLike("kind", n.Kind)
	kindLike("listKind", n.ListKind)
	for i, s := range n.ShortNames {
		if msgs := validation.IsDNS1035Label(s); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("shortNames").Index(i), s, strings.Join(msgs, ",")))
		}
	}
	// A list of the kind would be ambiguous to decode.
	if n.Kind != "" && n.Kind == n.ListKind {
		errs = append(errs, field.Invalid(p.Child("listKind"), n.ListKind, "kind and listKind may not be the same"))
	}
	for i, c := range n.Categories {
		if msgs := validation.IsDNS1035Label(c); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("categories").Index(i), c, strings.Join(msgs, ",")))
		}
	}
	return errs
}

func validateStatus(st *apiextensionsv1.CustomResourceDefinitionStatus, p *field.Path) field.ErrorList {
	return validateNames(&st.AcceptedNames, p.Child("acceptedNames"))
}

// validateColumn checks one additionalPrinterColumns entry. Upstream names
// the path field JSONPath, after its internal Go field.
func validateColumn(col *apiextensionsv1.CustomResourceColumnDefinition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if col.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	typesMsg := "must be one of " + strings.Join(printerColumnTypes, ",")
	switch {
	case col.Type == "":
		errs = append(errs, field.Required(p.Child("type"), typesMsg))
	case !contains(printerColumnTypes, col.Type):
		errs = append(errs, field.Invalid(p.Child("type"), col.Type, typesMsg))
	}
	if col.Format != "" && !contains(printerColumnFormats, col.Format) {
		errs = append(errs, field.Invalid(p.Child("format"), col.Format, "must be one of "+strings.Join(printerColumnFormats, ",")))
	}
	if col.JSONPath == "" {
		errs = append(errs, field.Required(p.Child("JSONPath"), ""))
	} else {
		errs = append(errs, validateSimpleJSONPath(col.JSONPath, p.Child("JSONPath"))...)
	}
	return errs
}

func validateSimpleJSONPath(s string, p *field.Path) field.ErrorList {
	switch {
	case s == "":
		return field.ErrorList{field.Invalid(p, s, "must not be empty")}
	case s[0] != '.':
		return field.ErrorList{field.Invalid(p, s, "must be a simple json path starting with .")}
	}
	return nil
}

func validateSubresources(sub *apiextensionsv1.CustomResourceSubresources, p *field.Path) field.ErrorList {
	if sub == nil || sub.Scale == nil {
		return nil
	}
	var errs field.ErrorList
	sc := sub.Scale
	under := func(path, prefix, msg string, fp *field.Path) {
		if e := validateSimpleJSONPath(path, fp); len(e) > 0 {
			errs = append(errs, e...)
		} else if !strings.HasPrefix(path, prefix) {
			errs = append(errs, field.Invalid(fp, path, msg))
		}
	}
	if sc.SpecReplicasPath == "" {
		errs = append(errs, field.Required(p.Child("scale", "specReplicasPath"), ""))
	} else {
		under(sc.SpecReplicasPath, ".spec.", "should be a json path under .spec", p.Child("scale", "specReplicasPath"))
	}
	if sc.StatusReplicasPath == "" {
		errs = append(errs, field.Required(p.Child("scale", "statusReplicasPath"), ""))
	} else {
		under(sc.StatusReplicasPath, ".status.", "should be a json path under .status", p.Child("scale", "statusReplicasPath"))
	}
	if sc.LabelSelectorPath != nil && *sc.LabelSelectorPath != "" {
		lp := p.Child("scale", "labelSelectorPath")
		s := *sc.LabelSelectorPath
		if e := validateSimpleJSONPath(s, lp); len(e) > 0 {
			errs = append(errs, e...)
		} else if !strings.HasPrefix(s, ".spec.") && !strings.HasPrefix(s, ".status.") {
			errs = append(errs, field.Invalid(lp, sc.LabelSelectorPath, "should be a json path under either .spec or .status"))
		}
	}
	return errs
}

// validateConversion checks spec.conversion; paths are the internal form's
// (webhookClientConfig and conversionReviewVersions sit directly under
// spec.conversion).
func validateConversion(conv *apiextensionsv1.CustomResourceConversion, opts options, p *field.Path) field.ErrorList {
	if conv == nil {
		return nil
	}
	var errs field.ErrorList
	switch conv.Strategy {
	case "":
		errs = append(errs, field.Required(p.Child("strategy"), ""))
	case apiextensionsv1.NoneConverter, apiextensionsv1.WebhookConverter:
	default:
		errs = append(errs, field.NotSupported(p.Child("strategy"), string(conv.Strategy), []string{string(apiextensionsv1.NoneConverter), string(apiextensionsv1.WebhookConverter)}))
	}
	var cc *apiextensionsv1.WebhookClientConfig
	var reviewVersions []string
	if conv.Webhook != nil {
		cc = conv.Webhook.ClientConfig
		reviewVersions = conv.Webhook.ConversionReviewVersions
	}
	ccp := p.Child("webhookClientConfig")
	if conv.Strategy != apiextensionsv1.WebhookConverter {
		if cc != nil {
			errs = append(errs, field.Forbidden(ccp, "should not be set when strategy is not set to Webhook"))
		}
		if len(reviewVersions) > 0 {
			errs = append(errs, field.Forbidden(p.Child("conversionReviewVersions"), "should not be set when strategy is not set to Webhook"))
		}
		return errs
	}
	if cc == nil {
		errs = append(errs, field.Required(ccp, "required when strategy is set to Webhook"))
	} else {
		switch {
		case (cc.URL == nil) == (cc.Service == nil):
			errs = append(errs, field.Required(ccp, "exactly one of url or service is required"))
		case cc.URL != nil:
			errs = append(errs, builtin.ValidateWebhookURL(*cc.URL, ccp.Child("url"))...)
		default:
			port := int32(0)
			if cc.Service.Port != nil {
				port = *cc.Service.Port
			}
			// Upstream hands the service's name and namespace to the
			// shared check in each other's place, so a missing namespace
			// is reported at service.name and a missing name at
			// service.namespace. Clients see those paths; keep them.
			errs = append(errs, builtin.ValidateWebhookService(cc.Service.Namespace, cc.Service.Name, cc.Service.Path, port, ccp.Child("service"))...)
		}
		if len(cc.CABundle) > 0 && !opts.allowInvalidCABundle {
			errs = append(errs, validateCABundle(cc.CABundle, ccp.Child("caBundle"))...)
		}
	}
	errs = append(errs, validateReviewVersions(reviewVersions, opts.requireRecognizedConversionReviewVersion, p.Child("conversionReviewVersions"))...)
	return errs
}

func validateReviewVersions(versions []string, requireKnown bool, p *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, v := range versions {
		if seen[v] {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen[v] = true
		for _, msg := range validation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
	}
	if requireKnown && !hasKnownReviewVersion(versions) {
		errs = append(errs, field.Invalid(p, versions, "must include at least one of "+strings.Join(knownConversionReviewVersions, ", ")))
	}
	return errs
}

func hasKnownReviewVersion(versions []string) bool {
	for _, v := range versions {
		if contains(knownConversionReviewVersions, v) {
			return true
		}
	}
	return false
}

// validateCABundle uses client-go's TLS setup, so a bundle is refused
// exactly when a client built from it would fail.
func validateCABundle(ca []byte, p *field.Path) field.ErrorList {
	if _, err := transport.TLSConfigFor(&transport.Config{TLS: transport.TLSConfig{CAData: ca}}); err != nil {
		return field.ErrorList{field.Invalid(p, ca, err.Error())}
	}
	return nil
}

// allowInvalidCABundle: an update may keep an invalid caBundle while the
// CRD is not established, or when the stored one is invalid already.
func allowInvalidCABundle(old *apiextensionsv1.CustomResourceDefinition) bool {
	if !isEstablished(old) {
		return true
	}
	c := old.Spec.Conversion
	if c == nil || c.Webhook == nil || c.Webhook.ClientConfig == nil || len(c.Webhook.ClientConfig.CABundle) == 0 {
		return false
	}
	return len(validateCABundle(c.Webhook.ClientConfig.CABundle, field.NewPath("caBundle"))) > 0
}

// validateStoredVersions: the storage version is recorded, and no version
// objects may still be stored in leaves spec.versions.
func validateStoredVersions(stored []string, versions []apiextensionsv1.CustomResourceDefinitionVersion, p *field.Path) field.ErrorList {
	if len(stored) == 0 {
		return field.ErrorList{field.Invalid(p, stored, "must have at least one stored version")}
	}
	var errs field.ErrorList
	inSpec := map[string]bool{}
	for _, v := range versions {
		inSpec[v.Name] = true
		if v.Storage && !contains(stored, v.Name) {
			errs = append(errs, field.Invalid(p, stored, "must have the storage version "+v.Name))
		}
	}
	reported := map[string]bool{}
	for i, v := range stored {
		if inSpec[v] || reported[v] {
			continue
		}
		reported[v] = true
		// Upstream reports the last index of a repeated entry.
		last := i
		for j := i + 1; j < len(stored); j++ {
			if stored[j] == v {
				last = j
			}
		}
		errs = append(errs, field.Invalid(p.Index(last), v, fmt.Sprintf("missing from spec.versions; %[1]s was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in %[1]s and removes %[1]s from status.storedVersions", v)))
	}
	return errs
}

// validateAPIApproval: groups under k8s.io and kubernetes.io belong to the
// Kubernetes project and need the approval annotation.
func validateAPIApproval(c, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	if !protectedGroup(c.Spec.Group) {
		return nil
	}
	state, reason := approvalState(c.Annotations)
	if old != nil {
		// An unchanged state never fails, so that old clients can keep
		// updating the spec.
		if oldState, _ := approvalState(old.Annotations); oldState == state {
			return nil
		}
	}
	p := field.NewPath("metadata", "annotations").Key(apiextensionsv1.KubeAPIApprovedAnnotation)
	switch state {
	case approvalMissing:
		return field.ErrorList{field.Required(p, reason)}
	case approved, approvalBypassed:
		return nil
	default:
		return field.ErrorList{field.Invalid(p, c.Annotations[apiextensionsv1.KubeAPIApprovedAnnotation], reason)}
	}
}

type approval int

const (
	approvalInvalid approval = iota
	approved
	approvalBypassed
	approvalMissing
)

func protectedGroup(g string) bool {
	return g == "k8s.io" || strings.HasSuffix(g, ".k8s.io") || g == "kubernetes.io" || strings.HasSuffix(g, ".kubernetes.io")
}

func approvalState(annotations map[string]string) (approval, string) {
	a := annotations[apiextensionsv1.KubeAPIApprovedAnnotation]
	u, err := url.ParseRequestURI(a)
	switch {
	case a == "":
		return approvalMissing, fmt.Sprintf("protected groups must have approval annotation %q, see https://github.com/kubernetes/enhancements/pull/1111", apiextensionsv1.KubeAPIApprovedAnnotation)
	case strings.HasPrefix(a, "unapproved"):
		return approvalBypassed, fmt.Sprintf("not approved: %q", a)
	case err == nil && u.Host != "" && u.Scheme != "":
		return approved, fmt.Sprintf("approved in %v", a)
	default:
		return approvalInvalid, fmt.Sprintf("protected groups must have approval annotation %q with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111", apiextensionsv1.KubeAPIApprovedAnnotation)
	}
}

// validatePreserveUnknownFields: v1 refuses preserveUnknownFields: true,
// except on CRDs stored with it (written through v1beta1 long ago).
func validatePreserveUnknownFields(c, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	if old != nil && old.Spec.PreserveUnknownFields {
		return nil
	}
	if c.Spec.PreserveUnknownFields {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "preserveUnknownFields"), true, "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead")}
	}
	return nil
}

func isEstablished(c *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == apiextensionsv1.Established {
			return cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// allVersionsHaveSchema: a CRD stored without a schema on some version may
// keep it so (upstream does not tighten validation on stored data).
func allVersionsHaveSchema(spec *apiextensionsv1.CustomResourceDefinitionSpec) bool {
	for _, v := range spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return false
		}
	}
	return true
}

// mayBeNonStructural reports whether spec may have non-structural schemas
// when written through v1beta1, as upstream's v1beta1 validation decided:
// pruning is off (preserveUnknownFields true) and no schema uses defaults
// or x-kubernetes-* extensions, which need a structural schema.
func mayBeNonStructural(spec *apiextensionsv1.CustomResourceDefinitionSpec) bool {
	if !spec.PreserveUnknownFields || specHasDefaults(spec) {
		return false
	}
	for _, v := range spec.Versions {
		if v.Schema != nil && schemaHas(v.Schema.OpenAPIV3Schema, hasKubernetesExtensions) {
			return false
		}
	}
	return true
}

func hasKubernetesExtensions(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XEmbeddedResource || s.XPreserveUnknownFields != nil || s.XIntOrString ||
		len(s.XListMapKeys) > 0 || s.XListType != nil || len(s.XValidations) > 0
}

func specHasDefaults(spec *apiextensionsv1.CustomResourceDefinitionSpec) bool {
	for _, v := range spec.Versions {
		if v.Schema != nil && schemaHas(v.Schema.OpenAPIV3Schema, func(s *apiextensionsv1.JSONSchemaProps) bool { return s.Default != nil }) {
			return true
		}
	}
	return false
}

// schemaHas reports whether pred holds for s or any schema inside it. It
// visits them in upstream's order (its SchemaHas), which the warnings of
// a CRD's formats follow: the node, items, allOf, anyOf, oneOf, not,
// properties, additionalProperties, patternProperties, additionalItems,
// definitions, dependencies. Upstream takes map entries in Go's random
// order; here they go by key.
func schemaHas(s *apiextensionsv1.JSONSchemaProps, pred func(*apiextensionsv1.JSONSchemaProps) bool) bool {
	if s == nil {
		return false
	}
	if pred(s) {
		return true
	}
	if s.Items != nil {
		if schemaHas(s.Items.Schema, pred) {
			return true
		}
		for i := range s.Items.JSONSchemas {
			if schemaHas(&s.Items.JSONSchemas[i], pred) {
				return true
			}
		}
	}
	for _, l := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range l {
			if schemaHas(&l[i], pred) {
				return true
			}
		}
	}
	if schemaHas(s.Not, pred) || schemaMapHas(s.Properties, pred) {
		return true
	}
	if s.AdditionalProperties != nil && schemaHas(s.AdditionalProperties.Schema, pred) {
		return true
	}
	if schemaMapHas(s.PatternProperties, pred) {
		return true
	}
	if s.AdditionalItems != nil && schemaHas(s.AdditionalItems.Schema, pred) {
		return true
	}
	if schemaMapHas(s.Definitions, pred) {
		return true
	}
	for _, k := range slices.Sorted(maps.Keys(s.Dependencies)) {
		if schemaHas(s.Dependencies[k].Schema, pred) {
			return true
		}
	}
	return false
}

// schemaMapHas is schemaHas over the schemas of m, by key.
func schemaMapHas(m map[string]apiextensionsv1.JSONSchemaProps, pred func(*apiextensionsv1.JSONSchemaProps) bool) bool {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if schemaHas(&v, pred) {
			return true
		}
	}
	return false
}
