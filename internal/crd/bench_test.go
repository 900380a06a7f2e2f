package crd

import "testing"

// Costs paid per CRD write (Validate) and per CRD per registry rebuild
// (FromCRD).
func BenchmarkValidate(b *testing.B) {
	obj := valid(b, "crontab-webhook.yaml")
	b.ReportAllocs()
	for b.Loop() {
		Hooks{}.Validate(obj)
	}
}

func BenchmarkFromCRD(b *testing.B) {
	obj := valid(b, "crontab-webhook.yaml")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromCRD(obj); err != nil {
			b.Fatal(err)
		}
	}
}
