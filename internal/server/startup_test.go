package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/storage"
)

func TestUntilAvailable(t *testing.T) {
	unavailable := fmt.Errorf("etcd unreachable: %w", storage.ErrUnavailable)
	other := errors.New("permission denied")
	tests := []struct {
		name      string
		fails     []error // answers before the step succeeds
		patience  time.Duration
		wantCalls int
		wantErr   error
	}{
		{name: "succeeds at once", wantCalls: 1, patience: time.Second},
		{name: "unavailable twice, then stored", fails: []error{unavailable, unavailable}, patience: time.Second, wantCalls: 3},
		{name: "another error is not retried", fails: []error{other, nil}, patience: time.Second, wantCalls: 1, wantErr: other},
		{name: "unavailable past patience", fails: []error{unavailable, unavailable, unavailable, unavailable}, patience: 100 * time.Millisecond, wantCalls: 2, wantErr: storage.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := untilAvailable(context.Background(), "creating namespaces", tt.patience, func(context.Context) error {
				calls++
				if calls <= len(tt.fails) {
					return tt.fails[calls-1]
				}
				return nil
			})
			if calls != tt.wantCalls {
				t.Errorf("step ran %d times, want %d", calls, tt.wantCalls)
			}
			if tt.wantErr == nil && err != nil {
				t.Errorf("err = %v", err)
			}
			if tt.wantErr != nil && (!errors.Is(err, tt.wantErr) || !strings.HasPrefix(err.Error(), "creating namespaces: ")) {
				t.Errorf("err = %v, want %v wrapped with what failed", err, tt.wantErr)
			}
		})
	}
}

// A cancelled start-up stops waiting at once.
func TestUntilAvailableCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := untilAvailable(ctx, "creating the kubernetes Service", time.Minute, func(context.Context) error {
		return storage.ErrUnavailable
	})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("err = %v, want both the cancellation and the last error", err)
	}
}
