package codec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// viaGoType is what AppendObjectMetaProtobuf replaces: the decoding
// upstream's server uses (case-sensitive, unlike encoding/json's) into
// metav1.ObjectMeta, then its generated Marshal.
func viaGoType(encoded []byte) ([]byte, error) {
	var m metav1.ObjectMeta
	if err := utiljson.Unmarshal(encoded, &m); err != nil {
		return nil, err
	}
	return m.Marshal()
}

// checkSameObjectMeta wants got and want to decode to the same ObjectMeta.
func checkSameObjectMeta(t *testing.T, encoded, got, want []byte) {
	t.Helper()
	var a, b metav1.ObjectMeta
	if err := a.Unmarshal(got); err != nil {
		t.Fatalf("%s: the encoding does not decode: %v", encoded, err)
	}
	if err := b.Unmarshal(want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(b, a); diff != "" {
		t.Fatalf("%s decodes otherwise than through the Go type (-Go type +transcoded):\n%s", encoded, diff)
	}
}

func TestAppendObjectMetaProtobuf(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"stored", `{"creationTimestamp":"2026-11-29T10:59:29Z","labels":{"app":"a","tier":"b"},"managedFields":[{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:a":{}}},"manager":"kubectl-create","operation":"Update","time":"2026-11-29T10:59:29Z"},{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{}},"manager":"m","operation":"Apply","subresource":"status","time":"2026-11-29T11:00:00Z"}],"name":"s1","namespace":"default","resourceVersion":"61","uid":"9d2cb16c-1076-40fe-810b-dfeb04bd669c"}`, true},
		{"every field", `{"name":"n","generateName":"g-","namespace":"ns","selfLink":"/x","uid":"u","resourceVersion":"7","generation":3,"creationTimestamp":"1969-12-31T23:59:59Z","deletionTimestamp":"2030-01-02T03:04:05+02:00","deletionGracePeriodSeconds":0,"labels":{},"annotations":{"a/b":"multi\nline","é":"\u00e9\"q"},"ownerReferences":[{"apiVersion":"v1","kind":"K","name":"o","uid":"ou","controller":true,"blockOwnerDeletion":false},{"apiVersion":"v1","kind":"K","name":"p","uid":"pu","controller":null}],"finalizers":["a","b/c"],"managedFields":[]}`, true},
		{"zeros and nulls", `{"name":"","generation":0,"creationTimestamp":null,"deletionTimestamp":null,"deletionGracePeriodSeconds":null,"labels":null,"annotations":null,"ownerReferences":null,"finalizers":null,"managedFields":[{"manager":"m","time":null,"fieldsV1":null}]}`, true},
		{"negative generation", `{"generation":-5,"deletionGracePeriodSeconds":30}`, true},
		{"members ObjectMeta lacks", `{"clusterName":"c","zz":{"a":[1,{"b":null}]},"name":"n"}`, true},
		{"escaped member name", `{"n\u0061me":"n","labels":{"k\u00e9y":"v"}}`, true},
		{"empty", `{}`, true},
		{"name not a string", `{"name":1}`, false},
		{"fractional generation", `{"generation":1.5}`, false},
		{"time that does not parse", `{"creationTimestamp":"yesterday"}`, false},
		{"label not a string", `{"labels":{"a":1}}`, false},
		{"label null", `{"labels":{"a":null}}`, false},
		{"fieldsV1 not an object", `{"managedFields":[{"fieldsV1":"x"}]}`, false},
		{"repeated member", `{"finalizers":["a"],"finalizers":["b"]}`, false},
		{"repeated member of an entry", `{"managedFields":[{"time":"2026-11-29T10:59:29.5Z","time":"2026-11-29T10:59:30Z"}]}`, false},
		{"truncated", `{"name":"n"`, false},
		{"not an object", `[]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := AppendObjectMetaProtobuf([]byte("prefix"), []byte(tc.in))
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if string(got[:6]) != "prefix" {
				t.Fatalf("dst was not appended to: %q", got)
			}
			want, err := viaGoType([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			checkSameObjectMeta(t, []byte(tc.in), got[6:], want)
		})
	}
}

// FuzzAppendObjectMetaProtobuf holds the transcoding to the Go type's:
// whatever it reads as well formed, encoding/json reads too, and both
// decode to the same ObjectMeta.
func FuzzAppendObjectMetaProtobuf(f *testing.F) {
	f.Add([]byte(`{"creationTimestamp":"2026-11-29T10:59:29Z","labels":{"app":"a"},"managedFields":[{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{}},"manager":"m","operation":"Update","time":"2026-11-29T10:59:29Z"}],"name":"s1","namespace":"default","resourceVersion":"61","uid":"u"}`))
	f.Add([]byte(`{"ownerReferences":[{"apiVersion":"v1","kind":"K","name":"o","uid":"ou","controller":true}],"finalizers":["a"],"generation":2,"deletionTimestamp":"2030-01-02T03:04:05Z","deletionGracePeriodSeconds":0}`))
	f.Add([]byte(`{"annotations":{"\u00e9":"x\ny"},"name":null}`))
	f.Fuzz(func(t *testing.T, encoded []byte) {
		got, ok := AppendObjectMetaProtobuf(nil, encoded)
		if !ok {
			return
		}
		want, err := viaGoType(encoded)
		if err != nil {
			t.Fatalf("%q transcoded, but the Go type's decoding refuses it: %v", encoded, err)
		}
		checkSameObjectMeta(t, encoded, got, want)
	})
}
