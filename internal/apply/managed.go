package apply

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Operations of managedFields entries.
const (
	opApply  = "Apply"
	opUpdate = "Update"
)

// managerID identifies a managedFields entry: its manager, operation,
// subresource and, for updates, apiVersion (an applier keeps one entry
// whatever version it applies at). Its string form is the key of the
// structured-merge-diff managed field sets.
type managerID struct {
	Manager, Operation, APIVersion, Subresource string
}

func (id managerID) String() string {
	if id.Operation == opApply {
		id.APIVersion = ""
	}
	return id.Manager + "\x00" + id.Operation + "\x00" + id.APIVersion + "\x00" + id.Subresource
}

func parseManagerID(s string) managerID {
	p := strings.SplitN(s, "\x00", 4)
	for len(p) < 4 {
		p = append(p, "")
	}
	return managerID{Manager: p[0], Operation: p[1], APIVersion: p[2], Subresource: p[3]}
}

// managed is an object's decoded managedFields: a field set per manager
// and each entry's time, kept as the string it was stored as. entries
// keeps the decoded entries, so that those that do not change are written
// back as they were instead of encoded again.
type managed struct {
	fields  fieldpath.ManagedFields
	times   map[string]string
	entries map[string]decodedEntry
}

// decodedEntry is an entry as stored and the field set decoded from it.
type decodedEntry struct {
	e  map[string]any
	vs fieldpath.VersionedSet
}

func emptyManaged() *managed {
	return &managed{fields: fieldpath.ManagedFields{}, times: map[string]string{}, entries: map[string]decodedEntry{}}
}

// decodeManaged decodes metadata.managedFields, failing as upstream's
// decoding fails: on an operation other than Apply or Update, an empty
// apiVersion, a fieldsType other than FieldsV1, or fields that do not parse.
func decodeManaged(list []any) (*managed, error) {
	m := emptyManaged()
	for i, x := range list {
		e, ok := x.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("managed fields entry %d is not an object", i)
		}
		id := managerID{}
		id.Manager, _ = e["manager"].(string)
		id.Operation, _ = e["operation"].(string)
		id.APIVersion, _ = e["apiVersion"].(string)
		id.Subresource, _ = e["subresource"].(string)
		if id.Operation != opApply && id.Operation != opUpdate {
			return nil, errors.New("operation must be `Apply` or `Update`")
		}
		if id.APIVersion == "" {
			return nil, errors.New("apiVersion must not be empty")
		}
		switch ft, _ := e["fieldsType"].(string); ft {
		case "FieldsV1":
		case "":
			return nil, fmt.Errorf("missing fieldsType in managed fields entry %d", i)
		default:
			return nil, fmt.Errorf("invalid fieldsType %q in managed fields entry %d", ft, i)
		}
		set, err := decodeFields(e["fieldsV1"])
		if err != nil {
			return nil, fmt.Errorf("error decoding versioned set from entry %d: %w", i, err)
		}
		key := id.String()
		vs := fieldpath.NewVersionedSet(set, fieldpath.APIVersion(id.APIVersion), id.Operation == opApply)
		m.fields[key] = vs
		if t, ok := e["time"].(string); ok {
			m.times[key] = t
		} else {
			delete(m.times, key)
		}
		m.entries[key] = decodedEntry{e: e, vs: vs}
	}
	return m, nil
}

// encode returns the managedFields entries, sorted as upstream sorts
// them (see sortedEntries); nil when no manager owns anything, so the
// field disappears.
func (m *managed) encode() ([]any, error) {
	rs := make([]rawEntry, 0, len(m.fields))
	for key, vs := range m.fields {
		e, err := m.entry(key, vs)
		if err != nil {
			return nil, err
		}
		op := opUpdate
		if vs.Applied() {
			op = opApply
		}
		rs = append(rs, rawEntry{key: key, e: e, op: op, time: m.times[key]})
	}
	return sortedEntries(rs), nil
}

// entry returns the encoded entry of one manager: the decoded one when
// neither its field set (which structured-merge-diff replaces whenever it
// changes one) nor its time changed, else a new one.
func (m *managed) entry(key string, vs fieldpath.VersionedSet) (map[string]any, error) {
	t, hasTime := m.times[key]
	d, decoded := m.entries[key]
	if decoded && d.vs == vs {
		et, eHasTime := d.e["time"].(string)
		if et == t && eHasTime == hasTime {
			return d.e, nil
		}
	}
	id := parseManagerID(key)
	e := map[string]any{
		"manager":    id.Manager,
		"operation":  id.Operation,
		"apiVersion": string(vs.APIVersion()),
		"fieldsType": "FieldsV1",
	}
	if vs.Applied() {
		e["operation"] = opApply
	}
	if id.Manager == "" {
		delete(e, "manager")
	}
	if id.Subresource != "" {
		e["subresource"] = id.Subresource
	}
	if hasTime {
		e["time"] = t
	}
	if decoded && d.vs == vs && d.e["fieldsV1"] != nil {
		// Only the time changed: the fields are as they were decoded
		// (and are never modified).
		e["fieldsV1"] = d.e["fieldsV1"]
		return e, nil
	}
	fields, err := encodeFields(vs.Set())
	if err != nil {
		return nil, fmt.Errorf("encoding the fields of %s: %w", id.Manager, err)
	}
	e["fieldsV1"] = fields
	return e, nil
}

// now is an entry's time for a change made now, as upstream writes it
// (seconds, UTC).
// (A variable for tests that compare times.)
var now = func() string { return time.Now().UTC().Format(time.RFC3339) }

func unixSeconds(t string) int64 {
	if t == "" {
		return 0
	}
	p, err := time.Parse(time.RFC3339, t)
	if err != nil {
		return 0
	}
	return p.Unix()
}
