package handler

import (
	"testing"

	"github.com/crdserver/crdserver/internal/registry"
)

func TestDeprecationWarning(t *testing.T) {
	def := &registry.Definition{Group: "stable.example.com", Kind: "CronTab", Versions: []registry.Version{
		{Name: "v1alpha1", Served: true, Deprecated: true},
		{Name: "v1beta1", Served: true, Deprecated: true},
		{Name: "v1", Served: true, Storage: true},
		{Name: "v2", Served: false},
		{Name: "v3", Served: true, Deprecated: true, DeprecationWarning: "v3 is gone next release"},
	}}
	for _, tc := range []struct{ version, want string }{
		{"v1alpha1", "stable.example.com/v1alpha1 CronTab is deprecated; use stable.example.com/v1 CronTab"},
		{"v1beta1", "stable.example.com/v1beta1 CronTab is deprecated; use stable.example.com/v1 CronTab"},
		{"v3", "v3 is gone next release"},
	} {
		for i := range def.Versions {
			if def.Versions[i].Name == tc.version {
				c := &call{def: def, version: &def.Versions[i]}
				if got := deprecationWarning(c); got != tc.want {
					t.Errorf("%s: %q, want %q", tc.version, got, tc.want)
				}
			}
		}
	}
	// No newer version: the plain message.
	only := &registry.Definition{Group: "g", Kind: "K", Versions: []registry.Version{{Name: "v2", Served: true, Deprecated: true}, {Name: "v1", Served: true}}}
	if got := deprecationWarning(&call{def: only, version: &only.Versions[0]}); got != "g/v2 K is deprecated" {
		t.Errorf("got %q", got)
	}
}
