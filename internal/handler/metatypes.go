package handler

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/codec"
)

// metaTypeError is encoding/json's refusal of obj's metadata as an
// ObjectMeta, or nil when it would decode. Upstream decodes the metadata
// of a custom resource a client sends into one and answers that refusal
// (it drops malformed metadata only when reading storage, normalizeMetadata's
// case); an object stored with, say, a label that is not a string would
// break every client that reads it. Members of the types ObjectMeta gives
// them (metaFields) are told in one walk; only what the walk doubts is
// encoded and decoded, for encoding/json's words.
func metaTypeError(obj map[string]any) error {
	md, ok := obj["metadata"]
	if !ok || md == nil {
		return nil
	}
	if m, ok := md.(map[string]any); ok && metaTypesFit(m) {
		return nil
	}
	b, err := codec.Marshal(md)
	if err != nil {
		return err
	}
	var om metav1.ObjectMeta
	return json.Unmarshal(b, &om)
}

// metaTypesFit reports whether every member of md that ObjectMeta has is
// of its type (null decodes as the zero value; other members are ignored,
// as encoding/json ignores them). false says only that decoding must tell.
func metaTypesFit(md map[string]any) bool {
	for k, v := range md {
		check, known := metaFields[k]
		switch {
		case !known || v == nil:
		case k == "ownerReferences":
			// metaFields converts them by reflection; their members'
			// types tell as much here.
			if !isListOf(v, ownerReferenceFits) {
				return false
			}
		case !check(v):
			return false
		}
	}
	return true
}

func ownerReferenceFits(m map[string]any) bool {
	for k, v := range m {
		switch k {
		case "apiVersion", "kind", "name", "uid":
			if !isString(v) && v != nil {
				return false
			}
		case "controller", "blockOwnerDeletion":
			if _, ok := v.(bool); !ok && v != nil {
				return false
			}
		}
	}
	return true
}

func isListOf(v any, fits func(map[string]any) bool) bool {
	l, ok := v.([]any)
	if !ok {
		return false
	}
	for _, x := range l {
		m, ok := x.(map[string]any)
		if !ok || !fits(m) {
			return false
		}
	}
	return true
}

// dropEmptyMetadata removes the metadata members an ObjectMeta would not
// encode (they are omitempty): empty strings, a zero generation, empty
// labels, annotations, finalizers and ownerReferences. Upstream decodes a
// custom resource's metadata into an ObjectMeta and encodes it again, so
// that its field manager and storage never see them: a label map emptied
// by a patch goes, rather than be recorded and stored as {}.
// managedFields are left alone: an empty list there asks to reset them.
func dropEmptyMetadata(obj map[string]any) {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return
	}
	for k, v := range md {
		empty := false
		switch x := v.(type) {
		case string:
			empty = x == "" && (k == "name" || k == "generateName" || k == "namespace" || k == "selfLink" || k == "uid" || k == "resourceVersion")
		case int64:
			empty = x == 0 && k == "generation"
		case map[string]any:
			empty = len(x) == 0 && (k == "labels" || k == "annotations")
		case []any:
			empty = len(x) == 0 && (k == "finalizers" || k == "ownerReferences")
		}
		if empty {
			delete(md, k)
		}
	}
}
