package builtin

import (
	"strings"
	"testing"

	"github.com/crdserver/crdserver/internal/registry"
)

// Writes to a CSR's /status and /approval get upstream's checks of its
// conditions and certificate.
func TestCSRStatusAndApprovalValidation(t *testing.T) {
	const (
		// Stored conditions have their times, as every write stamps them.
		approved = `{type: Approved, status: "True", reason: r, lastUpdateTime: "2026-01-01T00:00:00Z", lastTransitionTime: "2026-01-01T00:00:00Z"}`
		denied   = `{type: Denied, status: "True", reason: r, lastUpdateTime: "2026-01-01T00:00:00Z", lastTransitionTime: "2026-01-01T00:00:00Z"}`
		failed   = `{type: Failed, status: "True", reason: r, lastUpdateTime: "2026-01-01T00:00:00Z", lastTransitionTime: "2026-01-01T00:00:00Z"}`
	)
	csr := func(conds, cert string) string {
		s := `{kind: CertificateSigningRequest, metadata: {name: c}, status: {conditions: [` + conds + `]`
		if cert != "" {
			s += `, certificate: ` + cert
		}
		return s + `}}`
	}
	for _, tc := range []struct {
		line     string
		approval bool // else /status
		old, obj string
		want     []string // error strings, in order; none = valid
	}{
		{line: line(), approval: true, old: csr("", ""), obj: csr(approved, "")},
		{line: line(), approval: true, old: csr(approved, ""), obj: csr(approved+","+denied, ""),
			want: []string{"status.conditions: Invalid value: \"{conditions[{\\\"type\\\":\\\"Approved\\\"}], conditions[{\\\"type\\\":\\\"Denied\\\"}]}\": must specify at most one of: `conditions[{\"type\":\"Approved\"}]`, `conditions[{\"type\":\"Denied\"}]`"}},
		{line: line(), approval: true, old: csr(approved+","+denied, ""), obj: csr(approved+","+denied+","+failed, "")},
		{line: line(), approval: true, old: csr(approved, ""), obj: csr("", ""),
			want: []string{`status.conditions: Forbidden: updates may not remove a condition of type "Approved"`}},
		{line: line(), approval: true, old: csr("", ""), obj: csr(`{type: Approved, status: "False"}`, ""),
			want: []string{`status.conditions[0].status: Unsupported value: "False": supported values: "True"`}},
		{line: line(), approval: true, old: csr("", ""), obj: csr(`{type: Approved}, {type: ""}, {type: Approved, status: "True"}`, ""),
			want: []string{
				"status.conditions[0].status: Required value",
				"status.conditions[1].type: Required value",
				"status.conditions[1].status: Required value",
				`status.conditions[2].type: Duplicate value: "Approved"`,
			}},
		{line: line(), old: csr("", ""), obj: csr(approved, ""),
			want: []string{`status.conditions: Forbidden: updates may not add a condition of type "Approved"`}},
		{line: line(), old: csr("", ""), obj: csr(`{type: Ready, status: Maybe}`, ""),
			want: []string{`status.conditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"`}},
		{line: line(), old: csr(approved, ""), obj: csr(approved+","+failed, "")},
		{line: line(), old: csr("", ""), obj: csr("", "bm90IHBlbQ=="),
			want: []string{"status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block"}},
	} {
		h := CertificateSigningRequests().Hooks
		obj, old := decodeYAML(t, tc.obj), decodeYAML(t, tc.old)
		var errs []string
		if tc.approval {
			for _, e := range h.(registry.SubresourceValidator).ValidateSubresourceUpdate("approval", obj, old) {
				errs = append(errs, e.Error())
			}
		} else {
			h.(registry.StatusUpdatePreparer).PrepareForStatusUpdate(obj, old)
			for _, e := range h.(registry.StatusValidator).ValidateStatusUpdate(obj, old) {
				errs = append(errs, e.Error())
			}
		}
		if got, want := strings.Join(errs, "\n"), strings.Join(tc.want, "\n"); got != want {
			t.Errorf("%s:\ngot  %s\nwant %s", tc.line, got, want)
		}
	}
}

// A /status write keeps the stored Approved condition as it was, whatever
// the body says of it, as upstream's status strategy does.
func TestCSRStatusKeepsApproval(t *testing.T) {
	h := CertificateSigningRequests().Hooks.(registry.StatusUpdatePreparer)
	old := decodeYAML(t, `{kind: CertificateSigningRequest, metadata: {name: c}, status: {conditions: [{type: Approved, status: "True", reason: ByAdmin}]}}`)
	obj := decodeYAML(t, `{kind: CertificateSigningRequest, metadata: {name: c}, status: {conditions: [{type: Approved, status: "True", reason: Changed}, {type: Failed, status: "True"}]}}`)
	h.PrepareForStatusUpdate(obj, old)
	if got := lookup(obj, "status.conditions.0.reason"); got != "ByAdmin" {
		t.Errorf("Approved's reason %v, want the stored ByAdmin", got)
	}
	if conds, _ := lookup(obj, "status.conditions").([]any); len(conds) != 2 || conds[1].(map[string]any)["type"] != "Failed" {
		t.Errorf("conditions %v, want the Failed one kept second", conds)
	}
}
