package server

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/rbac/bootstrap"
	"github.com/crdserver/crdserver/internal/registry"
)

// The managedFields every object created at start is written with are
// those the field manager records for its create.
func TestCreatedFields(t *testing.T) {
	a, err := newAuthorization(ModeRBAC)
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]*registry.Definition{}
	for _, d := range append(a.definitions(), builtin.PriorityClasses(), builtin.Leases()) {
		defs[d.Kind] = d
	}
	type object struct {
		obj  metav1.Object
		kind schema.GroupVersionKind
	}
	var objects []object
	rbacKind := rbacv1.SchemeGroupVersion.WithKind
	for _, r := range bootstrap.ClusterRoles() {
		objects = append(objects, object{&r, rbacKind("ClusterRole")})
	}
	for _, b := range bootstrap.ClusterRoleBindings() {
		objects = append(objects, object{&b, rbacKind("ClusterRoleBinding")})
	}
	for _, r := range bootstrap.Roles() {
		objects = append(objects, object{&r, rbacKind("Role")})
	}
	for _, b := range bootstrap.RoleBindings() {
		objects = append(objects, object{&b, rbacKind("RoleBinding")})
	}
	for _, pc := range builtin.SystemPriorityClasses() {
		objects = append(objects, object{&pc, pc.GroupVersionKind()})
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "apiserver-x", Labels: map[string]string{identityLeaseLabel: "kube-apiserver", hostnameLabel: "h"},
			Annotations: map[string]string{peerAddressAnnotation: "127.0.0.1:6443"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("apiserver-x_1"), LeaseDurationSeconds: ptr.To[int32](3600), RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
	objects = append(objects, object{lease, coordinationv1.SchemeGroupVersion.WithKind("Lease")})
	managers := map[string]*apply.Manager{}
	for _, o := range objects {
		o.obj.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
		data, err := encodeTyped(o.obj, o.kind, true)
		if err != nil {
			t.Fatal(err)
		}
		written, err := handler.DecodeStored(data)
		if err != nil {
			t.Fatal(err)
		}
		recorded := runtime.DeepCopyJSON(written)
		m := managers[o.kind.Kind]
		if m == nil {
			m = &apply.Manager{Types: apply.NewTypes(defs[o.kind.Kind]), GroupVersion: o.kind.GroupVersion(), Kind: o.kind.Kind}
			// The object a create starts from, as the handler's
			// managers have it: the new typed object.
			if z, ok := defs[o.kind.Kind].Hooks.(registry.Zeroer); ok {
				m.Zero = z.ZeroObject()
			} else {
				m.Zero = zeroObject(o.obj)
			}
			managers[o.kind.Kind] = m
		}
		delete(recorded["metadata"].(map[string]any), "managedFields")
		// Upstream's field manager reads the typed object, in which an
		// aggregated role's rules: null is no field (kube-apiserver's
		// admin, edit and view own no f:rules).
		for k, v := range recorded {
			if v == nil {
				delete(recorded, k)
			}
		}
		m.Update(nil, recorded, kubeAPIServer)
		got, want := written["metadata"].(map[string]any)["managedFields"], recorded["metadata"].(map[string]any)["managedFields"]
		for _, entries := range []any{got, want} { // times are the clocks'
			for _, e := range entries.([]any) {
				delete(e.(map[string]any), "time")
			}
		}
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("%s %s written with\n%s\nthe field manager records\n%s", o.kind.Kind, o.obj.GetName(), g, w)
		}
	}
}
