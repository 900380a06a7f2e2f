package crd

import (
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/registry"
)

// The legacy apiextensions.k8s.io/v1beta1 CRD API, which upstream removed
// in 1.22 and crdserver keeps serving for the manifests written for it.
// CRDs are stored in v1; a v1beta1 request converts to v1 and back through
// upstream's internal type with upstream's generated conversions, after
// upstream's v1beta1 defaults (preserveUnknownFields true, conversion
// strategy None, conversionReviewVersions [v1beta1]). The conversion is
// lossless both ways: fields every version shares are lifted to the
// v1beta1 top level (spec.validation, spec.subresources,
// spec.additionalPrinterColumns, spec.selectableFields) and copied back
// down to each version.

// VersionV1beta1 is the legacy version of the CRD API.
const VersionV1beta1 = "v1beta1"

// apiVersionV1beta1 and apiVersionV1 are the apiVersion values of CRDs.
const (
	apiVersionV1beta1 = Group + "/" + VersionV1beta1
	apiVersionV1      = Group + "/" + Version
)

// typedCRDv1beta1 decodes v1beta1 CRDs strictly.
var typedCRDv1beta1 = builtin.Typed[apiextensionsv1beta1.CustomResourceDefinition]{Kind: Kind, Version: VersionV1beta1}

// isV1beta1 reports whether obj claims the v1beta1 API.
func isV1beta1(obj map[string]any) bool {
	av, _ := obj["apiVersion"].(string)
	return av == apiVersionV1beta1
}

// v1beta1ToV1 converts a v1beta1 CRD, with upstream's v1beta1 defaults
// applied, to v1 through the internal type.
func v1beta1ToV1(in *apiextensionsv1beta1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, error) {
	apiextensionsv1beta1.SetObjectDefaults_CustomResourceDefinition(in)
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1beta1.Convert_v1beta1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(in, &internal, nil); err != nil {
		return nil, fmt.Errorf("converting %s from v1beta1: %w", Kind, err)
	}
	out := &apiextensionsv1.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_apiextensions_CustomResourceDefinition_To_v1_CustomResourceDefinition(&internal, out, nil); err != nil {
		return nil, fmt.Errorf("converting %s to v1: %w", Kind, err)
	}
	out.APIVersion, out.Kind = apiVersionV1, Kind
	return out, nil
}

// v1ToV1beta1 converts a v1 CRD to v1beta1 through the internal type.
func v1ToV1beta1(in *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1beta1.CustomResourceDefinition, error) {
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(in, &internal, nil); err != nil {
		return nil, fmt.Errorf("converting %s from v1: %w", Kind, err)
	}
	out := &apiextensionsv1beta1.CustomResourceDefinition{}
	if err := apiextensionsv1beta1.Convert_apiextensions_CustomResourceDefinition_To_v1beta1_CustomResourceDefinition(&internal, out, nil); err != nil {
		return nil, fmt.Errorf("converting %s to v1beta1: %w", Kind, err)
	}
	out.APIVersion, out.Kind = apiVersionV1beta1, Kind
	return out, nil
}

// convertedMap is obj with spec and status replaced by v's and apiVersion
// set; metadata stays obj's map (the handler's, already normalized).
func convertedMap(obj map[string]any, apiVersion string, v any) map[string]any {
	u := toMap(v)
	out := make(map[string]any, 5)
	for k, x := range obj {
		switch k {
		case "kind", "metadata":
			out[k] = x
		}
	}
	out["apiVersion"] = apiVersion
	for _, k := range []string{"spec", "status"} {
		if x, ok := u[k]; ok {
			out[k] = x
		}
	}
	return out
}

var _ registry.VersionConverter = Hooks{}

// ToStorage converts a request body of version (v1 or v1beta1) to v1.
// Fields the type does not have are dropped, as upstream's typed decoding
// drops them; CheckType has refused wrongly typed ones.
func (Hooks) ToStorage(obj map[string]any, version string) (map[string]any, error) {
	if version != VersionV1beta1 {
		return obj, nil
	}
	in, _, err := typedCRDv1beta1.Decode(obj)
	if err != nil {
		return nil, err
	}
	out, err := v1beta1ToV1(in)
	if err != nil {
		return nil, err
	}
	return convertedMap(obj, apiVersionV1, out), nil
}

// FromStorage converts a stored v1 CRD to version. Stored CRDs always
// decode; one that does not is returned with only its apiVersion changed.
func (Hooks) FromStorage(obj map[string]any, version string) map[string]any {
	if version != VersionV1beta1 {
		obj["apiVersion"] = apiVersionV1
		return obj
	}
	in, _, err := typedCRD.Decode(obj)
	if err == nil {
		var out *apiextensionsv1beta1.CustomResourceDefinition
		if out, err = v1ToV1beta1(in); err == nil {
			return convertedMap(obj, apiVersionV1beta1, out)
		}
	}
	obj["apiVersion"] = apiVersionV1beta1
	return obj
}

// v1beta1Typed is the typed behaviour of request bodies in v1beta1: their
// strict decoding, strategic merge patches and protobuf bodies use the
// v1beta1 type.
type v1beta1Typed struct{}

var (
	_ registry.TypeChecker     = v1beta1Typed{}
	_ registry.UnknownFielder  = v1beta1Typed{}
	_ registry.StrategicMerger = v1beta1Typed{}
	_ registry.Protobuf        = v1beta1Typed{}
	_ registry.VersionTyped    = Hooks{}
)

func (v1beta1Typed) CheckType(obj map[string]any) error { return typedCRDv1beta1.CheckType(obj) }
func (v1beta1Typed) UnknownFields(obj map[string]any) []string {
	return typedCRDv1beta1.UnknownFields(obj)
}
func (v1beta1Typed) PatchSchema() any { return apiextensionsv1beta1.CustomResourceDefinition{} }
func (v1beta1Typed) NewProtobuf() registry.ProtoMessage {
	return &apiextensionsv1beta1.CustomResourceDefinition{}
}

// TypedIn returns the typed behaviour of request bodies in version.
func (h Hooks) TypedIn(version string) any {
	if version == VersionV1beta1 {
		return v1beta1Typed{}
	}
	return h
}
