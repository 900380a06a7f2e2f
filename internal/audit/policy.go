// Package audit decides what kube-apiserver-style audit events a request
// produces (the audit.k8s.io/v1 Policy) and writes them as JSON lines
// (Log). The HTTP side, which builds the events, is filters.Audit.
package audit

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/crdserver/crdserver/internal/authz"
)

// Level is how much of a request an event records, in increasing order.
type Level string

const (
	LevelNone            Level = "None"
	LevelMetadata        Level = "Metadata"
	LevelRequest         Level = "Request"
	LevelRequestResponse Level = "RequestResponse"
)

// rank orders levels; an unknown level ranks below None.
func (l Level) rank() int {
	return slices.Index([]Level{LevelNone, LevelMetadata, LevelRequest, LevelRequestResponse}, l)
}

// AtLeast reports whether l records at least as much as o.
func (l Level) AtLeast(o Level) bool { return l.rank() >= o.rank() }

// Stage is the point in a request's life an event is written at.
type Stage string

const (
	StageRequestReceived  Stage = "RequestReceived"
	StageResponseStarted  Stage = "ResponseStarted"
	StageResponseComplete Stage = "ResponseComplete"
	StagePanic            Stage = "Panic"
)

var stages = []Stage{StageRequestReceived, StageResponseStarted, StageResponseComplete, StagePanic}

// Policy is an audit.k8s.io/v1 Policy: the first rule that matches a
// request sets its level; a request no rule matches is not audited.
type Policy struct {
	APIVersion        string  `json:"apiVersion"`
	Kind              string  `json:"kind"`
	Rules             []Rule  `json:"rules"`
	OmitStages        []Stage `json:"omitStages,omitempty"`
	OmitManagedFields bool    `json:"omitManagedFields,omitempty"`
}

// Rule is one PolicyRule. Empty lists match everything.
type Rule struct {
	Level           Level            `json:"level"`
	Users           []string         `json:"users,omitempty"`
	UserGroups      []string         `json:"userGroups,omitempty"`
	Verbs           []string         `json:"verbs,omitempty"`
	Resources       []GroupResources `json:"resources,omitempty"`
	Namespaces      []string         `json:"namespaces,omitempty"`
	NonResourceURLs []string         `json:"nonResourceURLs,omitempty"`
	OmitStages      []Stage          `json:"omitStages,omitempty"`
	// OmitManagedFields, when set, overrides the policy's.
	OmitManagedFields *bool `json:"omitManagedFields,omitempty"`
}

// GroupResources selects resources of one API group ("*" for any).
// Resources may name subresources ("pods/log"), all of one resource's
// subresources ("pods/*") or one subresource of any resource ("*/status").
type GroupResources struct {
	Group         string   `json:"group,omitempty"`
	Resources     []string `json:"resources,omitempty"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// Decision is what the policy says about one request.
type Decision struct {
	Level             Level
	OmitStages        []Stage
	OmitManagedFields bool
}

// Omits reports whether events of stage s are left out.
func (d Decision) Omits(s Stage) bool { return slices.Contains(d.OmitStages, s) }

// LoadPolicy reads and checks a Policy file (YAML or JSON).
func LoadPolicy(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading audit policy: %w", err)
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("audit policy %s: %w", path, err)
	}
	return p, nil
}

// ParsePolicy decodes and checks a Policy, refusing unknown fields so that
// a misspelt key does not silently widen or narrow what is audited.
func ParsePolicy(data []byte) (*Policy, error) {
	var p Policy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if p.Kind != "Policy" || p.APIVersion != "audit.k8s.io/v1" {
		return nil, fmt.Errorf("want apiVersion audit.k8s.io/v1 and kind Policy, got %q %q", p.APIVersion, p.Kind)
	}
	if len(p.Rules) == 0 {
		// Upstream refuses an empty policy too: it would audit nothing.
		return nil, errors.New("rules: at least one rule is required")
	}
	var errs []error
	errs = append(errs, checkStages("omitStages", p.OmitStages)...)
	for i, r := range p.Rules {
		field := fmt.Sprintf("rules[%d]", i)
		if r.Level.rank() < 0 {
			errs = append(errs, fmt.Errorf("%s.level: unsupported value %q", field, r.Level))
		}
		if len(r.NonResourceURLs) > 0 && (len(r.Resources) > 0 || len(r.Namespaces) > 0) {
			errs = append(errs, fmt.Errorf("%s: rules cannot apply to both regular resources and non-resource URLs", field))
		}
		for j, gr := range r.Resources {
			if len(gr.ResourceNames) > 0 && len(gr.Resources) == 0 {
				errs = append(errs, fmt.Errorf("%s.resources[%d].resourceNames: resourceNames require resources", field, j))
			}
		}
		errs = append(errs, checkStages(field+".omitStages", r.OmitStages)...)
	}
	return &p, errors.Join(errs...)
}

func checkStages(field string, ss []Stage) []error {
	var errs []error
	for _, s := range ss {
		if !slices.Contains(stages, s) {
			errs = append(errs, fmt.Errorf("%s: unsupported stage %q", field, s))
		}
	}
	return errs
}

// Decide returns the level and options of the first rule matching a, or
// level None. Secrets are capped at Metadata unless the matching rule
// names secrets explicitly (group "" and resource "secrets", with or
// without a subresource): a catch-all RequestResponse rule would otherwise
// copy every secret's data into the log.
func (p *Policy) Decide(a authz.Attributes) Decision {
	if p == nil {
		return Decision{Level: LevelNone}
	}
	for i := range p.Rules {
		r := &p.Rules[i]
		if !r.matches(a) {
			continue
		}
		d := Decision{Level: r.Level, OmitStages: p.OmitStages, OmitManagedFields: p.OmitManagedFields}
		if len(r.OmitStages) > 0 {
			d.OmitStages = append(slices.Clone(p.OmitStages), r.OmitStages...)
		}
		if r.OmitManagedFields != nil {
			d.OmitManagedFields = *r.OmitManagedFields
		}
		if isSecret(a) && d.Level.AtLeast(LevelRequest) && !r.namesSecrets() {
			d.Level = LevelMetadata
		}
		return d
	}
	return Decision{Level: LevelNone, OmitStages: p.OmitStages}
}

func isSecret(a authz.Attributes) bool {
	return a.ResourceRequest && a.APIGroup == "" && a.Resource == "secrets"
}

// namesSecrets reports whether r lists core secrets by name rather than
// by a wildcard or an empty list.
func (r *Rule) namesSecrets() bool {
	for _, gr := range r.Resources {
		if gr.Group != "" {
			continue
		}
		for _, res := range gr.Resources {
			if res == "secrets" || strings.HasPrefix(res, "secrets/") {
				return true
			}
		}
	}
	return false
}

// matches follows upstream's policy checker: users, groups and verbs
// first; then resources and namespaces for resource requests, or
// non-resource URLs for the others.
func (r *Rule) matches(a authz.Attributes) bool {
	if len(r.Users) > 0 && (a.User == nil || !slices.Contains(r.Users, a.User.Name)) {
		return false
	}
	if len(r.UserGroups) > 0 && (a.User == nil || !slices.ContainsFunc(a.User.Groups, func(g string) bool { return slices.Contains(r.UserGroups, g) })) {
		return false
	}
	if len(r.Verbs) > 0 && !slices.Contains(r.Verbs, a.Verb) {
		return false
	}
	if len(r.Namespaces) > 0 || len(r.Resources) > 0 {
		return r.matchesResource(a)
	}
	if len(r.NonResourceURLs) > 0 {
		return !a.ResourceRequest && slices.ContainsFunc(r.NonResourceURLs, func(spec string) bool { return pathMatches(a.Path, spec) })
	}
	return true
}

// pathMatches: "*" matches every path, "/x/*" every path under /x/.
func pathMatches(path, spec string) bool {
	if spec == "*" || spec == path {
		return true
	}
	return strings.HasSuffix(spec, "*") && strings.HasPrefix(path, strings.TrimRight(spec, "*"))
}

func (r *Rule) matchesResource(a authz.Attributes) bool {
	if !a.ResourceRequest {
		return false
	}
	// Cluster-scoped requests have namespace "", which a rule lists as "".
	if len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, a.Namespace) {
		return false
	}
	if len(r.Resources) == 0 {
		return true
	}
	combined := a.Resource
	if a.Subresource != "" {
		combined += "/" + a.Subresource
	}
	for _, gr := range r.Resources {
		if gr.Group != a.APIGroup && gr.Group != "*" {
			continue
		}
		if len(gr.Resources) == 0 {
			return true
		}
		if len(gr.ResourceNames) > 0 && !slices.Contains(gr.ResourceNames, a.Name) {
			continue
		}
		for _, res := range gr.Resources {
			switch {
			case res == combined || res == "*":
				return true
			case a.Subresource != "" && res == "*/"+a.Subresource:
				return true
			case strings.HasSuffix(res, "/*") && a.Resource == strings.TrimSuffix(res, "/*"):
				return true
			}
		}
	}
	return false
}
