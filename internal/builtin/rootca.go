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
// (PEM), as upstream's publisher creates it.
func NewRootCAConfigMap(namespace, ca string, now time.Time) map[string]any {
	cm := newCoreObject("ConfigMap", namespace, RootCAConfigMap, now)
	cm["metadata"].(map[string]any)["annotations"] = map[string]any{rootCADescriptionKey: rootCADescription}
	cm["data"] = map[string]any{"ca.crt": ca}
	return cm
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
