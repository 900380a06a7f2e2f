package handler

import (
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/crdserver/crdserver/internal/watchcache"
)

// Objects are map[string]any throughout the request path, with integers as
// int64 and other numbers as float64. Stored values are the object's JSON
// without metadata.resourceVersion: the revision is etcd's, set on read.

// DecodeStored decodes a stored value (for controllers).
func DecodeStored(value []byte) (map[string]any, error) { return decodeStored(value) }

// EncodeStored encodes an object for storage (for controllers).
func EncodeStored(obj map[string]any) ([]byte, error) { return encodeStored(obj) }

// decodeStored decodes a stored value.
func decodeStored(value []byte) (map[string]any, error) {
	var obj map[string]any
	if err := utiljson.Unmarshal(value, &obj); err != nil {
		return nil, fmt.Errorf("decoding stored object: %w", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("decoding stored object: not an object")
	}
	return obj, nil
}

// encodeStored encodes obj for storage, without its resourceVersion.
func encodeStored(obj map[string]any) ([]byte, error) {
	md, _ := obj["metadata"].(map[string]any)
	rv, had := md["resourceVersion"]
	if had {
		delete(md, "resourceVersion")
		defer func() { md["resourceVersion"] = rv }()
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding object: %w", err)
	}
	return b, nil
}

// setRV sets metadata.resourceVersion.
func setRV(obj map[string]any, rev int64) {
	md := metadata(obj)
	md["resourceVersion"] = strconv.FormatInt(rev, 10)
}

// metadata returns obj's metadata map, creating it if absent.
func metadata(obj map[string]any) map[string]any {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		md = map[string]any{}
		obj["metadata"] = md
	}
	return md
}

func accessor(obj map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}

// ItemDecoder returns the watch cache decoder for stored objects: it sets
// resourceVersion, encodes the object once, and extracts what selectors use.
func ItemDecoder() watchcache.Decoder {
	return func(key string, value []byte, rev int64) (*watchcache.Item, error) {
		obj, err := decodeStored(value)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", key, err)
		}
		setRV(obj, rev)
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", key, err)
		}
		u := accessor(obj)
		it := &watchcache.Item{
			Key:       key,
			Revision:  rev,
			Namespace: u.GetNamespace(),
			Name:      u.GetName(),
			JSON:      b,
		}
		if l := u.GetLabels(); len(l) > 0 {
			it.Labels = labels.Set(l)
		}
		it.Fields = fields.Set{"metadata.name": it.Name}
		if it.Namespace != "" {
			it.Fields["metadata.namespace"] = it.Namespace
		}
		return it, nil
	}
}

// deepCopy copies a decoded object.
func deepCopy(obj map[string]any) map[string]any {
	return unstructuredDeepCopy(obj)
}

func unstructuredDeepCopy(obj map[string]any) map[string]any {
	if obj == nil {
		return nil
	}
	return (&unstructured.Unstructured{Object: obj}).DeepCopy().Object
}
