package discovery

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// customResourceVerbs are the verbs of a custom resource, in the order
// kube-apiserver lists them for CRDs.
var customResourceVerbs = []string{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}

// subresourceVerbs are the verbs of the status and scale subresources.
var subresourceVerbs = []string{"get", "patch", "update"}

// StorageVersionHash is the storageVersionHash discovery publishes for a
// resource stored as group/version, Kind kind: the base64 of the first 8
// bytes of the SHA-256 of "group/version/kind", as kube-apiserver computes it.
// Clients compare it across discovery reads to notice storage-version changes.
func StorageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// doc is one discovery document: its JSON and entity tag (unquoted), and
// its protobuf form, made on first request.
type doc struct {
	body []byte
	etag string
	pb   *protoForm
}

// message is a discovery document's Go value: every one has a protobuf form.
type message interface{ Marshal() ([]byte, error) }

// protoForm is a document's protobuf form: the value, enveloped under
// apiVersion and kind (upstream's core documents name no apiVersion).
type protoForm struct {
	msg              message
	apiVersion, kind string
	once             sync.Once
	body             []byte
	err              error
}

func (p *protoForm) bytes() ([]byte, error) {
	p.once.Do(func() {
		raw, err := p.msg.Marshal()
		if err != nil {
			p.err = err
			return
		}
		p.body, p.err = codec.ProtobufEnvelope(p.apiVersion, p.kind, raw)
		p.msg = nil
	})
	return p.body, p.err
}

// newDoc encodes v, whose protobuf form is enveloped under apiVersion
// and kind.
func newDoc(v message, apiVersion, kind string) (doc, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return doc{}, err
	}
	b = append(b, '\n')
	sum := sha512.Sum512(b)
	return doc{body: b, etag: fmt.Sprintf("%X", sum), pb: &protoForm{msg: v, apiVersion: apiVersion, kind: kind}}, nil
}

// docs holds every discovery document of one registry generation. It is
// immutable once built.
type docs struct {
	generation int64
	// coreVersions are the versions of the core group, for /api. The /api
	// document itself names the request's host, so it is encoded per request.
	coreVersions []string
	groupList    doc                         // /apis
	groups       map[string]doc              // /apis/<group>
	resources    map[schema.GroupVersion]doc // /api/<v>, /apis/<group>/<v>
	// /api and /apis, aggregated (apidiscovery.k8s.io/v2)
	aggregatedCore, aggregatedGroups doc
}

// entry is one served version of a definition.
type entry struct {
	def     *registry.Definition
	version *registry.Version
}

// build computes every document of t.
func build(t *registry.Table) (*docs, error) {
	byGV := map[schema.GroupVersion][]entry{}
	versionsOf := map[string][]string{}
	for _, def := range t.Definitions() {
		for i := range def.Versions {
			v := &def.Versions[i]
			if !v.Served {
				continue
			}
			gv := schema.GroupVersion{Group: def.Group, Version: v.Name}
			if _, ok := byGV[gv]; !ok {
				versionsOf[def.Group] = append(versionsOf[def.Group], v.Name)
			}
			byGV[gv] = append(byGV[gv], entry{def, v})
		}
	}
	for _, vs := range versionsOf {
		SortVersions(vs)
	}

	d := &docs{
		generation:   t.Generation,
		coreVersions: versionsOf[""],
		groups:       map[string]doc{},
		resources:    map[schema.GroupVersion]doc{},
	}
	if d.coreVersions == nil {
		d.coreVersions = []string{}
	}

	for gv, entries := range byGV {
		// Upstream's core resource list names no apiVersion.
		apiVersion := "v1"
		if gv.Group == "" {
			apiVersion = ""
		}
		list := &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: apiVersion},
			GroupVersion: gv.String(),
			APIResources: apiResources(entries),
		}
		rd, err := newDoc(list, apiVersion, "APIResourceList")
		if err != nil {
			return nil, fmt.Errorf("encoding discovery for %s: %w", gv, err)
		}
		d.resources[gv] = rd
	}

	names, aggregatedNames := orderGroups(versionsOf, func(gv schema.GroupVersion) bool {
		return slices.ContainsFunc(byGV[gv], func(e entry) bool { return !e.def.Custom() })
	})

	groupList := &metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups:   []metav1.APIGroup{},
	}
	for _, g := range names {
		group := apiGroup(g, versionsOf[g])
		groupList.Groups = append(groupList.Groups, group)
		withKind := group
		withKind.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		gd, err := newDoc(&withKind, "v1", "APIGroup")
		if err != nil {
			return nil, fmt.Errorf("encoding discovery for group %s: %w", g, err)
		}
		d.groups[g] = gd
	}
	var err error
	if d.groupList, err = newDoc(groupList, "v1", "APIGroupList"); err != nil {
		return nil, fmt.Errorf("encoding group list: %w", err)
	}

	// Aggregated discovery: /api holds the core group alone, /apis every
	// other group, ordered as upstream's aggregated document orders them.
	core := []apidiscoveryv2.APIGroupDiscovery{}
	if len(d.coreVersions) > 0 {
		core = append(core, groupDiscovery("", d.coreVersions, byGV))
	}
	named := make([]apidiscoveryv2.APIGroupDiscovery, 0, len(aggregatedNames))
	for _, g := range aggregatedNames {
		named = append(named, groupDiscovery(g, versionsOf[g], byGV))
	}
	for _, c := range []struct {
		doc   *doc
		items []apidiscoveryv2.APIGroupDiscovery
	}{{&d.aggregatedCore, core}, {&d.aggregatedGroups, named}} {
		ad, err := newDoc(&apidiscoveryv2.APIGroupDiscoveryList{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"},
			Items:    c.items,
		}, "apidiscovery.k8s.io/v2", "APIGroupDiscoveryList")
		if err != nil {
			return nil, fmt.Errorf("encoding aggregated discovery: %w", err)
		}
		*c.doc = ad
	}
	return d, nil
}

func apiGroup(name string, versions []string) metav1.APIGroup {
	g := metav1.APIGroup{Name: name}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + v, Version: v})
	}
	g.PreferredVersion = g.Versions[0]
	return g
}

// verbs returns the verbs a definition serves: a built-in's sorted, as
// kube-apiserver's installer lists them; a custom resource's in the order
// apiextensions-apiserver lists them, without the writes other than
// deletes while its CRD is terminating.
func verbs(def *registry.Definition) []string {
	if !def.Custom() {
		return sortedVerbs(def)
	}
	vs := def.Verbs
	if vs == nil {
		vs = customResourceVerbs
	}
	if def.Terminating {
		vs = slices.DeleteFunc(slices.Clone(vs), func(v string) bool {
			return v == "create" || v == "update" || v == "patch"
		})
	}
	return vs
}

func sortedVerbs(def *registry.Definition) []string {
	vs := def.Verbs
	if vs == nil {
		vs = customResourceVerbs
	}
	if slices.IsSorted(vs) {
		return vs
	}
	return slices.Sorted(slices.Values(vs))
}

// storageVersionHash follows upstream, which publishes the hash only when
// the storage version is also served, and none for resources that store
// nothing (reviews, componentstatuses).
func storageVersionHash(def *registry.Definition) string {
	sv := def.StorageVersion()
	_, computed := def.Hooks.(registry.Reader)
	if _, unstored := def.Hooks.(registry.Creator); sv == nil || !sv.Served || unstored || computed {
		return ""
	}
	if def.StoredAs != nil {
		// The hash names what is stored: both event APIs publish core
		// v1 Event's.
		return StorageVersionHash(def.StoredAs.Group, def.StoredAs.Version, def.Kind)
	}
	if def.HashedStorageVersion != "" {
		return StorageVersionHash(def.Group, def.HashedStorageVersion, def.Kind)
	}
	return StorageVersionHash(def.Group, sv.Name, def.Kind)
}

// apiResources lists the resources of one group version, sorted by name,
// each followed by its subresources: a built-in's sorted by name (as
// kube-apiserver's installer lists them), a custom resource's status then
// scale (as apiextensions-apiserver lists them).
func apiResources(entries []entry) []metav1.APIResource {
	entries = slices.Clone(entries)
	slices.SortStableFunc(entries, func(a, b entry) int { return strings.Compare(a.def.Resource, b.def.Resource) })
	out := []metav1.APIResource{}
	for _, e := range entries {
		def := e.def
		ns := def.Namespaced()
		out = append(out, metav1.APIResource{
			Name:               def.Resource,
			SingularName:       def.Singular,
			Namespaced:         ns,
			Kind:               def.Kind,
			Verbs:              verbs(def),
			ShortNames:         def.ShortNames,
			Categories:         def.Categories,
			StorageVersionHash: storageVersionHash(def),
		})
		first := len(out)
		sub := e.version.Subresources
		if sub.Status {
			out = append(out, metav1.APIResource{
				Name: def.Resource + "/status", Namespaced: ns, Kind: def.Kind, Verbs: subresourceVerbs,
			})
		}
		if sub.Scale != nil {
			out = append(out, metav1.APIResource{
				Name: def.Resource + "/scale", Namespaced: ns,
				Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: subresourceVerbs,
			})
		}
		for _, o := range sub.Other {
			r := metav1.APIResource{Name: def.Resource + "/" + o.Name, Namespaced: ns, Kind: def.Kind, Verbs: o.Verbs}
			if o.Kind != nil {
				r.Kind = o.Kind.Kind
				// As upstream: a kind of the resource's own group
				// version names neither.
				if o.Kind.Group != def.Group || o.Kind.Version != e.version.Name {
					r.Group, r.Version = o.Kind.Group, o.Kind.Version
				}
			}
			out = append(out, r)
		}
		if !def.Custom() {
			slices.SortFunc(out[first:], func(a, b metav1.APIResource) int { return strings.Compare(a.Name, b.Name) })
		}
	}
	return out
}

func groupDiscovery(group string, versions []string, byGV map[schema.GroupVersion][]entry) apidiscoveryv2.APIGroupDiscovery {
	g := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: group}}
	for _, v := range versions {
		gv := schema.GroupVersion{Group: group, Version: v}
		vd := apidiscoveryv2.APIVersionDiscovery{
			Version:   v,
			Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
		}
		for _, e := range byGV[gv] {
			vd.Resources = append(vd.Resources, resourceDiscovery(gv, e))
		}
		slices.SortFunc(vd.Resources, func(a, b apidiscoveryv2.APIResourceDiscovery) int {
			return strings.Compare(a.Resource, b.Resource)
		})
		g.Versions = append(g.Versions, vd)
	}
	return g
}

func resourceDiscovery(gv schema.GroupVersion, e entry) apidiscoveryv2.APIResourceDiscovery {
	if !e.def.Custom() {
		return builtinDiscovery(apiResources([]entry{e}))
	}
	def := e.def
	scope := apidiscoveryv2.ScopeCluster
	if def.Namespaced() {
		scope = apidiscoveryv2.ScopeNamespace
	}
	kind := &metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: def.Kind}
	r := apidiscoveryv2.APIResourceDiscovery{
		Resource:         def.Resource,
		ResponseKind:     kind,
		Scope:            scope,
		SingularResource: def.Singular,
		Verbs:            verbs(def),
		ShortNames:       def.ShortNames,
		Categories:       def.Categories,
	}
	sub := e.version.Subresources
	if sub.Status {
		r.Subresources = append(r.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource: "status", ResponseKind: kind, Verbs: subresourceVerbs,
		})
	}
	if sub.Scale != nil {
		r.Subresources = append(r.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource:  "scale",
			ResponseKind: &metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
			Verbs:        subresourceVerbs,
		})
	}
	return r
}

// builtinDiscovery is a built-in resource's aggregated entry, made from its
// part of the group version's resource list (the resource, then its
// subresources) as kube-apiserver makes it: a kind names a group and
// version only where the list does (a scale's), and the subresources keep
// the list's order.
func builtinDiscovery(list []metav1.APIResource) apidiscoveryv2.APIResourceDiscovery {
	res := list[0]
	scope := apidiscoveryv2.ScopeCluster
	if res.Namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	r := apidiscoveryv2.APIResourceDiscovery{
		Resource:         res.Name,
		ResponseKind:     &metav1.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind},
		Scope:            scope,
		SingularResource: res.SingularName,
		Verbs:            res.Verbs,
		ShortNames:       res.ShortNames,
		Categories:       res.Categories,
	}
	for _, sub := range list[1:] {
		_, name, _ := strings.Cut(sub.Name, "/")
		r.Subresources = append(r.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource:  name,
			ResponseKind: &metav1.GroupVersionKind{Group: sub.Group, Version: sub.Version, Kind: sub.Kind},
			Verbs:        sub.Verbs,
		})
	}
	return r
}
