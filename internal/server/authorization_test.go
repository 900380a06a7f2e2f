package server

import (
	"strings"
	"testing"
)

func TestAuthorizationModes(t *testing.T) {
	for _, mode := range []string{"", ModeRBAC, ModeAlwaysAllow} {
		if _, err := newAuthorization(mode); err != nil {
			t.Errorf("mode %q: %v", mode, err)
		}
	}
	if _, err := newAuthorization("ABAC"); err == nil || !strings.Contains(err.Error(), `unknown authorization mode "ABAC"`) {
		t.Errorf("mode ABAC: %v", err)
	}
}
