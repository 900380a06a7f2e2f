package admission

import (
	"encoding/json"
	"reflect"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// answers are webhook answers: quick says whether quickAnswer reads them
// itself (the common ones) rather than leave them to encoding/json.
var answers = []struct {
	answer string
	quick  bool
}{
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true}}`, true},
	{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"u-1","allowed":false,"status":{"metadata":{},"message":"no","reason":"Forbidden","code":403}}}`, true},
	{`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"u-1","allowed":true,"status":{"metadata":{},"code":200}}}`, true},
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true,"patchType":"JSONPatch","patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL2EiLCJ2YWx1ZSI6MX1d"}}`, true},
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true,"patch":""}}`, true},
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true,"warnings":["w1","\u00e9 \"q\""],"auditAnnotations":{"k":"v","k2":""}}}`, true},
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true,"warnings":[],"auditAnnotations":{}}}`, true},
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true,"auditAnnotations":{"a":"1"},"auditAnnotations":{"b":"2"}}}`, true},
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true,"status":{"code":200},"status":{"message":"m"}}}`, true},
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, true},
	// Invalid UTF-8 becomes U+FFFD, as encoding/json has it.
	{"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Admission\xffReview\"}", true},
	// Left to encoding/json.
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true}}` + "\n", false},
	{`{"apiVersion":"admission.k8s.io/v1", "kind":"AdmissionReview","response":{"uid":"u-1","allowed":true}}`, false},
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"UID":"u-1","Allowed":true}}`, false},
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":null}`, false},
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":"yes"}}`, false},
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true,"patch":"not base64!"}}`, false},
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true,"warnings":[1]}}`, false},
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true,"auditAnnotations":{"k":1}}}`, false},
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1"},"response":{"uid":"u-1","allowed":true}}`, false},
	{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true,"status":{"code":"x"}}}`, false},
	{`[]`, false},
	{``, false},
}

// TestDecodeAnswer: every answer decodes (or fails) as encoding/json
// decodes it, and the common ones without it.
func TestDecodeAnswer(t *testing.T) {
	for _, tc := range answers {
		_, quick := quickAnswer([]byte(tc.answer))
		if quick != tc.quick {
			t.Errorf("%s: read quickly %v, want %v", tc.answer, quick, tc.quick)
		}
		checkAnswer(t, []byte(tc.answer))
	}
}

func checkAnswer(t *testing.T, answer []byte) {
	t.Helper()
	var want admissionv1.AdmissionReview
	wantErr := json.Unmarshal(answer, &want)
	got, err := decodeAnswer(answer)
	switch {
	case (err != nil) != (wantErr != nil):
		t.Errorf("%q: error %v, want %v", answer, err, wantErr)
	case err != nil:
		if err.Error() != wantErr.Error() {
			t.Errorf("%q: error %v, want %v", answer, err, wantErr)
		}
	case !reflect.DeepEqual(*got, want):
		t.Errorf("%q:\n got %#v\nwant %#v", answer, got, want)
	}
}

func FuzzDecodeAnswer(f *testing.F) {
	for _, tc := range answers {
		f.Add([]byte(tc.answer))
	}
	f.Fuzz(func(t *testing.T, answer []byte) { checkAnswer(t, answer) })
}

// BenchmarkDecodeAnswer: the answer of the load generator's webhook.
func BenchmarkDecodeAnswer(b *testing.B) {
	answer := []byte(answers[0].answer)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeAnswer(answer); err != nil {
			b.Fatal(err)
		}
	}
}
