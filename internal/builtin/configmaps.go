package builtin

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// maxDataSize is upstream's limit on the data of a ConfigMap or Secret
// (core.MaxSecretSize): what fits in one etcd value with room for metadata.
const maxDataSize = 1 << 20

// ConfigMaps is the core v1 configmaps resource.
func ConfigMaps() *registry.Definition {
	return &registry.Definition{
		Resource:   "configmaps",
		Singular:   "configmap",
		Kind:       "ConfigMap",
		ListKind:   "ConfigMapList",
		ShortNames: []string{"cm"},
		Scope:      registry.Namespaced,
		Versions:   []registry.Version{{Name: "v1", Served: true, Storage: true}},
		Hooks:      configMapHooks{stored: newStored[corev1.ConfigMap]("ConfigMap", "v1")},
	}
}

type configMapHooks struct {
	stored[corev1.ConfigMap]
	noGeneration
}

var (
	_ registry.Validator    = configMapHooks{}
	_ registry.TablePrinter = configMapHooks{}
	_ registry.NoGeneration = configMapHooks{}
)

func (h configMapHooks) Validate(obj map[string]any) field.ErrorList {
	cm, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateConfigMap(cm)
}

func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	var errs field.ErrorList
	size := 0
	for key, value := range cm.Data {
		errs = append(errs, validateDataKey(field.NewPath("data"), key)...)
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, "duplicate of key present in binaryData"))
		}
		size += len(value)
	}
	for key, value := range cm.BinaryData {
		errs = append(errs, validateDataKey(field.NewPath("binaryData"), key)...)
		size += len(value)
	}
	if size > maxDataSize {
		// Upstream reports the whole object, with an empty field path.
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxDataSize))
	}
	return errs
}

func (h configMapHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	cm, was, err := h.decodeUpdate(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	errs := immutableData(was.Immutable, cm.Immutable, map[string]bool{
		"data":       !reflect.DeepEqual(cm.Data, was.Data),
		"binaryData": !reflect.DeepEqual(cm.BinaryData, was.BinaryData),
	})
	return append(errs, validateConfigMap(cm)...)
}

// immutableData refuses, once an object was stored with immutable: true,
// unsetting it and changing any field of changed (ConfigMaps and Secrets).
func immutableData(was, now *bool, changed map[string]bool) field.ErrorList {
	if was == nil || !*was {
		return nil
	}
	const msg = "field is immutable when `immutable` is set"
	var errs field.ErrorList
	if now == nil || !*now {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), msg))
	}
	// In upstream's order: data, then binaryData.
	for _, f := range []string{"data", "binaryData"} {
		if changed[f] {
			errs = append(errs, field.Forbidden(field.NewPath(f), msg))
		}
	}
	return errs
}

// validateDataKey checks one key of a ConfigMap's or Secret's data: a key
// becomes a file name when the object is mounted.
func validateDataKey(p *field.Path, key string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(p.Key(key), key, msg))
	}
	return errs
}

func (configMapHooks) TableColumns() []metav1.TableColumnDefinition {
	return columns(metav1.TableColumnDefinition{Name: "Data", Type: "string", Description: corev1.ConfigMap{}.SwaggerDoc()["data"]})
}

// TableRow counts data and binaryData together, as upstream does.
func (configMapHooks) TableRow(obj map[string]any) []any {
	data, _ := obj["data"].(map[string]any)
	binary, _ := obj["binaryData"].(map[string]any)
	return row(obj, int64(len(data)+len(binary)))
}
