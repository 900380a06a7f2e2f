package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// LogConfig configures a Log. The zero value of each field is a default.
type LogConfig struct {
	// Path is the file events are appended to; "-" writes to stdout.
	Path string
	// MaxSize rotates the file before it grows past this many bytes; 0
	// never rotates. (--audit-log-maxsize is in megabytes.)
	MaxSize int64
	// MaxBackups is how many rotated files are kept; 0 keeps them all,
	// as upstream.
	MaxBackups int
	// BufferSize bounds the events waiting to be written. Default 10000,
	// upstream's batch buffer.
	BufferSize int
	// BatchSize is the most events written in one write. Default 400.
	BatchSize int
	// Logger reports dropped events and write errors; nil is
	// slog.Default().
	Logger *slog.Logger
	// Now names rotated files; nil is time.Now.
	Now func() time.Time
}

// Log writes events as JSON lines in the background. Process only queues
// the event: requests never wait for the disk. When the queue is full
// (the disk is slower than the requests for longer than BufferSize events)
// the event is dropped, counted in Dropped and reported in the log at most
// once a second, as upstream's non-blocking mode does rather than slow
// the API down.
type Log struct {
	cfg     LogConfig
	queue   chan *Event
	stop    chan struct{} // closed by Close
	done    chan struct{} // closed when the writer has returned
	closing sync.Once
	dropped atomic.Int64
	// lastDropReport is the unix second the last drop was reported.
	lastDropReport atomic.Int64

	// Owned by the writer goroutine.
	out  io.Writer
	file *os.File
	size int64
}

// NewLog opens cfg.Path and starts the writer.
func NewLog(cfg LogConfig) (*Log, error) {
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = 10000
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 400
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	l := &Log{cfg: cfg, queue: make(chan *Event, cfg.BufferSize), stop: make(chan struct{}), done: make(chan struct{})}
	if cfg.Path == "-" {
		l.out = os.Stdout
	} else if err := l.open(); err != nil {
		return nil, err
	}
	go l.run()
	return l, nil
}

// Process queues ev, or drops it when the queue is full.
func (l *Log) Process(ev *Event) {
	select {
	case l.queue <- ev:
	default:
		n := l.dropped.Add(1)
		now := time.Now().Unix()
		if last := l.lastDropReport.Load(); now > last && l.lastDropReport.CompareAndSwap(last, now) {
			l.cfg.Logger.Warn("audit log buffer full, dropping events", "dropped", n, "buffer", l.cfg.BufferSize)
		}
	}
}

// Dropped is the number of events dropped so far because the queue was
// full.
func (l *Log) Dropped() int64 { return l.dropped.Load() }

// Close writes what is queued and closes the file. Events processed after
// Close are not written (a request still running past the shutdown
// deadline may process some).
func (l *Log) Close() error {
	l.closing.Do(func() { close(l.stop) })
	<-l.done
	if l.file != nil {
		return l.file.Close()
	}
	return nil
}

// run writes batches: it waits for an event, takes what else is queued,
// up to BatchSize events, and writes them in one call. After Close it
// writes what is queued and returns.
func (l *Log) run() {
	defer close(l.done)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for {
		var ev *Event
		stopping := false
		select {
		case ev = <-l.queue:
		case <-l.stop:
			stopping = true
		}
		buf.Reset()
		n := 0
		if ev != nil {
			l.encode(enc, ev)
			n++
		}
	batch:
		for ; n < l.cfg.BatchSize || stopping; n++ {
			select {
			case ev := <-l.queue:
				l.encode(enc, ev)
			default:
				break batch
			}
		}
		if buf.Len() > 0 {
			if err := l.write(buf.Bytes()); err != nil {
				l.cfg.Logger.Error("writing audit log", "path", l.cfg.Path, "err", err)
			}
		}
		if stopping {
			return
		}
	}
}

func (l *Log) encode(enc *json.Encoder, ev *Event) {
	if err := enc.Encode(ev); err != nil {
		l.cfg.Logger.Error("encoding audit event", "auditID", ev.AuditID, "err", err)
	}
}

// write appends p, rotating first when p would take the file past
// MaxSize. A batch is never split across files.
func (l *Log) write(p []byte) error {
	if l.file != nil && l.cfg.MaxSize > 0 && l.size > 0 && l.size+int64(len(p)) > l.cfg.MaxSize {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	n, err := l.out.Write(p)
	l.size += int64(n)
	return err
}

func (l *Log) open() error {
	if err := os.MkdirAll(filepath.Dir(l.cfg.Path), 0o700); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	f, err := os.OpenFile(l.cfg.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit log: %w", err)
	}
	l.file, l.out, l.size = f, f, st.Size()
	return nil
}

// backupTime is the time in rotated files' names, as upstream's log
// rotation (lumberjack) names them: audit-2006-01-02T15-04-05.000.log.
const backupTime = "2006-01-02T15-04-05.000"

// rotate renames the file to its backup name, opens a new one and removes
// the oldest backups beyond MaxBackups.
func (l *Log) rotate() error {
	if err := l.file.Close(); err != nil {
		return fmt.Errorf("audit log rotation: %w", err)
	}
	dir, base := filepath.Split(l.cfg.Path)
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	backup := filepath.Join(dir, stem+"-"+l.cfg.Now().UTC().Format(backupTime)+ext)
	if err := os.Rename(l.cfg.Path, backup); err != nil {
		return fmt.Errorf("audit log rotation: %w", err)
	}
	if err := l.open(); err != nil {
		return err
	}
	if l.cfg.MaxBackups > 0 {
		return l.removeOldBackups(dir, stem, ext)
	}
	return nil
}

func (l *Log) removeOldBackups(dir, stem, ext string) error {
	backups, err := filepath.Glob(filepath.Join(dir, stem+"-*"+ext))
	if err != nil {
		return err
	}
	// The names sort by time.
	slices.Sort(backups)
	for len(backups) > l.cfg.MaxBackups {
		if err := os.Remove(backups[0]); err != nil {
			return fmt.Errorf("audit log rotation: %w", err)
		}
		backups = backups[1:]
	}
	return nil
}
