package handler

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/codec"
)

// TestMetaTypesFit: metadata the walk passes decodes as an ObjectMeta, and
// metaTypeError refuses exactly what encoding/json refuses.
func TestMetaTypesFit(t *testing.T) {
	for _, md := range []string{
		`{}`,
		`{"name":"a","namespace":"b","uid":"u","resourceVersion":"1","generation":2,"labels":{"a":"b"},"annotations":{"x/y":"z"},"finalizers":["f"]}`,
		`{"creationTimestamp":"2026-01-01T00:00:00Z","deletionTimestamp":null,"deletionGracePeriodSeconds":0}`,
		`{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"c","uid":"u","controller":true,"blockOwnerDeletion":false,"extra":1}]}`,
		`{"managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:a":{}}}]}`,
		`{"unknown":{"anything":[1]}}`,
		`{"labels":{"a":1}}`,
		`{"labels":["a"]}`,
		`{"annotations":{"a":true}}`,
		`{"finalizers":"f"}`,
		`{"finalizers":[1]}`,
		`{"generation":"1"}`,
		`{"generation":1.5}`,
		`{"name":1}`,
		`{"creationTimestamp":"yesterday"}`,
		`{"creationTimestamp":5}`,
		`{"ownerReferences":[{"uid":1}]}`,
		`{"ownerReferences":[{"controller":"yes"}]}`,
		`{"ownerReferences":{"uid":"u"}}`,
		`{"managedFields":[{"time":"now"}]}`,
		`{"managedFields":[{"manager":5}]}`,
	} {
		obj, _, err := codec.Decode([]byte(`{"metadata":`+md+`}`), codec.MediaJSON, codec.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var om metav1.ObjectMeta
		want := json.Unmarshal([]byte(md), &om)
		if metaTypesFit(obj["metadata"].(map[string]any)) && want != nil {
			t.Errorf("%s fits, but encoding/json refuses it: %v", md, want)
		}
		got := metaTypeError(obj)
		if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
			t.Errorf("%s: %v, want %v", md, got, want)
		}
	}
}
