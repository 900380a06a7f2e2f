package crd

import (
	"time"
)

// Condition types, statuses, reasons and messages of CRD status, as the
// upstream controllers write them.
const (
	ConditionEstablished   = "Established"
	ConditionNamesAccepted = "NamesAccepted"
	ConditionTerminating   = "Terminating"
	ConditionNonStructural = "NonStructuralSchema"

	StatusTrue    = "True"
	StatusFalse   = "False"
	StatusUnknown = "Unknown"

	// NamesAccepted.
	ReasonNoConflicts        = "NoConflicts"
	MessageNoConflicts       = "no conflicts found"
	ReasonPluralConflict     = "PluralConflict"
	ReasonSingularConflict   = "SingularConflict"
	ReasonShortNamesConflict = "ShortNamesConflict"
	ReasonKindConflict       = "KindConflict"
	ReasonListKindConflict   = "ListKindConflict"

	// Established.
	ReasonNotAccepted           = "NotAccepted"
	MessageNotAccepted          = "not all names are accepted"
	ReasonInstalling            = "Installing"
	MessageInstalling           = "the initial names have been accepted"
	ReasonInitialNamesAccepted  = "InitialNamesAccepted"
	MessageInitialNamesAccepted = "the initial names have been accepted"
	ReasonInvalidCABundle       = "InvalidCABundle"
	MessageInvalidCABundle      = "The conversion webhook CABundle is invalid"

	// NonStructuralSchema: message lists the violations; StructuralError
	// when a schema uses a keyword the structural rules cannot read.
	ReasonViolations      = "Violations"
	ReasonStructuralError = "StructuralError"

	// Terminating: set by delete, then by the cleanup controller.
	ReasonInstanceDeletionPending     = "InstanceDeletionPending"
	MessageInstanceDeletionPending    = "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"
	ReasonInstanceDeletionInProgress  = "InstanceDeletionInProgress"
	MessageInstanceDeletionInProgress = "CustomResource deletion is in progress"
	ReasonInstanceDeletionFailed      = "InstanceDeletionFailed" // message: "could not issue all deletes: %v" or "could not list instances: %v"
	ReasonInstanceDeletionCheck       = "InstanceDeletionCheck"  // message: "could not confirm zero CustomResources remaining: %v"
	ReasonInstanceDeletionCompleted   = "InstanceDeletionCompleted"
	MessageInstanceDeletionCompleted  = "removed all instances"
	ReasonNeverEstablished            = "NeverEstablished"
	MessageNeverEstablished           = "resource was never established"
)

// Established reports whether the CRD's Established condition is True.
func Established(obj map[string]any) bool {
	return ConditionStatus(obj, ConditionEstablished) == StatusTrue
}

// ConditionStatus returns the status of the condition of type typ, "" when
// the CRD has none.
func ConditionStatus(obj map[string]any, typ string) string {
	if c := findCondition(obj, typ); c != nil {
		s, _ := c["status"].(string)
		return s
	}
	return ""
}

// SetCondition sets the condition of type typ in status.conditions, adding
// it when missing, and reports whether anything changed. As upstream,
// lastTransitionTime moves to now only when the status changes (or was
// never set); a new reason or message alone keeps it.
func SetCondition(obj map[string]any, typ, status, reason, message string, now time.Time) bool {
	ts := now.UTC().Format(time.RFC3339)
	st := statusMap(obj)
	conds, _ := st["conditions"].([]any)
	for _, x := range conds {
		c, _ := x.(map[string]any)
		if c == nil || c["type"] != typ {
			continue
		}
		changed := false
		if c["status"] != status || c["lastTransitionTime"] == nil || c["lastTransitionTime"] == "" {
			c["lastTransitionTime"] = ts
			changed = true
		}
		changed = setOrDelete(c, "status", status) || changed
		changed = setOrDelete(c, "reason", reason) || changed
		changed = setOrDelete(c, "message", message) || changed
		return changed
	}
	c := map[string]any{"type": typ, "status": status, "lastTransitionTime": ts}
	setOrDelete(c, "reason", reason)
	setOrDelete(c, "message", message)
	st["conditions"] = append(conds, c)
	return true
}

// setOrDelete sets m[k] to v, or removes it when v is empty (the fields
// are omitempty on the wire), and reports whether m changed.
func setOrDelete(m map[string]any, k, v string) bool {
	old, had := m[k]
	if v == "" {
		delete(m, k)
		return had
	}
	m[k] = v
	return old != v
}

func findCondition(obj map[string]any, typ string) map[string]any {
	st, _ := obj["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	for _, x := range conds {
		if c, _ := x.(map[string]any); c != nil && c["type"] == typ {
			return c
		}
	}
	return nil
}

func statusMap(obj map[string]any) map[string]any {
	st, _ := obj["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
		obj["status"] = st
	}
	return st
}

// RemoveCondition removes the condition of type typ and reports whether
// there was one.
func RemoveCondition(obj map[string]any, typ string) bool {
	st, _ := obj["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	for i, x := range conds {
		if c, _ := x.(map[string]any); c != nil && c["type"] == typ {
			st["conditions"] = append(conds[:i:i], conds[i+1:]...)
			return true
		}
	}
	return false
}
