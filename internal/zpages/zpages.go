// Package zpages serves kube-apiserver's component pages, /statusz and
// /flagz, as it serves them: for people debugging a server, what it is
// (its versions, when it started, the paths it serves) and how it was
// started (its flags).
//
// A page is text unless the client asks for its object by kind
// (application/json;as=Statusz;g=config.k8s.io;v=v1beta1, or YAML, or the
// deprecated v1alpha1). The text warns that it is not meant to be parsed,
// and each request picks at random how names are separated from values,
// so that nobody parses it anyway.
package zpages

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/crdserver/crdserver/internal/codec"
)

// Config is what the pages show. Its zero value serves pages with no
// flags and no paths. Fields must not change once a page serves.
type Config struct {
	// Component names the server on each page; kube-apiserver's pages
	// say "apiserver".
	Component string
	// Started is when the server started: /statusz shows it, to the
	// second, and the time since.
	Started time.Time
	// Paths returns the paths the server's index lists (GET /), called
	// for each /statusz request; nil lists none.
	Paths func() []string
	// Flags returns the server's command-line flags, each name with its
	// value as the flag prints it, called for each /flagz request; nil
	// shows none.
	Flags func() map[string]string
	// Now is the clock uptime is measured by; nil is time.Now.
	Now func() time.Time
}

// Statusz serves /statusz: the server's start time and uptime, its Go,
// binary and emulation versions, and the first segment of each path its
// index lists (see listedPaths), but those of the APIs and their
// documents.
func Statusz(c Config) http.Handler { return statuszPage(c) }

// Flagz serves /flagz: the server's flags and their values, sorted by
// name.
func Flagz(c Config) http.Handler { return flagzPage(c) }

func statuszPage(c Config) *page {
	started := c.Started.Truncate(time.Second) // upstream reads the process's start in whole seconds
	now := c.Now
	if now == nil {
		now = time.Now
	}
	return &page{
		component: c.Component,
		name:      "statusz",
		kind:      "Statusz",
		delimiter: randomDelimiter,
		read:      func() content { return newStatus(started, now(), c.Paths) },
	}
}

func flagzPage(c Config) *page {
	return &page{
		component: c.Component,
		name:      "flagz",
		kind:      "Flagz",
		// Upstream renders its flagz text once and answers the same text
		// afterwards, so its delimiter holds for the life of the server.
		delimiter: sync.OnceValue(randomDelimiter),
		read: func() content {
			if c.Flags == nil {
				return flags(nil)
			}
			return flags(c.Flags())
		},
	}
}

// content is what a page shows, read anew for each request, in either
// form.
type content interface {
	// text is the text form below the page's title and warning, each
	// name separated from its value by delim.
	text(delim string) string
	// object is the config.k8s.io object of the page's kind, whose kind,
	// apiVersion and metadata are head.
	object(head objectHead) any
}

// objectHead is what the objects of both pages begin with.
type objectHead struct {
	Kind       string     `json:"kind"`
	APIVersion string     `json:"apiVersion"`
	Metadata   objectMeta `json:"metadata"`
}

type objectMeta struct {
	Name string `json:"name"`
}

// page serves one component page.
type page struct {
	component string        // the server's name on the page
	name      string        // "statusz" or "flagz": the path's and the title's
	kind      string        // of the page's object: "Statusz" or "Flagz"
	delimiter func() string // for a text answer
	read      func() content
}

var _ http.Handler = (*page)(nil)

// ServeHTTP answers whatever the method, as upstream's mux does: the text
// when the request has no Accept header or negotiates text, the object
// when it negotiates one, and otherwise a 406 Status.
func (p *page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	accept := r.Header.Get("Accept")
	if strings.TrimSpace(accept) == "" {
		p.writeText(w)
		return
	}
	f, ok := negotiate(accept, pageForms(p.kind))
	switch {
	case !ok:
		writeNotAcceptable(w, r, accept)
	case f.media == mediaText:
		p.writeText(w)
	default:
		p.writeObject(w, r, f)
	}
}

// warning is the line below each page's title.
const warning = "Warning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only."

func (p *page) writeText(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "\n%s %s\n%s\n%s", p.component, p.name, warning, p.read().text(p.delimiter()))
}

// writeObject answers the page's object in the form f names: its
// Content-Type names the kind and version, and the deprecated version
// has a Warning saying so.
func (p *page) writeObject(w http.ResponseWriter, r *http.Request, f form) {
	head := objectHead{Kind: p.kind, APIVersion: group + "/" + f.version, Metadata: objectMeta{Name: p.component}}
	b, err := json.Marshal(p.read().object(head))
	if err != nil {
		codec.WriteStatus(w, r, fmt.Errorf("encoding %s: %w", p.name, err))
		return
	}
	body, ctype, err := codec.Render(codec.MediaType{Type: f.media, Pretty: f.pretty || codec.PrettyRequested(r)}, b)
	if err != nil {
		codec.WriteStatus(w, r, fmt.Errorf("encoding %s: %w", p.name, err))
		return
	}
	h := w.Header()
	if deprecated[f.version] {
		h.Set("Warning", `299 - "This version of the `+p.name+` endpoint is deprecated. Please use a newer version."`)
	}
	// The parameters in the order upstream writes them; client-go reads
	// them by name.
	h.Set("Content-Type", ctype+";g="+group+";v="+f.version+";as="+p.kind)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// delimiters are those upstream separates a name from its value with on
// a text page.
var delimiters = []string{":", ": ", "=", " "}

func randomDelimiter() string { return delimiters[rand.IntN(len(delimiters))] }
