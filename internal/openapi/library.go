package openapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// builtinJSON holds the OpenAPI v3 models of the built-in resources whose
// models the generated definitions (generatedModels) do not have, as
// upstream publishes them (descriptions and extensions included), and the
// models they refer to. Names are upstream's model names; references use
// #/components/schemas/. The gen command writes it from upstream's
// published documents: to add a built-in's models, add them to gen's
// roots and run go generate.
//
// A built-in resource is matched to its schema by the
// x-kubernetes-group-version-kind of a model in the library, so a built-in
// definition needs no Version.OpenAPISchema.
//
//go:generate go run ./gen -o builtin.json
//go:embed builtin.json
var builtinJSON []byte

// modelLibrary is every built-in model, decoded and encoded once; every
// document embeds some of them. It is shared and must not be modified.
type modelLibrary struct {
	models map[string]map[string]any          // v3 schemas by model name
	byGVK  map[schema.GroupVersionKind]string // model name of each group/version/kind
	v3, v2 map[string]json.RawMessage         // models encoded in v3 and v2 form
	refs   map[string][]string                // the models each model refers to

	// typeMeta holds the schemas of the apiVersion and kind properties of
	// objects, as upstream describes them for custom resources.
	typeMeta map[string]any
}

// lib returns the library, building it on first use (a few milliseconds and
// about 1.9MB of garbage, most of it the generated models; see
// BenchmarkLibrary) rather than when the package loads, so that programs
// that never serve OpenAPI, and in-process test servers until their first
// OpenAPI request, do not pay for it. It panics if builtin.json and the
// generated definitions are inconsistent, which the tests rule out.
func lib() *modelLibrary {
	libIdle.touch()
	if l := libStrong.Load(); l != nil {
		return l
	}
	libMu.Lock()
	defer libMu.Unlock()
	l := libStrong.Load()
	if l == nil {
		l = libWeak.Value()
	}
	if l == nil {
		l = buildLibrary()
		libWeak = weak.Make(l)
	}
	libStrong.Store(l)
	return l
}

var (
	// libStrong holds the library once built, unless ReleaseLibrary let
	// it go; libWeak finds it again while something still holds it.
	libStrong atomic.Pointer[modelLibrary]
	libMu     sync.Mutex // guards libWeak and building
	libWeak   weak.Pointer[modelLibrary]
)

// ReleaseLibrary lets the garbage collector take the library (4 MB, most
// of an idle server's heap when start-up used it: the field managers of
// the objects the server writes itself) until the next use builds it
// again. The server calls it once its start-up writes are done.
func ReleaseLibrary() { libStrong.Store(nil) }

// LibraryKept reports whether the library is held with no release
// pending (ReleaseLibrary, ReleaseLibraryWhenIdle): for tests of who
// releases it.
func LibraryKept() bool { return libStrong.Load() != nil && !libIdle.pending.Load() }

// ReleaseLibraryWhenIdle releases the library once it has gone unused for
// LibraryIdle: for users that need it once in a while (a definition's
// field manager types, built once per definition), so that a server
// does not hold it for good after its first custom resource write, yet a
// burst of such uses (CRDs installed together) builds it once, not once
// each (about 10 MB of garbage and tens of milliseconds a build; see
// BenchmarkLibrary).
func ReleaseLibraryWhenIdle() { libIdle.releaseWhenIdle() }

// LibraryIdle is how long the library goes unused before
// ReleaseLibraryWhenIdle releases it.
const LibraryIdle = 10 * time.Second

var libIdle = &idleRelease{
	now:     time.Now,
	after:   func(d time.Duration, f func()) { time.AfterFunc(d, f) },
	idle:    LibraryIdle,
	release: ReleaseLibrary,
}

// idleRelease calls release once touch has not been called for idle,
// after releaseWhenIdle asks it to. Safe for concurrent use.
type idleRelease struct {
	now     func() time.Time
	after   func(time.Duration, func()) // calls f after d, as time.AfterFunc
	idle    time.Duration
	release func()

	used    atomic.Int64 // the time of the last touch, in unix nanoseconds
	pending atomic.Bool  // a release waits for idleness
}

func (r *idleRelease) touch() { r.used.Store(r.now().UnixNano()) }

func (r *idleRelease) releaseWhenIdle() {
	r.touch()
	if !r.pending.CompareAndSwap(false, true) {
		return // the pending release waits from the latest touch already
	}
	var check func()
	check = func() {
		if wait := r.idle - r.now().Sub(time.Unix(0, r.used.Load())); wait > 0 {
			r.after(wait, check)
			return
		}
		// A touch from here to the release loses the library to it: that
		// user holds it still, and the next finds it through libWeak.
		r.pending.Store(false)
		r.release()
	}
	r.after(r.idle, check)
}

func buildLibrary() *modelLibrary {
	models, typeMeta, err := loadModels()
	if err != nil {
		panic(fmt.Sprintf("openapi: %v", err))
	}
	mustResolve(models)
	l := &modelLibrary{models: models, byGVK: indexByGVK(models), refs: refsOfLibrary(models), typeMeta: typeMeta}
	l.v3, l.v2 = encodeLibrary(models)
	return l
}

// loadModels returns every model of the library and the TypeMeta
// properties (see generatedModels).
func loadModels() (models map[string]map[string]any, typeMeta map[string]any, err error) {
	models = mustLoadLibrary(builtinJSON)
	gen, typeMeta, err := generatedModels(models)
	if err != nil {
		return nil, nil, err
	}
	for name, s := range gen {
		models[name] = s
	}
	return models, typeMeta, nil
}

func encodeLibrary(lib map[string]map[string]any) (v3, v2 map[string]json.RawMessage) {
	v3 = make(map[string]json.RawMessage, len(lib))
	v2 = make(map[string]json.RawMessage, len(lib))
	for name, s := range lib {
		b, err := json.Marshal(s)
		if err != nil {
			panic(fmt.Sprintf("openapi: encoding %s: %v", name, err))
		}
		v3[name] = b
		if b, err = json.Marshal(toV2(s)); err != nil {
			panic(fmt.Sprintf("openapi: encoding %s: %v", name, err))
		}
		v2[name] = b
	}
	return v3, v2
}

func refsOfLibrary(lib map[string]map[string]any) map[string][]string {
	out := make(map[string][]string, len(lib))
	for name, s := range lib {
		out[name] = collectRefs(s, nil)
	}
	return out
}

func mustLoadLibrary(b []byte) map[string]map[string]any {
	var lib map[string]map[string]any
	if err := json.Unmarshal(b, &lib); err != nil {
		panic(fmt.Sprintf("openapi: decoding builtin.json: %v", err))
	}
	return lib
}

// mustResolve panics unless every reference in lib names a model of lib.
func mustResolve(lib map[string]map[string]any) {
	for name, s := range lib {
		for _, ref := range collectRefs(s, nil) {
			if _, ok := lib[ref]; !ok {
				panic(fmt.Sprintf("openapi: library model %s refers to unknown model %s", name, ref))
			}
		}
	}
}

func indexByGVK(lib map[string]map[string]any) map[schema.GroupVersionKind]string {
	out := map[schema.GroupVersionKind]string{}
	names := make([]string, 0, len(lib))
	for name := range lib {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		list, _ := lib[name][extGVK].([]any)
		for _, x := range list {
			m, _ := x.(map[string]any)
			g, _ := m["group"].(string)
			v, _ := m["version"].(string)
			k, _ := m["kind"].(string)
			out[schema.GroupVersionKind{Group: g, Version: v, Kind: k}] = name
		}
	}
	return out
}

// DeleteOptions is registered in every group version of a scheme, and its
// model lists them all in x-kubernetes-group-version-kind. The library's
// model has the list of kube-apiserver's scheme, which the v2 document
// publishes; each v3 document has its own (deleteOptionsV3).

// clientGoLacks are the groups of kube-apiserver's scheme that client-go's
// scheme (k8s.io/client-go/kubernetes/scheme) does not have: the
// admission and image policy webhooks' payloads, and the APIs of the
// aggregator and apiextensions-apiserver, which have clientsets of their
// own. TestDeleteOptionsKinds checks them against client-go.
var clientGoLacks = []string{"admission.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io", "imagepolicy.k8s.io"}

// deleteOptionsV3 returns DeleteOptions' model, encoded, as the v3 document
// of gv publishes it. kube-apiserver narrows the list of a built-in group
// version's document to that group version and core v1 (filterScopedGVKs
// in k8s.io/apiserver/pkg/server/routes); a document of custom resources is
// made by upstream's CRD builder, which names models with client-go's
// scheme.
func deleteOptionsV3(gv schema.GroupVersion, builtin bool) json.RawMessage {
	m := maps.Clone(lib().models[deleteOptionsModel])
	all, _ := m[extGVK].([]any)
	m[extGVK] = slices.DeleteFunc(slices.Clone(all), func(x any) bool {
		gvk, _ := x.(map[string]any)
		g, _ := gvk["group"].(string)
		v, _ := gvk["version"].(string)
		if builtin {
			return !(g == gv.Group && v == gv.Version || g == "" && v == "v1")
		}
		return slices.Contains(clientGoLacks, g)
	})
	return mustMarshal(m)
}

// Upstream model names of the meta types operations refer to.
const (
	objectMetaModel    = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
	listMetaModel      = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
	statusModel        = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
	deleteOptionsModel = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
	patchModel         = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
	scaleModel         = "io.k8s.api.autoscaling.v1.Scale"
)

const (
	v3RefPrefix = "#/components/schemas/"
	v2RefPrefix = "#/definitions/"

	extGVK      = "x-kubernetes-group-version-kind"
	extAction   = "x-kubernetes-action"
	extPreserve = "x-kubernetes-preserve-unknown-fields"
	// extSelectable lists a custom resource version's selectable fields on
	// its object and list models, in v3 and v2 alike, as upstream's CRD
	// OpenAPI builder does (CustomResourceFieldSelectors, GA and locked on).
	extSelectable = "x-kubernetes-selectable-fields"
)

// modelName is the name of the schema of group/version/kind: the library's
// for built-ins, and for custom resources the reversed group followed by
// version and kind, as upstream names CRD models (stable.example.com/v1
// CronTab → com.example.stable.v1.CronTab).
func modelName(gvk schema.GroupVersionKind) string {
	if name, ok := lib().byGVK[gvk]; ok {
		return name
	}
	parts := strings.Split(gvk.Group, ".")
	slices.Reverse(parts)
	return strings.Join(parts, ".") + "." + gvk.Version + "." + gvk.Kind
}

// collectRefs appends to refs the model names every $ref under v points at
// (v3 or v2 form).
func collectRefs(v any, refs []string) []string {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if k == "$ref" {
				if s, ok := c.(string); ok {
					s = strings.TrimPrefix(s, v3RefPrefix)
					s = strings.TrimPrefix(s, v2RefPrefix)
					refs = append(refs, s)
				}
				continue
			}
			refs = collectRefs(c, refs)
		}
	case []any:
		for _, c := range x {
			refs = collectRefs(c, refs)
		}
	}
	return refs
}
