// Package memcached is an example operator tested with crdtest: a
// Memcached custom resource whose controller keeps a Deployment of the
// requested size (owned by the Memcached, so that the garbage collector
// removes it), reports it in the status, holds a finalizer until its
// cleanup ran, and whose validating webhook refuses sizes out of range.
// Its suite (memcached_test.go) runs on crdtest/envtest; written for
// controller-runtime's envtest, it differs by one import.
package memcached

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API of Memcached.
var GroupVersion = schema.GroupVersion{Group: "cache.example.com", Version: "v1"}

// AddToScheme registers Memcached and MemcachedList.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Memcached{}, &MemcachedList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Memcached asks for a memcached Deployment of Spec.Size replicas.
type Memcached struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MemcachedSpec   `json:"spec,omitempty"`
	Status MemcachedStatus `json:"status,omitempty"`
}

// MemcachedSpec is what the user wants.
type MemcachedSpec struct {
	// Size is the number of replicas, 1 to MaxSize (the webhook checks).
	Size int32 `json:"size"`
}

// MemcachedStatus is what the controller did.
type MemcachedStatus struct {
	// Deployment names the Deployment the controller keeps.
	Deployment string `json:"deployment,omitempty"`
	// Conditions has Available: True once the Deployment has Spec.Size.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MemcachedList is a list of Memcached.
type MemcachedList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Memcached `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (m *Memcached) DeepCopyObject() runtime.Object { return m.DeepCopy() }

// DeepCopy copies m (hand-written where controller-gen would generate it).
func (m *Memcached) DeepCopy() *Memcached {
	if m == nil {
		return nil
	}
	out := &Memcached{TypeMeta: m.TypeMeta, Spec: m.Spec, Status: m.Status}
	m.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if m.Status.Conditions != nil {
		out.Status.Conditions = make([]metav1.Condition, len(m.Status.Conditions))
		for i := range m.Status.Conditions {
			m.Status.Conditions[i].DeepCopyInto(&out.Status.Conditions[i])
		}
	}
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *MemcachedList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &MemcachedList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Memcached, len(l.Items))
		for i := range l.Items {
			out.Items[i] = *l.Items[i].DeepCopy()
		}
	}
	return out
}
