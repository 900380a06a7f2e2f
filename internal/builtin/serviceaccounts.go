package builtin

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/crdserver/crdserver/internal/registry"
)

// DefaultServiceAccount is the ServiceAccount every namespace has; the
// service account controller creates it.
const DefaultServiceAccount = "default"

// ServiceAccounts is the core v1 serviceaccounts resource. crdserver issues
// no tokens: the objects are stored for the tools that expect them.
func ServiceAccounts() *registry.Definition {
	return &registry.Definition{
		Resource:   "serviceaccounts",
		Singular:   "serviceaccount",
		Kind:       "ServiceAccount",
		ListKind:   "ServiceAccountList",
		ShortNames: []string{"sa"},
		Scope:      registry.Namespaced,
		Versions: []registry.Version{{
			Name: "v1", Served: true, Storage: true,
			// Upstream dropped the Secrets column with legacy tokens.
			PrinterColumns: []registry.PrinterColumn{registry.BuiltinAgeColumn},
		}},
		Hooks: serviceAccountHooks{stored: newStored[corev1.ServiceAccount]("ServiceAccount", "v1")},
	}
}

type serviceAccountHooks struct {
	stored[corev1.ServiceAccount]
	noGeneration
}

// ReturnDeletedObject: as upstream's store, a delete answers with the
// ServiceAccount.
func (serviceAccountHooks) ReturnDeletedObject() {}

var _ registry.NoGeneration = serviceAccountHooks{}

// NewServiceAccount returns a complete stored ServiceAccount, for the
// controller that creates each namespace's default one.
func NewServiceAccount(namespace, name string, now time.Time) map[string]any {
	return newCoreObject("ServiceAccount", namespace, name, now)
}

// newCoreObject is a core/v1 object of kind the server makes itself,
// with the metadata a create would give it.
func newCoreObject(kind, namespace, name string, now time.Time) map[string]any {
	return map[string]any{
		"apiVersion": "v1",
		"kind":       kind,
		"metadata": map[string]any{
			"name":              name,
			"namespace":         namespace,
			"uid":               string(uuid.NewUUID()),
			"creationTimestamp": now.UTC().Format(time.RFC3339),
		},
	}
}
