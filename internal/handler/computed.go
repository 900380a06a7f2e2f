package handler

import (
	"encoding/json"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// The reads of a resource whose objects are made on each request
// (registry.Reader) answer what the hooks give: nothing is stored, so
// there is no resourceVersion and nothing to watch.

func (h *Handler) getComputed(c *call, rd registry.Reader) {
	obj, err := rd.Get(c.r.Context(), c.info.Name)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	h.writeObject(c, http.StatusOK, obj)
}

// listComputed answers the objects the hooks list that the request's
// label and field selectors select (by metadata alone, as upstream's
// componentstatuses select), in the form the client asked for.
func (h *Handler) listComputed(c *call, rd registry.Reader) {
	opts, err := listOptions(c)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	objs, err := rd.List(c.r.Context())
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	var l listed
	for _, obj := range objs {
		md := metadata(obj)
		name, _ := md["name"].(string)
		ns, _ := md["namespace"].(string)
		ls := labels.Set{}
		if m, ok := md["labels"].(map[string]any); ok {
			for k, v := range m {
				ls[k], _ = v.(string)
			}
		}
		if opts.LabelSelector != nil && !opts.LabelSelector.Matches(ls) ||
			opts.FieldSelector != nil && !opts.FieldSelector.Matches(fields.Set{"metadata.name": name, "metadata.namespace": ns}) {
			continue
		}
		b, err := json.Marshal(obj)
		if err != nil {
			codec.WriteStatus(c.w, c.r, apierrors.NewInternalError(err))
			return
		}
		l.encoded = append(l.encoded, listItem{body: b})
	}
	if l.encoded == nil {
		l.encoded = []listItem{}
	}
	h.writeListAs(c, metav1.ListMeta{}, l)
}
