package main

import "testing"

func TestFill(t *testing.T) {
	got := string(fill([]byte(`{"preconditions":{"uid":"{{uid}}","resourceVersion":"{{resourceVersion}}"}}`), "u-1", "42", nil))
	if want := `{"preconditions":{"uid":"u-1","resourceVersion":"42"}}`; got != want {
		t.Errorf("fill = %s, want %s", got, want)
	}
	got = string(fill([]byte(`{"ownerReferences":[{"uid":"{{uid /apis/apps/v1/namespaces/a/statefulsets/db}}"}]}`), "", "", map[string]string{"/apis/apps/v1/namespaces/a/statefulsets/db": "u-2"}))
	if want := `{"ownerReferences":[{"uid":"u-2"}]}`; got != want {
		t.Errorf("fill = %s, want %s", got, want)
	}
	if fill(nil, "u-1", "42", nil) != nil {
		t.Error("fill(nil) is not nil")
	}
}

func TestMaskMessage(t *testing.T) {
	const uid = "0d6e1a53-6b0a-4c8e-9d1f-2c3b4a5d6e7f"
	for _, tc := range []struct {
		name, msg, body, rv, want string
	}{
		{"stored uid", "the UID in record (" + uid + ")", `{}`, "", "the UID in record (-)"},
		{"sent uid", "the UID in the precondition (" + uid + ")", `{"uid":"` + uid + `"}`, "", "the UID in the precondition (" + uid + ")"},
		{"stored resourceVersion", "in the precondition (1) does not match the ResourceVersion in record (142)", `{"resourceVersion":"1"}`, "142", "in the precondition (1) does not match the ResourceVersion in record (-)"},
		{"sent resourceVersion", "in the precondition (142)", `{"resourceVersion":"142"}`, "142", "in the precondition (142)"},
		{"part of a number", "limit is 1420", `{}`, "142", "limit is 1420"},
		{"another number", "must be no more than 142 characters", `{}`, "142", "must be no more than 142 characters"},
		{"no previous answer", "record (142)", `{}`, "", "record (142)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := maskMessage(tc.msg, []byte(tc.body), tc.rv); got != tc.want {
				t.Errorf("maskMessage(%q) = %q, want %q", tc.msg, got, tc.want)
			}
		})
	}
}
