package crd

import (
	"fmt"
	"reflect"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// AcceptNames decides which of a CRD's requested names (spec.names) it may
// have, as upstream's naming controller does: a plural, singular or short
// name must not be a resource name already accepted by another CRD of the
// same group, nor kind or listKind an accepted kind; names the CRD has
// already accepted stay its own. Unlike upstream, the resources and kinds
// of built-ins in the same group are taken too.
//
// others may include crd itself and CRDs of other groups; both are skipped.
// accepted is the new status.acceptedNames: each requested name that is
// free, the previously accepted one where it is not. When a name
// conflicts, ok is false and reason and message say which (the last
// conflict found, as upstream); else reason is NoConflicts.
func AcceptNames(crd map[string]any, others []map[string]any, builtins []*registry.Definition) (accepted map[string]any, ok bool, reason, message string) {
	c, err := decode(crd)
	if err != nil {
		return nil, false, "", err.Error()
	}
	names, ok, reason, message := acceptNames(c, decodeAll(others), builtins)
	return namesMap(&names), ok, reason, message
}

func decodeAll(objs []map[string]any) []*apiextensionsv1.CustomResourceDefinition {
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(objs))
	for _, o := range objs {
		if c, err := decode(o); err == nil {
			out = append(out, c)
		}
	}
	return out
}

func namesMap(n *apiextensionsv1.CustomResourceDefinitionNames) map[string]any {
	return toMap(n)
}

func acceptNames(c *apiextensionsv1.CustomResourceDefinition, others []*apiextensionsv1.CustomResourceDefinition, builtins []*registry.Definition) (apiextensionsv1.CustomResourceDefinitionNames, bool, string, string) {
	resources, kinds := map[string]bool{}, map[string]bool{}
	claim := func(n apiextensionsv1.CustomResourceDefinitionNames) {
		resources[n.Plural] = true
		resources[n.Singular] = true
		for _, s := range n.ShortNames {
			resources[s] = true
		}
		kinds[n.Kind] = true
		kinds[n.ListKind] = true
	}
	// The CRD's own accepted names count as taken, as upstream lists every
	// CRD of the group, this one included.
	claim(c.Status.AcceptedNames)
	for _, o := range others {
		if o.Name != c.Name && o.Spec.Group == c.Spec.Group {
			claim(o.Status.AcceptedNames)
		}
	}
	for _, d := range builtins {
		if d.Group != c.Spec.Group {
			continue
		}
		resources[d.Resource] = true
		resources[d.Singular] = true
		for _, s := range d.ShortNames {
			resources[s] = true
		}
		kinds[d.Kind] = true
		kinds[d.ListKind] = true
	}

	requested, old := c.Spec.Names, c.Status.AcceptedNames
	names := old
	ok, reason, message := true, ReasonNoConflicts, MessageNoConflicts
	conflict := func(r string, err error) {
		ok, reason, message = false, r, err.Error()
	}
	if err := freeOrOwn(requested.Plural, old.Plural, resources); err != nil {
		conflict(ReasonPluralConflict, err)
	} else {
		names.Plural = requested.Plural
	}
	if err := freeOrOwn(requested.Singular, old.Singular, resources); err != nil {
		conflict(ReasonSingularConflict, err)
	} else {
		names.Singular = requested.Singular
	}
	if !reflect.DeepEqual(requested.ShortNames, old.ShortNames) {
		var errs []error
		for _, s := range requested.ShortNames {
			if contains(old.ShortNames, s) {
				continue
			}
			if err := freeOrOwn(s, "", resources); err != nil {
				errs = append(errs, err)
			}
		}
		if err := utilerrors.NewAggregate(errs); err != nil {
			conflict(ReasonShortNamesConflict, err)
		} else {
			names.ShortNames = requested.ShortNames
		}
	}
	if err := freeOrOwn(requested.Kind, old.Kind, kinds); err != nil {
		conflict(ReasonKindConflict, err)
	} else {
		names.Kind = requested.Kind
	}
	if err := freeOrOwn(requested.ListKind, old.ListKind, kinds); err != nil {
		conflict(ReasonListKindConflict, err)
	} else {
		names.ListKind = requested.ListKind
	}
	names.Categories = requested.Categories
	return names, ok, reason, message
}

func freeOrOwn(requested, accepted string, used map[string]bool) error {
	if requested == accepted || !used[requested] {
		return nil
	}
	return fmt.Errorf("%q is already in use", requested)
}

// NamesAccepted reports whether a CRD's resources are served: its
// NamesAccepted condition is True, or Established is (a CRD once
// established keeps serving while a later change of names conflicts), as
// upstream's handler decides.
func NamesAccepted(obj map[string]any) bool {
	return ConditionStatus(obj, ConditionNamesAccepted) == StatusTrue || Established(obj)
}

// SyncStatus brings a CRD's status up to date as upstream's naming and
// establishing controllers do, and reports whether it changed anything
// (then the caller writes it, compare-and-swap). others are the other
// stored CRDs (crd itself among them is skipped), builtins the built-in
// definitions; now stamps changed conditions.
//
//   - While spec.names differ from status.acceptedNames: accept names
//     (AcceptNames) and set NamesAccepted; Established becomes False
//     (NotAccepted, or Installing once names are accepted) unless it is
//     True already.
//   - When NamesAccepted was already True on entry and Established is not:
//     Established becomes True (InitialNamesAccepted), or False
//     (InvalidCABundle) when the conversion webhook's caBundle does not
//     parse. Establishing waits for the call after the one that accepted
//     the names, so that a caller which serves accepted names before
//     syncing (as the CRD controller does) never reports Established
//     before the routes exist.
//   - NonStructuralSchema is True (Violations) while the CRD keeps unknown
//     fields or has a non-structural schema, as only the legacy v1beta1
//     API lets it, and is removed otherwise (SyncNonStructural).
//
// An object that does not decode is left alone.
func SyncStatus(crd map[string]any, others []map[string]any, builtins []*registry.Definition, now time.Time) bool {
	return SyncStatusServing(crd, others, builtins, now, true)
}

// SyncStatusServing is SyncStatus for a caller that says whether it serves
// the CRD's accepted names now: Established becomes True only if it does.
// A caller may sync a CRD again before serving what the previous sync
// accepted (the CRD controller syncs the other CRDs of a group whose names
// a change may free), and Established must never come before the routes.
func SyncStatusServing(crd map[string]any, others []map[string]any, builtins []*registry.Definition, now time.Time, serving bool) bool {
	c, err := decode(crd)
	if err != nil {
		return false
	}
	wasAccepted := ConditionStatus(crd, ConditionNamesAccepted) == StatusTrue
	changed := false
	if !equality.Semantic.DeepEqual(c.Spec.Names, c.Status.AcceptedNames) {
		names, ok, reason, message := acceptNames(c, decodeAll(others), builtins)
		status := StatusTrue
		if !ok {
			status = StatusFalse
		}
		cur := findCondition(crd, ConditionNamesAccepted)
		same := cur != nil && cur["status"] == status && str(cur["reason"]) == reason && str(cur["message"]) == message
		if !reflect.DeepEqual(names, c.Status.AcceptedNames) || !same {
			statusMap(crd)["acceptedNames"] = namesMap(&names)
			SetCondition(crd, ConditionNamesAccepted, status, reason, message, now)
			est := findCondition(crd, ConditionEstablished)
			switch {
			case est != nil && est["status"] == StatusTrue:
				// Established stays.
			case ok:
				SetCondition(crd, ConditionEstablished, StatusFalse, ReasonInstalling, MessageInstalling, now)
			case est == nil:
				SetCondition(crd, ConditionEstablished, StatusFalse, ReasonNotAccepted, MessageNotAccepted, now)
			}
			changed = true
		}
	}
	if wasAccepted && serving && ConditionStatus(crd, ConditionNamesAccepted) == StatusTrue && !Established(crd) {
		if cc := webhookClientConfig(c); cc != nil && len(validateCABundle(cc.CABundle, field.NewPath("caBundle"))) > 0 {
			changed = SetCondition(crd, ConditionEstablished, StatusFalse, ReasonInvalidCABundle, MessageInvalidCABundle, now) || changed
		} else {
			changed = SetCondition(crd, ConditionEstablished, StatusTrue, ReasonInitialNamesAccepted, MessageInitialNamesAccepted, now) || changed
		}
	}
	return syncNonStructural(crd, c, now) || changed
}

func webhookClientConfig(c *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.WebhookClientConfig {
	if c.Spec.Conversion == nil || c.Spec.Conversion.Webhook == nil {
		return nil
	}
	return c.Spec.Conversion.Webhook.ClientConfig
}

func str(v any) string { s, _ := v.(string); return s }
