package handler

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/admission"
	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
)

// createSubresource answers a create on a subresource of another kind
// (serviceaccounts/token): decode the body, read the object the path
// names, let the hook compute the answer, send it. Admission and storage
// are the hook's business: upstream's TokenRequest stores nothing.
func (h *Handler) createSubresource(c *call, sc registry.SubresourceCreator) {
	if err := h.doCreateSubresource(c, sc); err != nil {
		codec.WriteStatus(c.w, c.r, err)
	}
}

func (h *Handler) doCreateSubresource(c *call, sc registry.SubresourceCreator) error {
	if err := checkWriteOptions(c, ""); err != nil {
		return err
	}
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var obj map[string]any
	ct := c.r.Header.Get("Content-Type")
	if msg := sc.NewSubresourceProtobuf(c.info.Subresource); msg != nil && isProtobuf(ct) {
		if obj, err = decodeProtobuf(protobufOf(func() registry.ProtoMessage { return msg }), body); err != nil {
			return err
		}
	}
	if obj == nil {
		if obj, _, err = codec.Decode(body, ct, codec.DecodeOptions{}); err != nil {
			return err
		}
	}
	kv, err := c.store.Storage.Get(c.r.Context(), c.store.Key(c.info.Namespace, c.info.Name))
	if errors.Is(err, storage.ErrNotFound) {
		return apierrors.NewNotFound(c.gr(), c.info.Name)
	}
	if err != nil {
		return storageError(err, c.gr(), c.info.Name, "get")
	}
	parent, err := decodeStored(kv.Value)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if obj, err = h.admitSubresource(c, obj); err != nil {
		return err
	}
	ctx := c.r.Context()
	if dry, err := dryRun(c.r); err != nil {
		return err
	} else if dry {
		ctx = registry.WithDryRun(ctx)
	}
	out, err := sc.CreateSubresource(ctx, c.info.Subresource, parent, obj)
	if err != nil {
		return err
	}
	codec.WriteObject(c.w, http.StatusCreated, c.media, out)
	return nil
}

// connect answers a request to a connect subresource (a pod's exec or
// log, nodes/proxy). One that takes options is served as upstream's
// connect handler serves it: the options are decoded from the query,
// and admitConnect refuses a dry run and has admission see them; then
// a subresource that asks it checks that the user may create it, the
// name is resolved and the object read; the hook answers with the
// admitted options as its query. A pod's log, which takes none, is
// answered with the request's query.
func (h *Handler) connect(c *call, cn registry.Connecter) {
	ct, body, err := h.doConnect(c, cn)
	switch {
	case err != nil:
		codec.WriteStatus(c.w, c.r, err)
	case ct == "" && len(body) == 0:
		c.w.WriteHeader(http.StatusNoContent)
	default:
		c.w.Header().Set("Content-Type", ct)
		c.w.WriteHeader(http.StatusOK)
		_, _ = c.w.Write(body)
	}
}

func (h *Handler) doConnect(c *call, cn registry.Connecter) (string, []byte, error) {
	query := c.r.URL.Query()
	if co, ok := cn.(registry.ConnectOptioner); ok {
		opts, takes, err := co.ConnectOptions(c.info.Subresource, query, proxyPath(c.info))
		if takes {
			if opts, err = h.admitConnect(c, opts, err); err != nil {
				return "", nil, err
			}
			query = optionsQuery(opts)
		}
	}
	if c.info.Verb != "create" && authorizesCreate(c) {
		if err := h.authorizeCreate(c); err != nil {
			return "", nil, err
		}
	}
	name := c.info.Name
	if nm, ok := cn.(registry.ConnectNamer); ok {
		// nodes/proxy and pods/proxy name [scheme:]name[:port].
		var err error
		if name, err = nm.ConnectName(c.info.Subresource, name); err != nil {
			return "", nil, err
		}
	}
	parent, err := h.readParent(c, name)
	if err != nil {
		return "", nil, err
	}
	return cn.Connect(c.r.Context(), c.info.Subresource, parent, query)
}

// authorizesCreate reports whether c's subresource asks that its user may
// create it whatever the verb (OtherSubresource.AuthorizeCreate).
func authorizesCreate(c *call) bool {
	for _, o := range c.version.Subresources.Other {
		if o.Name == c.info.Subresource {
			return o.AuthorizeCreate
		}
	}
	return false
}

// optionsQuery is the query that gives opts, connect options as
// admitted: a parameter a member, a list's members each one, kind and
// apiVersion left out.
func optionsQuery(opts map[string]any) url.Values {
	q := url.Values{}
	for k, v := range opts {
		if k == "kind" || k == "apiVersion" {
			continue
		}
		switch v := v.(type) {
		case nil:
		case []any:
			for _, e := range v {
				q.Add(k, fmt.Sprint(e))
			}
		default:
			q.Add(k, fmt.Sprint(v))
		}
	}
	return q
}

// readParent reads the stored object the request's path names.
func (h *Handler) readParent(c *call, name string) (map[string]any, error) {
	kv, err := c.store.Storage.Get(c.r.Context(), c.store.Key(c.info.Namespace, name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, apierrors.NewNotFound(c.gr(), name)
	}
	if err != nil {
		return nil, storageError(err, c.gr(), name, "get")
	}
	parent, err := decodeStored(kv.Value)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return parent, nil
}

// admitSubresource runs mutating then validating admission on the
// subresource's object, as upstream's create handler does for a
// TokenRequest: policies and webhooks see kind TokenRequest, resource
// serviceaccounts, subresource token, and the account's name.
func (h *Handler) admitSubresource(c *call, obj map[string]any) (map[string]any, error) {
	if h.admit == nil {
		return obj, nil
	}
	at := h.attributes(c, admission.Create, obj, nil, c.info.Subresource)
	at.Name, at.MergeApplyConfiguration = c.info.Name, nil
	for _, o := range c.version.Subresources.Other {
		if o.Name == c.info.Subresource && o.Kind != nil {
			at.Kind = *o.Kind
		}
	}
	if err := h.admit.Mutate(c.r.Context(), at); err != nil {
		return nil, err
	}
	at.OldObject = nil
	if err := h.admit.Validate(c.r.Context(), at); err != nil {
		return nil, err
	}
	return at.Object, nil
}

// protobufOf adapts a constructor to registry.Protobuf, for decodeProtobuf.
type protobufOf func() registry.ProtoMessage

func (f protobufOf) NewProtobuf() registry.ProtoMessage { return f() }
