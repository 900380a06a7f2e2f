package etcdlog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func TestNew(t *testing.T) {
	var buf bytes.Buffer
	lg := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	z := New(lg, zapcore.ErrorLevel, "harmless").With(zap.String("member", "m1"))
	z.Info("chatty")
	z.Warn("chatty")
	z.Error("harmless", zap.Int("n", 1))
	z.Error("broken", zap.String("b", "x"), zap.Int("a", 2))
	got := buf.String()
	if strings.Contains(got, "chatty") || strings.Contains(got, "harmless") {
		t.Errorf("entries below the level were logged:\n%s", got)
	}
	if want := `level=ERROR msg=broken member=m1 a=2 b=x`; !strings.Contains(got, want) {
		t.Errorf("got\n%s\nwant a line containing %q", got, want)
	}
}
