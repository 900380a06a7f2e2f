package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authz"
	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/rbac"
	"github.com/crdserver/crdserver/internal/rbac/bootstrap"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
)

// Authorization modes (--authorization-mode).
const (
	ModeRBAC        = "RBAC"
	ModeAlwaysAllow = "AlwaysAllow"
)

// rbacAuthorizerName is RBAC's name in upstream's chain of authorizers,
// which prefixes its reasons for a denial.
const rbacAuthorizerName = "rbac"

var (
	clusterRolesGR        = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}
	clusterRoleBindingsGR = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterrolebindings"}
	rolesGR               = schema.GroupResource{Group: rbacv1.GroupName, Resource: "roles"}
	roleBindingsGR        = schema.GroupResource{Group: rbacv1.GroupName, Resource: "rolebindings"}
)

// authorization is the server's authorizer and, in RBAC mode, what feeds
// it: the index of RBAC objects, the bootstrap policy, the ClusterRole
// aggregation loop.
type authorization struct {
	mode  string
	index *rbac.Index
	rbac  *rbac.Authorizer
	// chain decides every request and review.
	chain authz.Authorizer
	feed  *rbac.Feed
	// aggregate is signalled when a ClusterRole changed.
	aggregate    chan struct{}
	bootstrapped atomic.Bool
}

func newAuthorization(mode string) (*authorization, error) {
	a := &authorization{mode: mode, index: rbac.NewIndex(), aggregate: make(chan struct{}, 1)}
	a.rbac = &rbac.Authorizer{Index: a.index}
	switch mode {
	case "", ModeRBAC:
		a.mode = ModeRBAC
		a.chain = authz.Named(rbacAuthorizerName, a.rbac)
	case ModeAlwaysAllow:
		// /metrics and /debug/pprof stay the admins' (authz.Privileged).
		a.chain = authz.Privileged(authz.AllowAll)
	default:
		return nil, fmt.Errorf("unknown authorization mode %q: want %s or %s", mode, ModeRBAC, ModeAlwaysAllow)
	}
	return a, nil
}

// definitions are the RBAC resources and the access reviews.
func (a *authorization) definitions() []*registry.Definition {
	guard := &rbac.Guard{Authorizer: a.chain, Rules: a.rbac}
	return []*registry.Definition{
		builtin.Roles(guard), builtin.ClusterRoles(guard), builtin.RoleBindings(guard), builtin.ClusterRoleBindings(guard),
		builtin.SubjectAccessReviews(a), builtin.LocalSubjectAccessReviews(a),
		builtin.SelfSubjectAccessReviews(a), builtin.SelfSubjectRulesReviews(a),
	}
}

var _ builtin.SignerAuthorizer = (*authorization)(nil)

// AuthorizedForSigner implements builtin.SignerAuthorizer as upstream's
// certificates authorization helper asks: verb on the signers resource
// named signerName, else named its domain and "/*". A request without a
// user is refused.
func (a *authorization) AuthorizedForSigner(ctx context.Context, verb, signerName string) bool {
	u, ok := authn.UserFrom(ctx)
	if !ok {
		return false
	}
	names := []string{signerName}
	if domain, _, found := strings.Cut(signerName, "/"); found {
		names = append(names, domain+"/*")
	}
	for _, name := range names {
		attrs := authz.Attributes{User: u, Verb: verb, APIGroup: "certificates.k8s.io", APIVersion: "*",
			Resource: "signers", Name: name, ResourceRequest: true}
		if d, _, _ := a.chain.Authorize(ctx, attrs); d == authz.Allow {
			return true
		}
	}
	return false
}

var _ builtin.AccessReviewer = (*authorization)(nil)

// Authorize implements authz.Authorizer for the access reviews: the
// configured chain, with RBAC's reason for what it allows.
func (a *authorization) Authorize(ctx context.Context, attrs authz.Attributes) (authz.Decision, string, error) {
	if a.mode == ModeRBAC {
		d, reason, err := a.rbac.Explain(ctx, attrs)
		return d, authz.NamedReason(rbacAuthorizerName, d, reason), err
	}
	return a.chain.Authorize(ctx, attrs)
}

// RulesFor implements builtin.AccessReviewer: RBAC's rules, or everything
// when every request is allowed (as upstream's AlwaysAllow lists it).
func (a *authorization) RulesFor(u *authn.User, namespace string) ([]rbacv1.PolicyRule, bool, error) {
	if a.mode == ModeAlwaysAllow {
		return []rbacv1.PolicyRule{
			{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
		}, false, nil
	}
	rules, err := a.rbac.RulesFor(u, namespace)
	return rules, false, err
}

// start feeds the index from the RBAC watch caches, creates and
// reconciles the bootstrap policy, and keeps aggregated ClusterRoles
// filled, until ctx ends. The loops run in s.background.
func (a *authorization) start(ctx context.Context, s *Server) {
	store := func(gr schema.GroupResource) *handler.Store {
		st, _ := s.stores.Store(gr)
		return st
	}
	a.feed = &rbac.Feed{
		Index: a.index,
		Sources: rbac.Sources{
			Roles: store(rolesGR).Cache, ClusterRoles: store(clusterRolesGR).Cache,
			RoleBindings: store(roleBindingsGR).Cache, ClusterRoleBindings: store(clusterRoleBindingsGR).Cache,
		},
		Log:     s.log,
		Changed: a.clusterRoleChanged,
	}
	s.background.Go(func() { a.feed.Run(ctx) })
	s.background.Go(func() { a.bootstrap(ctx, s) })
	s.background.Go(func() { a.runAggregation(ctx, s) })
}

func (a *authorization) clusterRoleChanged() {
	select {
	case a.aggregate <- struct{}{}:
	default:
	}
}

// ready reports whether the bootstrap policy is stored and in the index:
// before, RBAC would deny what it is about to allow.
func (a *authorization) ready() bool {
	if a.feed == nil || !a.bootstrapped.Load() {
		return false
	}
	select {
	case <-a.feed.Ready():
	default:
		return false
	}
	roles, bindings := policyNames()
	for _, name := range roles {
		if _, ok := a.index.ClusterRole(name); !ok {
			return false
		}
	}
	for _, name := range bindings {
		if !a.index.HasClusterRoleBinding(name) {
			return false
		}
	}
	return true
}

// aggregated reports whether every aggregated ClusterRole in the index
// has the rules its selectors pick.
func (a *authorization) aggregated() bool {
	roles := a.index.ClusterRoles()
	for _, r := range roles {
		if r.AggregationRule == nil {
			continue
		}
		if _, changed, err := rbac.Aggregated(r, roles); changed && err == nil {
			return false
		}
	}
	return true
}

// policyNames are the names of the default ClusterRoles and
// ClusterRoleBindings, which readiness looks for in the index.
var policyNames = sync.OnceValues(func() (roles, bindings []string) {
	for _, r := range bootstrap.ClusterRoles() {
		roles = append(roles, r.Name)
	}
	for _, b := range bootstrap.ClusterRoleBindings() {
		bindings = append(bindings, b.Name)
	}
	return roles, bindings
})

// bootstrap stores the default policy, retrying until it succeeds.
func (a *authorization) bootstrap(ctx context.Context, s *Server) {
	if retry(ctx, s.log, "rbac: reconciling the bootstrap policy", func() error { return a.reconcilePolicy(ctx, s) }) {
		a.bootstrapped.Store(true)
	}
}

// retry calls fn every second until it succeeds, logging its errors as
// what, or ctx ends; done reports whether it succeeded.
func retry(ctx context.Context, log *slog.Logger, what string, fn func() error) (done bool) {
	for ctx.Err() == nil {
		err := fn()
		if err == nil {
			return true
		}
		log.Warn(what, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return false
}

// reconcilePolicy creates the default ClusterRoles, Roles and their
// bindings, and adds to stored ones what they lack. Writes are
// compare-and-swap, so replicas starting together agree; they go out
// several at a time, which etcd commits together: one by one, a first
// start would wait for a hundred and fifty commits in turn.
func (a *authorization) reconcilePolicy(ctx context.Context, s *Server) error {
	var writes []func() error
	clusterRoles, roles := keyPrefix(s.cfg.EtcdPrefix, clusterRolesGR), keyPrefix(s.cfg.EtcdPrefix, rolesGR)
	for _, want := range bootstrap.ClusterRoles() {
		writes = append(writes, func() error {
			return writeReconciled(ctx, s.raw, clusterRoles+want.Name, rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), orCreate(&want, bootstrap.ReconcileClusterRole))
		})
	}
	for _, want := range bootstrap.Roles() {
		writes = append(writes, func() error {
			return writeReconciled(ctx, s.raw, roles+want.Namespace+"/"+want.Name, rbacv1.SchemeGroupVersion.WithKind("Role"), orCreate(&want, bootstrap.ReconcileRole))
		})
	}
	clusterBindings, bindings := keyPrefix(s.cfg.EtcdPrefix, clusterRoleBindingsGR), keyPrefix(s.cfg.EtcdPrefix, roleBindingsGR)
	for _, want := range bootstrap.ClusterRoleBindings() {
		writes = append(writes, func() error {
			return reconcileBinding(ctx, s.raw, clusterBindings+want.Name, rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"), &want, bootstrap.ReconcileClusterRoleBinding)
		})
	}
	for _, want := range bootstrap.RoleBindings() {
		writes = append(writes, func() error {
			return reconcileBinding(ctx, s.raw, bindings+want.Namespace+"/"+want.Name, rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), &want, bootstrap.ReconcileRoleBinding)
		})
	}
	return inParallel(16, writes)
}

// inParallel runs fns, at most n at a time, and returns their errors.
func inParallel(n int, fns []func() error) error {
	errs := make([]error, len(fns))
	slots := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, fn := range fns {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			errs[i] = fn()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// orCreate is reconcile with want, or want itself where nothing is
// stored.
func orCreate[T any](want *T, reconcile func(have, want *T) (*T, bool)) func(have *T) (*T, bool) {
	return func(have *T) (*T, bool) {
		if have == nil {
			return want, true
		}
		return reconcile(have, want)
	}
}

// reconcileBinding writes the binding at key reconciled with want; one
// whose roleRef differs (it is immutable) is deleted, and errRetry asks
// for another pass, which creates it anew.
func reconcileBinding[T any, P interface {
	*T
	metav1.Object
}](ctx context.Context, st storage.Interface, key string, kind schema.GroupVersionKind, want P, reconcile func(have, want P) (P, bool, bool)) error {
	recreate := false
	err := writeReconciled(ctx, st, key, kind, func(have P) (P, bool) {
		if have == nil {
			return want, true
		}
		out, changed, again := reconcile(have, want)
		recreate = again
		return out, changed && !again
	})
	if err != nil || !recreate {
		return err
	}
	if kv, err := st.Get(ctx, key); err == nil {
		if _, _, err := st.Delete(ctx, key, kv.ModRevision); err != nil && !errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("replacing %s %s: %w", kind.Kind, want.GetName(), err)
		}
	}
	return errRetry
}

// errRetry asks bootstrap for another pass.
var errRetry = errors.New("binding replaced, reconciling again")

// writeReconciled reads the object at key (nil when missing), asks
// reconcile what it should be, and writes that if it changed; a write
// that lost a race is tried again on the new object.
func writeReconciled[T any, P interface {
	*T
	metav1.Object
}](ctx context.Context, st storage.Interface, key string, kind schema.GroupVersionKind, reconcile func(have P) (P, bool)) error {
	for attempt := 0; ; attempt++ {
		var have P
		kv, err := st.Get(ctx, key)
		switch {
		case errors.Is(err, storage.ErrNotFound):
		case err != nil:
			return fmt.Errorf("reading %s: %w", key, err)
		default:
			have = new(T)
			if err := json.Unmarshal(kv.Value, have); err != nil {
				return fmt.Errorf("decoding %s: %w", key, err)
			}
		}
		want, changed := reconcile(have)
		if !changed {
			return nil
		}
		if have == nil {
			want.SetUID(uuid.NewUUID())
			want.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
		}
		data, err := encodeTyped(want, kind, have == nil)
		if err != nil {
			return err
		}
		if have == nil {
			_, err = st.Create(ctx, key, data)
		} else {
			_, err = st.Update(ctx, key, data, kv.ModRevision)
		}
		if errors.Is(err, storage.ErrExists) || errors.Is(err, storage.ErrConflict) {
			if attempt < 5 {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", key, err)
		}
		return nil
	}
}

// encodeTyped encodes a built-in object of kind as stored; one the
// server creates gets the managedFields entry of its create.
func encodeTyped(obj any, kind schema.GroupVersionKind, create bool) ([]byte, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", kind.Kind, err)
	}
	u["apiVersion"], u["kind"] = kind.ToAPIVersionAndKind()
	md, _ := u["metadata"].(map[string]any)
	if md["creationTimestamp"] == nil {
		delete(md, "creationTimestamp")
	}
	if create && md != nil {
		md["managedFields"] = []any{map[string]any{
			"manager":    kubeAPIServer,
			"operation":  "Update",
			"apiVersion": u["apiVersion"],
			"time":       md["creationTimestamp"],
			"fieldsType": "FieldsV1",
			"fieldsV1":   createdFields(u, zeroObject(obj)),
		}}
	}
	return handler.EncodeStored(u)
}

// kubeAPIServer is the field manager of the objects upstream's
// kube-apiserver creates at start.
const kubeAPIServer = "kube-apiserver"

// createdFields are the fields a create of u owns, as upstream's field
// manager records them: the keys of its labels and annotations, and each
// other top-level field, an object member by member unless its schema
// makes it atomic (a binding's roleRef), and with itself (".") unless
// zero, the new typed object, has it already (a Lease's spec). Only the
// kinds written at start (RBAC objects, PriorityClasses, Leases) are
// written so: worked out here rather than by a field manager, whose types
// would cost every start (the server's tests check these against its
// field manager).
func createdFields(u, zero map[string]any) map[string]any {
	fields := map[string]any{}
	md := map[string]any{}
	for _, key := range []string{"labels", "annotations"} {
		if m, ok := u["metadata"].(map[string]any)[key].(map[string]any); ok && len(m) > 0 {
			md["f:"+key] = members(m)
		}
	}
	if len(md) > 0 {
		fields["f:metadata"] = md
	}
	for k, v := range u {
		switch m, ok := v.(map[string]any); {
		case k == "apiVersion" || k == "kind" || k == "metadata" || v == nil:
		case ok && k != "roleRef":
			fields["f:"+k] = members(m)
			if _, there := zero[k].(map[string]any); there {
				delete(fields["f:"+k].(map[string]any), ".")
			}
		default:
			fields["f:"+k] = map[string]any{}
		}
	}
	return fields
}

// zeroObject is the unstructured zero value of obj's type, a pointer.
func zeroObject(obj any) map[string]any {
	zero, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(reflect.New(reflect.TypeOf(obj).Elem()).Interface())
	return zero
}

// members is the fieldsV1 of an object owned member by member.
func members(m map[string]any) map[string]any {
	out := map[string]any{".": map[string]any{}}
	for k := range m {
		out["f:"+k] = map[string]any{}
	}
	return out
}

// runAggregation fills the rules of aggregated ClusterRoles whenever a
// ClusterRole changes, as upstream's aggregation controller does.
func (a *authorization) runAggregation(ctx context.Context, s *Server) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.aggregate:
		}
		if err := a.aggregateOnce(ctx, s.raw, keyPrefix(s.cfg.EtcdPrefix, clusterRolesGR), s.log); err != nil && ctx.Err() == nil {
			s.log.Warn("rbac: aggregating clusterroles", "err", err)
			a.clusterRoleChanged() // try again
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// aggregateOnce writes every aggregated ClusterRole whose rules are not
// what its selectors pick.
func (a *authorization) aggregateOnce(ctx context.Context, st storage.Interface, prefix string, log *slog.Logger) error {
	roles := a.index.ClusterRoles()
	var errs []error
	for _, r := range roles {
		if r.AggregationRule == nil {
			continue
		}
		if _, changed, err := rbac.Aggregated(r, roles); err != nil || !changed {
			if err != nil {
				log.Warn("rbac: aggregation rule", "clusterrole", r.Name, "err", err)
			}
			continue
		}
		err := writeReconciled(ctx, st, prefix+r.Name, rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), func(have *rbacv1.ClusterRole) (*rbacv1.ClusterRole, bool) {
			if have == nil || have.AggregationRule == nil {
				return nil, false
			}
			rules, changed, err := rbac.Aggregated(have, roles)
			if err != nil || !changed {
				return nil, false
			}
			have.Rules = rules
			return have, true
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
