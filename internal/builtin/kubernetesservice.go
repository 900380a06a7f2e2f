package builtin

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// The default/kubernetes Service is how clients inside a cluster find the
// API server; upstream's test suites and many tools look it up. The server
// creates it at start with its Endpoints and EndpointSlice, which point at
// the server itself.

// KubernetesService returns the default/kubernetes Service: port 443
// (https) to the server's port, at the range's first cluster IP.
func KubernetesService(clusterIP string, port int64, now time.Time) map[string]any {
	obj := kubernetesObject("v1", "Service", now, map[string]any{"component": "apiserver", "provider": "kubernetes"})
	obj["spec"] = map[string]any{
		"type":      "ClusterIP",
		"clusterIP": clusterIP,
		"ports": []any{map[string]any{
			"name": "https", "port": int64(443), "protocol": "TCP", "targetPort": port,
		}},
	}
	serviceHooks{Typed: Typed[corev1.Service]{Kind: "Service", Version: "v1"}}.PrepareForCreate(obj)
	return obj
}

// KubernetesEndpoints returns the Endpoints of the kubernetes Service:
// the server's address and port.
func KubernetesEndpoints(ip string, port int64, now time.Time) map[string]any {
	// Upstream's reconciler writes EndpointSlices itself: the mirroring
	// controller must leave these Endpoints alone.
	obj := kubernetesObject("v1", "Endpoints", now, map[string]any{"endpointslice.kubernetes.io/skip-mirror": "true"})
	obj["subsets"] = []any{map[string]any{
		"addresses": []any{map[string]any{"ip": ip}},
		"ports":     []any{map[string]any{"name": "https", "port": port, "protocol": "TCP"}},
	}}
	return obj
}

// KubernetesEndpointSlice returns the EndpointSlice of the kubernetes
// Service.
func KubernetesEndpointSlice(ip string, port int64, now time.Time) map[string]any {
	obj := kubernetesObject("discovery.k8s.io/v1", "EndpointSlice", now, map[string]any{"kubernetes.io/service-name": "kubernetes"})
	metadata := obj["metadata"].(map[string]any)
	metadata["generation"] = int64(1)
	obj["addressType"] = "IPv4"
	obj["endpoints"] = []any{map[string]any{"addresses": []any{ip}, "conditions": map[string]any{"ready": true}}}
	obj["ports"] = []any{map[string]any{"name": "https", "port": port, "protocol": "TCP"}}
	return obj
}

func kubernetesObject(apiVersion, kind string, now time.Time, labels map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata": map[string]any{
			"name":              "kubernetes",
			"namespace":         "default",
			"uid":               string(uuid.NewUUID()),
			"creationTimestamp": now.UTC().Format(time.RFC3339),
			"labels":            labels,
		},
	}
}
