package handler

import (
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/registry"
)

// recordFields sets obj's metadata.managedFields for a write by the
// request's manager: what it changed from live (nil for a create) becomes
// its own. Upstream records them before mutating admission, on the
// decoded and defaulted object, and so does this. c.written describes
// the entries when they were recorded encoded, so that checking and
// validating obj's metadata need not walk them again.
func recordFields(c *call, live, obj map[string]any, sub string) {
	c.written = nil
	manager := apply.ManagerName(c.r.URL.Query().Get("fieldManager"), c.r.UserAgent())
	if sub == "scale" {
		sc := c.version.Subresources.Scale
		changed := !reflect.DeepEqual(pathValue(live, sc.SpecReplicasPath), pathValue(obj, sc.SpecReplicasPath))
		apply.ScaleUpdate(obj, replicasPaths(c), c.apiVersion(), manager, changed)
		return
	}
	c.written = fieldManager(c, sub).Update(live, obj, manager)
}

// fieldManager is the field manager of the request's version and
// endpoint.
func fieldManager(c *call, sub string) *apply.Manager {
	return &apply.Manager{
		Types:        apply.Of(c.def),
		GroupVersion: schema.GroupVersion{Group: c.def.Group, Version: c.version.Name},
		Kind:         c.def.Kind,
		Subresource:  sub,
		Reset:        resetFields(c, sub),
		Convert: func(obj map[string]any, apiVersion string) (map[string]any, error) {
			return conversion.ConvertObject(c.r.Context(), conversion.For(converterFor(c, apiVersion)), obj, apiVersion)
		},
		Peers: peerTypes(c),
		Zero:  zeroObject(c),
	}
}

// zeroObject is the object a create of c's resource is compared with: a
// built-in's Go-type zero object, nil for a custom resource.
func zeroObject(c *call) map[string]any {
	if z, ok := typedHooks(c).(registry.Zeroer); ok {
		return z.ZeroObject()
	}
	return nil
}

// peerTypes are the apply types of the definitions sharing c.def's
// storage, by group.
func peerTypes(c *call) map[string]*apply.Types {
	if len(c.peers) == 0 {
		return nil
	}
	out := make(map[string]*apply.Types, len(c.peers))
	for _, p := range c.peers {
		out[p.Group] = apply.Of(p)
	}
	return out
}

// converterFor is the definition whose converter reaches apiVersion from
// c.def's objects: c.def's own within its group; across groups, that of
// the definition stored as the other (its converter knows both forms).
func converterFor(c *call, apiVersion string) *registry.Definition {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || gv.Group == c.def.Group || c.def.StoredAs != nil {
		return c.def
	}
	for _, p := range c.peers {
		if p.Group == gv.Group {
			return p
		}
	}
	return c.def
}

// resetFields are the fields a write through sub does not own, as
// upstream's strategies declare them: with a status subresource, the
// resource's writes never own status, and status writes own neither spec
// nor the metadata they do not keep (Subresources.StatusMetadata) — in
// every version.
func resetFields(c *call, sub string) map[fieldpath.APIVersion]*fieldpath.Set {
	if r, ok := c.def.Hooks.(registry.FieldResetter); ok {
		if fields := r.ResetFields(sub); fields != nil {
			paths := make([]fieldpath.Path, len(fields))
			for i, f := range fields {
				paths[i] = fieldpath.MakePathOrDie(anySlice(f)...)
			}
			return allVersions(c, fieldpath.NewSet(paths...))
		}
	}
	if !c.version.Subresources.Status {
		return nil
	}
	switch sub {
	case "":
		return map[fieldpath.APIVersion]*fieldpath.Set{fieldpath.APIVersion(c.apiVersion()): statusFields}
	case "status":
		return allVersions(c, statusResets(c.version.Subresources.StatusMetadata))
	}
	return nil
}

// allVersions resets the same fields in each version of the resource.
func allVersions(c *call, reset *fieldpath.Set) map[fieldpath.APIVersion]*fieldpath.Set {
	out := make(map[fieldpath.APIVersion]*fieldpath.Set, len(c.def.Versions))
	for _, v := range c.def.Versions {
		out[fieldpath.APIVersion(registry.APIVersion(c.def.Group, v.Name))] = reset
	}
	return out
}

func anySlice(names []string) []any {
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = n
	}
	return out
}

// statusResets is what a status write keeping the metadata kept does not
// own: the spec, and the metadata, or those of its user-set fields it
// does not keep.
func statusResets(kept []string) *fieldpath.Set {
	switch {
	case len(kept) == 0:
		return specAndMetadataFields
	case len(kept) == len(registry.UserMetadata):
		return specFields
	}
	paths := []fieldpath.Path{fieldpath.MakePathOrDie("spec")}
	for _, k := range registry.UserMetadata {
		if !slices.Contains(kept, k) {
			paths = append(paths, fieldpath.MakePathOrDie("metadata", k))
		}
	}
	return fieldpath.NewSet(paths...)
}

// The reset field sets, built once: filters only read them.
var (
	statusFields          = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	specFields            = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"))
	specAndMetadataFields = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata"))
)

// replicasPaths maps each apiVersion of the resource to its scale
// subresource's replicas path (nil without the subresource).
func replicasPaths(c *call) map[string]fieldpath.Path {
	out := make(map[string]fieldpath.Path, len(c.def.Versions))
	for _, v := range c.def.Versions {
		var p fieldpath.Path
		if v.Subresources.Scale != nil {
			p = apply.ReplicasPath(v.Subresources.Scale.SpecReplicasPath)
		}
		out[registry.APIVersion(c.def.Group, v.Name)] = p
	}
	return out
}
