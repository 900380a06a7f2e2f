package server

import (
	"context"
	"errors"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/storage"
)

// ensureDefaultServiceCIDR creates the ServiceCIDR of the service cluster
// IP range, ready, where it is missing, retrying until it succeeds, as
// upstream's kube-apiserver and its default ServiceCIDR controller leave
// it: the spec written by the server, the Ready condition applied to the
// status. One that exists is left alone; the create is create-if-absent,
// so replicas starting together agree.
func (s *Server) ensureDefaultServiceCIDR(ctx context.Context) {
	key := keyPrefix(s.cfg.EtcdPrefix, builtin.ServiceCIDRs().GroupResource()) + builtin.DefaultServiceCIDRName
	done := retry(ctx, s.log, "creating the default ServiceCIDR", func() error {
		data, err := defaultServiceCIDR(s.cfg.ServiceClusterIPRange, metav1.NewTime(time.Now().UTC().Truncate(time.Second)))
		if err != nil {
			return err
		}
		if _, err := s.raw.Create(ctx, key, data); err != nil && !errors.Is(err, storage.ErrExists) {
			return err
		}
		return nil
	})
	s.serviceCIDREnsured.Store(done)
}

// defaultServiceCIDR encodes the default ServiceCIDR as stored, with the
// two managedFields entries upstream's writers leave on it.
func defaultServiceCIDR(cidr string, now metav1.Time) ([]byte, error) {
	c := builtin.DefaultServiceCIDR(cidr)
	c.UID = uuid.NewUUID()
	c.CreationTimestamp = now
	c.Status.Conditions = []metav1.Condition{builtin.DefaultServiceCIDRReady(now)}
	c.ManagedFields = []metav1.ManagedFieldsEntry{
		{
			Manager: "kubernetes-service-cidr-controller", Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: networkingv1.SchemeGroupVersion.String(), Time: &now, FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:status":{},"f:type":{}}}}}`)},
		},
		{
			Manager: kubeAPIServer, Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: networkingv1.SchemeGroupVersion.String(), Time: &now, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:cidrs":{}}}`)},
		},
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
	if err != nil {
		return nil, err
	}
	return handler.EncodeStored(u)
}
