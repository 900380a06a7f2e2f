package server

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/watchcache"
)

var ingressClassesGR = schema.GroupResource{Group: "networking.k8s.io", Resource: "ingressclasses"}

// ingressClasses lists the metadata of the stored IngressClasses, for
// the Ingresses' DefaultIngressClass admission.
func (s *Server) ingressClasses(ctx context.Context) ([]metav1.ObjectMeta, error) {
	st, ok := s.stores.Store(ingressClassesGR)
	if !ok {
		return nil, fmt.Errorf("%s are not served", ingressClassesGR)
	}
	res, err := st.Cache.List(ctx, watchcache.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	out := make([]metav1.ObjectMeta, len(res.Items))
	for i, it := range res.Items {
		var m metav1.PartialObjectMetadata
		if err := json.Unmarshal(it.JSON(), &m); err != nil {
			return nil, err
		}
		out[i] = m.ObjectMeta
	}
	return out, nil
}
