package server

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/watchcache"
)

var (
	serviceAccountsGR = schema.GroupResource{Resource: "serviceaccounts"}
	priorityClassesGR = schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}
)

// podAdmission reads, from the watch caches, what the pods' admission
// plugins look up: a pod's service account and the priority classes.
type podAdmission struct{ s *Server }

var _ builtin.PodAdmissionSource = podAdmission{}

func (a podAdmission) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	sa := &corev1.ServiceAccount{}
	found, err := storedServices{a.s.stores}.get(ctx, serviceAccountsGR, namespace, name, sa)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, apierrors.NewNotFound(serviceAccountsGR, name)
	}
	return sa, nil
}

func (a podAdmission) PriorityClasses(ctx context.Context) ([]schedulingv1.PriorityClass, error) {
	st, ok := a.s.stores.Store(priorityClassesGR)
	if !ok {
		return nil, fmt.Errorf("%s are not served", priorityClassesGR)
	}
	res, err := st.Cache.List(ctx, watchcache.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	out := make([]schedulingv1.PriorityClass, len(res.Items))
	for i, it := range res.Items {
		if err := json.Unmarshal(it.JSON(), &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
