package apply

import (
	"strings"
	"unicode"
	"unicode/utf8"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
)

// ManagerName is the manager a write is recorded under: the request's
// fieldManager, else what precedes the first "/" of its User-Agent
// ("kubectl-client-side-apply/v1.33.0 (linux/amd64) ..." records
// "kubectl-client-side-apply"), without unprintable characters and cut to
// the longest fieldManager allowed.
func ManagerName(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	prefix, _, _ := strings.Cut(userAgent, "/")
	var b strings.Builder
	for _, r := range prefix {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > metav1validation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
