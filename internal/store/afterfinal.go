package store

import (
	"context"
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
	timeout time.Duration
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
// company is sent at once (send).
func (l *afterFinal) wait(ctx context.Context, k sessionKey, send func()) error {
	l.mu.Lock()
	done := l.pending[k]
	l.mu.Unlock()
	if done == nil {
		return nil
	}
	send()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
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

// Drain returns once every save asked for with SaveAfterFinal is over (each is bounded by its
// own timeout). Call it after the last turn and before the pool closes.
func (s *Store) Drain() { s.later.wg.Wait() }
