package builtin

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/registry"
)

// ingressesWithoutClasses is Ingresses with no IngressClasses to default
// from, for the tables of definitions.
func ingressesWithoutClasses() *registry.Definition { return Ingresses(nil) }

// A created Ingress that names no class gets the default one: the newest
// of several, then the first by name; one that names a class, by field or
// by the legacy annotation, keeps it.
func TestDefaultIngressClass(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	class := func(name string, at time.Time, isDefault string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(at)}
		if isDefault != "" {
			m.Annotations = map[string]string{"ingressclass.kubernetes.io/is-default-class": isDefault}
		}
		return m
	}
	for _, c := range []struct {
		name    string
		classes []metav1.ObjectMeta
		ingress map[string]any
		want    any // spec.ingressClassName afterwards; nil for unset
	}{
		{"no classes", nil, map[string]any{"spec": map[string]any{}}, nil},
		{"none default", []metav1.ObjectMeta{class("a", t0, ""), class("b", t0, "false")}, map[string]any{"spec": map[string]any{}}, nil},
		{"one default", []metav1.ObjectMeta{class("a", t0, ""), class("b", t0, "true")}, map[string]any{"spec": map[string]any{}}, "b"},
		{"newest default", []metav1.ObjectMeta{class("old", t0, "true"), class("new", t0.Add(time.Second), "true")}, map[string]any{"spec": map[string]any{}}, "new"},
		{"same time: first name", []metav1.ObjectMeta{class("zeta", t0, "true"), class("alpha", t0, "true")}, map[string]any{"spec": map[string]any{}}, "alpha"},
		{"class named", []metav1.ObjectMeta{class("b", t0, "true")}, map[string]any{"spec": map[string]any{"ingressClassName": "mine"}}, "mine"},
		{"legacy annotation", []metav1.ObjectMeta{class("b", t0, "true")},
			map[string]any{"metadata": map[string]any{"annotations": map[string]any{"kubernetes.io/ingress.class": "nginx"}}, "spec": map[string]any{}}, nil},
		{"no spec", []metav1.ObjectMeta{class("b", t0, "true")}, map[string]any{}, "b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := Ingresses(func(context.Context) ([]metav1.ObjectMeta, error) { return c.classes, nil }).Hooks.(registry.CreateAdmitter)
			if err := h.AdmitCreate(context.Background(), c.ingress); err != nil {
				t.Fatal(err)
			}
			spec, _ := c.ingress["spec"].(map[string]any)
			if got := spec["ingressClassName"]; got != c.want {
				t.Errorf("spec.ingressClassName %v, want %v", got, c.want)
			}
		})
	}
}

// A failed listing refuses the create rather than storing the Ingress
// without the class it should have had.
func TestDefaultIngressClassListError(t *testing.T) {
	h := Ingresses(func(context.Context) ([]metav1.ObjectMeta, error) { return nil, errors.New("cache closed") }).Hooks.(registry.CreateAdmitter)
	if err := h.AdmitCreate(context.Background(), map[string]any{"spec": map[string]any{}}); err == nil {
		t.Fatal("no error")
	}
}

// ipBlock CIDRs are a legacy field: one not in canonical form is valid
// (and warned of), bits past the prefix are not, unless the stored
// policy has that CIDR already.
func TestNetworkPolicyCIDRs(t *testing.T) {
	v := NetworkPolicies().Hooks.(registry.Validator)
	policy := func(cidr string) map[string]any {
		return decodeYAML(t, `{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: np}, spec: {podSelector: {},
  ingress: [{from: [{ipBlock: {cidr: "`+cidr+`"}}]}]}}`)
	}
	if errs := v.Validate(policy("2001:DB8::/32")); len(errs) > 0 {
		t.Errorf("non-canonical IPv6 CIDR: %v", errs)
	}
	if errs := v.Validate(policy("10.0.0.1/8")); len(errs) != 1 || errs[0].Detail != "must not have bits set beyond the prefix length" {
		t.Errorf("bits past the prefix: %v", errs)
	}
	if errs := v.ValidateUpdate(policy("10.0.0.1/8"), policy("10.0.0.1/8")); len(errs) > 0 {
		t.Errorf("stored CIDR kept: %v", errs)
	}
}
