package builtin

import (
	"bytes"
	"encoding/pem"
	"slices"
	"time"
)

// The kube-system ConfigMap kube-apiserver's cluster-authentication-info
// controller keeps, written by the manager APIServerManager.
const (
	// AuthenticationInfoConfigMap publishes how the server authenticates
	// clients (its client CA bundle, under AuthenticationInfoClientCA), for
	// extension API servers and webhooks that delegate authentication:
	// k8s.io/apiserver's delegating authenticator reads it at start and
	// fails without it.
	AuthenticationInfoConfigMap = "extension-apiserver-authentication"
	AuthenticationInfoClientCA  = "client-ca-file"
	APIServerManager            = "kube-apiserver"
)

// NewSystemConfigMap is kube-system's ConfigMap name holding data, as
// kube-apiserver creates it (an update after a get that found nothing),
// with the managedFields entry upstream's field manager records for it.
func NewSystemConfigMap(name string, data map[string]string, now time.Time) map[string]any {
	cm := newCoreObject("ConfigMap", "kube-system", name, now)
	fields := map[string]any{".": map[string]any{}}
	d := make(map[string]any, len(data))
	for k, v := range data {
		d[k] = v
		fields["f:"+k] = map[string]any{}
	}
	cm["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{
		"apiVersion": "v1",
		"fieldsType": "FieldsV1",
		"fieldsV1":   map[string]any{"f:data": fields},
		"manager":    APIServerManager,
		"operation":  "Update",
		"time":       now.UTC().Format(time.RFC3339),
	}}
	cm["data"] = d
	return cm
}

// MergeCABundle returns the PEM certificates of have followed by those of
// add it lacks, each written once, as upstream combines the client CAs of
// the API servers that share a cluster in one bundle: a replica with
// another CA adds its own and keeps the others'. changed reports whether
// the result differs from have. Blocks that are not certificates are
// dropped, as upstream's parse of the bundle drops them.
func MergeCABundle(have, add string) (merged string, changed bool) {
	var out bytes.Buffer
	var seen [][]byte
	for _, b := range [][]byte{[]byte(have), []byte(add)} {
		for {
			var block *pem.Block
			block, b = pem.Decode(b)
			if block == nil {
				break
			}
			if block.Type != "CERTIFICATE" || slices.ContainsFunc(seen, func(s []byte) bool { return bytes.Equal(s, block.Bytes) }) {
				continue
			}
			seen = append(seen, block.Bytes)
			_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes})
		}
	}
	return out.String(), out.String() != have
}
