// Package metacheck tells, without regular expressions, whether the
// strings of an object's metadata are valid: names, label keys and values,
// annotation keys. Each function agrees exactly with apimachinery's
// validator of the same rule reporting no error, which it exists to skip:
// those validators run a backtracking regexp per string, and every write
// checks each label and annotation twice (a tenth of an update's CPU
// went there). When a string is not valid, callers ask apimachinery,
// whose messages they return.
package metacheck

// maxSubdomain and maxLabel are the length limits of a DNS-1123 subdomain
// and of a label value or a label key's name part.
const (
	maxSubdomain = 253
	maxLabel     = 63
)

// DNS1123Subdomain reports whether validation.IsDNS1123Subdomain(s)
// finds nothing wrong: dot-separated parts of lower-case letters, digits
// and '-', each starting and ending with a letter or digit, 253 bytes at
// most.
func DNS1123Subdomain(s string) bool {
	return len(s) <= maxSubdomain && subdomain(s, false)
}

// LabelKey reports whether validation.IsQualifiedName(s) (the rule of
// label keys) finds nothing wrong: a name, optionally after a DNS-1123
// subdomain prefix and a '/'.
func LabelKey(s string) bool { return qualified(s, false) }

// AnnotationKey reports whether apimachinery's annotation check, which is
// IsQualifiedName of the key in lower case, finds nothing wrong. Keys with
// bytes outside ASCII are reported invalid, for the caller to ask
// apimachinery: lower-casing them is Unicode's business.
func AnnotationKey(s string) bool { return qualified(s, true) }

// LabelValue reports whether validation.IsValidLabelValue(s) finds
// nothing wrong: empty, or a name of 63 bytes at most.
func LabelValue(s string) bool { return s == "" || name(s) }

// qualified is LabelKey, with upper-case letters of the prefix taken as
// lower-case when fold is set.
func qualified(s string, fold bool) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '/' {
			continue
		}
		prefix, rest := s[:i], s[i+1:]
		return prefix != "" && len(prefix) <= maxSubdomain && subdomain(prefix, fold) && name(rest)
	}
	return name(s)
}

// name reports whether s is 1 to 63 bytes of letters, digits, '-', '_'
// and '.', starting and ending with a letter or digit.
func name(s string) bool {
	if s == "" || len(s) > maxLabel || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// subdomain reports whether s is dot-separated, non-empty parts of
// lower-case letters (any case when fold is set), digits and '-', each
// starting and ending with a letter or digit. It does not check length.
func subdomain(s string, fold bool) bool {
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			if !lowerAlnum(c, fold) && c != '-' {
				return false
			}
			continue
		}
		// s[start:i] is a part.
		if i == start || s[start] == '-' || s[i-1] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func lowerAlnum(c byte, fold bool) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || fold && 'A' <= c && c <= 'Z'
}
