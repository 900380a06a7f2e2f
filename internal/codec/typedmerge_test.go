package codec

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
)

type mergeItem struct {
	A    string            `json:"a,omitempty"`
	B    string            `json:"b,omitempty"`
	L    map[string]string `json:"l,omitempty"`
	Next *mergeItem        `json:"next,omitempty"`
}

type mergeEmbedded struct {
	E map[string]string `json:"e,omitempty"`
}

type mergeObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	mergeEmbedded
	Spec struct {
		Items  []mergeItem           `json:"items,omitempty"`
		Ptrs   []*mergeItem          `json:"ptrs,omitempty"`
		ByKey  map[string]mergeItem  `json:"byKey,omitempty"`
		Ptr    *mergeItem            `json:"ptr,omitempty"`
		Value  mergeItem             `json:"value"`
		Raw    runtime.RawExtension  `json:"raw,omitempty"`
		Any    any                   `json:"any,omitempty"`
		Nested map[string]*mergeItem `json:"nested,omitempty"`
	} `json:"spec"`
}

// Bodies of a Go type whose keys repeat decode to what upstream's typed
// decoder makes of them: decoding the body into the type directly and
// decoding what Decode made of it agree.
func TestDecodeGoTypeRepeatedKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		into func() any
		body string
	}{
		{"configmap data", func() any { return &corev1.ConfigMap{} },
			`{"metadata":{"name":"a"},"data":{"a":"1","a":"2"},"data":{"b":"x"}}`},
		{"metadata twice", func() any { return &corev1.ConfigMap{} },
			`{"metadata":{"name":"a","labels":{"x":"1"}},"metadata":{"labels":{"y":"2"},"annotations":{"z":"3"}}}`},
		{"null keeps a struct", func() any { return &corev1.ConfigMap{} },
			`{"metadata":{"name":"a"},"metadata":null}`},
		{"null clears a map", func() any { return &corev1.ConfigMap{} },
			`{"data":{"a":"1"},"data":null}`},
		{"struct field twice", func() any { return &mergeObject{} },
			`{"spec":{"value":{"a":"1","l":{"x":"1"}},"value":{"b":"2","l":{"y":"2"}}}}`},
		{"spec twice", func() any { return &mergeObject{} },
			`{"spec":{"value":{"a":"1"},"items":[{"a":"1"}]},"spec":{"value":{"b":"2"}}}`},
		{"list items decoded into, up to the new length", func() any { return &mergeObject{} },
			`{"spec":{"items":[{"a":"1"},{"a":"2"},{"a":"3"}],"items":[{"b":"x"},{"b":"y"}]}}`},
		{"a longer list", func() any { return &mergeObject{} },
			`{"spec":{"ptrs":[{"a":"1"}],"ptrs":[{"b":"x"},{"b":"y"}]}}`},
		{"map values are new", func() any { return &mergeObject{} },
			`{"spec":{"byKey":{"k":{"a":"1"}},"byKey":{"k":{"b":"2"},"j":{"a":"3"}}}}`},
		{"a map key twice", func() any { return &mergeObject{} },
			`{"spec":{"byKey":{"k":{"a":"1"},"k":{"b":"2"}}}}`},
		{"pointers", func() any { return &mergeObject{} },
			`{"spec":{"ptr":{"a":"1","next":{"a":"x"}},"ptr":{"b":"2","next":{"b":"y"}},"nested":{"n":{"a":"1"},"n":{"b":"2"}}}}`},
		{"null clears a pointer", func() any { return &mergeObject{} },
			`{"spec":{"ptr":{"a":"1"},"ptr":null}}`},
		{"self-decoding and untyped values are replaced", func() any { return &mergeObject{} },
			`{"spec":{"raw":{"a":1},"raw":{"b":2},"any":{"a":1},"any":{"b":2}}}`},
		{"embedded struct fields", func() any { return &mergeObject{} },
			`{"e":{"a":"1"},"e":{"b":"2"},"kind":"K","kind":"L"}`},
		{"inside an untyped value", func() any { return &mergeObject{} },
			`{"spec":{"any":{"x":{"a":1},"x":{"b":2}}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.into()
			if _, err := sigsjson.UnmarshalStrict([]byte(tc.body), want); err != nil {
				t.Fatal(err)
			}
			obj, problems, err := Decode([]byte(tc.body), MediaJSON, DecodeOptions{GoType: reflect.TypeOf(want).Elem()})
			if err != nil || len(problems) == 0 {
				t.Fatalf("Decode: %v, problems %q", err, problems)
			}
			b, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			got := tc.into()
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(b, got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(want)
				t.Errorf("decoded as\n%s\nwant\n%s", gj, wj)
			}
		})
	}
}

// Without a Go type the last value of a key wins, as upstream's
// unstructured decoding has it.
func TestDecodeUntypedRepeatedKeys(t *testing.T) {
	obj, _, err := Decode([]byte(`{"data":{"a":"1"},"data":{"b":"2"}}`), MediaJSON, DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"data": map[string]any{"b": "2"}}; !reflect.DeepEqual(obj, want) {
		t.Errorf("got %v, want %v", obj, want)
	}
}
