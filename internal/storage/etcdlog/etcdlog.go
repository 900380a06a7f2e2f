// Package etcdlog routes the zap logs of etcd's server and client libraries
// to log/slog, so crdserver has one log stream and one format.
package etcdlog

import (
	"context"
	"log/slog"
	"maps"
	"slices"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns a zap logger that forwards the entries min enables to lg
// (slog.Default() when nil). etcd logs a lot at info and warn level about
// its own routine operation (leader elections, snapshots, slow applies), so
// callers usually pass zapcore.ErrorLevel, or a zap.AtomicLevel to change
// it later. Messages listed in demote are known to be harmless whatever
// level etcd gives them; they are logged at debug level.
func New(lg *slog.Logger, min zapcore.LevelEnabler, demote ...string) *zap.Logger {
	if lg == nil {
		lg = slog.Default()
	}
	c := &core{lg: lg, min: min}
	if len(demote) > 0 {
		c.demote = map[string]bool{}
		for _, m := range demote {
			c.demote[m] = true
		}
	}
	return zap.New(c)
}

// core is a zapcore.Core writing to slog. Fields added with With are
// converted once and carried as slog attributes.
type core struct {
	lg     *slog.Logger
	min    zapcore.LevelEnabler
	demote map[string]bool // read-only
}

func (c *core) Enabled(l zapcore.Level) bool { return c.min.Enabled(l) }

func (c *core) With(fields []zapcore.Field) zapcore.Core {
	return &core{lg: c.lg.With(attrs(fields)...), min: c.min, demote: c.demote}
}

func (c *core) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.demote[e.Message] {
		e.Level = zapcore.DebugLevel
	}
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *core) Write(e zapcore.Entry, fields []zapcore.Field) error {
	args := attrs(fields)
	if e.LoggerName != "" {
		args = append(args, slog.String("logger", e.LoggerName))
	}
	c.lg.Log(context.Background(), level(e.Level), e.Message, args...)
	return nil
}

func (c *core) Sync() error { return nil }

// attrs encodes zap fields with zap's own map encoder, which knows every
// field type, and turns the result into slog attributes.
func attrs(fields []zapcore.Field) []any {
	if len(fields) == 0 {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	out := make([]any, 0, len(enc.Fields))
	for _, k := range slices.Sorted(maps.Keys(enc.Fields)) {
		out = append(out, slog.Any(k, enc.Fields[k]))
	}
	return out
}

func level(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l >= zapcore.WarnLevel:
		return slog.LevelWarn
	case l >= zapcore.InfoLevel:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}
