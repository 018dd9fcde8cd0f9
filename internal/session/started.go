package session

import (
	"sync"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
)

// defaultStartedWithin bounds how long Started may wait for the agent's first answer.
const defaultStartedWithin = 50 * time.Millisecond

// startedOnce sends a turn's Started once: with the agent's first event, before the Final, or
// when its timer fires, whichever comes first.
//
// Why not before the agent call: Started was a gRPC write, and a wake-up of grpc's writer
// goroutine, between the session lookup and the agent's request, on the path of every turn's
// first text. Sent with the first event it shares that event's write instead. Measured from a
// separate process (make loadtest, c=1, three alternating runs): added p50 +1.07–1.18 →
// +0.87–1.10 ms, added first text +0.97–1.06 → +0.81–0.95 ms. The timer keeps Started prompt for
// an agent that takes long to answer (an engine may show or log who answers).
//
// The mutex orders the timer's send before any other event of the turn: the turn's goroutine
// calls send before each Event and before the Final, and never sends those while the timer's
// Started is under way.
type startedOnce struct {
	mu      sync.Mutex
	done    bool
	wasSent bool
	err     error
	sink    connector.TurnSink
	rt      *routed
	timer   *time.Timer
}

// newStartedOnce returns the turn's startedOnce; with sent, an earlier attempt of the turn
// already sent Started (a turn sends one Started, whatever happens), and it sends none.
func newStartedOnce(sink connector.TurnSink, rt *routed, within time.Duration, sent bool) *startedOnce {
	s := &startedOnce{sink: sink, rt: rt}
	if sent {
		s.done, s.wasSent = true, true
		return s
	}
	s.mu.Lock() // a timer that fires at once waits for s.timer to be set
	defer s.mu.Unlock()
	s.timer = time.AfterFunc(within, func() { _ = s.send() })
	return s
}

// send sends Started unless it was sent; it returns the error of that one send (the caller is
// gone), so the turn stops sending.
func (s *startedOnce) send() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		s.done, s.wasSent = true, true
		s.timer.Stop()
		s.err = s.sink.Started(s.rt.agent, s.rt.held, s.rt.taskID)
	}
	return s.err
}

// sent reports whether Started went out (or was tried).
func (s *startedOnce) sent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wasSent
}

// stop ends the timer of a turn that returns without a Final (its events are no longer wanted).
func (s *startedOnce) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	if s.timer != nil {
		s.timer.Stop()
	}
}
