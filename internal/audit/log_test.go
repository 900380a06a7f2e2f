package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// readEvents decodes every line of the files, in order.
func readEvents(t *testing.T, paths ...string) []Event {
	t.Helper()
	var evs []Event
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("%s: line %q: %v", p, sc.Text(), err)
			}
			evs = append(evs, ev)
		}
		f.Close()
	}
	return evs
}

func event(i int) *Event {
	return &Event{Kind: "Event", APIVersion: "audit.k8s.io/v1", Level: LevelMetadata, AuditID: fmt.Sprintf("id-%04d", i), Stage: StageResponseComplete, Verb: "create"}
}

func TestLogRotation(t *testing.T) {
	for _, tc := range []struct {
		name        string
		maxSize     int64
		maxBackups  int
		events      int
		wantBackups int
	}{
		{line(), 0, 0, 50, 0},        // no rotation
		{line(), 2000, 0, 100, 5},    // ~200 bytes an event, one event a batch: every 9 events
		{line(), 2000, 2, 100, 2},    // the oldest backups removed
		{line(), 1 << 20, 1, 100, 0}, // under the size: no rotation
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.log")
			clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			l, err := NewLog(LogConfig{Path: path, MaxSize: tc.maxSize, MaxBackups: tc.maxBackups, BatchSize: 1,
				Now: func() time.Time { clock = clock.Add(time.Second); return clock }})
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.events {
				l.Process(event(i))
				// One batch at a time, so that rotation points are
				// predictable: wait until the writer took it.
				for len(l.queue) > 0 {
					time.Sleep(time.Millisecond)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			backups, _ := filepath.Glob(filepath.Join(dir, "audit-*.log"))
			slices.Sort(backups)
			if tc.wantBackups == 0 && len(backups) != 0 || tc.wantBackups > 0 && len(backups) < tc.wantBackups {
				t.Fatalf("backups %v, want %d", backups, tc.wantBackups)
			}
			if tc.maxBackups > 0 && len(backups) > tc.maxBackups {
				t.Errorf("%d backups kept, --audit-log-maxbackup %d", len(backups), tc.maxBackups)
			}
			for _, b := range append(backups, path) {
				st, _ := os.Stat(b)
				if tc.maxSize > 0 && st.Size() > tc.maxSize {
					t.Errorf("%s has %d bytes, more than the maximum %d", b, st.Size(), tc.maxSize)
				}
			}
			evs := readEvents(t, append(backups, path)...)
			// The newest events survive, in order, each on its own line.
			if len(evs) == 0 || evs[len(evs)-1].AuditID != event(tc.events-1).AuditID {
				t.Fatalf("last event %v, want %s", evs[len(evs)-1:], event(tc.events-1).AuditID)
			}
			if tc.maxBackups == 0 && len(evs) != tc.events {
				t.Errorf("%d events in the files, want %d", len(evs), tc.events)
			}
			for i := 1; i < len(evs); i++ {
				if evs[i-1].AuditID >= evs[i].AuditID {
					t.Fatalf("events out of order: %s before %s", evs[i-1].AuditID, evs[i].AuditID)
				}
			}
		})
	}
}

func TestLogAppendsToExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	for run := range 2 {
		l, err := NewLog(LogConfig{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		l.Process(event(run))
		l.Close()
	}
	if evs := readEvents(t, path); len(evs) != 2 {
		t.Errorf("%d events after two runs, want 2: a restart must not truncate the log", len(evs))
	}
}

func TestLogDropsWhenFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	var logged strings.Builder
	l, err := NewLog(LogConfig{Path: path, BufferSize: 10, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// Hold the writer: with no one draining the queue it fills after
	// BufferSize events and Process must neither block nor panic.
	g := gate{entered: make(chan struct{}, 1), release: make(chan struct{})}
	l.out = io.MultiWriter(g, l.file)
	l.Process(event(0)) // taken by the writer, which then waits
	// The writer takes what else is queued into its batch before it
	// writes: only once it is in Write does it take no more.
	<-g.entered
	done := make(chan struct{})
	go func() {
		for i := 1; i <= 30; i++ {
			l.Process(event(i))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Process blocked on a full queue")
	}
	close(g.release)
	l.Close()
	if got := l.Dropped(); got != 20 {
		t.Errorf("Dropped() = %d, want 20 (30 events, 10 queued)", got)
	}
	if evs := readEvents(t, path); len(evs) != 11 {
		t.Errorf("%d events written, want 11", len(evs))
	}
	if !strings.Contains(logged.String(), "audit log buffer full") {
		t.Errorf("drops not reported in the server log: %q", logged.String())
	}
}

// gate is a writer that blocks each write until release is closed. Each
// write first tells entered (buffered), if it has room.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

func (g gate) Write(p []byte) (int, error) {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.release
	return len(p), nil
}
