package version

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

func TestGitVersionParses(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	tests := []struct {
		version string
		want    string
	}{
		{"dev", "v1.37.0+crdserver.dev"},
		{"0.3.1", "v1.37.0+crdserver.0.3.1"},
		{"v0.3.1-rc.1", "v1.37.0+crdserver.0.3.1-rc.1"},
		{"0.3.1+dirty_tree", "v1.37.0+crdserver.0.3.1-dirty-tree"},
		{"", "v1.37.0+crdserver.dev"},
		{"..", "v1.37.0+crdserver.dev"},
	}
	for _, tt := range tests {
		Version = tt.version
		got := Get().GitVersion
		if got != tt.want {
			t.Errorf("Version %q: gitVersion = %q, want %q", tt.version, got, tt.want)
		}
		sv, err := utilversion.ParseSemantic(got)
		if err != nil {
			t.Errorf("ParseSemantic(%q): %v", got, err)
			continue
		}
		if sv.Major() != 1 || sv.Minor() != 37 || sv.Patch() != 0 {
			t.Errorf("ParseSemantic(%q) = %v", got, sv)
		}
		if _, err := utilversion.ParseGeneric(got); err != nil {
			t.Errorf("ParseGeneric(%q): %v", got, err)
		}
	}
}

func TestClientGoServerVersion(t *testing.T) {
	srv := httptest.NewServer(Handler{})
	defer srv.Close()
	dc := discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL})
	info, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if info.Major != "1" || info.Minor != "37" || info.GitVersion != "v1.37.0+crdserver."+buildMetadata(Version) {
		t.Errorf("ServerVersion = %+v", info)
	}
	if info.GoVersion != runtime.Version() || info.Platform != runtime.GOOS+"/"+runtime.GOARCH || info.Compiler != runtime.Compiler {
		t.Errorf("build fields = %+v", info)
	}
	if info.EmulationMinor != "37" || info.MinCompatibilityMinor != "36" {
		t.Errorf("compatibility fields = %+v", info)
	}

	// Indented whoever asks, without a final newline, as upstream's.
	resp, err := http.Get(srv.URL + "?pretty=false")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want, _ := json.MarshalIndent(Get(), "", "  "); string(body) != string(want) {
		t.Errorf("GET /version: %q, want %q", body, want)
	}

}

func TestServes(t *testing.T) {
	for _, tc := range []struct {
		major, minor int
		want         bool
	}{{1, 16, true}, {1, 37, true}, {1, 38, false}, {2, 0, false}, {0, 99, true}} {
		if got := Serves(tc.major, tc.minor); got != tc.want {
			t.Errorf("Serves(%d, %d) = %v, want %v", tc.major, tc.minor, got, tc.want)
		}
	}
}
