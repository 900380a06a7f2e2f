package builtin

import "time"

// RootCAConfigMap is the ConfigMap every namespace has holding the
// server's CA, as upstream's root CA publisher keeps it: pods (and
// clients given a namespace's ConfigMaps) verify the API server with it.
const RootCAConfigMap = "kube-root-ca.crt"

// rootCADescription is the annotation upstream's publisher describes the
// ConfigMap with, word for word, under rootCADescriptionKey.
const (
	rootCADescriptionKey = "kubernetes.io/description"
	rootCADescription    = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// NewRootCAConfigMap is namespace's kube-root-ca.crt ConfigMap holding ca
// (PEM), as upstream's publisher creates it, with the managedFields entry
// upstream's field manager records for that create.
func NewRootCAConfigMap(namespace, ca string, now time.Time) map[string]any {
	cm := newCoreObject("ConfigMap", namespace, RootCAConfigMap, now)
	md := cm["metadata"].(map[string]any)
	md["annotations"] = map[string]any{rootCADescriptionKey: rootCADescription}
	md["managedFields"] = []any{map[string]any{
		"apiVersion": "v1",
		"fieldsType": "FieldsV1",
		"fieldsV1":   rootCAFields(),
		"manager":    ControllerManager,
		"operation":  "Update",
		"time":       now.UTC().Format(time.RFC3339),
	}}
	cm["data"] = map[string]any{"ca.crt": ca}
	return cm
}

// ControllerManager is the field manager of the writes upstream's
// kube-controller-manager makes, whose controllers the server runs: the
// root CA publisher's, the disruption controller's.
const ControllerManager = "kube-controller-manager"

// rootCAFields are the fields the publisher's create owns: the same for
// every namespace, so written out rather than worked out by a field
// manager, whose ConfigMap types would cost an idle server megabytes
// (the server's tests check them against its field manager).
func rootCAFields() map[string]any {
	return map[string]any{
		"f:data": map[string]any{".": map[string]any{}, "f:ca.crt": map[string]any{}},
		"f:metadata": map[string]any{"f:annotations": map[string]any{
			".": map[string]any{}, "f:" + rootCADescriptionKey: map[string]any{}}},
	}
}

// KeepRootCA makes obj, a kube-root-ca.crt ConfigMap, hold exactly ca
// and describe itself, as upstream's publisher does, keeping the rest of
// its metadata; it reports whether anything changed.
func KeepRootCA(obj map[string]any, ca string) bool {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	ann, _ := md["annotations"].(map[string]any)
	data, _ := obj["data"].(map[string]any)
	if len(data) == 1 && data["ca.crt"] == ca && ann[rootCADescriptionKey] != nil && ann[rootCADescriptionKey] != "" {
		return false
	}
	obj["data"] = map[string]any{"ca.crt": ca}
	if ann == nil {
		ann = map[string]any{}
		md["annotations"] = ann
	}
	ann[rootCADescriptionKey] = rootCADescription
	return true
}
