package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/crdserver/crdserver/internal/certs"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/storage/memory"
)

// Values of Config.Storage.
const (
	// StorageEtcd keeps everything in etcd: an external cluster when
	// Config.EtcdServers is set, else one embedded in the process with its
	// data in Config.DataDir.
	StorageEtcd = "etcd"
	// StorageMemory keeps everything in the process's memory, lost when it
	// exits: for tests and throwaway servers. It cannot be shared by
	// replicas.
	StorageMemory = "memory"
)

// backend is what the server needs of its storage: the storage contract,
// a health check for /healthz and /readyz, and compaction of history.
type backend interface {
	storage.Interface
	// Healthy reports whether the storage serves reads.
	Healthy(ctx context.Context) error
	// RunCompactor discards old history every interval until ctx ends.
	RunCompactor(ctx context.Context, interval time.Duration)
}

// ensurePKI loads or creates the certificates under DataDir. With memory
// storage nothing outlives the process anyway, so they are written
// without waiting for the disk.
func (c Config) ensurePKI() (*certs.PKI, error) {
	dir := filepath.Join(c.DataDir, "pki")
	if c.Storage == StorageMemory {
		return certs.EnsureUnsynced(dir, c.TLSSANs)
	}
	return certs.Ensure(dir, c.TLSSANs)
}

// startMemoryStorage starts memory storage, refusing settings that ask
// for something else as well.
func (s *Server) startMemoryStorage() error {
	switch {
	case s.cfg.Storage != StorageMemory:
		return fmt.Errorf("storage %q: must be %s or %s", s.cfg.Storage, StorageEtcd, StorageMemory)
	case len(s.cfg.EtcdServers) > 0:
		return errors.New("memory storage cannot use etcd servers")
	}
	if s.cfg.Clock != nil {
		s.backend = memory.NewWithClock(s.cfg.Clock)
	} else {
		s.backend = memory.New()
	}
	return nil
}
