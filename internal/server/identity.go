package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/crdserver/crdserver/internal/certs"
	"github.com/crdserver/crdserver/internal/storage"
)

// identityPrefix is where replicas sharing an external etcd record, per
// --etcd-prefix, the CA of the cluster whose data is under it. It is
// outside every prefix, so replicas with different prefixes see each
// other's records.
const identityPrefix = "/crdserver/identity"

// clusterIdentity is one record under identityPrefix.
type clusterIdentity struct {
	Prefix string `json:"prefix"`
	// CA is the fingerprint (certs.Fingerprint) of the CA that signs the
	// cluster's client certificates: its kubeconfigs are good for every
	// replica only if every replica trusts it.
	CA string `json:"caSHA256"`
}

// checkIdentity refuses to start a replica that is not configured as the
// others sharing its external etcd: one whose CA differs from the one
// recorded for its --etcd-prefix (its kubeconfigs would fail on the other
// replicas and theirs on it), or one whose CA is recorded for another
// prefix while its own prefix has no record (a mistyped --etcd-prefix
// would otherwise start an empty cluster beside the real one). The first
// replica on a prefix records its CA there; etcd's create-if-absent makes
// replicas starting together agree on one. Another cluster, with its own
// CA, may share the etcd under its own prefix.
func (s *Server) checkIdentity(ctx context.Context) error {
	if len(s.cfg.EtcdServers) == 0 {
		return nil // an embedded etcd has one replica
	}
	mine, err := s.identity()
	if err != nil {
		return err
	}
	key := identityPrefix + s.cfg.EtcdPrefix
	data, err := json.Marshal(mine)
	if err != nil {
		return err
	}
	for {
		kv, err := s.backend.Get(ctx, key)
		if err == nil {
			var rec clusterIdentity
			if err := json.Unmarshal(kv.Value, &rec); err != nil {
				return fmt.Errorf("cluster identity %s in etcd: %w", key, err)
			}
			if rec.CA != mine.CA {
				return fmt.Errorf("the crdserver cluster under --etcd-prefix=%s in this etcd trusts another CA (SHA-256 %s) than this replica (%s): "+
					"give every replica the same pki/ca.crt and pki/ca.key (or --client-ca-file) before its first start; "+
					"if the cluster's CA was replaced on purpose, delete the etcd key %s", s.cfg.EtcdPrefix, short(rec.CA), short(mine.CA), key)
			}
			return nil
		}
		if !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("reading the cluster identity %s: %w", key, err)
		}
		others, err := s.backend.List(ctx, identityPrefix+"/", storage.ListOptions{})
		if err != nil {
			return fmt.Errorf("reading the cluster identities: %w", err)
		}
		for _, it := range others.Items {
			var rec clusterIdentity
			if json.Unmarshal(it.Value, &rec) == nil && rec.CA == mine.CA && rec.Prefix != s.cfg.EtcdPrefix {
				return fmt.Errorf("this replica's CA is the one of the crdserver cluster under --etcd-prefix=%s in this etcd, "+
					"but it was started with --etcd-prefix=%s, under which etcd holds no cluster: start it with --etcd-prefix=%s "+
					"(a second cluster on this etcd needs a CA of its own)", rec.Prefix, s.cfg.EtcdPrefix, rec.Prefix)
			}
		}
		if _, err := s.backend.Create(ctx, key, data); err == nil {
			return nil
		} else if !errors.Is(err, storage.ErrExists) {
			return fmt.Errorf("recording the cluster identity %s: %w", key, err)
		}
		// Another replica recorded it first: compare with its record.
	}
}

// identity is this replica's record: its generated CA and, when given,
// the client CA file's certificates.
func (s *Server) identity() (clusterIdentity, error) {
	bundles := [][]byte{s.PKI.CAPEM}
	if s.cfg.ClientCAFile != "" {
		b, err := os.ReadFile(s.cfg.ClientCAFile)
		if err != nil {
			return clusterIdentity{}, fmt.Errorf("client CA: %w", err)
		}
		bundles = append(bundles, b)
	}
	return clusterIdentity{Prefix: s.cfg.EtcdPrefix, CA: certs.Fingerprint(bundles...)}, nil
}

// short abbreviates a fingerprint for messages.
func short(fp string) string {
	if len(fp) > 16 {
		return fp[:16] + "…"
	}
	return fp
}
