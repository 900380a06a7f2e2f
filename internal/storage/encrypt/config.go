// Package encrypt encrypts stored values at rest, configured by upstream's
// apiserver.config.k8s.io/v1 EncryptionConfiguration and writing upstream's
// on-disk formats, so that data moves between crdserver and
// kube-apiserver in either direction. Wrap applies it to a
// storage.Interface.
package encrypt

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// configuration is the file format (apiserver.config.k8s.io/v1
// EncryptionConfiguration).
type configuration struct {
	Kind       string                  `json:"kind"`
	APIVersion string                  `json:"apiVersion"`
	Resources  []resourceConfiguration `json:"resources"`
}

type resourceConfiguration struct {
	Resources []string                `json:"resources"`
	Providers []providerConfiguration `json:"providers"`
}

type providerConfiguration struct {
	AESGCM    *keysConfiguration `json:"aesgcm,omitempty"`
	AESCBC    *keysConfiguration `json:"aescbc,omitempty"`
	Secretbox *keysConfiguration `json:"secretbox,omitempty"`
	Identity  *struct{}          `json:"identity,omitempty"`
	KMS       *struct {
		Name string `json:"name"`
	} `json:"kms,omitempty"`
}

type keysConfiguration struct {
	Keys []key `json:"keys"`
}

type key struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
}

// Config maps resources to their transformers.
type Config struct {
	byResource map[schema.GroupResource]*Transformer
}

// LoadConfig reads an EncryptionConfiguration file.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading encryption provider config: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("encryption provider config %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes and checks an EncryptionConfiguration. Every key
// is checked here, so that a bad key fails the start, not a request.
func ParseConfig(data []byte) (*Config, error) {
	var cfg configuration
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if cfg.Kind != "EncryptionConfiguration" || cfg.APIVersion != "apiserver.config.k8s.io/v1" {
		return nil, fmt.Errorf("want apiVersion apiserver.config.k8s.io/v1 and kind EncryptionConfiguration, got %q %q", cfg.APIVersion, cfg.Kind)
	}
	if len(cfg.Resources) == 0 {
		return nil, errors.New("resources: at least one is required")
	}
	c := &Config{byResource: map[schema.GroupResource]*Transformer{}}
	for i, rc := range cfg.Resources {
		field := fmt.Sprintf("resources[%d]", i)
		if len(rc.Resources) == 0 {
			return nil, fmt.Errorf("%s.resources: at least one resource is required", field)
		}
		if len(rc.Providers) == 0 {
			return nil, fmt.Errorf("%s.providers: at least one provider is required", field)
		}
		var providers []provider
		for j, pc := range rc.Providers {
			ps, err := providersOf(pc)
			if err != nil {
				return nil, fmt.Errorf("%s.providers[%d]: %w", field, j, err)
			}
			providers = append(providers, ps)
		}
		for _, r := range rc.Resources {
			gr, err := parseResource(r)
			if err != nil {
				return nil, fmt.Errorf("%s.resources: %w", field, err)
			}
			// As upstream: a resource after a wildcard that covers it
			// would never apply.
			for _, mask := range []schema.GroupResource{{Group: gr.Group, Resource: "*"}, {Group: "*", Resource: "*"}} {
				if _, ok := c.byResource[mask]; ok && mask != gr {
					return nil, fmt.Errorf("%s.resources: resource %q is masked by earlier rule %q", field, r, grString(mask))
				}
			}
			t := c.byResource[gr]
			if t == nil {
				t = &Transformer{}
				c.byResource[gr] = t
			}
			// A resource listed twice reads with both lists' providers;
			// the first list's first provider writes.
			t.providers = append(t.providers, providers...)
		}
	}
	return c, nil
}

// parseResource reads "secrets", "deployments.apps", "*.apps", "*." (every
// core resource) or "*.*".
func parseResource(s string) (schema.GroupResource, error) {
	res, group, _ := strings.Cut(s, ".")
	if res == "" || strings.Contains(res, "*") && res != "*" || strings.Contains(group, "*") && group != "*" || group == "*" && res != "*" {
		return schema.GroupResource{}, fmt.Errorf("%q: want resource.group, *.group, *. or *.*", s)
	}
	return schema.GroupResource{Group: group, Resource: res}, nil
}

func grString(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource + "."
	}
	return gr.Resource + "." + gr.Group
}

// For returns the transformer of gr, or nil when its values are stored
// as they are: the resource's own entry, else its group's *.group, else
// *.*.
func (c *Config) For(gr schema.GroupResource) *Transformer {
	if c == nil {
		return nil
	}
	for _, k := range []schema.GroupResource{gr, {Group: gr.Group, Resource: "*"}, {Group: "*", Resource: "*"}} {
		if t, ok := c.byResource[k]; ok {
			return t
		}
	}
	return nil
}

// providersOf builds one provider entry: exactly one of its kinds.
func providersOf(pc providerConfiguration) (provider, error) {
	n := 0
	for _, set := range []bool{pc.AESGCM != nil, pc.AESCBC != nil, pc.Secretbox != nil, pc.Identity != nil, pc.KMS != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return provider{}, errors.New("exactly one provider must be configured")
	}
	switch {
	case pc.Identity != nil:
		return provider{}, nil // the empty prefix reads anything not encrypted
	case pc.KMS != nil:
		return provider{}, errors.New("kms: not supported by crdserver (aescbc, aesgcm, secretbox and identity are)")
	case pc.AESGCM != nil:
		return keyedProvider("k8s:enc:aesgcm:v1:", pc.AESGCM, newGCM)
	case pc.AESCBC != nil:
		return keyedProvider("k8s:enc:aescbc:v1:", pc.AESCBC, newCBC)
	default:
		return keyedProvider("k8s:enc:secretbox:v1:", pc.Secretbox, newSecretbox)
	}
}

func keyedProvider(prefix string, kc *keysConfiguration, newCipher func([]byte) (cipher, error)) (provider, error) {
	if len(kc.Keys) == 0 {
		return provider{}, errors.New("keys: at least one key is required")
	}
	p := provider{prefix: prefix}
	seen := map[string]bool{}
	for i, k := range kc.Keys {
		if k.Name == "" || strings.Contains(k.Name, ":") {
			return provider{}, fmt.Errorf("keys[%d].name: %q must be non-empty and contain no colon", i, k.Name)
		}
		if seen[k.Name] {
			return provider{}, fmt.Errorf("keys[%d].name: %q is listed twice", i, k.Name)
		}
		seen[k.Name] = true
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			return provider{}, fmt.Errorf("keys[%d].secret: not base64: %w", i, err)
		}
		c, err := newCipher(secret)
		if err != nil {
			return provider{}, fmt.Errorf("keys[%d].secret: %w", i, err)
		}
		p.keys = append(p.keys, namedCipher{prefix: k.Name + ":", cipher: c})
	}
	return p, nil
}
