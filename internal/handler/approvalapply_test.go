package handler_test

import (
	"encoding/json"
	"testing"
)

// testCSRRequest is a certificate request (CN=bob, O=dev), base64 PEM.
const testCSRRequest = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIV01INENBUUF3SERFTU1Bb0dBMVVFQXd3RFltOWlNUXd3Q2dZRFZRUUtEQU5rWlhZd1dUQVRCZ2NxaGtqTwpQUUlCQmdncWhrak9QUU1CQndOQ0FBUjAvTkxHdVJuMCtIc1FkYmFGREdwUWhxdGJrY2ZldkZMUG1QamFMak1SCjBNMk92QzYxNmJXMURsQk5jdXNPN0VqM1dOZkhRakFVZ2xxc29mMkNmQU9Rb0FBd0NnWUlLb1pJemowRUF3SUQKU0FBd1JRSWdmeTE1WG00Q01HbkYwMVpoQTkrOGNYVzFQbmc0NDNYYm5VVitkbEJhWElvQ0lRQ05vRVdBQmo5eQpyRmpaTUdDcFQwRTBOYXVQQzk2dTM5blZWa2UxVzZXTWhRPT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg=="

// A server-side apply through a CSR's /approval changes its conditions
// and user metadata alone, as kube-apiserver 1.37's: the applied spec is
// left as it was and not owned, the apply's managed fields name the
// subresource; nothing else is owned.
func TestApplyApproval(t *testing.T) {
	e := newEnv(t)
	const path = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
	if r := e.do(req{method: "POST", path: path, body: `{"metadata":{"name":"csr"},"spec":{"request":"` + testCSRRequest + `","signerName":"example.com/signer","usages":["client auth"]}}`}); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	r := e.do(req{method: "PATCH", path: path + "/csr/approval?fieldManager=approver", contentType: "application/apply-patch+yaml", body: `
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: csr, labels: {a: b}}
spec: {usages: [server auth]}
status: {conditions: [{type: Approved, status: "True", reason: ByApply, message: applied}]}
`})
	if r.code != 200 {
		t.Fatalf("apply: %d %s", r.code, r.body)
	}
	var csr struct {
		Metadata struct {
			Labels        map[string]string
			ManagedFields []struct {
				Manager, Operation, Subresource string
				FieldsV1                        json.RawMessage
			}
		}
		Spec   struct{ Usages []string }
		Status struct {
			Conditions []struct{ Type, Reason, LastUpdateTime string }
		}
	}
	if err := json.Unmarshal(r.body, &csr); err != nil {
		t.Fatal(err)
	}
	if csr.Metadata.Labels["a"] != "b" || len(csr.Spec.Usages) != 1 || csr.Spec.Usages[0] != "client auth" {
		t.Errorf("labels %v, usages %v: want the label applied and the usages kept", csr.Metadata.Labels, csr.Spec.Usages)
	}
	if c := csr.Status.Conditions; len(c) != 1 || c[0].Type != "Approved" || c[0].Reason != "ByApply" || c[0].LastUpdateTime == "" {
		t.Errorf("conditions %+v, want the applied Approved, with its times", c)
	}
	const owned = `{"f:metadata":{"f:labels":{"f:a":{}}},"f:status":{"f:conditions":{"k:{\"type\":\"Approved\"}":{".":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}}}}`
	// The create owns nothing (its strategy resets the spec and status)
	// and the apply's before-first-apply entry nothing either: the
	// stored status is empty.
	if mf := csr.Metadata.ManagedFields; len(mf) != 1 || mf[0].Manager != "approver" || mf[0].Operation != "Apply" ||
		mf[0].Subresource != "approval" || string(mf[0].FieldsV1) != owned {
		t.Errorf("managed fields %+v, want approver's Apply through approval of %s alone", mf, owned)
	}
}
