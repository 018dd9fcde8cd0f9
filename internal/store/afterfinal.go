package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
)

// afterFinalTimeout bounds a save after a turn's Final: it runs detached from the turn (whose
// RPC has ended), and must neither hang on a Postgres that is down nor be lost to a caller that
// went away (barge-in).
const afterFinalTimeout = 5 * time.Second

// afterFinal owns the saves turns leave for after their Final (SaveAfterFinal): the session's
// context with the agent and the racing-turn order, which nothing the engine was told depends
// on. Each runs on a goroutine of its own, after any earlier one of the same session, as a
// deferred statement of the coalescer (it waits up to deferredLinger for company, so that at
// low load a lone turn's save is not a commit of its own right when the next turn starts).
//
// A session's next turn on this replica waits for them (WaitSaves), so a session's turns see
// each other's contexts; Drain waits for all of them on shutdown, before the pool closes.
type afterFinal struct {
	wg      sync.WaitGroup
	mu      sync.Mutex
	pending map[sessionKey]chan struct{} // closed when the session's latest save is done
	// retrying holds, per session, its latest save retried until written (SaveUntilWritten)
	// while it runs.
	retrying map[sessionKey]*retrying
	timeout  time.Duration
	// closing is closed by Drain: saves retried until written try once more and give up.
	closing   chan struct{}
	closeOnce sync.Once
}

func newAfterFinal(timeout time.Duration) afterFinal {
	return afterFinal{timeout: timeout, closing: make(chan struct{})}
}

type sessionKey struct{ tenantID, sessionID string }

// start runs save in the background, after any save of the same session still running.
func (l *afterFinal) start(k sessionKey, save func()) {
	done := make(chan struct{})
	l.mu.Lock()
	if l.pending == nil {
		l.pending = make(map[sessionKey]chan struct{})
	}
	prev := l.pending[k]
	l.pending[k] = done
	l.mu.Unlock()
	l.wg.Go(func() {
		if prev != nil {
			<-prev
		}
		save()
		l.mu.Lock()
		if l.pending[k] == done {
			delete(l.pending, k)
		}
		l.mu.Unlock()
		close(done)
	})
}

// wait returns once no save of the session runs, or with ctx's cause. A save still waiting for
// company is sent at once (send). A save being retried until written is asked to try at once;
// when that try fails, wait returns its error: Postgres cannot be reached, and the caller (the
// session's next turn) fails as fast as it would on its own lookup.
func (l *afterFinal) wait(ctx context.Context, k sessionKey, send func()) error {
	l.mu.Lock()
	done, r := l.pending[k], l.retrying[k]
	l.mu.Unlock()
	if done == nil {
		return nil
	}
	send()
	var failed <-chan struct{}
	if r != nil {
		failed = r.tryNow()
	}
	select {
	case <-done:
		return nil
	case <-failed:
		return fmt.Errorf("an earlier turn's save, retried: %w", r.lastErr())
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// retrying is a save that SaveUntilWritten tries again and again: the session's next turn asks
// it to try at once (tryNow) and learns when that try fails.
type retrying struct {
	kick chan struct{} // buffered: one pending "try now" is enough

	mu     sync.Mutex
	failed chan struct{} // closed when the try under way (or the next one) fails
	err    error         // the error of the latest failed try
}

func newRetrying() *retrying {
	return &retrying{kick: make(chan struct{}, 1), failed: make(chan struct{})}
}

// tryNow asks for a try at once, and returns a channel closed when the try under way, or that
// one, fails.
func (r *retrying) tryNow() <-chan struct{} {
	r.mu.Lock()
	failed := r.failed
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
	return failed
}

// fail reports a failed try to those waiting for it.
func (r *retrying) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
	close(r.failed)
	r.failed = make(chan struct{})
}

func (r *retrying) lastErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Backoff between the tries of a save retried until written: short at first (a Postgres
// restart takes a second or two), then every retryMaxWait while Postgres stays away. The
// session's next turn on this replica does not wait for it (tryNow).
const (
	retryFirstWait = 100 * time.Millisecond
	retryMaxWait   = 2 * time.Second
)

// untilWritten runs try, after the session's earlier saves, until it succeeds, fails for
// another reason than Postgres being out of reach, ctx ends, or Drain was called (then once
// more); done gets the last try's error.
func (l *afterFinal) untilWritten(ctx context.Context, k sessionKey, try func(context.Context) error, done func(error)) {
	r := newRetrying()
	l.mu.Lock()
	if l.retrying == nil {
		l.retrying = make(map[sessionKey]*retrying)
	}
	l.retrying[k] = r
	l.mu.Unlock()
	l.start(k, func() {
		defer func() {
			l.mu.Lock()
			if l.retrying[k] == r {
				delete(l.retrying, k)
			}
			l.mu.Unlock()
		}()
		wait := retryFirstWait
		for {
			err := l.try(ctx, try)
			if err == nil || !unreachable(err) || ctx.Err() != nil || l.closed() {
				if done != nil {
					done(err)
				}
				return
			}
			r.fail(err)
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-r.kick:
			case <-l.closing:
			case <-ctx.Done():
			}
			t.Stop()
			wait = min(2*wait, retryMaxWait)
		}
	})
}

// try runs one try bounded by the store's timeout for saves after the Final.
func (l *afterFinal) try(ctx context.Context, try func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	return try(ctx)
}

func (l *afterFinal) closed() bool {
	select {
	case <-l.closing:
		return true
	default:
		return false
	}
}

// unreachable tells whether a save failed because Postgres could not be reached (or did not
// answer in time): then it may succeed later. Any other error would fail every try.
func unreachable(err error) bool {
	return errors.Is(err, connector.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// SaveAfterFinal saves r, the result of a turn whose Final has gone out, in the background, and
// returns at once; done, when not nil, is called with the save's error once it is over (the
// caller's log and span). The save outlives ctx (it is detached from its cancellation, bounded
// by a timeout of its own) and keeps ctx's trace. A session's saves are written in the order
// they were asked for. A hold change saved so is not durable against a Postgres crash: only
// what the engine was not told goes this way (SaveTurn is for the rest).
func (s *Store) SaveAfterFinal(ctx context.Context, r connector.TurnRecord, done func(error)) {
	s.later.start(sessionKey{r.TenantID, r.SessionID}, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.later.timeout)
		defer cancel()
		err := s.saveTurn(ctx, r, true)
		if done != nil {
			done(err)
		}
	})
}

// WaitSaves returns once the session's saves asked for with SaveAfterFinal are written (those
// still waiting for company are sent at once), or with ctx's cause: a turn calls it before it
// looks its session up. It costs a mutex when the session has none.
func (s *Store) WaitSaves(ctx context.Context, tenantID, sessionID string) error {
	return s.later.wait(ctx, sessionKey{tenantID, sessionID}, s.turns.sendDeferred)
}

// SaveUntilWritten saves r durably, as SaveTurn does, in the background: after the session's
// earlier saves (SaveAfterFinal, SaveUntilWritten) and before its later ones, and again and
// again while Postgres cannot be reached, at most until within has passed or Drain is called
// (then it tries once more). It is for a hold change the engine was already told of and whose
// SaveTurn failed: a release, which would otherwise leave the hold it ends in the store. done,
// when not nil, gets the last try's error. The session's WaitSaves asks it to try at once and
// returns that try's error if it fails.
//
// The order of a session's turns still holds across replicas and against these late tries: a
// record never overwrites the hold of a turn that started later.
func (s *Store) SaveUntilWritten(ctx context.Context, r connector.TurnRecord, within time.Duration, done func(error)) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), within)
	s.later.untilWritten(ctx, sessionKey{r.TenantID, r.SessionID}, func(ctx context.Context) error {
		return s.saveTurn(ctx, r, false)
	}, func(err error) {
		cancel()
		if done != nil {
			done(err)
		}
	})
}

// Drain returns once every save asked for with SaveAfterFinal or SaveUntilWritten is over (each
// try is bounded by its own timeout; a save retried until written tries once more, and gives up
// if that fails). Call it after the last turn and before the pool closes.
func (s *Store) Drain() {
	s.later.closeOnce.Do(func() { close(s.later.closing) })
	s.later.wg.Wait()
}
