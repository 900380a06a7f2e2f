package main

import "testing"

func TestHealthText(t *testing.T) {
	upstream := "[+]ping ok\n[+]loopback-serving-certificate ok\n[-]poststarthook/apiservice-registration-controller failed: reason withheld\n[+]poststarthook/bootstrap-controller ok\nhealthz check passed\n"
	want := "[+]ping ok\n[+]poststarthook/bootstrap-controller ok\nhealthz check passed\n"
	if got := healthText("kube-apiserver", upstream); got != want {
		t.Errorf("kube-apiserver's text kept %q, want %q", got, want)
	}
	if got := healthText("crdserver", upstream); got != upstream {
		t.Errorf("crdserver's text changed to %q", got)
	}
}
