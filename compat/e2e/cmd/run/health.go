package main

import (
	"strings"
)

// A "health" line compares a /healthz, /livez or /readyz answer as "raw"
// does, without the lines of kube-apiserver's checks that crdserver has no
// counterpart of (healthAbsent): what is left must agree line for line,
// order included.

// healthAbsent are kube-apiserver 1.37's checks that crdserver does not
// list, and why.
var healthAbsent = map[string]string{
	// crdserver's requests to itself need no loopback client certificate.
	"loopback-serving-certificate": "no loopback client",
	// crdserver keeps no in-flight watermark metrics for APF's filter.
	"poststarthook/priority-and-fairness-filter": "no watermark maintenance",
	// crdserver keeps no object counts for APF's width estimates.
	"poststarthook/storage-object-count-tracker-hook": "no object count tracker",
	// crdserver proxies no requests to peer servers.
	"poststarthook/peer-endpoint-reconciler-controller": "no peer proxy",
	// The aggregation layer's, added by it (branch agg).
	"poststarthook/start-cluster-authentication-info-controller":  "aggregation layer",
	"poststarthook/start-kube-aggregator-informers":               "aggregation layer",
	"poststarthook/apiservice-status-local-available-controller":  "aggregation layer",
	"poststarthook/apiservice-status-remote-available-controller": "aggregation layer",
	"poststarthook/apiservice-registration-controller":            "aggregation layer",
	"poststarthook/apiservice-discovery-controller":               "aggregation layer",
	"poststarthook/kube-apiserver-autoregistration":               "aggregation layer",
	"autoregister-completion":                                     "aggregation layer",
	"poststarthook/apiservice-openapi-controller":                 "aggregation layer",
	"poststarthook/apiservice-openapiv3-controller":               "aggregation layer",
	// crdserver does not track legacy service account token use.
	"poststarthook/start-legacy-token-tracking-controller": "no legacy token tracking",
}

// healthText is a health answer's text, less kube-apiserver's lines of
// the checks in healthAbsent.
func healthText(server, text string) string {
	if server != "kube-apiserver" {
		return text
	}
	lines := strings.SplitAfter(text, "\n")
	out := lines[:0]
	for _, l := range lines {
		name := ""
		if strings.HasPrefix(l, "[+]") || strings.HasPrefix(l, "[-]") {
			name, _, _ = strings.Cut(l[3:], " ")
		}
		if _, absent := healthAbsent[name]; !absent {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}
