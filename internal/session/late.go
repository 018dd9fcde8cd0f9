package session

import (
	"context"
	"sync"
)

// lateSaves runs the saves that turns leave for after their Final: the session's context with
// the agent and the racing-turn order, which nothing the engine was told depends on. The RPC
// ends with the Final, so the engine's call (and its next turn) does not wait for a Postgres
// round trip it does not need.
//
// A turn of a session whose late save is still running on this replica waits for it before
// looking the session up, so a session's turns see each other's contexts as before. Wait
// drains them on shutdown, before the pool closes.
type lateSaves struct {
	wg      sync.WaitGroup
	mu      sync.Mutex
	pending map[sessionKey]chan struct{} // closed when the session's latest late save is done
}

type sessionKey struct{ tenantID, sessionID string }

// start runs save in the background, after any late save of the same session still running.
func (l *lateSaves) start(k sessionKey, save func()) {
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

// wait returns once no late save of the session runs, or with ctx's error. A save still
// waiting for company in the store is sent at once (send).
func (l *lateSaves) wait(ctx context.Context, k sessionKey, send func()) error {
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
