package main

import "testing"

func TestServerPortMasked(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:6443": "127.0.0.1:-",
		"https://127.0.0.1:41435/api/v1/x:80/proxy": "https://127.0.0.1:-/api/v1/x:80/proxy",
		"example.com": "example.com",
	} {
		if got := serverPort.ReplaceAllString(in, "$1$2:-"); got != want {
			t.Errorf("%s masked as %s, want %s", in, got, want)
		}
	}
}
