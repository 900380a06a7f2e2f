package server

import (
	"context"
	"encoding/json"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/watchcache"
)

var storageClassesGR = schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"}

// storageClasses lists the stored StorageClasses, for the claims'
// DefaultStorageClass and PersistentVolumeClaimResize admission.
func (s *Server) storageClasses(ctx context.Context) ([]storagev1.StorageClass, error) {
	st, ok := s.stores.Store(storageClassesGR)
	if !ok {
		return nil, fmt.Errorf("%s are not served", storageClassesGR)
	}
	res, err := st.Cache.List(ctx, watchcache.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	out := make([]storagev1.StorageClass, len(res.Items))
	for i, it := range res.Items {
		if err := json.Unmarshal(it.JSON(), &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
