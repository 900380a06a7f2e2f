package zpages

import (
	"encoding/json"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/codec"
)

// group is the API group of the pages' objects.
const group = "config.k8s.io"

// deprecated tells, for each version of the pages' objects, whether it is
// deprecated.
var deprecated = map[string]bool{"v1alpha1": true, "v1beta1": false}

const mediaText = "text/plain"

// offered are the media types a page is written in, in the order upstream
// tries them against each clause of an Accept header. Upstream's CBOR is
// behind a feature gate off in 1.37, and protobuf is never offered.
var offered = []struct{ typ, sub, media string }{
	{"application", "json", codec.MediaJSON},
	{"application", "yaml", codec.MediaYAML},
	{"text", "plain", mediaText},
}

// form is what a clause asks of the media type it covers.
type form struct {
	media string // one of offered's
	// converts is set when the clause names a conversion (as, g or v,
	// even empty); as, group and version are what it names.
	converts              bool
	as, group, version    string
	stream, serverVersion string // the stream and sv parameters
	pretty                bool   // pretty=1
}

// negotiate picks a form from an Accept header as upstream does: the
// clauses in order of quality, then specificity; in each, the media types
// it covers in offered's order; the first form allow accepts wins.
func negotiate(accept string, allow func(form) bool) (form, bool) {
	for _, c := range codec.AcceptClauses(accept) {
		f := readParams(c)
		for _, o := range offered {
			f.media = o.media
			if c.Covers(o.typ, o.sub) && allow(f) {
				return f, true
			}
		}
	}
	return form{}, false
}

// readParams reads the parameters of a clause; a parameter given twice
// is its last value, others are ignored.
func readParams(c codec.AcceptClause) form {
	var f form
	for _, p := range c.Params {
		switch p.Key {
		case "as":
			f.as, f.converts = p.Value, true
		case "g":
			f.group, f.converts = p.Value, true
		case "v":
			f.version, f.converts = p.Value, true
		case "stream":
			f.stream = p.Value
		case "sv":
			f.serverVersion = p.Value
		case "pretty":
			f.pretty = p.Value == "1"
		}
	}
	return f
}

// pageForms accepts the forms of the page of kind: its text without a
// conversion, or its object in JSON or YAML converted to kind in one of
// the group's versions; never a stream nor a server version.
func pageForms(kind string) func(form) bool {
	return func(f form) bool {
		if f.stream != "" || f.serverVersion != "" {
			return false
		}
		if f.media == mediaText {
			return !f.converts
		}
		_, known := deprecated[f.version]
		return f.converts && f.as == kind && f.group == group && known
	}
}

// statusForms accepts the forms of a Status, as upstream's default
// restrictions do: JSON or YAML without a conversion, JSON's watch stream
// too. Text would be accepted upstream as well but is never reached: a
// clause that takes the text without a conversion took the page first.
func statusForms(f form) bool {
	switch {
	case f.media == mediaText, f.converts, f.serverVersion != "":
		return false
	case f.stream != "":
		return f.media == codec.MediaJSON && f.stream == "watch"
	}
	return true
}

// notAcceptable is upstream's 406 for a page: the media types it is
// written in.
var notAcceptable = &apierrors.StatusError{ErrStatus: metav1.Status{
	Status:  metav1.StatusFailure,
	Code:    http.StatusNotAcceptable,
	Reason:  metav1.StatusReasonNotAcceptable,
	Message: "only the following media types are accepted: " + strings.Join([]string{codec.MediaJSON, codec.MediaYAML, mediaText}, ", "),
}}

// writeNotAcceptable answers notAcceptable in the first form of a Status
// accept takes (codec.WriteStatus would also offer protobuf, which the
// pages' serializers lack), and when there is none, as indented JSON.
func writeNotAcceptable(w http.ResponseWriter, r *http.Request, accept string) {
	st, _ := codec.ErrorToStatus(notAcceptable)
	b, err := json.Marshal(&st)
	if err != nil {
		codec.WriteStatus(w, r, err)
		return
	}
	mt := codec.MediaType{Type: codec.MediaJSON, Pretty: true}
	if f, ok := negotiate(accept, statusForms); ok {
		mt = codec.MediaType{Type: f.media, Pretty: f.pretty || codec.PrettyRequested(r)}
	}
	codec.WriteRaw(w, http.StatusNotAcceptable, mt, b)
}
