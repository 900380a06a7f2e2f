// Package oidc authenticates JWTs from OpenID Connect issuers configured by
// upstream's structured authentication configuration
// (apiserver.config.k8s.io AuthenticationConfiguration, the file behind
// --authentication-config): each issuer's keys come from its discovery
// document, and claims become a user through claim mappings and CEL
// expressions, checked by claim and user validation rules.
package oidc

import (
	"fmt"
	"net/url"
	"os"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// Configuration is the part of an AuthenticationConfiguration this package
// reads. Its fields and their JSON names are upstream's (v1, v1beta1 and
// v1alpha1 agree on them).
type Configuration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	JWT        []JWT  `json:"jwt"`
	// Anonymous is accepted and reported, not acted on here: the server
	// reads it (see Anonymous).
	Anonymous *Anonymous `json:"anonymous,omitempty"`
}

// Anonymous is the configuration's anonymous section.
type Anonymous struct {
	Enabled    bool             `json:"enabled"`
	Conditions []AnonymousPaths `json:"conditions,omitempty"`
}

// AnonymousPaths is one anonymous condition: a path anonymous requests may
// reach.
type AnonymousPaths struct {
	Path string `json:"path"`
}

// JWT is one issuer.
type JWT struct {
	Issuer               Issuer                `json:"issuer"`
	ClaimValidationRules []ClaimValidationRule `json:"claimValidationRules,omitempty"`
	ClaimMappings        ClaimMappings         `json:"claimMappings"`
	UserValidationRules  []UserValidationRule  `json:"userValidationRules,omitempty"`
}

// Issuer says where tokens come from and whom they are for.
type Issuer struct {
	URL                  string   `json:"url"`
	DiscoveryURL         string   `json:"discoveryURL,omitempty"`
	CertificateAuthority string   `json:"certificateAuthority,omitempty"`
	Audiences            []string `json:"audiences"`
	AudienceMatchPolicy  string   `json:"audienceMatchPolicy,omitempty"`
	EgressSelectorType   string   `json:"egressSelectorType,omitempty"`
}

// ClaimValidationRule is a required claim value or a CEL expression that
// must hold.
type ClaimValidationRule struct {
	Claim         string `json:"claim,omitempty"`
	RequiredValue string `json:"requiredValue,omitempty"`
	Expression    string `json:"expression,omitempty"`
	Message       string `json:"message,omitempty"`
}

// ClaimMappings turn claims into the user's attributes.
type ClaimMappings struct {
	Username PrefixedClaimOrExpression `json:"username"`
	Groups   PrefixedClaimOrExpression `json:"groups,omitempty"`
	UID      ClaimOrExpression         `json:"uid,omitempty"`
	Extra    []ExtraMapping            `json:"extra,omitempty"`
}

// PrefixedClaimOrExpression is a claim (with a prefix) or an expression.
type PrefixedClaimOrExpression struct {
	Claim      string  `json:"claim,omitempty"`
	Prefix     *string `json:"prefix,omitempty"`
	Expression string  `json:"expression,omitempty"`
}

// ClaimOrExpression is a claim or an expression.
type ClaimOrExpression struct {
	Claim      string `json:"claim,omitempty"`
	Expression string `json:"expression,omitempty"`
}

// ExtraMapping is one extra key and the expression of its values.
type ExtraMapping struct {
	Key             string `json:"key"`
	ValueExpression string `json:"valueExpression"`
}

// UserValidationRule is a CEL expression over the mapped user that must
// hold.
type UserValidationRule struct {
	Expression string `json:"expression"`
	Message    string `json:"message,omitempty"`
}

// Load reads and validates an AuthenticationConfiguration file. Unknown
// fields are errors, as upstream decodes the file strictly.
func Load(path string) (*Configuration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("authentication config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("authentication config %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes and validates a configuration.
func Parse(data []byte) (*Configuration, error) {
	var c Configuration
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, err
	}
	switch c.APIVersion {
	case "apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1beta1", "apiserver.config.k8s.io/v1alpha1":
	default:
		return nil, fmt.Errorf("unknown apiVersion %q: want apiserver.config.k8s.io/v1", c.APIVersion)
	}
	if c.Kind != "AuthenticationConfiguration" {
		return nil, fmt.Errorf("kind %q: want AuthenticationConfiguration", c.Kind)
	}
	if errs := c.validate(); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return &c, nil
}

func (c *Configuration) validate() field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, j := range c.JWT {
		p := field.NewPath("jwt").Index(i)
		ip := p.Child("issuer")
		u, err := url.Parse(j.Issuer.URL)
		switch {
		case j.Issuer.URL == "":
			errs = append(errs, field.Required(ip.Child("url"), ""))
		case err != nil || u.Scheme != "https" || u.Host == "":
			errs = append(errs, field.Invalid(ip.Child("url"), j.Issuer.URL, "URL scheme must be https"))
		case seen[j.Issuer.URL]:
			errs = append(errs, field.Duplicate(ip.Child("url"), j.Issuer.URL))
		}
		seen[j.Issuer.URL] = true
		if len(j.Issuer.Audiences) == 0 {
			errs = append(errs, field.Required(ip.Child("audiences"), "at least one jwt.issuer.audiences is required"))
		}
		if m := j.Issuer.AudienceMatchPolicy; m != "" && m != "MatchAny" {
			errs = append(errs, field.NotSupported(ip.Child("audienceMatchPolicy"), m, []string{"MatchAny"}))
		}
		un := j.ClaimMappings.Username
		up := p.Child("claimMappings", "username")
		switch {
		case un.Claim == "" && un.Expression == "":
			errs = append(errs, field.Required(up, "claim or expression is required"))
		case un.Claim != "" && un.Expression != "":
			errs = append(errs, field.Invalid(up, "", "claim and expression can't both be set"))
		case un.Claim != "" && un.Prefix == nil:
			errs = append(errs, field.Required(up.Child("prefix"), "prefix is required when claim is set. It can be set to an empty string to disable prefixing"))
		case un.Expression != "" && un.Prefix != nil:
			errs = append(errs, field.Invalid(up.Child("prefix"), *un.Prefix, "may not be specified when expression is set"))
		}
		g := j.ClaimMappings.Groups
		if g.Claim != "" && g.Expression != "" {
			errs = append(errs, field.Invalid(p.Child("claimMappings", "groups"), "", "claim and expression can't both be set"))
		}
		if g.Claim != "" && g.Prefix == nil {
			errs = append(errs, field.Required(p.Child("claimMappings", "groups", "prefix"), "prefix is required when claim is set. It can be set to an empty string to disable prefixing"))
		}
		if id := j.ClaimMappings.UID; id.Claim != "" && id.Expression != "" {
			errs = append(errs, field.Invalid(p.Child("claimMappings", "uid"), "", "claim and expression can't both be set"))
		}
		for k, r := range j.ClaimValidationRules {
			rp := p.Child("claimValidationRules").Index(k)
			if (r.Claim == "") == (r.Expression == "") {
				errs = append(errs, field.Invalid(rp, "", "exactly one of claim or expression is required"))
			}
		}
	}
	return errs
}
