package schema

import (
	"reflect"
	"testing"

	"github.com/crdserver/crdserver/internal/codec"
)

// A request's managedFields kept encoded (a codec.Raw) are pruned as the
// same entries decoded are: left encoded when every member is known,
// decoded and pruned otherwise.
func TestPruneEncodedManagedFields(t *testing.T) {
	s := mustCompile(t, cronTabSchema)
	cases := []struct {
		name, entries string
		paths         []string
		encoded       bool // still a Raw afterwards
	}{
		{"known members", `[{"fieldsType":"FieldsV1","manager":"a","operation":"Update"}]`, nil, true},
		{"an unknown member", `[{"manager":"a","zzz":1},{"manager":"b"}]`, []string{"metadata.managedFields[0].zzz"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"managedFields":` + c.entries + `,"name":"a"}}`
			encoded, _, err := codec.Decode([]byte(body), "", codec.DecodeOptions{RawManagedFields: true})
			if err != nil {
				t.Fatal(err)
			}
			decoded, _, _ := codec.Decode([]byte(body), "", codec.DecodeOptions{})
			if _, ok := encoded["metadata"].(map[string]any)["managedFields"].(codec.Raw); !ok {
				t.Fatal("not kept encoded")
			}
			paths, want := s.Prune(encoded), s.Prune(decoded)
			if !reflect.DeepEqual(paths, c.paths) || !reflect.DeepEqual(paths, want) {
				t.Errorf("pruned %v, decoded pruned %v, want %v", paths, want, c.paths)
			}
			mf := encoded["metadata"].(map[string]any)["managedFields"]
			if _, ok := mf.(codec.Raw); ok != c.encoded {
				t.Errorf("still encoded: %v, want %v", ok, c.encoded)
			}
			if err := codec.MaterializeManagedFields(encoded); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(encoded, decoded) {
				t.Errorf("pruned encoded %v\npruned decoded %v", encoded, decoded)
			}
		})
	}
}
