package handler

import (
	"errors"
	"net/http"

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

// connect answers a request to a connect subresource (a pod's log): the
// object the path names is read, the hook answers.
func (h *Handler) connect(c *call, cn registry.Connecter) {
	name := c.info.Name
	var err error
	if nm, ok := cn.(registry.ConnectNamer); ok {
		// nodes/proxy names [scheme:]name[:port].
		if name, err = nm.ConnectName(name); err != nil {
			codec.WriteStatus(c.w, c.r, err)
			return
		}
	}
	parent, err := h.readParent(c, name)
	if err == nil {
		var ct string
		var body []byte
		if ct, body, err = cn.Connect(c.r.Context(), c.info.Subresource, parent, c.r.URL.Query()); err == nil {
			if ct == "" && len(body) == 0 {
				c.w.WriteHeader(http.StatusNoContent)
				return
			}
			c.w.Header().Set("Content-Type", ct)
			c.w.WriteHeader(http.StatusOK)
			_, _ = c.w.Write(body)
			return
		}
	}
	codec.WriteStatus(c.w, c.r, err)
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
