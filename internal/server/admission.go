package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/admission"
	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

var (
	mutatingWebhooksGR   = schema.GroupResource{Group: builtin.AdmissionGroup, Resource: "mutatingwebhookconfigurations"}
	validatingWebhooksGR = schema.GroupResource{Group: builtin.AdmissionGroup, Resource: "validatingwebhookconfigurations"}
	namespacesGR         = schema.GroupResource{Resource: "namespaces"}
	policiesGR           = schema.GroupResource{Group: builtin.AdmissionGroup, Resource: "validatingadmissionpolicies"}
	policyBindingsGR     = schema.GroupResource{Group: builtin.AdmissionGroup, Resource: "validatingadmissionpolicybindings"}
	mutatingPoliciesGR   = schema.GroupResource{Group: builtin.AdmissionGroup, Resource: "mutatingadmissionpolicies"}
	mutatingBindingsGR   = schema.GroupResource{Group: builtin.AdmissionGroup, Resource: "mutatingadmissionpolicybindings"}
)

// storedAdmission reads webhook configurations and namespace labels from
// the watch caches, for the admission step.
type storedAdmission struct {
	stores *stores
	// listed keeps the last list of each resource read (admission lists
	// its registrations a dozen times per write, and they rarely change).
	listed map[schema.GroupResource]*atomic.Pointer[listedAdmission]
}

// listedAdmission is a resource's objects as its cache held them at rev.
type listedAdmission struct {
	store *handler.Store
	rev   int64
	items []admission.Stored
}

// admissionGRs are the resources that register admission: webhook
// configurations, policies and their bindings.
var admissionGRs = []schema.GroupResource{mutatingWebhooksGR, validatingWebhooksGR, policiesGR, policyBindingsGR, mutatingPoliciesGR, mutatingBindingsGR}

func newStoredAdmission(s *stores) storedAdmission {
	sa := storedAdmission{stores: s, listed: map[schema.GroupResource]*atomic.Pointer[listedAdmission]{}}
	for _, gr := range admissionGRs {
		sa.listed[gr] = new(atomic.Pointer[listedAdmission])
	}
	return sa
}

var (
	_ admission.Source               = storedAdmission{}
	_ admission.Namespaces           = storedAdmission{}
	_ admission.PolicySource         = storedAdmission{}
	_ admission.MutatingPolicySource = storedAdmission{}
)

func (s storedAdmission) WebhookConfigurations(ctx context.Context, mutating bool) ([]admission.Stored, error) {
	if mutating {
		return s.list(ctx, mutatingWebhooksGR)
	}
	return s.list(ctx, validatingWebhooksGR)
}

func (s storedAdmission) ValidatingAdmissionPolicies(ctx context.Context) ([]admission.Stored, error) {
	return s.list(ctx, policiesGR)
}

func (s storedAdmission) ValidatingAdmissionPolicyBindings(ctx context.Context) ([]admission.Stored, error) {
	return s.list(ctx, policyBindingsGR)
}

func (s storedAdmission) MutatingAdmissionPolicies(ctx context.Context) ([]admission.Stored, error) {
	return s.list(ctx, mutatingPoliciesGR)
}

func (s storedAdmission) MutatingAdmissionPolicyBindings(ctx context.Context) ([]admission.Stored, error) {
	return s.list(ctx, mutatingBindingsGR)
}

// list reads every object of a resource from its watch cache. A cache
// still at the revision of the last list holds what that list returned,
// which is returned again: callers do not change it.
func (s storedAdmission) list(ctx context.Context, gr schema.GroupResource) ([]admission.Stored, error) {
	st, ok := s.stores.Store(gr)
	if !ok {
		return nil, fmt.Errorf("%s are not served", gr)
	}
	last := s.listed[gr]
	if last != nil {
		if l := last.Load(); l != nil && l.store == st && l.rev == st.Cache.Revision() {
			return l.items, nil
		}
	}
	res, err := st.Cache.List(ctx, watchcache.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	out := make([]admission.Stored, len(res.Items))
	for i, it := range res.Items {
		out[i] = admission.Stored{Name: it.Name, Revision: it.Revision, JSON: it.JSON()}
	}
	// A cache not yet filled lists storage, at revision 0 to the cache.
	if last != nil && res.ResourceVersion > 0 {
		last.Store(&listedAdmission{store: st, rev: res.ResourceVersion, items: out})
	}
	return out, nil
}

// NamespaceLabels reads the cache, then storage for a namespace created a
// moment ago that the cache has not seen yet.
func (s storedAdmission) NamespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	st, ok := s.stores.Store(namespacesGR)
	if !ok {
		return nil, fmt.Errorf("namespaces are not served")
	}
	var data []byte
	it, err := st.Cache.Get(ctx, st.Key("", name), watchcache.GetOptions{ResourceVersion: "0"})
	switch {
	case err == nil:
		data = it.JSON()
	case errors.Is(err, storage.ErrNotFound):
		kv, err := st.Storage.Get(ctx, st.Key("", name))
		if errors.Is(err, storage.ErrNotFound) {
			return nil, apierrors.NewNotFound(namespacesGR, name)
		}
		if err != nil {
			return nil, err
		}
		data = kv.Value
	default:
		return nil, err
	}
	var ns struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &ns); err != nil {
		return nil, err
	}
	return ns.Metadata.Labels, nil
}

// storedParams reads the params of ValidatingAdmissionPolicies: objects of
// any served kind, built-in or custom, from their watch caches, in the
// version the policy's paramKind names.
type storedParams struct {
	stores *stores
	reg    *registry.Registry
}

var _ admission.Params = storedParams{}

// definition finds the served resource of kind in apiVersion.
func (p storedParams) definition(apiVersion, kind string) (*registry.Definition, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	for _, d := range p.reg.Current().Definitions() {
		if d.Group == gv.Group && d.Kind == kind {
			if _, ok := d.ServedVersion(gv.Version); ok {
				return d, nil
			}
		}
	}
	return nil, fmt.Errorf("failed to find resource referenced by paramKind: '%s, Kind=%s'", gv.String(), kind)
}

func (p storedParams) Params(ctx context.Context, apiVersion, kind, namespace, name string, selector labels.Selector) ([]map[string]any, error) {
	def, err := p.definition(apiVersion, kind)
	if err != nil {
		return nil, err
	}
	st, ok := p.stores.Store(def.GroupResource())
	if !ok {
		return nil, fmt.Errorf("%s are not served", def.GroupResource())
	}
	if !def.Namespaced() {
		namespace = ""
	}
	var items []*watchcache.Item
	if name != "" {
		it, err := st.Cache.Get(ctx, st.Key(namespace, name), watchcache.GetOptions{ResourceVersion: "0"})
		if errors.Is(err, storage.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		items = []*watchcache.Item{it}
	} else {
		res, err := st.Cache.List(ctx, watchcache.ListOptions{Namespace: namespace, ResourceVersion: "0", Labels: selector})
		if err != nil {
			return nil, err
		}
		items = res.Items
	}
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		obj, err := conversion.Decode(it.JSON())
		if err != nil {
			return nil, err
		}
		if obj, err = conversion.ConvertObject(ctx, conversion.For(def), obj, apiVersion); err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}
