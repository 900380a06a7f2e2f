package server

import (
	"context"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/cel"
	"github.com/crdserver/crdserver/internal/openapi"
	"github.com/crdserver/crdserver/internal/registry"
)

// policyTypeServer type-checks ValidatingAdmissionPolicies for the policy
// type checker, against the schemas the OpenAPI documents publish for the
// resources they match, and applies the result to their status, as
// upstream's policy status controller does, straight into storage (the
// status is the server's own).
type policyTypeServer struct {
	s      *Server
	reg    *registry.Registry
	fields *apply.Manager // the policies' status field manager
}

func newPolicyTypeServer(s *Server, reg *registry.Registry) policyTypeServer {
	return policyTypeServer{s: s, reg: reg, fields: statusFieldManager(builtin.ValidatingAdmissionPolicies(), "v1")}
}

// policyStatusManager is the field manager upstream's policy status
// controller applies the status as.
const policyStatusManager = "validatingadmissionpolicy-status"

// maxTypesToCheck bounds the kinds one policy is checked against, as
// upstream's checker bounds them.
const maxTypesToCheck = 10

// CheckPolicy type-checks the named ValidatingAdmissionPolicy's
// expressions against the resources it matches, unless its status already
// reports on its generation, and records the result in its status
// (typeChecking, observedGeneration) with a compare-and-swap.
func (p policyTypeServer) CheckPolicy(ctx context.Context, name string) error {
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	own, found, err := p.s.readOwnStatus(ctx, builtin.ValidatingAdmissionPolicies().GroupResource(), name, &policy)
	if err != nil || !found {
		return err
	}
	if policy.Status.TypeChecking != nil && policy.Status.ObservedGeneration == policy.Generation {
		return nil
	}
	warnings := p.check(&policy)
	typeChecking := map[string]any{}
	if len(warnings) > 0 {
		ws := make([]any, len(warnings))
		for i, w := range warnings {
			ws[i] = map[string]any{"fieldRef": w.FieldRef, "warning": w.Warning}
		}
		typeChecking["expressionWarnings"] = ws
	}
	// A change since is checked again.
	return own.applyStatusAs(ctx, p.fields, policyStatusManager, map[string]any{
		"observedGeneration": policy.Generation,
		"typeChecking":       typeChecking,
	})
}

// check returns the warnings of the policy's validations and message
// expressions, worded as upstream's: for each kind whose check fails,
// "<group/version, Kind=kind>: <what CEL says>".
func (p policyTypeServer) check(policy *admissionregistrationv1.ValidatingAdmissionPolicy) []admissionregistrationv1.ExpressionWarning {
	table := p.reg.Current()
	kinds, types := p.matchedTypes(table, policy.Spec.MatchConstraints)
	if len(kinds) == 0 {
		return nil
	}
	var params *apiservercel.DeclType
	if pk := policy.Spec.ParamKind; pk != nil {
		if gv, err := schema.ParseGroupVersion(pk.APIVersion); err == nil {
			params = declTypeOfKind(table, gv.WithKind(pk.Kind))
		}
	}
	checkOne := func(expr string) string {
		var out []string
		for i, gvk := range kinds {
			if issue := cel.CheckPolicyExpression(types[i], params, expr); issue != "" {
				out = append(out, fmt.Sprintf("%v: %s\n", gvk, issue))
			}
		}
		return strings.Join(out, "\n")
	}
	var warnings []admissionregistrationv1.ExpressionWarning
	path := field.NewPath("spec", "validations")
	for i, v := range policy.Spec.Validations {
		if w := checkOne(v.Expression); w != "" {
			warnings = append(warnings, admissionregistrationv1.ExpressionWarning{FieldRef: path.Index(i).Child("expression").String(), Warning: w})
		}
		if v.MessageExpression == "" {
			continue
		}
		if w := checkOne(v.MessageExpression); w != "" {
			warnings = append(warnings, admissionregistrationv1.ExpressionWarning{FieldRef: path.Index(i).Child("messageExpression").String(), Warning: w})
		}
	}
	return warnings
}

// matchedTypes returns the kinds the match constraints' resource rules
// name among the served resources (wildcards expanded, subresources left
// out), sorted, at most maxTypesToCheck, with the CEL type of each.
func (p policyTypeServer) matchedTypes(table *registry.Table, mc *admissionregistrationv1.MatchResources) ([]schema.GroupVersionKind, []*apiservercel.DeclType) {
	if mc == nil {
		return nil, nil
	}
	seen := map[schema.GroupVersionKind]bool{}
	var kinds []schema.GroupVersionKind
	for _, rule := range mc.ResourceRules {
		for _, def := range table.Definitions() {
			if !matchesAny(rule.APIGroups, def.Group) || !matchesAny(rule.Resources, def.Resource) {
				continue
			}
			for _, v := range def.Versions {
				gvk := schema.GroupVersionKind{Group: def.Group, Version: v.Name, Kind: def.Kind}
				if v.Served && matchesAny(rule.APIVersions, v.Name) && !seen[gvk] {
					seen[gvk] = true
					kinds = append(kinds, gvk)
				}
			}
		}
	}
	slices.SortFunc(kinds, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	if len(kinds) > maxTypesToCheck {
		kinds = kinds[:maxTypesToCheck]
	}
	var outKinds []schema.GroupVersionKind
	var types []*apiservercel.DeclType
	for _, gvk := range kinds {
		if t := declTypeOfKind(table, gvk); t != nil {
			outKinds = append(outKinds, gvk)
			types = append(types, t)
		}
	}
	return outKinds, types
}

// matchesAny reports whether a rule's list names s, or "*" (resources
// with a "/" name subresources, which are not checked).
func matchesAny(list []string, s string) bool {
	for _, x := range list {
		if x == "*" || x == s {
			return true
		}
	}
	return false
}

// declTypeOfKind is the CEL type of the kind's objects, from its
// published models; nil when the server does not serve it or publishes
// no schema for it.
func declTypeOfKind(table *registry.Table, gvk schema.GroupVersionKind) *apiservercel.DeclType {
	for _, def := range table.Definitions() {
		if def.Group != gvk.Group || def.Kind != gvk.Kind {
			continue
		}
		v := def.Version(gvk.Version)
		if v == nil {
			return nil
		}
		root, models, err := openapi.Models(v, gvk)
		if err != nil {
			return nil
		}
		t, err := cel.ObjectType(root, models)
		if err != nil {
			return nil
		}
		return t
	}
	return nil
}
