package session

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
)

// fence keeps a replica that cannot reach Postgres from serving turns whose agent tasks another
// replica is about to cancel. Another replica takes this one for dead when its heartbeat, as the
// database's clock wrote it, is A2AC_INFLIGHT_STALE old, and cancels its synced tasks at their
// agents (Inflight). So this replica counts, on its own monotonic clock, from the start of its
// last heartbeat that succeeded (the row's timestamp is later than that start); when that is
// `within` (half the stale bound) old, it is cut off: health says NOT_SERVING (onChange), new
// turns are refused with connector.ErrCutOff, and running turns end at once with it. The other
// half of the stale bound is the margin by which they end before any task of theirs may be
// canceled. The next heartbeat that succeeds lifts it.
//
//	t = 0               last heartbeat that succeeded starts (Postgres cut just after)
//	t = stale/2         cut off: NOT_SERVING, new turns UNAVAILABLE, running turns ended
//	t ≥ stale           (database clock) another replica may claim this one's tasks
//
// It costs a turn an atomic load, a context and its registration with the current epoch:
// 288 B in 6 allocations, 1.8–2.6 µs on the shared 2-core test machine
// (BenchmarkFence_enter_and_leave), against the ~1 ms a turn adds at c=1.
type fence struct {
	within   time.Duration
	onChange func(reachable bool)
	log      *slog.Logger

	// cur is the epoch turns run in; its context is canceled, with ErrCutOff, when the replica
	// is cut off, and replaced by a fresh one when it reaches Postgres again.
	cur atomic.Pointer[epoch]

	mu       sync.Mutex
	deadline time.Time // monotonic: when the replica is cut off, unless a heartbeat succeeds
	timer    *time.Timer
	stopped  bool
}

type epoch struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newEpoch() *epoch {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &epoch{ctx: ctx, cancel: cancel}
}

func newFence(within time.Duration, onChange func(reachable bool), log *slog.Logger) *fence {
	if onChange == nil {
		onChange = func(bool) {}
	}
	f := &fence{within: within, onChange: onChange, log: log}
	f.cur.Store(newEpoch())
	return f
}

// beat records a heartbeat that succeeded and was sent at start; the replica is cut off within
// after start unless another one succeeds. A beat that is itself already that old changes
// nothing (its row is as old as the last one the others may judge).
func (f *fence) beat(start time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	deadline := start.Add(f.within)
	left := time.Until(deadline)
	if f.stopped || left <= 0 {
		return
	}
	f.deadline = deadline
	if f.timer == nil {
		f.timer = time.AfterFunc(left, f.check)
	} else {
		f.timer.Reset(left)
	}
	if f.cutOff() {
		f.cur.Store(newEpoch())
		f.log.Info("database reachable again: taking turns")
		f.onChange(true)
	}
}

// check runs when the deadline may have passed (a timer that fired before a beat moved it
// finds it later, and waits again).
func (f *fence) check() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	if left := time.Until(f.deadline); left > 0 {
		f.timer.Reset(left)
		return
	}
	e := f.cur.Load()
	if e.ctx.Err() != nil {
		return
	}
	f.log.Error("database unreachable: refusing turns and ending running ones before other replicas may cancel their tasks",
		slog.Duration("without_heartbeat", f.within))
	f.onChange(false)
	e.cancel(connector.ErrCutOff)
}

// remaining is how long the replica has until it is cut off without another heartbeat; 0 when
// it is.
func (f *fence) remaining() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cutOff() {
		return 0
	}
	return max(time.Until(f.deadline), 0)
}

// cutOff reports whether the replica is cut off now.
func (f *fence) cutOff() bool { return f.cur.Load().ctx.Err() != nil }

// stop ends the fence: no later change (the replica is shutting down, its turns drained).
func (f *fence) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	if f.timer != nil {
		f.timer.Stop()
	}
}

// enter admits a turn: it fails with ErrCutOff while the replica is cut off; else it returns
// the turn's context, canceled with ErrCutOff if the replica is cut off while the turn runs, and
// leave, which the turn calls with its error when it ends: a turn the fence ended gets ErrCutOff.
func (f *fence) enter(ctx context.Context) (context.Context, func(error) error, error) {
	e := f.cur.Load()
	if e.ctx.Err() != nil {
		return ctx, nil, fmt.Errorf("turn refused: %w", connector.ErrCutOff)
	}
	turnCtx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(e.ctx, func() { cancel(connector.ErrCutOff) })
	return turnCtx, func(err error) error {
		stop()
		if err != nil && context.Cause(turnCtx) == connector.ErrCutOff {
			err = fmt.Errorf("turn ended: %w", connector.ErrCutOff)
		}
		cancel(nil)
		return err
	}, nil
}
