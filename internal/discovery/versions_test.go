package discovery

import (
	"slices"
	"testing"
)

func TestSortVersions(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{{
		// The example list of the CRD versioning documentation.
		name: "documentation example",
		in:   []string{"foo10", "v11alpha2", "v1", "v3beta1", "v10", "foo1", "v12alpha1", "v2", "v10beta3", "v11beta2"},
		want: []string{"v10", "v2", "v1", "v11beta2", "v10beta3", "v3beta1", "v12alpha1", "v11alpha2", "foo1", "foo10"},
	}, {
		name: "ga before beta",
		in:   []string{"v1beta1", "v1"},
		want: []string{"v1", "v1beta1"},
	}, {
		name: "non kube names alphabetically, not numerically",
		in:   []string{"version2", "alpha", "foo10", "foo9"},
		want: []string{"alpha", "foo10", "foo9", "version2"},
	}, {
		name: "single",
		in:   []string{"v1"},
		want: []string{"v1"},
	}, {
		name: "empty",
		in:   []string{},
		want: []string{},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slices.Clone(tt.in)
			SortVersions(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("SortVersions(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestStorageVersionHash(t *testing.T) {
	tests := []struct {
		group, version, kind, want string
	}{
		// The value kube-apiserver publishes for namespaces.
		{"", "v1", "Namespace", "Q3oi5N2YM8M="},
	}
	for _, tt := range tests {
		if got := StorageVersionHash(tt.group, tt.version, tt.kind); got != tt.want {
			t.Errorf("StorageVersionHash(%q, %q, %q) = %q, want %q", tt.group, tt.version, tt.kind, got, tt.want)
		}
	}
}
