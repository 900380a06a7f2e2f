package builtin

import (
	"encoding/base64"
	"encoding/json"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// Secrets is the core v1 secrets resource. Values are stored as clients
// send them (base64 in JSON), encrypted in etcd when
// --encryption-provider-config lists secrets (package storage/encrypt).
func Secrets() *registry.Definition {
	return &registry.Definition{
		Resource: "secrets",
		Singular: "secret",
		Kind:     "Secret",
		ListKind: "SecretList",
		Scope:    registry.Namespaced,
		Versions: []registry.Version{{
			Name: "v1", Served: true, Storage: true,
			SelectableFields: []string{"type"},
		}},
		Hooks: secretHooks{stored: newStored[corev1.Secret]("Secret", "v1")},
	}
}

type secretHooks struct {
	stored[corev1.Secret]
	noGeneration
	coreFieldLabels
}

var (
	_ registry.CreatePreparer = secretHooks{}
	_ registry.UpdatePreparer = secretHooks{}
	_ registry.Validator      = secretHooks{}
	_ registry.TablePrinter   = secretHooks{}
	_ registry.NoGeneration   = secretHooks{}
)

func (h secretHooks) PrepareForCreate(obj map[string]any) { h.Default(obj) }

func (h secretHooks) PrepareForUpdate(obj, old map[string]any) { h.PrepareForCreate(obj) }

// Default moves stringData into data and defaults the type, as upstream's
// decoding (conversion to the internal type, defaulting) does.
func (h secretHooks) Default(obj map[string]any) {
	mergeStringData(obj)
	h.trim(obj)
	if obj["type"] == nil || obj["type"] == "" {
		obj["type"] = string(corev1.SecretTypeOpaque)
	}
}

// mergeStringData moves stringData into data, base64-encoded, its values
// winning over data's, as upstream's conversion to the internal type does:
// stringData is write-only and never stored.
func mergeStringData(obj map[string]any) {
	sd, _ := obj["stringData"].(map[string]any)
	delete(obj, "stringData")
	if len(sd) == 0 {
		return
	}
	data := mapField(obj, "data")
	for k, v := range sd {
		if s, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
	}
}

func (h secretHooks) Validate(obj map[string]any) field.ErrorList {
	s, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateSecret(s)
}

func (h secretHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	s, was, err := h.decodeUpdate(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	errs := apivalidation.ValidateImmutableField(s.Type, was.Type, field.NewPath("type"))
	errs = append(errs, immutableData(was.Immutable, s.Immutable, map[string]bool{"data": !reflect.DeepEqual(s.Data, was.Data)})...)
	return append(errs, validateSecret(s)...)
}

// validateSecret checks the keys, the size, and the keys each type
// requires, as upstream does.
func validateSecret(s *corev1.Secret) field.ErrorList {
	var errs field.ErrorList
	data := field.NewPath("data")
	size := 0
	for key, value := range s.Data {
		errs = append(errs, validateDataKey(data, key)...)
		size += len(value)
	}
	if size > maxDataSize {
		errs = append(errs, field.TooLong(data, "", maxDataSize))
	}
	has := func(key string) bool { _, ok := s.Data[key]; return ok }
	required := func(keys ...string) {
		for _, k := range keys {
			errs = append(errs, field.Required(data.Key(k), ""))
		}
	}
	// A docker config must be a JSON object; its content is never echoed.
	jsonKey := func(key string) {
		if !has(key) {
			required(key)
		} else if err := json.Unmarshal(s.Data[key], &map[string]any{}); err != nil {
			errs = append(errs, field.Invalid(data.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		// The token and uid may be filled in later by a controller.
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		jsonKey(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		jsonKey(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		// Either may be empty, but one must be there.
		if !has(corev1.BasicAuthUsernameKey) && !has(corev1.BasicAuthPasswordKey) {
			required(corev1.BasicAuthUsernameKey, corev1.BasicAuthPasswordKey)
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			required(corev1.SSHAuthPrivateKey)
		}
	case corev1.SecretTypeTLS:
		for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
			if !has(k) {
				required(k)
			}
		}
	}
	// Opaque, bootstrap tokens and types of one's own have no key rules
	// in upstream's validation.
	return errs
}

func (secretHooks) TableColumns() []metav1.TableColumnDefinition {
	doc := corev1.Secret{}.SwaggerDoc()
	return columns(
		metav1.TableColumnDefinition{Name: "Type", Type: "string", Description: doc["type"]},
		metav1.TableColumnDefinition{Name: "Data", Type: "string", Description: doc["data"]},
	)
}

func (secretHooks) TableRow(obj map[string]any) []any {
	data, _ := obj["data"].(map[string]any)
	typ, _ := obj["type"].(string)
	return row(obj, typ, int64(len(data)))
}
