package store

import (
	"context"
	"time"
)

// PauseTurns takes every in-flight slot of the turn statements' coalescer, so the next
// statements queue; resume runs everything queued as one batch (tests of the batch path).
func (s *Store) PauseTurns() (queued func() int, resume func()) {
	c := s.turns
	c.mu.Lock()
	taken := c.maxInFlight - c.inFlight
	c.inFlight = c.maxInFlight
	c.mu.Unlock()
	queued = func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.writes) + len(c.reads)
	}
	resume = func() {
		for range taken {
			c.runAndHandOff(context.Background(), nil)
		}
	}
	return queued, resume
}

// SetTurnLimits sets how many statements one batch of the turn statements' coalescer takes and
// how many batches may be in flight; call it before any turn statement.
func (s *Store) SetTurnLimits(batch, inFlight int) {
	s.turns.mu.Lock()
	defer s.turns.mu.Unlock()
	s.turns.maxBatch, s.turns.maxInFlight = batch, inFlight
}

// SetDeferredLinger sets how long deferred saves wait for each other; call it before any.
func (s *Store) SetDeferredLinger(d time.Duration) {
	s.turns.mu.Lock()
	defer s.turns.mu.Unlock()
	s.turns.linger = d
}

// DeferredQueued tells how many deferred saves wait for their linger to end.
func (s *Store) DeferredQueued() int {
	s.turns.mu.Lock()
	defer s.turns.mu.Unlock()
	return len(s.turns.deferred)
}

// SetAfterFinalTimeout sets the bound of each SaveAfterFinal; call it before any.
func (s *Store) SetAfterFinalTimeout(d time.Duration) { s.later.timeout = d }
