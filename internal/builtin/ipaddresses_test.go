package builtin

import (
	"testing"

	"github.com/crdserver/crdserver/internal/registry"
)

// TestIPAddressAndServiceCIDRValidation checks the rules against
// kube-apiserver 1.37.2's answers for the same bodies (compat's
// ipaddresses.txt).
func TestIPAddressAndServiceCIDRValidation(t *testing.T) {
	ipHooks := IPAddresses().Hooks.(ipAddressHooks)
	for _, tc := range []struct{ name, want string }{
		{"10.0.0.97", ""},
		{"010.0.0.98", "must not have leading 0s"},
		{"2001:db8:0::1", `must be in canonical form ("2001:db8::1")`},
	} {
		msgs := ipHooks.ValidateName(tc.name, false)
		if tc.want == "" && len(msgs) > 0 || tc.want != "" && (len(msgs) != 1 || msgs[0] != tc.want) {
			t.Errorf("name %q: %q, want %q", tc.name, msgs, tc.want)
		}
	}
	cidrHooks := ServiceCIDRs().Hooks
	for _, tc := range []struct {
		name, old, obj, want string
	}{
		{line(), "", `{cidrs: [10.1.0.0/24]}`, ""},
		{line(), "", `{}`, "spec.cidrs: Required value: at least one CIDR required"},
		{line(), "", `{cidrs: [10.2.0.0/24, 10.3.0.0/24, "fd00::/64"]}`,
			`spec.cidrs: Invalid value: {"CIDRs":["10.2.0.0/24","10.3.0.0/24","fd00::/64"]}: may only hold up to 2 values`},
		{line(), "", `{cidrs: [10.5.0.0/24, 10.6.0.0/24]}`,
			`spec.cidrs: Invalid value: ["10.5.0.0/24","10.6.0.0/24"]: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64`},
		{line(), `{cidrs: [10.1.0.0/24]}`, `{cidrs: [10.7.0.0/24]}`, `spec.cidrs[0]: Invalid value: "10.7.0.0/24": field is immutable`},
		{line(), `{cidrs: [10.1.0.0/24]}`, `{cidrs: [10.1.0.0/24, "fd00:1::/112"]}`, ""},
	} {
		obj := decodeYAML(t, "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: c}\nspec: "+tc.obj)
		v := cidrHooks.(registry.Validator)
		errs := v.Validate(obj)
		if tc.old != "" {
			old := decodeYAML(t, "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: c}\nspec: "+tc.old)
			errs = v.ValidateUpdate(obj, old)
		}
		got := errs.ToAggregate()
		if tc.want == "" {
			checkErrors(t, tc.name, got, "")
		} else if got == nil || got.Error() != tc.want {
			t.Errorf("%s: errors\n%v\nwant\n%s", tc.name, got, tc.want)
		}
	}
}
