package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
		a.chain = a.rbac
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

var _ builtin.AccessReviewer = (*authorization)(nil)

// Authorize implements authz.Authorizer for the access reviews: the
// configured chain, with RBAC's reason for what it allows.
func (a *authorization) Authorize(ctx context.Context, attrs authz.Attributes) (authz.Decision, string, error) {
	if a.mode == ModeRBAC {
		return a.rbac.Explain(ctx, attrs)
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
	for _, r := range bootstrap.ClusterRoles() {
		if _, ok := a.index.ClusterRole(r.Name); !ok {
			return false
		}
	}
	for _, b := range bootstrap.ClusterRoleBindings() {
		if !a.index.HasClusterRoleBinding(b.Name) {
			return false
		}
	}
	return true
}

// bootstrap stores the default policy, retrying until it succeeds.
func (a *authorization) bootstrap(ctx context.Context, s *Server) {
	for ctx.Err() == nil {
		err := a.reconcilePolicy(ctx, s)
		if err == nil {
			a.bootstrapped.Store(true)
			return
		}
		s.log.Warn("rbac: reconciling the bootstrap policy", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// reconcilePolicy creates the default ClusterRoles and
// ClusterRoleBindings, and adds to stored ones what they lack. Writes are
// compare-and-swap, so replicas starting together agree.
func (a *authorization) reconcilePolicy(ctx context.Context, s *Server) error {
	for _, want := range bootstrap.ClusterRoles() {
		err := writeReconciled(ctx, s.raw, keyPrefix(s.cfg.EtcdPrefix, clusterRolesGR)+want.Name, "ClusterRole",
			func(have *rbacv1.ClusterRole) (*rbacv1.ClusterRole, bool) {
				if have == nil {
					return &want, true
				}
				return bootstrap.ReconcileClusterRole(have, &want)
			})
		if err != nil {
			return err
		}
	}
	for _, want := range bootstrap.ClusterRoleBindings() {
		key := keyPrefix(s.cfg.EtcdPrefix, clusterRoleBindingsGR) + want.Name
		recreate := false
		err := writeReconciled(ctx, s.raw, key, "ClusterRoleBinding",
			func(have *rbacv1.ClusterRoleBinding) (*rbacv1.ClusterRoleBinding, bool) {
				if have == nil {
					return &want, true
				}
				out, changed, again := bootstrap.ReconcileClusterRoleBinding(have, &want)
				recreate = again
				return out, changed && !again
			})
		if err != nil {
			return err
		}
		if recreate {
			// The roleRef is immutable: the binding is replaced.
			if kv, err := s.raw.Get(ctx, key); err == nil {
				if _, _, err := s.raw.Delete(ctx, key, kv.ModRevision); err != nil && !errors.Is(err, storage.ErrConflict) {
					return fmt.Errorf("replacing clusterrolebinding %s: %w", want.Name, err)
				}
			}
			return errRetry
		}
	}
	return nil
}

// errRetry asks bootstrap for another pass.
var errRetry = errors.New("binding replaced, reconciling again")

// writeReconciled reads the object at key (nil when missing), asks
// reconcile what it should be, and writes that if it changed; a write
// that lost a race is tried again on the new object.
func writeReconciled[T any, P interface {
	*T
	metav1.Object
}](ctx context.Context, st storage.Interface, key, kind string, reconcile func(have P) (P, bool)) error {
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
		data, err := encodeRBAC(want, kind)
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

// encodeRBAC encodes an RBAC object as stored.
func encodeRBAC(obj any, kind string) ([]byte, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", kind, err)
	}
	u["apiVersion"] = rbacv1.SchemeGroupVersion.String()
	u["kind"] = kind
	if md, ok := u["metadata"].(map[string]any); ok && md["creationTimestamp"] == nil {
		delete(md, "creationTimestamp")
	}
	return handler.EncodeStored(u)
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
		err := writeReconciled(ctx, st, prefix+r.Name, "ClusterRole", func(have *rbacv1.ClusterRole) (*rbacv1.ClusterRole, bool) {
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
