package zpages

import (
	"fmt"
	"html"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/version"
)

// status is what /statusz shows.
type status struct {
	started          time.Time
	uptime           int64 // seconds, never negative
	goVersion        string
	binaryVersion    string
	emulationVersion string
	paths            []string
}

// newStatus is the status at now of a server started at started whose
// index lists what paths returns (nil: nothing).
//
// The versions are those /version reports (version.Get), so that the two
// pages agree. The binary version is the gitVersion without its "v", as
// upstream writes its own ("1.37.2"): the Kubernetes release whose API
// crdserver serves, with crdserver's build as its build metadata
// ("1.37.0+crdserver.0.3.0"), since crdserver is not that release's
// binary but answers as it does. The emulation version is the release
// crdserver behaves as, "1.37", as upstream writes an emulation version:
// major.minor.
func newStatus(started, now time.Time, paths func() []string) status {
	info := version.Get()
	s := status{
		started:          started,
		uptime:           max(0, int64(now.Sub(started).Seconds())),
		goVersion:        info.GoVersion,
		binaryVersion:    strings.TrimPrefix(info.GitVersion, "v"),
		emulationVersion: info.EmulationMajor + "." + info.EmulationMinor,
	}
	if paths != nil {
		s.paths = listedPaths(paths())
	}
	return s
}

// unlisted are the first segments /statusz leaves out, as upstream does:
// those of the APIs and of the documents describing them.
var unlisted = []string{"/api", "/apis", "/openapi", "/openid", "/.well-known"}

// listedPaths is the first segment of each of paths ("/healthz" for
// "/healthz/etcd"), each once and sorted, but those unlisted; nil when
// there is none.
func listedPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		first, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
		if !strings.HasPrefix(p, "/") || first == "" {
			continue
		}
		if first = "/" + first; !slices.Contains(unlisted, first) && !slices.Contains(out, first) {
			out = append(out, first)
		}
	}
	slices.Sort(out)
	return out
}

// text writes the values HTML-escaped, as upstream does; an empty
// emulation version or path list leaves an empty line.
func (s status) text(delim string) string {
	var b strings.Builder
	line := func(name, value string) {
		if value != "" {
			fmt.Fprintf(&b, "%s%s %s", name, delim, html.EscapeString(value))
		}
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	line("Started", s.started.Format(time.UnixDate))
	line("Up", fmt.Sprintf("%d hr %02d min %02d sec", s.uptime/3600, s.uptime/60%60, s.uptime%60))
	line("Go version", s.goVersion)
	line("Binary version", s.binaryVersion)
	line("Emulation version", s.emulationVersion)
	line("Paths", strings.Join(s.paths, " "))
	return b.String()
}

// statuszObject is config.k8s.io's Statusz, the same in v1alpha1 and
// v1beta1, its fields in upstream's order.
type statuszObject struct {
	objectHead
	StartTime        metav1.Time `json:"startTime"`
	UptimeSeconds    int64       `json:"uptimeSeconds"`
	GoVersion        string      `json:"goVersion"`
	BinaryVersion    string      `json:"binaryVersion"`
	EmulationVersion string      `json:"emulationVersion,omitempty"`
	Paths            []string    `json:"paths"`
}

func (s status) object(head objectHead) any {
	return statuszObject{
		objectHead:       head,
		StartTime:        metav1.NewTime(s.started),
		UptimeSeconds:    s.uptime,
		GoVersion:        s.goVersion,
		BinaryVersion:    s.binaryVersion,
		EmulationVersion: s.emulationVersion,
		Paths:            s.paths,
	}
}

// flags is what /flagz shows: each flag's name and value.
type flags map[string]string

// text has a line per flag, sorted by name; values are written as they
// are, as upstream writes them.
func (f flags) text(delim string) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(f)) {
		fmt.Fprintf(&b, "%s%s%s\n", name, delim, f[name])
	}
	return b.String()
}

// flagzObject is config.k8s.io's Flagz, the same in v1alpha1 and v1beta1.
type flagzObject struct {
	objectHead
	Flags map[string]string `json:"flags,omitempty"`
}

func (f flags) object(head objectHead) any { return flagzObject{objectHead: head, Flags: f} }
