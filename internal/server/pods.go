package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

var (
	serviceAccountsGR = schema.GroupResource{Resource: "serviceaccounts"}
	priorityClassesGR = schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}
)

// podAdmission reads, from the watch caches, what the pods' admission
// plugins look up: a pod's service account and the priority classes.
type podAdmission struct {
	s   *Server
	def *registry.Definition // the pods'
}

var _ builtin.PodAdmissionSource = (*podAdmission)(nil)

func (a *podAdmission) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
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

func (a *podAdmission) PriorityClasses(ctx context.Context) ([]schedulingv1.PriorityClass, error) {
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

var nodesGR = schema.GroupResource{Resource: "nodes"}

// Node is read from the cache, as upstream's resize admission reads its
// node informer's.
func (a *podAdmission) Node(ctx context.Context, name string) (*corev1.Node, error) {
	n := &corev1.Node{}
	found, err := storedServices{a.s.stores}.get(ctx, nodesGR, "", name, n)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, apierrors.NewNotFound(nodesGR, name)
	}
	return n, nil
}

var runtimeClassesGR = schema.GroupResource{Group: "node.k8s.io", Resource: "runtimeclasses"}

// RuntimeClass is read consistently: a class deleted a moment ago must
// not admit a pod.
func (a *podAdmission) RuntimeClass(ctx context.Context, name string) (*nodev1.RuntimeClass, error) {
	st, ok := a.s.stores.Store(runtimeClassesGR)
	if !ok {
		return nil, fmt.Errorf("%s are not served", runtimeClassesGR)
	}
	it, err := st.Cache.Get(ctx, st.Key("", name), watchcache.GetOptions{})
	if errors.Is(err, storage.ErrNotFound) {
		return nil, apierrors.NewNotFound(runtimeClassesGR, name)
	}
	if err != nil {
		return nil, err
	}
	rc := &nodev1.RuntimeClass{}
	return rc, json.Unmarshal(it.JSON(), rc)
}

var (
	_ builtin.PodStore = (*podAdmission)(nil)

	podsGR = schema.GroupResource{Resource: "pods"}
	pdbsGR = schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}
)

var limitRangesGR = schema.GroupResource{Resource: "limitranges"}

func (a *podAdmission) LimitRanges(ctx context.Context, namespace string) ([]corev1.LimitRange, error) {
	st, ok := a.s.stores.Store(limitRangesGR)
	if !ok {
		return nil, fmt.Errorf("%s are not served", limitRangesGR)
	}
	res, err := st.Cache.List(ctx, watchcache.ListOptions{ResourceVersion: "0", Namespace: namespace})
	if err != nil {
		return nil, err
	}
	var out []corev1.LimitRange
	for _, it := range res.Items {
		var lr corev1.LimitRange
		if err := json.Unmarshal(it.JSON(), &lr); err != nil {
			return nil, err
		}
		if lr.Namespace == namespace {
			out = append(out, lr)
		}
	}
	return out, nil
}

// UpdatePod writes namespace/name as change leaves it, straight to
// storage at the revision read, again while another write wins.
func (a *podAdmission) UpdatePod(ctx context.Context, namespace, name string, change func(*corev1.Pod) error) error {
	st, ok := a.s.stores.Store(podsGR)
	if !ok {
		return fmt.Errorf("%s are not served", podsGR)
	}
	key := st.Key(namespace, name)
	for attempt := 0; attempt < 10; attempt++ {
		kv, err := st.Storage.Get(ctx, key)
		if errors.Is(err, storage.ErrNotFound) {
			return apierrors.NewNotFound(podsGR, name)
		}
		if err != nil {
			return err
		}
		p := &corev1.Pod{}
		if err := json.Unmarshal(kv.Value, p); err != nil {
			return fmt.Errorf("decoding pod %s/%s: %w", namespace, name, err)
		}
		p.ResourceVersion = strconv.FormatInt(kv.ModRevision, 10)
		if err := change(p); err != nil {
			return err
		}
		p.ResourceVersion = ""
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			return err
		}
		data, err := handler.EncodeStored(obj)
		if err != nil {
			return err
		}
		_, err = st.Storage.Update(ctx, key, data, kv.ModRevision)
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		if errors.Is(err, storage.ErrNotFound) {
			return apierrors.NewNotFound(podsGR, name)
		}
		return err
	}
	return apierrors.NewConflict(podsGR, name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// DeletePod deletes namespace/name as a client's delete does.
func (a *podAdmission) DeletePod(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions) error {
	st, ok := a.s.stores.Store(podsGR)
	if !ok {
		return fmt.Errorf("%s are not served", podsGR)
	}
	_, _, err := a.s.handler.DeleteObject(ctx, a.def, st, namespace, name, opts)
	return err
}

// DisruptionBudgets lists the PodDisruptionBudgets of namespace.
func (a *podAdmission) DisruptionBudgets(ctx context.Context, namespace string) ([]policyv1.PodDisruptionBudget, error) {
	st, ok := a.s.stores.Store(pdbsGR)
	if !ok {
		return nil, fmt.Errorf("%s are not served", pdbsGR)
	}
	res, err := st.Cache.List(ctx, watchcache.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	var out []policyv1.PodDisruptionBudget
	for _, it := range res.Items {
		var pdb policyv1.PodDisruptionBudget
		if err := json.Unmarshal(it.JSON(), &pdb); err != nil {
			return nil, err
		}
		if pdb.Namespace == namespace {
			out = append(out, pdb)
		}
	}
	return out, nil
}
