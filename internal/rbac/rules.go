// Package rbac decides requests with Kubernetes RBAC: Roles and
// ClusterRoles hold rules, RoleBindings and ClusterRoleBindings grant them
// to users, groups and service accounts. Decisions read an in-memory Index
// fed by the watch caches of the four resources, never storage. The
// package also answers what a user may do (RulesFor, for
// SelfSubjectRulesReview), refuses writes that would grant more than the
// writer holds (Guard), and fills aggregated ClusterRoles (Aggregate).
// Every decision and message follows upstream's RBAC authorizer.
package rbac

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/crdserver/crdserver/internal/authz"
)

// allows reports whether rule grants the request a describes: for a
// resource request its verb, group, resource (with subresource, which
// "*/sub" matches too) and name; for a non-resource request its verb and
// path, which a rule URL ending in "*" matches by prefix.
func allows(rule *rbacv1.PolicyRule, a *authz.Attributes) bool {
	if !hasOrAll(rule.Verbs, a.Verb, rbacv1.VerbAll) {
		return false
	}
	if !a.ResourceRequest {
		for _, u := range rule.NonResourceURLs {
			if u == rbacv1.NonResourceAll || u == a.Path || strings.HasSuffix(u, "*") && strings.HasPrefix(a.Path, strings.TrimRight(u, "*")) {
				return true
			}
		}
		return false
	}
	return hasOrAll(rule.APIGroups, a.APIGroup, rbacv1.APIGroupAll) &&
		resourceMatches(rule.Resources, a.Resource, a.Subresource) &&
		(len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, a.Name))
}

func hasOrAll(set []string, v, all string) bool {
	for _, s := range set {
		if s == all || s == v {
			return true
		}
	}
	return false
}

// resourceMatches matches "*", "resource", "resource/sub" and, for a
// subresource request, "*/sub".
func resourceMatches(rules []string, resource, sub string) bool {
	for _, r := range rules {
		if r == rbacv1.ResourceAll {
			return true
		}
		if sub == "" {
			if r == resource {
				return true
			}
			continue
		}
		if len(r) == len(resource)+1+len(sub) && strings.HasPrefix(r, resource) && r[len(resource)] == '/' && strings.HasSuffix(r, sub) {
			return true
		}
		if len(r) == len(sub)+2 && strings.HasPrefix(r, "*/") && strings.HasSuffix(r, sub) {
			return true
		}
	}
	return false
}

// Covers reports whether owner's rules grant everything servant's do, and
// the atomic rules (one verb, group, resource and name; or one verb and
// URL) they do not: what a user must hold to create a role or bind it.
func Covers(owner, servant []rbacv1.PolicyRule) (bool, []rbacv1.PolicyRule) {
	var missing []rbacv1.PolicyRule
	for _, s := range servant {
		for _, sub := range atoms(s) {
			if !slices.ContainsFunc(owner, func(o rbacv1.PolicyRule) bool { return covers(&o, &sub) }) {
				missing = append(missing, sub)
			}
		}
	}
	return len(missing) == 0, missing
}

// atoms splits a rule into rules of one verb, group, resource and
// resource name each (one verb and URL each for non-resource URLs).
func atoms(r rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, g := range r.APIGroups {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				if len(r.ResourceNames) == 0 {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{res}, Verbs: []string{v}})
					continue
				}
				for _, n := range r.ResourceNames {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{res}, Verbs: []string{v}, ResourceNames: []string{n}})
				}
			}
		}
	}
	for _, u := range r.NonResourceURLs {
		for _, v := range r.Verbs {
			out = append(out, rbacv1.PolicyRule{NonResourceURLs: []string{u}, Verbs: []string{v}})
		}
	}
	return out
}

// covers reports whether owner grants all of atom, an atomic rule.
func covers(owner, atom *rbacv1.PolicyRule) bool {
	if !containsAll(owner.Verbs, atom.Verbs, rbacv1.VerbAll) || !containsAll(owner.APIGroups, atom.APIGroups, rbacv1.APIGroupAll) {
		return false
	}
	for _, res := range atom.Resources {
		if slices.Contains(owner.Resources, rbacv1.ResourceAll) || slices.Contains(owner.Resources, res) {
			continue
		}
		_, sub, ok := strings.Cut(res, "/")
		if !ok || !slices.Contains(owner.Resources, "*/"+sub) {
			return false
		}
	}
	for _, u := range atom.NonResourceURLs {
		if !slices.ContainsFunc(owner.NonResourceURLs, func(o string) bool {
			return o == u || strings.HasSuffix(o, "*") && strings.HasPrefix(u, strings.TrimRight(o, "*"))
		}) {
			return false
		}
	}
	if len(owner.ResourceNames) == 0 {
		return true
	}
	// An owner limited to names covers only atoms limited to those names.
	return len(atom.ResourceNames) > 0 && containsAll(owner.ResourceNames, atom.ResourceNames, "")
}

// containsAll reports whether set holds every element of want, or all
// ("" for none).
func containsAll(set, want []string, all string) bool {
	if all != "" && slices.Contains(set, all) {
		return true
	}
	for _, w := range want {
		if !slices.Contains(set, w) {
			return false
		}
	}
	return true
}

// compact merges rules of one group, resource and at most one name that
// differ only in their verbs, as upstream does before listing what an
// escalation lacks.
func compact(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type simple struct{ group, resource, name string }
	var out []rbacv1.PolicyRule
	merged := map[simple]int{}
	for _, r := range rules {
		if len(r.APIGroups) != 1 || len(r.Resources) != 1 || len(r.ResourceNames) > 1 || len(r.NonResourceURLs) > 0 {
			out = append(out, r)
			continue
		}
		k := simple{r.APIGroups[0], r.Resources[0], strings.Join(r.ResourceNames, "")}
		if i, ok := merged[k]; ok {
			out[i].Verbs = append(slices.Clip(out[i].Verbs), r.Verbs...)
			continue
		}
		merged[k] = len(out)
		out = append(out, r)
	}
	return out
}

// compactString is upstream's short form of a rule in escalation errors:
// {APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}.
func compactString(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(name string, vs []string) {
		if len(vs) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", name, vs))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}
