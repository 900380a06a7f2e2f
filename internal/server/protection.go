package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

var (
	pvcGR = schema.GroupResource{Resource: "persistentvolumeclaims"}
	pvGR  = schema.GroupResource{Resource: "persistentvolumes"}
	vacGR = schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattributesclasses"}
)

// storageProtection is what kube-controller-manager's pvc-protection,
// pv-protection and vac-protection controllers do beside kube-apiserver:
// a deleted claim loses its kubernetes.io/pvc-protection finalizer once no
// scheduled pod that has not terminated names it among its volumes, a
// deleted volume its kubernetes.io/pv-protection finalizer once it is not
// Bound, and a deleted VolumeAttributesClass its
// kubernetes.io/vac-protection finalizer once no claim or volume names it.
// An object left without finalizers is then deleted, as upstream's store
// deletes it.
type storageProtection struct{ s *Server }

// SyncClaim syncs the claim named namespace/name.
func (p storageProtection) SyncClaim(ctx context.Context, name string) error {
	ns, n, _ := strings.Cut(name, "/")
	return p.release(ctx, pvcGR, ns, n, builtin.PVCProtectionFinalizer, func(ctx context.Context, obj map[string]any) (bool, error) {
		return p.claimInUse(ctx, ns, n)
	})
}

// SyncVolume syncs the named volume.
func (p storageProtection) SyncVolume(ctx context.Context, name string) error {
	return p.release(ctx, pvGR, "", name, "kubernetes.io/pv-protection", func(_ context.Context, obj map[string]any) (bool, error) {
		status, _ := obj["status"].(map[string]any)
		return status["phase"] == string(corev1.VolumeBound), nil
	})
}

// SyncClass syncs the named VolumeAttributesClass: a deleted one goes
// once no claim or volume names it, as kube-controller-manager's
// vac-protection controller lets it.
func (p storageProtection) SyncClass(ctx context.Context, name string) error {
	return p.release(ctx, vacGR, "", name, "kubernetes.io/vac-protection", func(ctx context.Context, _ map[string]any) (bool, error) {
		return p.classInUse(ctx, name)
	})
}

// classInUse reports whether a claim (its spec, current or target class)
// or a volume names the VolumeAttributesClass.
func (p storageProtection) classInUse(ctx context.Context, class string) (bool, error) {
	for _, gr := range []schema.GroupResource{pvcGR, pvGR} {
		st, ok := p.s.stores.Store(gr)
		if !ok {
			continue
		}
		res, err := st.Cache.List(ctx, watchcache.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		for _, it := range res.Items {
			var o struct {
				Spec struct {
					Class *string `json:"volumeAttributesClassName"`
				} `json:"spec"`
				Status struct {
					Current *string `json:"currentVolumeAttributesClassName"`
					Modify  *struct {
						Target string `json:"targetVolumeAttributesClassName"`
					} `json:"modifyVolumeStatus"`
				} `json:"status"`
			}
			if err := json.Unmarshal(it.JSON(), &o); err != nil {
				return false, err
			}
			if o.Spec.Class != nil && *o.Spec.Class == class || o.Status.Current != nil && *o.Status.Current == class ||
				o.Status.Modify != nil && o.Status.Modify.Target == class {
				return true, nil
			}
		}
	}
	return false, nil
}

// SyncClassUsers re-syncs the VolumeAttributesClasses being deleted when
// a claim or volume changes: one it named may now be free.
func (p storageProtection) SyncClassUsers(ctx context.Context, _ string) error {
	return p.syncDeleting(ctx, vacGR, "", p.SyncClass)
}

// syncDeleting syncs, by sync, each object of gr in ns that is being
// deleted (named namespace/name when ns is not empty).
func (p storageProtection) syncDeleting(ctx context.Context, gr schema.GroupResource, ns string, sync func(context.Context, string) error) error {
	st, ok := p.s.stores.Store(gr)
	if !ok {
		return nil
	}
	res, err := st.Cache.List(ctx, watchcache.ListOptions{ResourceVersion: "0", Namespace: ns})
	if err != nil {
		return err
	}
	var errs []error
	for _, it := range res.Items {
		var m struct {
			Metadata struct {
				Name              string  `json:"name"`
				DeletionTimestamp *string `json:"deletionTimestamp"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(it.JSON(), &m); err != nil || m.Metadata.DeletionTimestamp == nil {
			continue
		}
		name := m.Metadata.Name
		if ns != "" {
			name = ns + "/" + name
		}
		errs = append(errs, sync(ctx, name))
	}
	return errors.Join(errs...)
}

// release removes finalizer from the named object if it is being deleted
// and not inUse, with a compare-and-swap, and deletes it when no
// finalizer remains.
func (p storageProtection) release(ctx context.Context, gr schema.GroupResource, ns, name, finalizer string, inUse func(context.Context, map[string]any) (bool, error)) error {
	st, ok := p.s.stores.Store(gr)
	if !ok {
		return nil
	}
	key := st.Key(ns, name)
	released := false
	kv, err := storage.GuaranteedUpdate(ctx, st.Storage, key, func(cur storage.KeyValue) ([]byte, error) {
		released = false
		obj, err := handler.DecodeStored(cur.Value)
		if err != nil {
			return nil, err
		}
		md, _ := obj["metadata"].(map[string]any)
		fin, _ := md["finalizers"].([]any)
		if md["deletionTimestamp"] == nil || !slices.Contains(fin, any(finalizer)) {
			return cur.Value, nil
		}
		used, err := inUse(ctx, obj)
		if err != nil || used {
			return cur.Value, err
		}
		fin = slices.DeleteFunc(slices.Clone(fin), func(f any) bool { return f == finalizer })
		if len(fin) == 0 {
			delete(md, "finalizers")
		} else {
			md["finalizers"] = fin
		}
		released = true
		return handler.EncodeStored(obj)
	})
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil || !released {
		return err
	}
	obj, err := handler.DecodeStored(kv.Value)
	if err != nil {
		return err
	}
	if md, _ := obj["metadata"].(map[string]any); len(asSlice(md["finalizers"])) > 0 {
		return nil // others' finalizers remain
	}
	_, _, err = st.Storage.Delete(ctx, key, kv.ModRevision)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil
	case errors.Is(err, storage.ErrConflict):
		return fmt.Errorf("%s %s/%s changed while releasing it; will retry", gr, ns, name)
	}
	return err
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// claimInUse reports whether a pod in ns, scheduled and not terminated,
// names the claim among its volumes.
func (p storageProtection) claimInUse(ctx context.Context, ns, claim string) (bool, error) {
	st, ok := p.s.stores.Store(podsGR)
	if !ok {
		return false, nil
	}
	res, err := st.Cache.List(ctx, watchcache.ListOptions{ResourceVersion: "0", Namespace: ns})
	if err != nil {
		return false, err
	}
	for _, it := range res.Items {
		var pod corev1.Pod
		if err := json.Unmarshal(it.JSON(), &pod); err != nil {
			return false, err
		}
		// As upstream's controller, only a scheduled pod holds a claim: a
		// kubelet starts no pod whose claim is being deleted.
		if pod.Namespace != ns || pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
				return true, nil
			}
			if v.Ephemeral != nil && pod.Name+"-"+v.Name == claim {
				return true, nil
			}
		}
	}
	return false, nil
}

// SyncPod re-syncs the claims being deleted in the namespace of the pod
// named namespace/name: one the pod used may now be free.
func (p storageProtection) SyncPod(ctx context.Context, name string) error {
	ns, _, _ := strings.Cut(name, "/")
	return p.syncDeleting(ctx, pvcGR, ns, p.SyncClaim)
}
