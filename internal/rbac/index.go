package rbac

import (
	"slices"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Index holds the RBAC objects in the form decisions read them: roles by
// name, and bindings by the users and groups they name, so that a decision
// looks at the bindings of the caller only, not at every binding. It is
// safe for concurrent use; writes come from the watch caches (Feed), reads
// from every request.
type Index struct {
	// mu guards every field below. Decisions hold it for reading; the
	// maps and the values in them are replaced, never modified, so a
	// value read under the lock stays valid after.
	mu           sync.RWMutex
	clusterRoles map[string]*rbacv1.ClusterRole
	roles        map[string]map[string]*rbacv1.Role // namespace → name
	cluster      *scope                             // ClusterRoleBindings
	namespaces   map[string]*scope                  // RoleBindings by namespace
}

// scope is the bindings of one namespace, or the ClusterRoleBindings.
type scope struct {
	byName map[string]*binding
	// byUser holds, for each user name, the bindings with a subject
	// naming it: a User subject, or a ServiceAccount subject, indexed by
	// the service account's user name (system:serviceaccount:NS:NAME).
	byUser  map[string][]*binding
	byGroup map[string][]*binding
}

// binding is a RoleBinding or ClusterRoleBinding (namespace "").
type binding struct {
	name, namespace string
	ref             rbacv1.RoleRef
	subjects        []rbacv1.Subject
}

func newScope() *scope {
	return &scope{byName: map[string]*binding{}, byUser: map[string][]*binding{}, byGroup: map[string][]*binding{}}
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{
		clusterRoles: map[string]*rbacv1.ClusterRole{},
		roles:        map[string]map[string]*rbacv1.Role{},
		cluster:      newScope(),
		namespaces:   map[string]*scope{},
	}
}

// serviceAccountPrefix starts the user names of service accounts.
const serviceAccountPrefix = "system:serviceaccount:"

// subjectKeys returns the index keys of a binding's subjects: users (and
// service accounts by user name) and groups. A ServiceAccount subject
// without a namespace is in the binding's namespace; in a
// ClusterRoleBinding it names no one, as upstream matches it.
func (b *binding) subjectKeys() (users, groups []string) {
	for _, s := range b.subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = b.namespace
			}
			if ns != "" {
				users = append(users, serviceAccountPrefix+ns+":"+s.Name)
			}
		}
	}
	return users, groups
}

func (s *scope) add(b *binding) {
	s.remove(b.name)
	s.byName[b.name] = b
	users, groups := b.subjectKeys()
	for _, u := range dedupe(users) {
		s.byUser[u] = append(slices.Clip(s.byUser[u]), b)
	}
	for _, g := range dedupe(groups) {
		s.byGroup[g] = append(slices.Clip(s.byGroup[g]), b)
	}
}

func (s *scope) remove(name string) {
	b, ok := s.byName[name]
	if !ok {
		return
	}
	delete(s.byName, name)
	users, groups := b.subjectKeys()
	drop := func(m map[string][]*binding, k string) {
		// A new slice: readers may hold the old one.
		l := slices.DeleteFunc(slices.Clone(m[k]), func(x *binding) bool { return x == b })
		if len(l) == 0 {
			delete(m, k)
		} else {
			m[k] = l
		}
	}
	for _, u := range dedupe(users) {
		drop(s.byUser, u)
	}
	for _, g := range dedupe(groups) {
		drop(s.byGroup, g)
	}
}

func dedupe(s []string) []string {
	if len(s) < 2 {
		return s
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// SetClusterRole adds or replaces a ClusterRole.
func (ix *Index) SetClusterRole(r *rbacv1.ClusterRole) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.clusterRoles[r.Name] = r
}

// DeleteClusterRole removes a ClusterRole.
func (ix *Index) DeleteClusterRole(name string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	delete(ix.clusterRoles, name)
}

// SetRole adds or replaces a Role.
func (ix *Index) SetRole(r *rbacv1.Role) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ns := ix.roles[r.Namespace]
	if ns == nil {
		ns = map[string]*rbacv1.Role{}
		ix.roles[r.Namespace] = ns
	}
	ns[r.Name] = r
}

// DeleteRole removes a Role.
func (ix *Index) DeleteRole(namespace, name string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	delete(ix.roles[namespace], name)
	if len(ix.roles[namespace]) == 0 {
		delete(ix.roles, namespace)
	}
}

// SetClusterRoleBinding adds or replaces a ClusterRoleBinding.
func (ix *Index) SetClusterRoleBinding(b *rbacv1.ClusterRoleBinding) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.cluster.add(&binding{name: b.Name, ref: b.RoleRef, subjects: b.Subjects})
}

// DeleteClusterRoleBinding removes a ClusterRoleBinding.
func (ix *Index) DeleteClusterRoleBinding(name string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.cluster.remove(name)
}

// SetRoleBinding adds or replaces a RoleBinding.
func (ix *Index) SetRoleBinding(b *rbacv1.RoleBinding) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	s := ix.namespaces[b.Namespace]
	if s == nil {
		s = newScope()
		ix.namespaces[b.Namespace] = s
	}
	s.add(&binding{name: b.Name, namespace: b.Namespace, ref: b.RoleRef, subjects: b.Subjects})
}

// DeleteRoleBinding removes a RoleBinding.
func (ix *Index) DeleteRoleBinding(namespace, name string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if s := ix.namespaces[namespace]; s != nil {
		s.remove(name)
		if len(s.byName) == 0 {
			delete(ix.namespaces, namespace)
		}
	}
}

// ClusterRole returns the named ClusterRole; it must not be modified.
func (ix *Index) ClusterRole(name string) (*rbacv1.ClusterRole, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	r, ok := ix.clusterRoles[name]
	return r, ok
}

// HasClusterRoleBinding reports whether the named ClusterRoleBinding is
// in the index.
func (ix *Index) HasClusterRoleBinding(name string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	_, ok := ix.cluster.byName[name]
	return ok
}

// ClusterRoles returns every ClusterRole; they must not be modified.
func (ix *Index) ClusterRoles() []*rbacv1.ClusterRole {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]*rbacv1.ClusterRole, 0, len(ix.clusterRoles))
	for _, r := range ix.clusterRoles {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// candidates appends to out the bindings of s that may name the user:
// those of its name and of its groups, each once. mu is held.
func (s *scope) candidates(out []*binding, name string, groups []string) []*binding {
	if s == nil {
		return out
	}
	start := len(out)
	add := func(bs []*binding) {
		for _, b := range bs {
			if !slices.Contains(out[start:], b) {
				out = append(out, b)
			}
		}
	}
	add(s.byUser[name])
	for _, g := range groups {
		add(s.byGroup[g])
	}
	// In name order, a stable stand-in for upstream's unordered listing.
	slices.SortFunc(out[start:], func(a, b *binding) int { return strings.Compare(a.name, b.name) })
	return out
}

// rulesOf returns the rules a binding grants, or ok=false when the role
// it refers to does not exist (namespace is the binding's; "" for a
// ClusterRoleBinding). mu is held.
func (ix *Index) rulesOf(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, bool) {
	switch ref.Kind {
	case "ClusterRole":
		r, ok := ix.clusterRoles[ref.Name]
		if !ok {
			return nil, false
		}
		return r.Rules, true
	case "Role":
		r, ok := ix.roles[namespace][ref.Name]
		if !ok {
			return nil, false
		}
		return r.Rules, true
	}
	return nil, false
}
