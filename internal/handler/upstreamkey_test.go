package handler_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A PUT that would create an object, carrying a uid nothing missing has,
// is a conflict naming the object's storage key as kube-apiserver 1.37's
// storage names it: a built-in's under its resource's name alone or the
// special prefix of its storage factory, a custom resource's under its
// group.
func TestUIDPreconditionNamesUpstreamKey(t *testing.T) {
	e := newCronTabEnv(t)
	const uid = `"uid":"00000000-0000-0000-0000-000000000000"`
	conflict := func(name, path, body, key string) errCase {
		return errCase{name: name, req: req{method: "PUT", path: path, body: body}, code: 409, reason: metav1.StatusReasonConflict,
			message: "Key: " + key + ", ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object meta: "}
	}
	e.checkCases(t, []errCase{
		at(conflict("lease", "/apis/coordination.k8s.io/v1/namespaces/default/leases/l",
			`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l",`+uid+`}}`, "/registry/leases/default/l")),
		at(conflict("role", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/r",
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r",`+uid+`}}`, "/registry/roles/default/r")),
		at(conflict("cluster role", "/apis/rbac.authorization.k8s.io/v1/clusterroles/r",
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r",`+uid+`}}`, "/registry/clusterroles/r")),
		at(conflict("service", "/api/v1/namespaces/default/services/s",
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s",`+uid+`},"spec":{"ports":[{"port":80}]}}`, "/registry/services/specs/default/s")),
		at(conflict("endpoints", "/api/v1/namespaces/default/endpoints/s",
			`{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"s",`+uid+`}}`, "/registry/services/endpoints/default/s")),
		at(conflict("events.k8s.io event", "/apis/events.k8s.io/v1/namespaces/default/events/ev",
			`{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"ev",`+uid+`}}`, "/registry/events/default/ev")),
	})
}
