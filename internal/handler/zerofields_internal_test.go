package handler

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A create's writer owns what its object changes from the Go type's zero
// object, as upstream's field manager compares them: no "." for a struct
// (or a null slice) the zero object has, no leaf equal to the zero
// object's; below what the zero object lacks, everything stays.
func TestDisownZero(t *testing.T) {
	for _, tc := range []struct {
		line              int
		fields, zero, obj string
		want              string
	}{
		{line: caseLine(), // a Lease: spec is always there
			fields: `{"f:spec":{".":{},"f:holderIdentity":{}}}`,
			zero:   `{"spec":{}}`,
			obj:    `{"spec":{"holderIdentity":"me"}}`,
			want:   `{"f:spec":{"f:holderIdentity":{}}}`},
		{line: caseLine(), // a Deployment: a null slice and a pointer struct
			fields: `{"f:spec":{".":{},"f:strategy":{".":{},"f:rollingUpdate":{".":{},"f:maxSurge":{}}},"f:template":{".":{},"f:spec":{".":{},"f:containers":{".":{},"k:{\"name\":\"c\"}":{".":{},"f:name":{}}}}}}}`,
			zero:   `{"spec":{"strategy":{},"template":{"spec":{"containers":null}}}}`,
			obj:    `{"spec":{"strategy":{"rollingUpdate":{"maxSurge":"25%"}},"template":{"spec":{"containers":[{"name":"c"}]}}}}`,
			want:   `{"f:spec":{"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{}}},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:name":{}}}}}}}`},
		{line: caseLine(), // an Event: leaves left as the zero object has them
			fields: `{"f:deprecatedSource":{},"f:deprecatedFirstTimestamp":{},"f:note":{},"f:regarding":{}}`,
			zero:   `{"deprecatedSource":{},"deprecatedFirstTimestamp":null,"regarding":{}}`,
			obj:    `{"deprecatedSource":{},"deprecatedFirstTimestamp":null,"note":"n","regarding":{"name":"p"}}`,
			want:   `{"f:note":{},"f:regarding":{}}`},
		{line: caseLine(), // a struct with nothing new goes
			fields: `{"f:spec":{}}`,
			zero:   `{"spec":{}}`,
			obj:    `{"spec":{}}`,
			want:   `{}`},
		{line: caseLine(), // metadata is the field manager's own
			fields: `{"f:metadata":{"f:labels":{".":{},"f:a":{}}}}`,
			zero:   `{"metadata":{"labels":null}}`,
			obj:    `{"metadata":{"labels":{"a":"b"}}}`,
			want:   `{"f:metadata":{"f:labels":{".":{},"f:a":{}}}}`},
	} {
		t.Run(fmt.Sprint("line ", tc.line), func(t *testing.T) {
			var fields, zero, obj, want map[string]any
			for _, x := range []struct {
				s string
				v *map[string]any
			}{{tc.fields, &fields}, {tc.zero, &zero}, {tc.obj, &obj}, {tc.want, &want}} {
				if err := json.Unmarshal([]byte(x.s), x.v); err != nil {
					t.Fatal(err)
				}
			}
			disownZero(fields, zero, obj, true)
			if d := cmp.Diff(want, fields); d != "" {
				t.Errorf("fields (-want +got):\n%s", d)
			}
		})
	}
}
