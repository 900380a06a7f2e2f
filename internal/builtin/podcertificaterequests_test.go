package builtin

import (
	"reflect"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// stubRequest is an empty PKCS#10 request signed by an Ed25519 key.
const stubRequest = "MH8wMwIBADAAMCowBQYDK2VwAyEAXZicWB7o+RXMKfKpBiZvZiTFO+hIrwvsZt5jjmHIWMigADAFBgMrZXADQQAGDRlVudf39U0WfnPat2taL9riH3SrHd30iQg/3kTb3ZHuKBJoFTf2SReZ5/QXMSoyfxf4x7e4kL++IfUgaf8B"

// A request's fields and stub request are checked as upstream checks
// them; its maxExpirationSeconds defaults to a day.
func TestPodCertificateRequestValidation(t *testing.T) {
	spec := func(extra string) string {
		return `{kind: PodCertificateRequest, metadata: {name: r, namespace: ns}, spec: {signerName: example.com/pods, podName: web-0, podUID: u1,
			serviceAccountName: default, serviceAccountUID: u2, nodeName: node-1, nodeUID: u3, stubPKCS10Request: "` + stubRequest + `"` + extra + `}}`
	}
	for _, tc := range []struct {
		line string
		obj  string
		want []string
	}{
		{line(), spec(""), nil},
		{line(), spec(", maxExpirationSeconds: 60"), []string{"spec.maxExpirationSeconds: Invalid value: 60: must be in the range [3600, 7862400]"}},
		{line(), spec(", signerName: kubernetes.io/pods, maxExpirationSeconds: 90000"), []string{"spec.maxExpirationSeconds: Invalid value: 90000: must be in the range [3600, 86400]"}},
		{line(), spec(", stubPKCS10Request: aGVsbG8="), []string{`spec.stubPKCS10Request: Invalid value: must be a valid PKCS#10 CSR`}},
		{line(), spec(", podUID: ''"), []string{`spec.podUID: Invalid value: "": must not be empty`}},
	} {
		h := PodCertificateRequests(nil).Hooks.(podCertificateRequestHooks)
		obj := decodeYAML(t, tc.obj)
		h.Default(obj)
		var got []string
		for _, e := range h.Validate(obj) {
			got = append(got, e.Error())
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got\n%q\nwant\n%q", tc.line, got, tc.want)
		}
	}
}

// Status writes: one outcome, True, then nothing changes.
func TestPodCertificateRequestStatus(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: "R", LastTransitionTime: metav1.NewTime(time.Unix(0, 0))}
	}
	req := func(chain string, conds ...metav1.Condition) *certificatesv1.PodCertificateRequest {
		return &certificatesv1.PodCertificateRequest{Status: certificatesv1.PodCertificateRequestStatus{Conditions: conds, CertificateChain: chain}}
	}
	for _, tc := range []struct {
		line     string
		now, was *certificatesv1.PodCertificateRequest
		want     []string
	}{
		{line(), req("", cond("Denied", metav1.ConditionTrue)), req(""), nil},
		{line(), req("", cond("Denied", metav1.ConditionTrue), cond("Failed", metav1.ConditionFalse)), req(""), []string{
			`status.conditions.[1].type: Invalid value: "Failed": There may be at most one condition with type "Issued", "Denied", or "Failed"`,
			`status.conditions.[1].status: Unsupported value: "False": supported values: "True"`,
		}},
		{line(), req("x", cond("Failed", metav1.ConditionTrue)), req(""), []string{"status: Invalid value: non-condition status fields must be empty when denying or failing the PodCertificateRequest"}},
		{line(), req("", cond("Failed", metav1.ConditionTrue)), req("", cond("Denied", metav1.ConditionTrue)), []string{"status: Invalid value: immutable after PodCertificateRequest is issued, denied, or failed"}},
		{line(), req("", cond("Issued", metav1.ConditionTrue)), req(""), []string{`status.certificateChain: Invalid value: "": issued certificate chain must contain at least one certificate`}},
	} {
		var got []string
		for _, e := range validatePodCertificateRequestStatus(tc.now, tc.was, time.Now()) {
			got = append(got, e.Error())
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got\n%q\nwant\n%q", tc.line, got, tc.want)
		}
	}
}
