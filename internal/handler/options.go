package handler

import (
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// checkWriteOptions reads and validates a write's query parameters as the
// options object of its verb (CreateOptions, UpdateOptions, or PatchOptions
// with the patch's media type), as upstream does before decoding the body:
// a parameter that does not parse is a 400, a value the options do not
// allow (dryRun=Some, fieldValidation=Bogus) a 422 naming the options kind,
// e.g. `CreateOptions.meta.k8s.io "" is invalid: fieldValidation:
// Unsupported value: "Bogus": supported values: "", "Ignore", "Strict",
// "Warn"`. Once it passed, dryRun and fieldValidation cannot fail.
func checkWriteOptions(c *call, patchType string) error {
	if c.r.URL.RawQuery == "" && patchType == "" {
		return nil // nothing to check; spares the reflective decoding below
	}
	var (
		opts runtime.Object
		kind string
	)
	switch c.info.Verb {
	case "create":
		opts, kind = &metav1.CreateOptions{}, "CreateOptions"
	case "update":
		opts, kind = &metav1.UpdateOptions{}, "UpdateOptions"
	case "patch":
		opts, kind = &metav1.PatchOptions{}, "PatchOptions"
	default:
		return nil
	}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(c.r.URL.Query(), metav1.SchemeGroupVersion, opts); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	var errs field.ErrorList
	switch o := opts.(type) {
	case *metav1.CreateOptions:
		errs = validation.ValidateCreateOptions(o)
	case *metav1.UpdateOptions:
		errs = validation.ValidateUpdateOptions(o)
	case *metav1.PatchOptions:
		errs = validation.ValidatePatchOptions(o, types.PatchType(patchType))
	}
	return invalidOptions(kind, errs)
}

// invalidOptions is upstream's 422 for options that do not validate (nil
// when errs is empty).
func invalidOptions(kind string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
}

// checkResourceVersionParam checks a resourceVersion query parameter as
// upstream's storage parses it: "" or a decimal uint64. It returns the
// field error upstream's storage reports for anything else.
func checkResourceVersionParam(rv string) error {
	if rv == "" || rv == "0" {
		return nil
	}
	if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("resourceVersion"), rv, err.Error())}.ToAggregate()
	}
	return nil
}

// listResourceVersionError is upstream's answer to a list whose
// resourceVersion does not parse: a 400.
func listResourceVersionError(rv string) error {
	if err := checkResourceVersionParam(rv); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
	}
	return nil
}

// cacheResourceVersionError is upstream's answer to a get or watch whose
// resourceVersion does not parse: its watch cache returns the storage
// error as it is, which reaches the client as a 500 with no reason.
func cacheResourceVersionError(rv string) error {
	if err := checkResourceVersionParam(rv); err != nil {
		return statusError(500, metav1.StatusReasonUnknown, err.Error())
	}
	return nil
}
