package main

import (
	"reflect"
	"testing"
)

func TestStableObjects(t *testing.T) {
	for _, tc := range []struct{ name, msg, want string }{
		{"no value", `name: Required value`, `name: Required value`},
		{"not an object", `spec.replicas: Invalid value: "three": must be a number`, `spec.replicas: Invalid value: "three": must be a number`},
		{"a number", `spec.replicas: Invalid value: -1: must be greater`, `spec.replicas: Invalid value: -1: must be greater`},
		{
			"an object",
			`patch: Invalid value: "{\"metadata\":{\"resourceVersion\":\"12\",\"name\":\"a\",\"creationTimestamp\":\"2026-11-30T09:12:07Z\"},\"kind\":\"K\"}": bad`,
			`patch: Invalid value: "{\"kind\":\"K\",\"metadata\":{\"creationTimestamp\":\"-\",\"name\":\"a\",\"resourceVersion\":\"-\"}}": bad`,
		},
		{
			"two",
			`[a: Invalid value: "{\"uid\":\"x\"}": one, b: Invalid value: "{\"b\":1,\"a\":2}": two]`,
			`[a: Invalid value: "{\"uid\":\"-\"}": one, b: Invalid value: "{\"a\":2,\"b\":1}": two]`,
		},
		{"unterminated", `a: Invalid value: "{`, `a: Invalid value: "{`},
		{
			"in a decoding error",
			`patch: Invalid value: "{\"b\":1,\"a\":2}": Object 'Kind' is missing in '{"b":1,"a":{"uid":"u"}}'`,
			`patch: Invalid value: "{\"a\":2,\"b\":1}": Object 'Kind' is missing in '{"a":{"uid":"-"},"b":1}'`,
		},
		{"not JSON", `map[a:{b}] {x`, `map[a:{b}] {x`},
	} {
		if got := stableObjects(tc.msg); got != tc.want {
			t.Errorf("%s: stableObjects(%q)\n got %q\nwant %q", tc.name, tc.msg, got, tc.want)
		}
	}
}

// A uid in a key, as managedFields name an owner reference by it, is left
// out as uids in values are.
func TestStableKeys(t *testing.T) {
	const uid = "0d6e1a53-6b0a-4c8e-9d1f-2c3b4a5d6e7f"
	got := stable(map[string]any{"f:ownerReferences": map[string]any{`k:{"uid":"` + uid + `"}`: map[string]any{}}})
	want := map[string]any{"f:ownerReferences": map[string]any{`k:{"uid":"-"}`: map[string]any{}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stable = %v, want %v", got, want)
	}
}

// TestStableTokenVolume: the generated suffix of a pod's token volume is
// masked where a string is that name whole, and nowhere else.
func TestStableTokenVolume(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"kube-api-access-7x2kq", "kube-api-access--"},
		{"kube-api-access-bcdfg", "kube-api-access--"},
		{"kube-api-access-abcde", "kube-api-access-abcde"}, // a vowel: not generated
		{"kube-api-access-7x2k", "kube-api-access-7x2k"},
		{"kube-api-access-7x2kqq", "kube-api-access-7x2kqq"},
		{"my-kube-api-access-7x2kq", "my-kube-api-access-7x2kq"},
		{"web-7x2kq", "web-7x2kq"},
	} {
		if got := stable(tc.in); got != tc.want {
			t.Errorf("stable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	obj := map[string]any{"volumes": []any{map[string]any{"name": "kube-api-access-7x2kq"}}}
	got := stable(obj).(map[string]any)["volumes"].([]any)[0].(map[string]any)["name"]
	if got != "kube-api-access--" {
		t.Errorf("in an object: %q", got)
	}
}
