package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/storage"
)

// clusterAuthInfo keeps kube-system's extension-apiserver-authentication
// as kube-apiserver's cluster-authentication-info controller keeps it:
// written at start, and again whenever it is deleted or changed away from
// what it must hold (Sync, a controllers.Each on ConfigMaps).
//
// Upstream's legacy-token-tracking controller's ConfigMap is not written:
// it tells kube-controller-manager's legacy token cleaner since when the
// server labels the legacy token Secrets it authenticates with their last
// use, and crdserver authenticates none.
type clusterAuthInfo struct {
	s *Server
	// clientCA is the bundle of CAs the server verifies client
	// certificates with.
	clientCA string
	now      func() time.Time
}

func newClusterAuthInfo(s *Server) (*clusterAuthInfo, error) {
	ca := string(s.PKI.CAPEM)
	if s.cfg.ClientCAFile != "" {
		b, err := os.ReadFile(s.cfg.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		ca, _ = builtin.MergeCABundle(string(b), ca)
	}
	return &clusterAuthInfo{s: s, clientCA: ca, now: time.Now}, nil
}

// ensure writes it until it succeeds or ctx ends, and reports whether it
// did.
func (c *clusterAuthInfo) ensure(ctx context.Context) bool {
	return retry(ctx, c.s.log, "publishing extension-apiserver-authentication", func() error {
		return c.Sync(ctx, "kube-system/"+builtin.AuthenticationInfoConfigMap)
	})
}

// Sync brings the ConfigMap key (namespace/name) to what it must hold if
// it is extension-apiserver-authentication; others are not its business.
func (c *clusterAuthInfo) Sync(ctx context.Context, key string) error {
	const ns, name = "kube-system", builtin.AuthenticationInfoConfigMap
	if key != ns+"/"+name {
		return nil
	}
	// Every replica adds its client CAs to the bundle; none removes
	// another's.
	keep := func(data map[string]any) bool {
		have, _ := data[builtin.AuthenticationInfoClientCA].(string)
		merged, changed := builtin.MergeCABundle(have, c.clientCA)
		data[builtin.AuthenticationInfoClientCA] = merged
		return changed
	}
	st, _ := c.s.stores.Store(builtin.ConfigMaps().GroupResource())
	k := st.Key(ns, name)
	if _, err := st.Storage.Get(ctx, k); errors.Is(err, storage.ErrNotFound) {
		// kube-system, which cannot be deleted, is read from storage:
		// at start the namespaces' cache may not hold it yet.
		nss, _ := c.s.stores.Store(builtin.Namespaces().GroupResource())
		if _, err := nss.Storage.Get(ctx, nss.Key("", ns)); err != nil {
			return fmt.Errorf("namespace kube-system: %w", err)
		}
		want := map[string]string{builtin.AuthenticationInfoClientCA: c.clientCA}
		return c.s.createIfAbsent(ctx, st, ns, k, builtin.NewSystemConfigMap(name, want, c.now()))
	} else if err != nil {
		return err
	}
	return updateConfigMap(ctx, st, k, builtin.APIServerManager, func(obj map[string]any) bool {
		data, _ := obj["data"].(map[string]any)
		if data == nil {
			data = map[string]any{}
			obj["data"] = data
		}
		return keep(data)
	})
}
