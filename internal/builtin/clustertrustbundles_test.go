package builtin

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/crdserver/crdserver/internal/registry"
)

// A bundle's PEM text, signer and name are checked as upstream checks
// them.
func TestClusterTrustBundleValidation(t *testing.T) {
	ca := readFile(t, "testdata/ctb-ca1.pem")
	leaf := readFile(t, "testdata/ctb-leaf.pem")
	const garbage = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
	for _, tc := range []struct {
		line           string
		signer, bundle string
		was            string // an update's stored signer, "-" for a create
		want           []string
	}{
		{line: line(), bundle: ca, was: "-"},
		{line: line(), signer: "example.com/issuer", bundle: ca, was: "-"},
		{line: line(), bundle: "", was: "-", want: []string{`spec.trustBundle: Invalid value: "<value omitted>": at least one trust anchor must be provided`}},
		{line: line(), bundle: leaf + garbage, was: "-", want: []string{
			`spec.trustBundle: Invalid value: "<value omitted>": entry 0 does not have the CA bit set`,
			`spec.trustBundle: Invalid value: "<value omitted>": entry 1 does not parse as X.509`,
		}},
		{line: line(), bundle: strings.ReplaceAll(ca, "CERTIFICATE", "PRIVATE KEY"), was: "-", want: []string{`spec.trustBundle: Invalid value: "<value omitted>": entry 0 has bad block type: PRIVATE KEY`}},
		{line: line(), bundle: ca + ca, was: "-", want: []string{`spec.trustBundle: Invalid value: "<value omitted>": duplicate trust anchor (indices [0 1])`}},
		{line: line(), signer: "nodomain", bundle: ca, was: "-", want: []string{`spec.signerName: Invalid value: "nodomain": must be a fully qualified domain and path of the form 'example.com/signer-name'`}},
		{line: line(), signer: "example.com/other", bundle: ca, was: "example.com/issuer", want: []string{
			"metadata.name: Invalid value: \"b\": ClusterTrustBundle for signerName example.com/other must be named with prefix example.com:other:",
			`spec.signerName: Invalid value: "example.com/other": field is immutable`,
		}},
	} {
		h := ClusterTrustBundles(nil).Hooks.(clusterTrustBundleHooks)
		obj := map[string]any{"kind": "ClusterTrustBundle", "metadata": map[string]any{"name": "b"},
			"spec": map[string]any{"signerName": tc.signer, "trustBundle": tc.bundle}}
		var got []string
		if tc.was == "-" {
			for _, e := range h.Validate(obj) {
				got = append(got, e.Error())
			}
		} else {
			old := map[string]any{"kind": "ClusterTrustBundle", "metadata": map[string]any{"name": "b"},
				"spec": map[string]any{"signerName": tc.was, "trustBundle": tc.bundle}}
			for _, e := range h.ValidateUpdate(obj, old) {
				got = append(got, e.Error())
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got\n%q\nwant\n%q", tc.line, got, tc.want)
		}
	}

	name := ClusterTrustBundles(nil).Hooks.(registry.CreateNameValidator)
	for _, tc := range []struct{ signer, name, want string }{
		{"", "roots", ""},
		{"", "a:b", `ClusterTrustBundle without signer name must not have ":" in its name`},
		{"example.com/issuer", "example.com:issuer:roots", ""},
		{"example.com/issuer", "roots", "ClusterTrustBundle for signerName example.com/issuer must be named with prefix example.com:issuer:"},
	} {
		msgs := name.CreateNameValidator(map[string]any{"spec": map[string]any{"signerName": tc.signer}})(tc.name, false)
		if got := strings.Join(msgs, "; "); got != tc.want {
			t.Errorf("%s named %s: %q, want %q", tc.signer, tc.name, got, tc.want)
		}
	}
}

type signers map[string]bool

func (s signers) AuthorizedForSigner(_ context.Context, verb, signer string) bool {
	return s[verb+" "+signer]
}

// A valid bundle of a signer needs its writer to attest for the signer;
// an invalid one is left to validation, one without a signer needs none.
func TestClusterTrustBundleAttest(t *testing.T) {
	ca := readFile(t, "testdata/ctb-ca1.pem")
	bundle := func(name, signer, pem string) map[string]any {
		return map[string]any{"kind": "ClusterTrustBundle", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"signerName": signer, "trustBundle": pem}}
	}
	for _, tc := range []struct {
		line string
		may  signers
		obj  map[string]any
		want string
	}{
		{line(), nil, bundle("roots", "", ca), ""},
		{line(), signers{}, bundle("example.com:issuer:r", "example.com/issuer", ca),
			`clustertrustbundles.certificates.k8s.io "example.com:issuer:r" is forbidden: user not permitted to attest for signerName "example.com/issuer"`},
		{line(), signers{"attest example.com/issuer": true}, bundle("example.com:issuer:r", "example.com/issuer", ca), ""},
		{line(), signers{}, bundle("example.com:issuer:r", "example.com/issuer", "nope"), ""},
	} {
		h := ClusterTrustBundles(tc.may).Hooks.(registry.WriteChecker)
		got := ""
		if err := h.CheckWrite(context.Background(), tc.obj, nil); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.line, got, tc.want)
		}
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
