package apply

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
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
		{line: zeroLine(), // a Lease: spec is always there
			fields: `{"f:spec":{".":{},"f:holderIdentity":{}}}`,
			zero:   `{"spec":{}}`,
			obj:    `{"spec":{"holderIdentity":"me"}}`,
			want:   `{"f:spec":{"f:holderIdentity":{}}}`},
		{line: zeroLine(), // a Deployment: a null slice and a pointer struct
			fields: `{"f:spec":{".":{},"f:strategy":{".":{},"f:rollingUpdate":{".":{},"f:maxSurge":{}}},"f:template":{".":{},"f:spec":{".":{},"f:containers":{".":{},"k:{\"name\":\"c\"}":{".":{},"f:name":{}}}}}}}`,
			zero:   `{"spec":{"strategy":{},"template":{"spec":{"containers":null}}}}`,
			obj:    `{"spec":{"strategy":{"rollingUpdate":{"maxSurge":"25%"}},"template":{"spec":{"containers":[{"name":"c"}]}}}}`,
			want:   `{"f:spec":{"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{}}},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:name":{}}}}}}}`},
		{line: zeroLine(), // an Event: leaves left as the zero object has them
			fields: `{"f:deprecatedSource":{},"f:deprecatedFirstTimestamp":{},"f:note":{},"f:regarding":{}}`,
			zero:   `{"deprecatedSource":{},"deprecatedFirstTimestamp":null,"regarding":{}}`,
			obj:    `{"deprecatedSource":{},"deprecatedFirstTimestamp":null,"note":"n","regarding":{"name":"p"}}`,
			want:   `{"f:note":{},"f:regarding":{}}`},
		{line: zeroLine(), // a struct with nothing new goes
			fields: `{"f:spec":{}}`,
			zero:   `{"spec":{}}`,
			obj:    `{"spec":{}}`,
			want:   `{}`},
		{line: zeroLine(), // metadata is the field manager's own
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

// zeroLine is the caller's line, for a failing case to name itself.
func zeroLine() int {
	_, _, line, _ := runtime.Caller(1)
	return line
}

// A create recorded against a zero object: the writer owns neither the
// "." of a struct the zero object has nor a field left as it has it, and
// an entry left empty goes.
func TestUpdateCreateAgainstZero(t *testing.T) {
	m := manager(t, "v1", "")
	m.Zero = map[string]any{"spec": map[string]any{"color": ""}}
	o := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"","replicas":2}}`)
	m.Update(nil, o, "creator")
	if got, want := summary(o), []string{`creator/Update/example.com/v1/: {"f:spec":{"f:replicas":{}}}`}; !slices.Equal(got, want) {
		t.Errorf("entries %q, want %q", got, want)
	}
	o = obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":""}}`)
	m.Update(nil, o, "creator")
	if got := summary(o); len(got) != 0 {
		t.Errorf("entries %q, want none", got)
	}
}
