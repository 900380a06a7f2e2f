package conversion

import (
	"context"
	"fmt"
	"strings"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// Typed converts the objects of a built-in whose versions have Go types of
// their own (CRDs in apiextensions.k8s.io v1beta1 and v1) with the
// built-in's own conversion functions.
type Typed struct {
	Def *registry.Definition
	VC  registry.VersionConverter
}

// Convert implements Converter: objects at the storage version convert
// from storage, others (request bodies) to storage.
func (t Typed) Convert(_ context.Context, to string, objs []Object) ([][]byte, error) {
	out := make([][]byte, len(objs))
	toVersion := to[strings.LastIndex(to, "/")+1:]
	var storage string
	if sv := t.Def.StorageVersion(); sv != nil {
		storage = sv.Name
	}
	for i, o := range objs {
		if from, ok := APIVersion(o.JSON); ok && from == to {
			out[i] = o.JSON
			continue
		}
		obj, err := Decode(o.JSON)
		if err != nil {
			return nil, err
		}
		if toVersion == storage {
			from, _ := obj["apiVersion"].(string)
			if obj, err = t.VC.ToStorage(obj, from[strings.LastIndex(from, "/")+1:]); err != nil {
				return nil, err
			}
		} else {
			obj = t.VC.FromStorage(obj, toVersion)
		}
		if out[i], err = codec.Marshal(obj); err != nil {
			return nil, fmt.Errorf("encoding converted object: %w", err)
		}
	}
	return out, nil
}
