package apply

import (
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// scaleAPIVersion is the version upstream's scale field manager records
// Scale writes at, before it maps them back onto the object.
const scaleAPIVersion = "autoscaling/v1"

// ReplicasPath turns a scale subresource's specReplicasPath
// (".spec.replicas") into a field path.
func ReplicasPath(jsonPath string) fieldpath.Path {
	var p fieldpath.Path
	for _, f := range strings.Split(strings.TrimPrefix(jsonPath, "."), ".") {
		f := f
		p = append(p, fieldpath.PathElement{FieldName: &f})
	}
	return p
}

// ScaleUpdate records, in obj's managedFields (those of the object before
// the write), a write of its replicas through the scale subresource by
// manager. paths gives the replicas path of each apiVersion of the
// resource (nil for versions without the subresource); apiVersion is the
// request's.
//
// It works as upstream's scale handler does on the entries: when the
// replicas change, every entry that owned them loses them, and the
// manager gains them in an entry of its own for the subresource "scale"
// (which, as upstream's, carries no time); entries at versions the
// resource no longer has are dropped. Nothing else changes, and when no
// entry owns the replicas, nobody gains them.
func ScaleUpdate(obj map[string]any, paths map[string]fieldpath.Path, apiVersion, manager string, changed bool) {
	mf, err := decodeManaged(managedFieldsOf(obj))
	if err != nil {
		return
	}
	if manager == "" {
		manager = "unknown"
	}
	// Upstream's handler sees, on the Scale, only the entries that own
	// the replicas; when none does, its field manager tracks nothing, as
	// for any object without managed fields.
	tracked := false
	for key, vs := range mf.fields {
		path, known := paths[string(vs.APIVersion())]
		if !known {
			delete(mf.fields, key)
			continue
		}
		if path != nil && vs.Set().Has(path) {
			tracked = true
		}
	}
	if changed && tracked && paths[apiVersion] != nil {
		for key, vs := range mf.fields {
			path := paths[string(vs.APIVersion())]
			if path == nil || !vs.Set().Has(path) {
				continue
			}
			s := vs.Set().Difference(fieldpath.NewSet(path))
			if s.Empty() {
				delete(mf.fields, key)
				continue
			}
			mf.fields[key] = fieldpath.NewVersionedSet(s, vs.APIVersion(), vs.Applied())
		}
		key := managerID{Manager: manager, Operation: opUpdate, APIVersion: scaleAPIVersion, Subresource: "scale"}.String()
		mf.fields[key] = fieldpath.NewVersionedSet(fieldpath.NewSet(paths[apiVersion]), fieldpath.APIVersion(apiVersion), false)
		delete(mf.times, key)
	}
	list, err := mf.encode()
	if err != nil {
		return
	}
	setManagedFields(obj, list)
}
