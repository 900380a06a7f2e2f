package main

import "regexp"

// The objects a server creates at start (RBAC policy, PriorityClasses,
// identity Leases) are compared whole by a "bootstrap" line, as "body"
// compares an answer, without two things that differ by design:
//   - the rules of an aggregated ClusterRole (one with an
//     aggregationRule): upstream's kube-controller-manager fills them,
//     and none runs beside the runner's kube-apiserver, whose admin, edit
//     and view have none; crdserver runs the aggregation itself;
//   - an identity Lease's name and holder, and its peer address's port:
//     every server names itself.

// identityLabel marks a server's identity Lease.
const identityLabel = "apiserver.kubernetes.io/identity"

// comparableBootstrap is v, a decoded object or list, without what
// differs by design between the servers' bootstrap objects.
func comparableBootstrap(v any) any {
	obj, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if items, ok := obj["items"].([]any); ok {
		for i, item := range items {
			items[i] = comparableBootstrap(item)
		}
		return obj
	}
	if obj["aggregationRule"] != nil {
		delete(obj, "rules")
	}
	md, _ := obj["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	if _, ok := labels[identityLabel]; ok {
		md["name"] = "-"
		if spec, ok := obj["spec"].(map[string]any); ok && spec["holderIdentity"] != nil {
			spec["holderIdentity"] = "-"
		}
		if a, ok := md["annotations"].(map[string]any); ok {
			if addr, ok := a[peerAddress].(string); ok {
				a[peerAddress] = port.ReplaceAllString(addr, ":-")
			}
		}
	}
	return obj
}

const peerAddress = "kubernetes.io/peer-advertise-address"

var port = regexp.MustCompile(`:[0-9]+$`)
