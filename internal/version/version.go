// Package version serves /version: the Kubernetes version crdserver is
// compatible with, and which crdserver build answers.
package version

import (
	"encoding/json"
	"net/http"
	"runtime"
	"strconv"
	"strings"

	apiversion "k8s.io/apimachinery/pkg/version"
)

// Build information, set at link time:
//
//	go build -ldflags "-X github.com/crdserver/crdserver/internal/version.Version=0.3.0 \
//	  -X github.com/crdserver/crdserver/internal/version.GitCommit=$(git rev-parse HEAD) \
//	  -X github.com/crdserver/crdserver/internal/version.BuildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
var (
	// Version is crdserver's own version. It becomes the build metadata of
	// gitVersion, so clients still see the Kubernetes version they check.
	Version = "dev"
	// GitCommit is the commit the binary was built from.
	GitCommit = ""
	// GitTreeState is "clean" or "dirty".
	GitTreeState = ""
	// BuildDate is when the binary was built, RFC 3339 in UTC.
	BuildDate = "1970-01-01T00:00:00Z"
)

// The Kubernetes version whose API crdserver serves.
const (
	kubeMajor = "1"
	kubeMinor = "37"
	// minCompatibilityMinor is one minor release back, as upstream reports.
	minCompatibilityMinor = "36"
)

// Serves reports whether the Kubernetes release crdserver serves is
// major.minor or later.
func Serves(major, minor int) bool {
	m, _ := strconv.Atoi(kubeMajor)
	n, _ := strconv.Atoi(kubeMinor)
	return major < m || major == m && minor <= n
}

// Get returns the version information /version serves. gitVersion is
// "v1.37.0+crdserver.<Version>", a valid semantic version whose build
// metadata names the crdserver release.
func Get() apiversion.Info {
	return apiversion.Info{
		Major:                 kubeMajor,
		Minor:                 kubeMinor,
		EmulationMajor:        kubeMajor,
		EmulationMinor:        kubeMinor,
		MinCompatibilityMajor: kubeMajor,
		MinCompatibilityMinor: minCompatibilityMinor,
		GitVersion:            "v" + kubeMajor + "." + kubeMinor + ".0+crdserver." + buildMetadata(Version),
		GitCommit:             GitCommit,
		GitTreeState:          GitTreeState,
		BuildDate:             BuildDate,
		GoVersion:             runtime.Version(),
		Compiler:              runtime.Compiler,
		Platform:              runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// buildMetadata makes v fit semver build metadata (dot-separated
// [0-9A-Za-z-] identifiers), so that clients parsing gitVersion never fail on
// an unusual -ldflags value: other characters become '-', empty identifiers
// are dropped.
func buildMetadata(v string) string {
	v = strings.TrimPrefix(v, "v")
	var ids []string
	for _, id := range strings.Split(v, ".") {
		id = strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' {
				return r
			}
			return '-'
		}, id)
		if id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return "dev"
	}
	return strings.Join(ids, ".")
}

// Handler serves /version. The zero value is ready to use. The router
// checks the method and Accept header first, as upstream's does.
type Handler struct{}

var _ http.Handler = Handler{}

// ServeHTTP writes the version.Info as JSON, always indented and without
// a final newline, as upstream writes it (MarshalIndent, whoever asks).
func (Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := json.MarshalIndent(Get(), "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}
