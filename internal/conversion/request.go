package conversion

import (
	"context"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/registry"
)

// Request converts for one API request: between the version its URL
// names and the definition's other versions. Its errors are the API's
// answers (a converter's failure is upstream's 500, see Failed).
type Request struct {
	Def *registry.Definition
	// Version is the name of the request's version ("v1").
	Version string
}

// APIVersion is the request's "group/version".
func (r Request) APIVersion() string {
	return registry.APIVersion(r.Def.Group, r.Version)
}

// ToRequest converts a decoded object to the request's version; an
// object already there is returned as it is.
func (r Request) ToRequest(ctx context.Context, obj map[string]any) (map[string]any, error) {
	out, err := ConvertObject(ctx, For(r.Def), obj, r.APIVersion())
	if err != nil {
		return nil, Failed(err)
	}
	return out, nil
}

// ToStorage converts a request object to the storage version; an object
// already there is returned as it is.
func (r Request) ToStorage(ctx context.Context, obj map[string]any) (map[string]any, error) {
	if r.StoredAsIs(obj) {
		return obj, nil
	}
	if vc, ok := r.Def.Hooks.(registry.VersionConverter); ok {
		out, err := vc.ToStorage(obj, r.Version)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return out, nil
	}
	out, err := ConvertObject(ctx, For(r.Def), obj, r.Def.StorageAPIVersion())
	if err != nil {
		return nil, Failed(err)
	}
	return out, nil
}

// StoredAsIs reports whether ToStorage returns obj itself.
func (r Request) StoredAsIs(obj map[string]any) bool {
	storage := r.Def.StorageAPIVersion()
	return storage == "" || r.APIVersion() == storage || obj["apiVersion"] == storage
}

// TypedVersions reports whether the definition is a built-in whose
// versions have Go types of their own (CRDs in v1beta1 and v1): its hooks
// see the storage version only, so request objects convert before them.
// Custom resources validate in the request's version (each version has
// its schema) and convert to the storage version after.
func (r Request) TypedVersions() bool {
	_, ok := r.Def.Hooks.(registry.VersionConverter)
	return ok
}

// ToHooks converts a request object to the version the resource's hooks
// see: the storage version for TypedVersions, else the request's.
func (r Request) ToHooks(ctx context.Context, obj map[string]any) (map[string]any, error) {
	if !r.TypedVersions() {
		return obj, nil
	}
	return r.ToStorage(ctx, obj)
}

// FromStored converts stored objects (encoded with their resourceVersion,
// as the watch cache holds them) to the request's version; conversions of
// an unchanged object are reused.
func (r Request) FromStored(ctx context.Context, items []Object) ([][]byte, error) {
	out, err := For(r.Def).Convert(ctx, r.APIVersion(), items)
	if err != nil {
		return nil, Failed(err)
	}
	return out, nil
}

// Pending reports whether converting items would wait for a conversion
// under way or to be sent: only a converter that hands results over as
// they come (EachConverter) says so; the others convert at once.
func (r Request) Pending(items []Object) bool {
	ec, ok := For(r.Def).(EachConverter)
	return ok && ec.Pending(r.APIVersion(), items)
}

// FromStoredEach is FromStored handing each object over in order, as
// soon as it is converted (EachConverter), or once all are with a
// converter that does not stream.
func (r Request) FromStoredEach(ctx context.Context, items []Object, each func(i int, b []byte) error) error {
	c := For(r.Def)
	var err error
	if ec, ok := c.(EachConverter); ok {
		err = ec.ConvertEach(ctx, r.APIVersion(), items, each)
	} else {
		var out [][]byte
		if out, err = c.Convert(ctx, r.APIVersion(), items); err == nil {
			for i, b := range out {
				if err = each(i, b); err != nil {
					break
				}
			}
		}
	}
	if err != nil {
		return Failed(err)
	}
	return nil
}

// Failed is upstream's answer when converting fails: the converter's
// error, not wrapped in a reason, as a 500. An error that already is an
// API status is answered as it is.
func Failed(err error) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error(),
	}}
}
