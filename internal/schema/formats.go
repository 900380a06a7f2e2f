package schema

import (
	"net"
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	netutils "k8s.io/utils/net"
)

// supportedFormat drops the formats upstream does not validate for CRDs
// (StripUnsupportedFormatsPostProcessor): on strings (or untyped and
// int-or-string nodes) only the registry's names, dashes ignored; on
// integers int32/int64; on numbers float/double; nothing elsewhere.
func supportedFormat(format string, types []string) string {
	if format == "" {
		return ""
	}
	t := ""
	if len(types) == 1 {
		t = types[0]
	}
	switch t {
	case "", "string":
		if _, ok := formatCheckers[strings.ReplaceAll(format, "-", "")]; ok {
			return format
		}
	case "integer":
		if format == "int32" || format == "int64" {
			return format
		}
	case "number":
		if format == "float" || format == "double" {
			return format
		}
	}
	return ""
}

// RecognizedFormat reports whether format, on a schema node whose type is
// typ ("" when untyped), is one CRD validation checks rather than ignores.
// Upstream warns of the others when a CRD is written. It decides at its
// default compatibility version, one minor below the binary's (1.36 for
// 1.37), where every format of formatCheckers is known: k8s-short-name
// and k8s-long-name came in 1.34.
func RecognizedFormat(format, typ string) bool {
	return supportedFormat(format, []string{typ}) != ""
}

var (
	rxHostname   = regexp.MustCompile(`^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$`)
	rxUUID       = regexp.MustCompile(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`)
	rxUUID3      = regexp.MustCompile(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$`)
	rxUUID4      = regexp.MustCompile(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$`)
	rxUUID5      = regexp.MustCompile(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$`)
	rxCreditCard = regexp.MustCompile(`^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$`)
	rxNotNumber  = regexp.MustCompile(`[^0-9]+`)
	rxISBN10     = regexp.MustCompile(`^(?:[0-9]{9}X|[0-9]{10})$`)
	rxISBN13     = regexp.MustCompile(`^(?:[0-9]{13})$`)
	rxSpaceMinus = regexp.MustCompile(`[\s-]+`)
	rxHexcolor   = regexp.MustCompile(`^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)
	rxRGBcolor   = regexp.MustCompile(`^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$`)
	rxBase64     = regexp.MustCompile(`^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$`)
	rxSSN        = regexp.MustCompile(`^\d{3}[- ]?\d{2}[- ]?\d{4}$`)
	rxTime       = regexp.MustCompile(`^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?([zZ]|([+-][0-9]{2}:[0-9]{2}))$`)
	rxDuration   = regexp.MustCompile(`((\d+)\s*([A-Za-zµ]+))`)
	rxShortName  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	rxLongName   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	rxObjectID   = regexp.MustCompile(`^[0-9a-fA-F]{24}$`)
)

// formatCheckers are the string formats upstream's strfmt registry knows
// and CRDs keep, by name without dashes ("date-time" is "datetime"). Each
// accepts what the registry's validator accepts.
var formatCheckers = map[string]func(string) bool{
	"bsonobjectid": rxObjectID.MatchString,
	"uri": func(s string) bool {
		_, err := url.ParseRequestURI(s)
		return err == nil
	},
	"email": func(s string) bool {
		a, err := mail.ParseAddress(s)
		return err == nil && a.Address != ""
	},
	"hostname": isHostname,
	"ipv4": func(s string) bool {
		return netutils.ParseIPSloppy(s) != nil && strings.Contains(s, ".")
	},
	"ipv6": func(s string) bool {
		return net.ParseIP(s) != nil && strings.Contains(s, ":")
	},
	"cidr": func(s string) bool {
		_, _, err := netutils.ParseCIDRSloppy(s)
		return err == nil
	},
	"mac": func(s string) bool {
		_, err := net.ParseMAC(s)
		return err == nil
	},
	"uuid":       rxUUID.MatchString,
	"uuid3":      rxUUID3.MatchString,
	"uuid4":      rxUUID4.MatchString,
	"uuid5":      rxUUID5.MatchString,
	"isbn":       func(s string) bool { return isISBN(s, 10) || isISBN(s, 13) },
	"isbn10":     func(s string) bool { return isISBN(s, 10) },
	"isbn13":     func(s string) bool { return isISBN(s, 13) },
	"creditcard": isCreditCard,
	"ssn":        func(s string) bool { return len(s) == 11 && rxSSN.MatchString(s) },
	"hexcolor":   rxHexcolor.MatchString,
	"rgbcolor":   rxRGBcolor.MatchString,
	"byte":       rxBase64.MatchString,
	"password":   func(string) bool { return true },
	"date":       isDate,
	"duration":   isDuration,
	"datetime":   isDateTime,
	"k8sshortname": func(s string) bool {
		return len(s) <= 63 && rxShortName.MatchString(s)
	},
	"k8slongname": func(s string) bool {
		return len(s) <= 253 && rxLongName.MatchString(s)
	},
}

func isHostname(s string) bool {
	if !rxHostname.MatchString(s) || len(s) > 255 {
		return false
	}
	for _, p := range strings.Split(s, ".") {
		if len(p) > 63 {
			return false
		}
	}
	return true
}

func isDate(s string) bool {
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}

// isDateTime is upstream's loose RFC 3339 check: a valid date, a "t"
// (either case), and a time with a zone, the text up to any further "t"
// being the time.
func isDateTime(s string) bool {
	if len(s) < 4 {
		return false
	}
	i := strings.IndexAny(s, "tT")
	if i < 0 || !isDate(s[:i]) {
		return false
	}
	t := s[i+1:]
	if j := strings.IndexAny(t, "tT"); j >= 0 {
		t = t[:j]
	}
	if !rxTime.MatchString(t) {
		return false
	}
	return t[0:2] <= "23" && t[3:5] <= "59" && t[6:8] <= "59"
}

// isDuration accepts Go durations and upstream's "3 days"-style forms.
func isDuration(s string) bool {
	if _, err := time.ParseDuration(s); err == nil {
		return true
	}
	units := [][]string{
		{"ns", "nano"}, {"us", "µs", "micro"}, {"ms", "milli"}, {"s", "sec"},
		{"m", "min"}, {"h", "hr", "hour"}, {"d", "day"}, {"w", "wk", "week"},
	}
	for _, m := range rxDuration.FindAllStringSubmatch(s, -1) {
		if _, err := strconv.Atoi(m[2]); err != nil {
			return false
		}
		unit := strings.ToLower(strings.TrimSpace(m[3]))
		for _, variants := range units {
			last := len(variants) - 1
			for i, v := range variants {
				if (i == last && strings.HasPrefix(unit, v)) || strings.EqualFold(v, unit) {
					return true
				}
			}
		}
	}
	return false
}

func isISBN(s string, version int) bool {
	s = rxSpaceMinus.ReplaceAllString(s, "")
	var sum int32
	switch version {
	case 10:
		if !rxISBN10.MatchString(s) {
			return false
		}
		for i := int32(0); i < 9; i++ {
			sum += (i + 1) * int32(s[i]-'0')
		}
		if s[9] == 'X' {
			sum += 100
		} else {
			sum += 10 * int32(s[9]-'0')
		}
		return sum%11 == 0
	case 13:
		if !rxISBN13.MatchString(s) {
			return false
		}
		factor := []int32{1, 3}
		for i := 0; i < 12; i++ {
			sum += factor[i%2] * int32(s[i]-'0')
		}
		return (int32(s[12]-'0'))-((10-(sum%10))%10) == 0
	}
	return false
}

func isCreditCard(s string) bool {
	s = rxNotNumber.ReplaceAllString(s, "")
	if !rxCreditCard.MatchString(s) {
		return false
	}
	var sum int
	double := false
	for i := len(s) - 1; i >= 0; i-- {
		d := int(s[i] - '0')
		if double {
			d *= 2
			if d >= 10 {
				sum += d%10 + 1
			} else {
				sum += d
			}
		} else {
			sum += d
		}
		double = !double
	}
	return sum%10 == 0
}
