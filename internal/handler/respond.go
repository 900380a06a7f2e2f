package handler

// Answers: an object in the version and form (itself, a Table row,
// PartialObjectMetadata) the client asked for, and a delete's Status.

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/crdserver/crdserver/internal/codec"
)

// writeObject sends one object in the form the client asked for.
func (h *Handler) writeObject(c *call, status int, obj map[string]any) {
	obj, err := c.conv().ToRequest(c.r.Context(), obj)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	if c.present != nil {
		out, err := c.present(obj)
		if err != nil {
			codec.WriteStatus(c.w, c.r, err)
			return
		}
		if c.media.As == "Table" && c.presentPrinter != nil {
			p, now := c.presentPrinter, h.now()
			rv, _ := metadata(out)["resourceVersion"].(string)
			t, err := buildTableWith(c, p.headers, func(o map[string]any) []any { return p.row(o, now) }, []map[string]any{out}, rv, "", nil)
			if err != nil {
				codec.WriteStatus(c.w, c.r, err)
				return
			}
			codec.WriteObject(c.w, status, c.media, t)
			return
		}
		writeObj(c, status, out)
		return
	}
	if c.media.As == "PartialObjectMetadataList" {
		// A list form for one object. Upstream's conversion of a custom
		// resource fails with an error that is not a Status (a 500 with
		// reason Unknown); a built-in's is refused as not a list.
		if c.def.Custom() {
			codec.WriteStatus(c.w, c.r, unknownError(errors.New("content is not a list")))
		} else {
			codec.WriteStatus(c.w, c.r, statusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
				fmt.Sprintf("you requested PartialObjectMetadataList, but the requested object is not a list (*%s.%s)", internalPackage(c.def.Group), c.def.Kind)))
		}
		return
	}
	out, err := h.asRequested(c, obj)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	writeObj(c, status, out)
}

// asRequested is one object in the form the client's Accept names: itself,
// a one-row Table, or its PartialObjectMetadata. Watches send each event's
// object, bookmarks included, through it.
func (h *Handler) asRequested(c *call, obj map[string]any) (any, error) {
	switch c.media.As {
	case "":
		return obj, nil
	case "Table":
		rv, _ := metadata(obj)["resourceVersion"].(string)
		return h.buildTable(c, []map[string]any{obj}, rv, "", nil)
	case "PartialObjectMetadata", "PartialObjectMetadataList":
		return partialMetadata(obj, metaVersion(c)), nil
	default:
		return nil, notAcceptable(c.media.As)
	}
}

func metaVersion(c *call) string {
	if c.media.Version == "v1beta1" {
		return "v1beta1"
	}
	return "v1"
}

func notAcceptable(as string) error {
	return statusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
		fmt.Sprintf("only the following media types are accepted: application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io; as=%s is not served", as))
}

// deleteStatus is the Status a delete answers with for most resources.
func deleteStatus(c *call, obj map[string]any) *metav1.Status {
	md := metadata(obj)
	name, _ := md["name"].(string)
	uid, _ := md["uid"].(string)
	return deletedStatus(c, name, uid)
}

// deletedStatus answers the delete of the object name with uid.
func deletedStatus(c *call, name, uid string) *metav1.Status {
	return &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details: &metav1.StatusDetails{
			Name: name, Group: c.def.Group, Kind: c.def.Resource, UID: types.UID(uid),
		},
	}
}

// addWarning adds a Warning header to the answer as upstream's warning
// recorder does: each text once (an update retried after a conflict finds
// the same problems again), none that has control characters, and past
// warningRunes in all, every one cut to warningItemRunes.
func addWarning(c *call, text string) {
	if c.warnings == nil {
		c.warnings = &warningRecorder{}
	}
	c.warnings.add(c.w.Header(), text)
}

// Upstream's limits on the warnings of one answer, in runes of text.
const (
	warningRunes     = 4 << 10
	warningItemRunes = 256
)

// warningRecorder is one answer's warnings so far.
type warningRecorder struct {
	texts      []string // once each, in order
	runes      int      // of the texts in the header
	truncating bool
}

func (wr *warningRecorder) add(h http.Header, text string) {
	if text == "" || slices.Contains(wr.texts, text) || wr.truncating && wr.runes >= warningRunes {
		return
	}
	wr.texts = append(wr.texts, text)
	if n := utf8.RuneCountInString(text); wr.truncating || wr.runes+n <= warningRunes {
		wr.write(h, text)
		return
	}
	// Over the limit: from now on every text is cut short, those sent
	// already included.
	wr.truncating, wr.runes = true, 0
	h.Del("Warning")
	for _, t := range wr.texts {
		wr.write(h, t)
	}
}

// write adds text to h, cut short when truncating; a text the header
// cannot carry (control characters) is left out.
func (wr *warningRecorder) write(h http.Header, text string) {
	n := utf8.RuneCountInString(text)
	if wr.truncating && n > warningItemRunes {
		text, n = string([]rune(text)[:warningItemRunes]), warningItemRunes
	}
	v, err := utilnet.NewWarningHeader(299, "", text)
	if err != nil {
		return
	}
	wr.runes += n
	h.Add("Warning", v)
}

// inVersion reports whether an encoded object is already in the request's
// version: objects stored before a storage-version change keep their old
// apiVersion until rewritten. Encoded objects start with apiVersion (keys
// are sorted).
func inVersion(c *call, encoded []byte) bool {
	return hasAPIVersion(encoded, c.apiVersion())
}
