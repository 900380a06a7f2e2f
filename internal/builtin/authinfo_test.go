package builtin

import (
	"encoding/pem"
	"testing"
	"time"
)

func certPEM(der string) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte(der)}))
}

func TestMergeCABundle(t *testing.T) {
	a, b, c := certPEM("a"), certPEM("b"), certPEM("c")
	key := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("k")}))
	for _, tc := range []struct {
		name, have, add, want string
		changed               bool
	}{
		{"empty, ours added", "", a, a, true},
		{"ours there", a, a, a, false},
		{"another replica's kept, ours after it", b, a, b + a, true},
		{"ours among others", b + a + c, a, b + a + c, false},
		{"duplicates in the bundle written once", a + a, b, a + b, true},
		{"not a certificate dropped", key + a, a, a, true},
		{"a bundle of two added", a, b + c, a + b + c, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := MergeCABundle(tc.have, tc.add)
			if got != tc.want || changed != tc.changed {
				t.Errorf("MergeCABundle = %q, %v; want %q, %v", got, changed, tc.want, tc.changed)
			}
		})
	}
}

func TestNewSystemConfigMap(t *testing.T) {
	cm := NewSystemConfigMap(AuthenticationInfoConfigMap, map[string]string{AuthenticationInfoClientCA: "PEM"}, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	md := cm["metadata"].(map[string]any)
	if md["namespace"] != "kube-system" || md["name"] != AuthenticationInfoConfigMap {
		t.Fatalf("metadata %v", md)
	}
	mf := md["managedFields"].([]any)[0].(map[string]any)
	if mf["manager"] != "kube-apiserver" || mf["operation"] != "Update" {
		t.Errorf("managedFields %v", mf)
	}
	fields := mf["fieldsV1"].(map[string]any)["f:data"].(map[string]any)
	if _, ok := fields["f:client-ca-file"]; !ok || len(fields) != 2 {
		t.Errorf("fieldsV1 %v", fields)
	}
	if d := cm["data"].(map[string]any); d["client-ca-file"] != "PEM" {
		t.Errorf("data %v", d)
	}
}
