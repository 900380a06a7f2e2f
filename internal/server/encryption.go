package server

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/storage/encrypt"
)

// loadEncryption reads --encryption-provider-config; without one nothing
// is encrypted.
func loadEncryption(path string) (*encrypt.Config, error) {
	if path == "" {
		return nil, nil
	}
	return encrypt.LoadConfig(path)
}

// rawGRs are the resources whose values the server reads or writes
// outside their stores: the kubernetes Service and its endpoints, cluster
// IP records, the APIService and CRD lists the APIService loop reads, the
// bootstrap RBAC objects it reconciles (cluster-wide and namespaced), the
// system PriorityClasses, the default ServiceCIDR and the identity Lease.
var rawGRs = []schema.GroupResource{servicesGR, endpointsGR, endpointSlicesGR, ipAddressesGR, apiServicesGR, crdGR,
	clusterRolesGR, clusterRoleBindingsGR, rolesGR, roleBindingsGR,
	builtin.PriorityClasses().GroupResource(), builtin.ServiceCIDRs().GroupResource(), builtin.Leases().GroupResource()}

// rawStorage is b encrypting rawGRs as their stores do, so that values
// written around the stores read back through them (an
// EncryptionConfiguration of *.* covers services too).
func rawStorage(b storage.Interface, enc *encrypt.Config, etcdPrefix string) storage.Interface {
	routes := map[string]*encrypt.Transformer{}
	for _, gr := range rawGRs {
		routes[keyPrefix(etcdPrefix, gr)] = enc.For(gr)
	}
	return encrypt.ByPrefix(b, routes)
}
