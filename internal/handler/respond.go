package handler

// Answers: an object in the version and form (itself, a Table row,
// PartialObjectMetadata) the client asked for, and a delete's Status.

import (
	"errors"
	"fmt"
	"net/http"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

// addWarning adds a Warning header to the answer, once: an update retried
// after a conflict finds the same problems again.
func addWarning(c *call, text string) {
	if w := fmt.Sprintf("299 - %q", text); !slices.Contains(c.w.Header().Values("Warning"), w) {
		c.w.Header().Add("Warning", w)
	}
}

// inVersion reports whether an encoded object is already in the request's
// version: objects stored before a storage-version change keep their old
// apiVersion until rewritten. Encoded objects start with apiVersion (keys
// are sorted).
func inVersion(c *call, encoded []byte) bool {
	return hasAPIVersion(encoded, c.apiVersion())
}
