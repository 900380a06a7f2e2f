package apply

import (
	"encoding/json"
	"testing"
)

func TestMergeApplyConfiguration(t *testing.T) {
	pt, err := NewTypes(widgets()).Version("v1")
	if err != nil {
		t.Fatal(err)
	}
	live := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","labels":{"a":"1"}},
		"spec":{"color":"red","tags":["x"],"ports":[{"name":"http","port":80}],"selector":{"k":"v"}}}`
	for _, tc := range []struct {
		name, patch, want, err string
	}{
		{"label", `{"metadata":{"labels":{"b":"2"}}}`,
			`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"labels":{"a":"1","b":"2"},"name":"w"},"spec":{"color":"red","ports":[{"name":"http","port":80}],"selector":{"k":"v"},"tags":["x"]}}`, ""},
		{"set and map lists merge", `{"spec":{"tags":["y"],"ports":[{"name":"http","port":8080},{"name":"https","port":443}]}}`,
			`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"labels":{"a":"1"},"name":"w"},"spec":{"color":"red","ports":[{"name":"http","port":8080},{"name":"https","port":443}],"selector":{"k":"v"},"tags":["x","y"]}}`, ""},
		{"atomic map refused", `{"spec":{"selector":{"k":"w"}}}`, "",
			"invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var obj, patch map[string]any
			json.Unmarshal([]byte(live), &obj)
			json.Unmarshal([]byte(tc.patch), &patch)
			patch["apiVersion"], patch["kind"] = "example.com/v1", "Widget"
			got, err := MergeApplyConfiguration(pt, obj, patch)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(got); string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
		})
	}
}
