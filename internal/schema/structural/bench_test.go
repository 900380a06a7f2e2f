package structural

import "testing"

// BenchmarkCheck: the check of a typical schema at CRD write time.
func BenchmarkCheck(b *testing.B) {
	s := parse(b, selectableSchema+`
      replicas: {type: integer, minimum: 1, default: 1}
      port: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [name]
        items: {type: object, required: [name], properties: {name: {type: string}, port: {type: integer}}}
  status:
    type: object
    properties:
      phase: {type: string, enum: [Pending, Running]}
`)
	b.ReportAllocs()
	for b.Loop() {
		if errs := Check(s, root, true, Options{}); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
