// Package apply records which manager owns which fields of an object
// (metadata.managedFields) on every write, and merges server-side apply
// requests, with structured-merge-diff types built from the OpenAPI models
// the server publishes: a custom resource's from its structural schemas,
// a built-in's from upstream's models. It follows upstream's field manager
// step by step, so that every object carries the managedFields
// kube-apiserver would record for the same requests.
package apply

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/validation/spec"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/crdserver/crdserver/internal/openapi"
	"github.com/crdserver/crdserver/internal/registry"
)

// Types are the structured-merge-diff types of one definition, one per
// version, built together on first use (a CRD that is never written does
// not pay for them) from the models the OpenAPI documents publish, as
// upstream builds them from all versions' models at once. What the models
// leave open (a version without a schema, a built-in without published
// models, x-kubernetes-preserve-unknown-fields) is typed as deduced from the
// values: maps granular, lists atomic.
type Types struct {
	def  *registry.Definition
	once sync.Once
	byV  map[string]*versionTypes
	err  error
}

// versionTypes are the types of one version's objects: for typing them,
// and for the walk comparing them on an update (see scalarChanges).
type versionTypes struct {
	pt   *typed.ParseableType
	walk *mapWalk
}

// NewTypes returns def's types, built when first used.
func NewTypes(def *registry.Definition) *Types { return &Types{def: def} }

// Of returns the types registered on def by the server, or builds them
// (uncached) for a definition that has none, as tests construct them.
func Of(def *registry.Definition) *Types {
	if t, ok := def.FieldTypes.(*Types); ok {
		return t
	}
	return NewTypes(def)
}

// Version returns the type of objects at the named version. A version the
// definition does not have is a missing-version error: managers recorded
// at such a version are dropped, as upstream drops them.
func (t *Types) Version(name string) (*typed.ParseableType, error) {
	v, err := t.version(name)
	if err != nil {
		return nil, err
	}
	return v.pt, nil
}

// version is Version with the walk of the version's objects.
func (t *Types) version(name string) (*versionTypes, error) {
	t.once.Do(t.build)
	if t.err != nil {
		return nil, t.err
	}
	v, ok := t.byV[name]
	if !ok {
		return nil, missingVersion(name)
	}
	return v, nil
}

func (t *Types) build() {
	t.byV = make(map[string]*versionTypes, len(t.def.Versions))
	models := map[string]*spec.Schema{}
	roots := map[string]string{}
	for i := range t.def.Versions {
		v := &t.def.Versions[i]
		gvk := schema.GroupVersionKind{Group: t.def.Group, Version: v.Name, Kind: t.def.Kind}
		root, ms, err := openapi.Models(v, gvk)
		if err != nil {
			t.err = fmt.Errorf("building the apply types of %s: %w", gvk, err)
			return
		}
		if err := addModels(models, ms); err != nil {
			t.err = fmt.Errorf("building the apply types of %s: %w", gvk, err)
			return
		}
		roots[v.Name] = root
	}
	// The models are decoded into copies of their own: the library is not
	// needed again until another definition's types are built or an
	// OpenAPI document is, and holding it costs a server 5 MB in 40,000
	// allocations, a fifth of the heap objects of a server caching 10,000
	// objects, which every collection marks (issue 16).
	openapi.ReleaseLibraryWhenIdle()
	s, err := schemaconv.ToSchemaFromOpenAPI(models, t.def.PreserveUnknownFields)
	if err != nil {
		t.err = fmt.Errorf("building the apply types of %s: %w", t.def.GroupResource(), err)
		return
	}
	parser := &typed.Parser{Schema: smdschema.Schema{Types: hoistInline(s.Types)}}
	// The versions share their types, and walks of them.
	walks := walkBuilder{schema: &parser.Schema, built: map[*smdschema.Map]*mapWalk{}}
	for v, root := range roots {
		pt := parser.Type(root)
		t.byV[v] = &versionTypes{pt: &pt, walk: walks.field(pt.TypeRef).child}
	}
}

// addModels adds the models ms, decoded as kube-openapi schemas, to out.
// Models shared by several versions (ObjectMeta and what it refers to)
// are decoded once.
func addModels(out map[string]*spec.Schema, ms map[string]map[string]any) error {
	for name, m := range ms {
		if _, ok := out[name]; ok {
			continue
		}
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if s, ok := sharedModels.Load(string(b)); ok {
			out[name] = s.(*spec.Schema)
			continue
		}
		s := new(spec.Schema)
		if err := json.Unmarshal(b, s); err != nil {
			return fmt.Errorf("decoding model %s: %w", name, err)
		}
		if strings.HasPrefix(name, "io.k8s.") {
			sharedModels.Store(string(b), s)
		}
		out[name] = s
	}
	return nil
}

// sharedModels holds the decoded upstream models (ObjectMeta and what it
// refers to, the built-ins' models) by their JSON, for every definition of
// every server in the process: decoding them took most of the cost of a
// CRD's first write. Keyed by content, a model is reused only where it is
// the same; custom resources' models, which vary, are not kept. The
// schemas are only read once decoded.
var sharedModels sync.Map // JSON → *spec.Schema

// missingVersionError is the conversion failure structured-merge-diff
// treats as a version that no longer exists.
type missingVersionError string

func (e missingVersionError) Error() string { return "no version " + string(e) }

func missingVersion(v string) error { return missingVersionError(v) }
