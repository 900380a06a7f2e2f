package server

import (
	"context"
	"fmt"
)

// etcdHealth is the probe of etcd that componentstatuses reports as
// etcd-0, as upstream's reports its storage: one entry for the etcd
// crdserver stores in, embedded or external. With memory storage there is
// no etcd, and none is reported.
func (s *Server) etcdHealth() func(context.Context) error {
	if s.cfg.Storage == StorageMemory {
		return nil
	}
	return func(ctx context.Context) error {
		if err := s.backend.Healthy(ctx); err != nil {
			return fmt.Errorf("error getting data from etcd: %w", err)
		}
		return nil
	}
}
