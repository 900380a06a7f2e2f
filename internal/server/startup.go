package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crdserver/crdserver/internal/storage"
)

// startupPatience bounds how long start-up writes wait out storage that
// answers "unavailable": a loaded etcd can miss the reachability gate's
// deadline for a few seconds (the gate then fails requests at once), and
// a server should not refuse to start for that, while one whose etcd is
// really gone should say so rather than wait forever.
const startupPatience = time.Minute

// untilAvailable runs step, again while it fails with
// storage.ErrUnavailable, backing off up to a second between tries, for at
// most patience. Other errors, and the last unavailable one once patience
// runs out, are returned wrapped with what the step does.
func untilAvailable(ctx context.Context, what string, patience time.Duration, step func(context.Context) error) error {
	deadline := time.Now().Add(patience)
	wait := 50 * time.Millisecond
	for {
		err := step(ctx)
		if err == nil {
			return nil
		}
		if !errors.Is(err, storage.ErrUnavailable) || time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("%s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, errors.Join(ctx.Err(), err))
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}
