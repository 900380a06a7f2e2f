package memory

import (
	"context"
	"time"
)

// RunCompactor compacts the history every interval until ctx ends,
// keeping at least one interval of it, as the etcd backend's compactor
// does: each tick compacts to the revision seen at the tick before.
// Without it the change log grows with every write.
func (s *Store) RunCompactor(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if last > 0 {
			if err := s.Compact(ctx, last); err != nil {
				return // closed
			}
		}
		last, _ = s.LocalRevision()
	}
}
