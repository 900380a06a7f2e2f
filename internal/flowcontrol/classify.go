// Package flowcontrol classifies requests by the FlowSchemas and
// PriorityLevelConfigurations of flowcontrol.apiserver.k8s.io, as
// upstream's API Priority and Fairness does: the first FlowSchema (by
// matchingPrecedence, then name) one of whose rules matches the request
// and whose priority level exists.
//
// A Classifier is compiled once from the objects and then shared: it is
// immutable and safe for concurrent use, and classifying allocates
// nothing.
package flowcontrol

import (
	"cmp"
	"math"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/request"
)

// Classification is what a request was classified as.
type Classification struct {
	FlowSchema, PriorityLevel       string // names
	FlowSchemaUID, PriorityLevelUID string
	// Exempt: the level is of type Exempt.
	Exempt bool
	// Distinguisher is the FlowSchema's distinguisher method (ByUser,
	// ByNamespace), "" for none.
	Distinguisher flowcontrolv1.FlowDistinguisherMethodType
}

// Classifier is a compiled set of FlowSchemas, in matching order.
type Classifier struct {
	schemas []schema
	// fallback is catch-all, for a request nothing matches.
	fallback *schema
	// levels are the priority levels' nominal concurrency shares, by name.
	levels []LevelSeats
}

// LevelSeats is a priority level's nominal concurrency: its shares, or
// the seats they come to (NominalSeats).
type LevelSeats struct {
	Name  string
	Seats int
}

type schema struct {
	class      Classification
	precedence int32
	rules      []rule
}

type rule struct {
	subjects    []subject
	resources   []resourceRule
	nonResource []nonResourceRule
}

// subject matches a user by name (user), group, service account name
// (user, as "system:serviceaccount:ns:name") or namespace (saPrefix,
// "system:serviceaccount:ns:"); all matches every user of its kind.
type subject struct {
	user, group, saPrefix string
	all                   bool
}

type resourceRule struct {
	verbs, groups, resources, namespaces list
	clusterScope                         bool
}

type nonResourceRule struct {
	verbs list
	// urls are exact paths; prefixes match what is below them.
	urls, prefixes []string
	allURLs        bool
}

// list is a rule's list of names, or every name ("*").
type list struct {
	all   bool
	names []string
}

func newList(names []string, wildcard string) list {
	if len(names) == 1 && names[0] == wildcard {
		return list{all: true}
	}
	return list{names: names}
}

func (l list) has(s string) bool { return l.all || slices.Contains(l.names, s) }

// Mandatory are the objects upstream's classifier imagines when they are
// missing: the exempt and catch-all schemas and levels, with no uid.
type Mandatory struct {
	FlowSchemas    []flowcontrolv1.FlowSchema
	PriorityLevels []flowcontrolv1.PriorityLevelConfiguration
}

// New compiles schemas against levels: a schema whose level does not exist
// is left out; a mandatory schema or level that is missing (or left out)
// is imagined from m.
func New(schemas []flowcontrolv1.FlowSchema, levels []flowcontrolv1.PriorityLevelConfiguration, m Mandatory) *Classifier {
	byName := map[string]*flowcontrolv1.PriorityLevelConfiguration{}
	for i := range levels {
		byName[levels[i].Name] = &levels[i]
	}
	c := &Classifier{}
	have := map[string]bool{}
	for i := range schemas {
		fs := &schemas[i]
		if pl := byName[fs.Spec.PriorityLevelConfiguration.Name]; pl != nil {
			c.schemas = append(c.schemas, compile(fs, pl))
			have[fs.Name] = true
		}
	}
	for i := range m.PriorityLevels {
		if pl := &m.PriorityLevels[i]; byName[pl.Name] == nil {
			byName[pl.Name] = pl
		}
	}
	for name, pl := range byName {
		c.levels = append(c.levels, LevelSeats{Name: name, Seats: int(shares(pl))})
	}
	slices.SortFunc(c.levels, func(a, b LevelSeats) int { return strings.Compare(a.Name, b.Name) })
	for i := range m.FlowSchemas {
		fs := &m.FlowSchemas[i]
		if pl := byName[fs.Spec.PriorityLevelConfiguration.Name]; !have[fs.Name] && pl != nil {
			c.schemas = append(c.schemas, compile(fs, pl))
		}
	}
	slices.SortStableFunc(c.schemas, func(a, b schema) int {
		return cmp.Or(cmp.Compare(a.precedence, b.precedence), strings.Compare(a.class.FlowSchema, b.class.FlowSchema))
	})
	for i := range c.schemas {
		if c.schemas[i].class.FlowSchema == "catch-all" {
			c.fallback = &c.schemas[i]
		}
	}
	return c
}

// shares are a level's nominal concurrency shares, as defaulted.
func shares(pl *flowcontrolv1.PriorityLevelConfiguration) int32 {
	switch {
	case pl.Spec.Limited != nil:
		if n := pl.Spec.Limited.NominalConcurrencyShares; n != nil {
			return *n
		}
		return 30
	case pl.Spec.Exempt != nil && pl.Spec.Exempt.NominalConcurrencyShares != nil:
		return *pl.Spec.Exempt.NominalConcurrencyShares
	}
	return 0
}

// NominalSeats shares serverSeats among the priority levels in proportion
// to their nominal concurrency shares, each rounded up, as upstream
// computes each level's nominal concurrency limit; by name.
func (c *Classifier) NominalSeats(serverSeats int) []LevelSeats {
	var sum float64
	for _, l := range c.levels {
		sum += float64(l.Seats)
	}
	out := make([]LevelSeats, len(c.levels))
	for i, l := range c.levels {
		out[i] = LevelSeats{Name: l.Name}
		if sum > 0 {
			out[i].Seats = int(math.Ceil(float64(serverSeats) * float64(l.Seats) / sum))
		}
	}
	return out
}

func compile(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration) schema {
	s := schema{precedence: fs.Spec.MatchingPrecedence, class: Classification{
		FlowSchema: fs.Name, FlowSchemaUID: string(fs.UID),
		PriorityLevel: pl.Name, PriorityLevelUID: string(pl.UID),
		Exempt: pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt,
	}}
	if d := fs.Spec.DistinguisherMethod; d != nil {
		s.class.Distinguisher = d.Type
	}
	for _, r := range fs.Spec.Rules {
		var cr rule
		for _, sub := range r.Subjects {
			cr.subjects = append(cr.subjects, compileSubject(sub))
		}
		for _, rr := range r.ResourceRules {
			cr.resources = append(cr.resources, resourceRule{
				verbs: newList(rr.Verbs, flowcontrolv1.VerbAll), groups: newList(rr.APIGroups, flowcontrolv1.APIGroupAll),
				resources: newList(rr.Resources, flowcontrolv1.ResourceAll), namespaces: newList(rr.Namespaces, flowcontrolv1.NamespaceEvery),
				clusterScope: rr.ClusterScope,
			})
		}
		for _, nr := range r.NonResourceRules {
			c := nonResourceRule{verbs: newList(nr.Verbs, flowcontrolv1.VerbAll)}
			for _, u := range nr.NonResourceURLs {
				if u == flowcontrolv1.NonResourceAll {
					c.allURLs = true
					continue
				}
				// As upstream's: a path matches itself and, with or
				// without a trailing "*", what is below it.
				c.urls = append(c.urls, u)
				p := strings.TrimSuffix(u, "*")
				if !strings.HasSuffix(p, "/") {
					p += "/"
				}
				c.prefixes = append(c.prefixes, p)
			}
			cr.nonResource = append(cr.nonResource, c)
		}
		s.rules = append(s.rules, cr)
	}
	return s
}

const serviceAccountPrefix = "system:serviceaccount:"

func compileSubject(s flowcontrolv1.Subject) subject {
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		if s.User != nil {
			return subject{user: s.User.Name, all: s.User.Name == flowcontrolv1.NameAll}
		}
	case flowcontrolv1.SubjectKindGroup:
		if s.Group != nil {
			return subject{group: s.Group.Name, all: s.Group.Name == flowcontrolv1.NameAll}
		}
	case flowcontrolv1.SubjectKindServiceAccount:
		if sa := s.ServiceAccount; sa != nil {
			if sa.Name == flowcontrolv1.NameAll {
				return subject{saPrefix: serviceAccountPrefix + sa.Namespace + ":"}
			}
			return subject{user: serviceAccountPrefix + sa.Namespace + ":" + sa.Name}
		}
	}
	return subject{} // matches nobody
}

// anonymousGroups are those of a request without a user.
var anonymousGroups = []string{authn.Unauthenticated}

// Classify returns the request's classification; ok is false when no
// schema matches and there is no catch-all (which cannot happen with the
// mandatory objects given to New). u nil is the anonymous user.
func (c *Classifier) Classify(u *authn.User, info *request.Info) (_ Classification, ok bool) {
	name, groups := authn.Anonymous, anonymousGroups
	if u != nil {
		name, groups = u.Name, u.Groups
	}
	for i := range c.schemas {
		if c.schemas[i].matches(name, groups, info) {
			return c.schemas[i].class, true
		}
	}
	if c.fallback != nil {
		return c.fallback.class, true
	}
	return Classification{}, false
}

func (s *schema) matches(name string, groups []string, info *request.Info) bool {
	for i := range s.rules {
		if s.rules[i].matches(name, groups, info) {
			return true
		}
	}
	return false
}

func (r *rule) matches(name string, groups []string, info *request.Info) bool {
	if !r.matchesSubject(name, groups) {
		return false
	}
	if info.IsResourceRequest {
		for i := range r.resources {
			if r.resources[i].matches(info) {
				return true
			}
		}
		return false
	}
	for i := range r.nonResource {
		if r.nonResource[i].matches(info) {
			return true
		}
	}
	return false
}

func (r *rule) matchesSubject(name string, groups []string) bool {
	for _, s := range r.subjects {
		switch {
		case s.group != "":
			if s.all || slices.Contains(groups, s.group) {
				return true
			}
		case s.saPrefix != "":
			if strings.HasPrefix(name, s.saPrefix) {
				return true
			}
		case s.user != "":
			if s.all || s.user == name {
				return true
			}
		}
	}
	return false
}

func (r *resourceRule) matches(info *request.Info) bool {
	if !r.verbs.has(info.Verb) || !r.groups.has(info.APIGroup) {
		return false
	}
	if !r.resources.all && !r.hasResource(info.Resource, info.Subresource) {
		return false
	}
	if info.Namespace == "" {
		return r.clusterScope
	}
	return r.namespaces.has(info.Namespace)
}

// hasResource reports whether the rule names resource[/subresource],
// without building the joined name.
func (r *resourceRule) hasResource(resource, subresource string) bool {
	for _, n := range r.resources.names {
		if subresource == "" {
			if n == resource {
				return true
			}
			continue
		}
		if len(n) == len(resource)+1+len(subresource) && strings.HasPrefix(n, resource) && n[len(resource)] == '/' && strings.HasSuffix(n, subresource) {
			return true
		}
	}
	return false
}

func (r *nonResourceRule) matches(info *request.Info) bool {
	if !r.verbs.has(info.Verb) {
		return false
	}
	if r.allURLs || slices.Contains(r.urls, info.Path) {
		return true
	}
	for _, p := range r.prefixes {
		if strings.HasPrefix(info.Path, p) {
			return true
		}
	}
	return false
}
