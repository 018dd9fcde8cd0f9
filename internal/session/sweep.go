package session

import (
	"context"
	"log/slog"
	"time"
)

// Sweep deletes sessions idle for longer than idle (free, or with a hold that expired that long
// ago) every interval, until ctx ends. Free sessions keep a row so that racing turns stay
// ordered; this keeps the table from growing with every dialog ever held. Every replica may run
// it: the delete is idempotent.
func (r *Router) Sweep(ctx context.Context, interval, idle time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := r.store.SweepSessions(ctx, r.now().Add(-idle))
		switch {
		case err != nil && ctx.Err() == nil:
			r.log.WarnContext(ctx, "session sweep failed", slog.Any("error", err))
		case n > 0:
			r.log.InfoContext(ctx, "swept idle sessions", slog.Int64("sessions", n))
		}
	}
}
