package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/storage"
)

// ownStatus is a cluster-scoped object whose status the server keeps
// itself (a policy's type checking, an APIService's availability), read
// straight from storage to be written back at the revision read.
type ownStatus struct {
	st  *handler.Store
	key string
	kv  storage.KeyValue
}

// readOwnStatus reads the named object of gr and decodes it into typed;
// found is false when there is none.
func (s *Server) readOwnStatus(ctx context.Context, gr schema.GroupResource, name string, typed any) (o ownStatus, found bool, err error) {
	o.st, _ = s.stores.Store(gr)
	o.key = o.st.Key("", name)
	o.kv, err = o.st.Storage.Get(ctx, o.key)
	if errors.Is(err, storage.ErrNotFound) {
		return o, false, nil
	}
	if err != nil {
		return o, false, err
	}
	if err := json.Unmarshal(o.kv.Value, typed); err != nil {
		return o, false, fmt.Errorf("decoding %s %s: %w", gr, name, err)
	}
	return o, true, nil
}

// writeStatus stores the object read with its status as set changes it,
// if the object is still at the revision read. An object gone or changed
// since is not an error: its change brings its own sync.
func (o ownStatus) writeStatus(ctx context.Context, set func(status map[string]any)) error {
	obj, err := handler.DecodeStored(o.kv.Value)
	if err != nil {
		return err
	}
	status, _ := obj["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		obj["status"] = status
	}
	set(status)
	data, err := handler.EncodeStored(obj)
	if err != nil {
		return err
	}
	if _, err := o.st.Storage.Update(ctx, o.key, data, o.kv.ModRevision); err != nil &&
		!errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrConflict) {
		return err
	}
	return nil
}
