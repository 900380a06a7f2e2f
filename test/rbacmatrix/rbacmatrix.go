// Package rbacmatrix reads the authorization matrix of the RBAC tests
// (test/e2e/testdata/rbac/matrix.yaml): users and service accounts ×
// verbs × resources × namespaces, and non-resource paths. The e2e test
// asks crdserver every case and keeps the answers in decisions.txt;
// compat/rbac asks upstream's authorizer the same cases and requires the
// same answers. Both word a decision with Case.Line.
package rbacmatrix

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// matrix is matrix.yaml.
type matrix struct {
	Users []struct {
		Name   string   `json:"name"`
		Groups []string `json:"groups"`
	} `json:"users"`
	Verbs     []string `json:"verbs"`
	Resources []struct {
		Group       string `json:"group"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Name        string `json:"name"`
	} `json:"resources"`
	Namespaces []string `json:"namespaces"`
	Paths      []string `json:"paths"`
}

// Case is one question: may User (in Groups) do Verb on the resource (or
// Path, when not ResourceRequest)?
type Case struct {
	User   string
	Groups []string
	Verb   string

	ResourceRequest                               bool
	Group, Resource, Subresource, Namespace, Name string
	Path                                          string
}

// pathVerbs are the verbs asked of every path.
var pathVerbs = []string{"get", "post"}

// Load returns the cases of the matrix file, in the order decisions.txt
// has them: by user, then namespace, resource and verb, then paths.
func Load(file string) ([]Case, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var m matrix
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var cases []Case
	for _, u := range m.Users {
		for _, ns := range m.Namespaces {
			for _, r := range m.Resources {
				for _, verb := range m.Verbs {
					cases = append(cases, Case{User: u.Name, Groups: u.Groups, Verb: verb, ResourceRequest: true,
						Group: r.Group, Resource: r.Resource, Subresource: r.Subresource, Namespace: ns, Name: r.Name})
				}
			}
		}
		for _, p := range m.Paths {
			for _, verb := range pathVerbs {
				cases = append(cases, Case{User: u.Name, Groups: u.Groups, Verb: verb, Path: p})
			}
		}
	}
	return cases, nil
}

// Line words the decision of c: allow, or deny with the denial's reason.
// An allowed case's reason is left out: it names one of the bindings that
// allow, which upstream picks in no set order.
func (c Case) Line(allowed bool, reason string) string {
	what := c.Verb + " " + c.Path
	if c.ResourceRequest {
		res := c.Group + "/" + c.Resource
		if c.Subresource != "" {
			res += "/" + c.Subresource
		}
		what = fmt.Sprintf("%s %s ns=%q name=%q", c.Verb, res, c.Namespace, c.Name)
	}
	switch {
	case allowed:
		return c.User + " " + what + ": allow"
	case reason != "":
		return c.User + " " + what + ": deny: " + reason
	}
	return c.User + " " + what + ": deny"
}
