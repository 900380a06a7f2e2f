package main

import (
	"encoding/json"
	"testing"
)

func TestComparableBootstrap(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"aggregated role", `{"kind":"ClusterRole","aggregationRule":{"clusterRoleSelectors":[]},"rules":[{"verbs":["get"]}]}`,
			`{"aggregationRule":{"clusterRoleSelectors":[]},"kind":"ClusterRole"}`},
		{"role", `{"kind":"ClusterRole","rules":[{"verbs":["get"]}]}`, `{"kind":"ClusterRole","rules":[{"verbs":["get"]}]}`},
		{"identity lease in a list", `{"items":[{"metadata":{"name":"apiserver-abc","labels":{"apiserver.kubernetes.io/identity":"kube-apiserver"},"annotations":{"kubernetes.io/peer-advertise-address":"127.0.0.1:6443"}},"spec":{"holderIdentity":"apiserver-abc_x"}}]}`,
			`{"items":[{"metadata":{"annotations":{"kubernetes.io/peer-advertise-address":"127.0.0.1:-"},"labels":{"apiserver.kubernetes.io/identity":"kube-apiserver"},"name":"-"},"spec":{"holderIdentity":"-"}}]}`},
		{"other lease", `{"metadata":{"name":"leader"},"spec":{"holderIdentity":"me"}}`, `{"metadata":{"name":"leader"},"spec":{"holderIdentity":"me"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(tc.in), &v); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(comparableBootstrap(v))
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
