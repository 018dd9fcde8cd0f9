package telemetry

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// NewBufferedLogger is NewLogger for a process that logs a line per request at INFO (the
// connector's line per turn): lines below WARN are held and written out together, at most
// interval after the first of them, or at once when 64 KiB are waiting; a WARN or ERROR line is
// written at once, after the lines held before it. flush writes what is held; call it before
// the process exits. interval ≤ 0: every line is written at once, as NewLogger does.
//
// Why: one write(2) per turn was ~1.6 % of the connector's CPU at c=100, and each wakes
// whatever reads the pipe (the container runtime) on the same machine. Proxies do the same
// with their access logs (Envoy flushes every second, nginx's `access_log … flush=`). The price:
// a process killed outright loses the INFO lines of its last interval.
func NewBufferedLogger(w io.Writer, level string, interval time.Duration) (log *slog.Logger, flush func() error) {
	if interval <= 0 {
		return NewLogger(w, level), func() error { return nil }
	}
	b := &lineBuffer{w: w, interval: interval}
	log = NewLogger(b, level)
	return slog.New(flushAtWarn{inner: log.Handler(), buf: b}), b.flush
}

// maxHeldLog is how much a lineBuffer holds before it writes without waiting for its timer.
const maxHeldLog = 64 << 10

// lineBuffer holds whole lines (slog writes each record with one Write) until its timer fires,
// it holds maxHeldLog bytes, or flush is called. Its writes go out under its lock, so lines
// keep their order, as under slog's own handler lock.
type lineBuffer struct {
	w        io.Writer
	interval time.Duration

	mu    sync.Mutex
	buf   []byte
	timer *time.Timer // armed while lines are held
	armed bool
}

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) >= maxHeldLog {
		return len(p), b.flushLocked()
	}
	if !b.armed {
		b.armed = true
		if b.timer == nil {
			b.timer = time.AfterFunc(b.interval, func() { _ = b.flush() })
		} else {
			b.timer.Reset(b.interval)
		}
	}
	return len(p), nil
}

func (b *lineBuffer) flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushLocked()
}

func (b *lineBuffer) flushLocked() error {
	if b.armed {
		b.armed = false
		b.timer.Stop()
	}
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.w.Write(b.buf)
	if cap(b.buf) > 4*maxHeldLog {
		b.buf = nil // a burst of huge lines is not kept for good
	} else {
		b.buf = b.buf[:0]
	}
	return err
}

// flushAtWarn writes a WARN or ERROR record out at once, with the lines held before it.
type flushAtWarn struct {
	inner slog.Handler
	buf   *lineBuffer
}

func (h flushAtWarn) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h flushAtWarn) Handle(ctx context.Context, r slog.Record) error {
	err := h.inner.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := h.buf.flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (h flushAtWarn) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushAtWarn{inner: h.inner.WithAttrs(attrs), buf: h.buf}
}

func (h flushAtWarn) WithGroup(name string) slog.Handler {
	return flushAtWarn{inner: h.inner.WithGroup(name), buf: h.buf}
}
