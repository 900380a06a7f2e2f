package metacheck

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// agree checks every function against the apimachinery validator it
// stands for.
func agree(t *testing.T, s string) {
	t.Helper()
	if got, want := DNS1123Subdomain(s), len(validation.IsDNS1123Subdomain(s)) == 0; got != want {
		t.Errorf("DNS1123Subdomain(%q) = %v, apimachinery says %v", s, got, want)
	}
	if got, want := LabelKey(s), len(validation.IsQualifiedName(s)) == 0; got != want {
		t.Errorf("LabelKey(%q) = %v, apimachinery says %v", s, got, want)
	}
	if got, want := LabelValue(s), len(validation.IsValidLabelValue(s)) == 0; got != want {
		t.Errorf("LabelValue(%q) = %v, apimachinery says %v", s, got, want)
	}
	want := len(validation.IsQualifiedName(strings.ToLower(s))) == 0
	if !ascii(s) {
		// Not decided here: apimachinery is asked.
		want = false
	}
	if got := AnnotationKey(s); got != want {
		t.Errorf("AnnotationKey(%q) = %v, want %v", s, got, want)
	}
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

var cases = []string{
	"", "a", "A", "0", "-", "_", ".", "/", "a/", "/a", "a/b", "a/b/c",
	"abc", "a-b", "a_b", "a.b", "-a", "a-", "_a", "a_", ".a", "a.",
	"Abc", "ABC", "a..b", "a.-b", "a-.b", "example.com", "Example.com",
	"example.com/name", "Example.com/name", "example.com/Name", "example..com/name",
	"example.com/", "-example.com/name", "example-.com/name", "example.com/-name",
	"kubernetes.io/hostname", "app.kubernetes.io/managed-by", "app_name",
	"crdserver.dev/bench-seq", "a.b.c.d.e", "0.0.0.0", "a b", "a\tb", "a\n", "\na",
	"é", "a/é", "ünïcode.example/x", "İ/x", "K/x", "ＡＢＣ", "a\x00b",
	strings.Repeat("a", 63), strings.Repeat("a", 64),
	strings.Repeat("a", 253), strings.Repeat("a", 254),
	strings.Repeat("a.", 126) + "a", strings.Repeat("a.", 127) + "a",
	strings.Repeat("a", 253) + "/x", strings.Repeat("a", 254) + "/x",
	"x/" + strings.Repeat("a", 63), "x/" + strings.Repeat("a", 64),
}

func TestAgreesWithApimachinery(t *testing.T) {
	for _, s := range cases {
		agree(t, s)
	}
}

func FuzzAgreesWithApimachinery(f *testing.F) {
	for _, s := range cases {
		f.Add(s)
	}
	f.Fuzz(agree)
}

func BenchmarkLabelKey(b *testing.B) {
	const key = "app.kubernetes.io/managed-by"
	b.Run("metacheck", func(b *testing.B) {
		for b.Loop() {
			LabelKey(key)
		}
	})
	b.Run("apimachinery", func(b *testing.B) {
		for b.Loop() {
			validation.IsQualifiedName(key)
		}
	})
}
