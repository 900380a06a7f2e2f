package schema

import (
	"reflect"
	"testing"
)

// Expected texts are kube-apiserver v0.37.2's for PUT .../status.
func TestValidateStatusUpdate(t *testing.T) {
	schema := `
type: object
properties:
  spec:
    type: object
    properties:
      replicas: {type: integer, maximum: 10}
  status:
    type: object
    properties:
      replicas: {type: integer, minimum: 0}
      phase: {type: string, enum: [A]}
      conds:
        type: array
        items: {type: integer, maximum: 5}
      set:
        type: array
        x-kubernetes-list-type: set
        items: {type: string}
`
	tests := []struct {
		name, old, new string
		want           []string
	}{
		{
			name: caseName("names are relative to the status, paths are not"),
			old:  `{spec: {replicas: 1}}`,
			new:  `{spec: {replicas: 1}, status: {phase: B, replicas: -1}}`,
			want: []string{
				`status.phase: Unsupported value: "B": supported values: "A"`,
				`status.replicas: Invalid value: -1: replicas in body should be greater than or equal to 0`,
			},
		},
		{
			name: caseName("list index under the status"),
			old:  `{}`,
			new:  `{status: {conds: [1, 9]}}`,
			want: []string{`status.conds[1]: Invalid value: 9: conds[1] in body should be less than or equal to 5`},
		},
		{
			name: caseName("the status itself"),
			old:  `{}`,
			new:  `{status: 5}`,
			want: []string{`status: Invalid value: "integer":  in body must be of type object: "integer"`},
		},
		{
			name: caseName("the spec is not validated"),
			old:  `{spec: {replicas: 1}}`,
			new:  `{spec: {replicas: 99}}`,
		},
		{
			name: caseName("unchanged invalid status ratchets"),
			old:  `{status: {replicas: -1}}`,
			new:  `{status: {replicas: -1, phase: A}}`,
		},
		{
			name: caseName("list types are checked on the whole object"),
			old:  `{}`,
			new:  `{status: {set: [a, a]}}`,
			want: []string{`status.set[1]: Duplicate value: "a"`},
		},
	}
	s := mustCompile(t, schema)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errStrings(s.ValidateStatusUpdate(obj(t, tt.new), obj(t, tt.old)))
			if !reflect.DeepEqual(got, append([]string{}, tt.want...)) {
				t.Errorf("errors\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
