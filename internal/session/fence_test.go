package session

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
)

// waitFor bounds every wait of these tests: thousands of times the fence's window below, so
// that only a failing test waits this long.
const waitFor = 20 * time.Second

// A fence cuts the replica off `within` after the start of its last heartbeat that succeeded,
// never earlier: health is told, the running turn's context ends with ErrCutOff, new turns are
// refused; a heartbeat that succeeds lifts it, unless it is itself that old.
func TestFence_cuts_off_within_after_the_last_heartbeat_and_lifts_on_the_next(t *testing.T) {
	const within = 20 * time.Millisecond
	changes := make(chan bool, 4)
	f := newFence(within, func(reachable bool) { changes <- reachable }, slog.New(slog.DiscardHandler))
	t.Cleanup(f.stop)

	turnCtx, leave, err := f.enter(t.Context()) // before the first beat: as a turn right at start
	if err != nil {
		t.Fatalf("enter while reachable: %v", err)
	}
	beat := time.Now()
	f.beat(beat)
	select {
	case reachable := <-changes:
		if reachable {
			t.Fatal("told reachable while it had never been cut off")
		}
	case <-time.After(waitFor):
		t.Fatal("never cut off")
	}
	if cut := time.Since(beat); cut < within {
		t.Fatalf("cut off %s after the heartbeat started; not before %s", cut, within)
	}
	select {
	case <-turnCtx.Done():
	case <-time.After(waitFor):
		t.Fatal("the running turn was not ended")
	}
	if err := leave(turnCtx.Err()); !errors.Is(err, connector.ErrCutOff) || !errors.Is(err, connector.ErrUnavailable) {
		t.Fatalf("the running turn ended with %v; want ErrCutOff (an ErrUnavailable)", err)
	}
	if _, _, err := f.enter(t.Context()); !errors.Is(err, connector.ErrCutOff) {
		t.Fatalf("enter while cut off: %v; want ErrCutOff", err)
	}

	// A heartbeat that started before the cut and succeeded only now is as old as the cut.
	f.beat(beat)
	if _, _, err := f.enter(t.Context()); !errors.Is(err, connector.ErrCutOff) {
		t.Fatalf("enter after a heartbeat older than the window: %v; want still cut off", err)
	}
	cut := f.cur.Load()
	f.beat(time.Now())
	if reachable := <-changes; !reachable {
		t.Fatal("not told reachable after a heartbeat succeeded")
	}
	if f.cur.Load() == cut {
		t.Fatal("turns still enter the epoch that was cut off")
	}
}

// A turn that ends by itself is not the fence's: its own error is kept.
func TestFence_keeps_a_turns_own_error(t *testing.T) {
	f := newFence(time.Hour, nil, slog.New(slog.DiscardHandler))
	t.Cleanup(f.stop)
	f.beat(time.Now())
	ctx, leave, err := f.enter(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := leave(nil); err != nil || ctx.Err() == nil {
		t.Fatalf("leave = %v, context %v; want nil, and the turn's context released", err, ctx.Err())
	}

	callerCtx, cancel := context.WithCancel(t.Context())
	_, leave, err = f.enter(callerCtx)
	if err != nil {
		t.Fatal(err)
	}
	cancel() // the caller went away
	if err := leave(context.Canceled); !errors.Is(err, context.Canceled) || errors.Is(err, connector.ErrCutOff) {
		t.Fatalf("leave = %v; want the caller's cancel", err)
	}
}

// blockingInvoker runs a turn until its context ends, and says when it started.
type blockingInvoker struct {
	scriptedInvoker
	running chan struct{}
}

func (v *blockingInvoker) Turn(ctx context.Context, req connector.TurnRequest, _ func(connector.TurnEvent)) *connector.TurnResult {
	close(v.running)
	<-ctx.Done()
	return &connector.TurnResult{Outcome: connector.OutcomeCanceled, Interrupted: true, TaskID: "task-1",
		Err: &connector.TurnError{Code: connector.CodeCanceled, Message: "the caller canceled the turn"}}
}

// The router runs turns inside the in-flight tracker's fence: a turn running when the replica is
// cut off ends with ErrCutOff and no Final (the engine retries it elsewhere), and the next turn
// is refused before any lookup.
func TestRouter_a_replica_cut_off_from_its_database_ends_and_refuses_turns(t *testing.T) {
	h := newHarness(t)
	inflight := NewInflight(InflightConfig{ReplicaID: "r1", Stale: time.Hour})
	t.Cleanup(inflight.fence.stop)
	inv := &blockingInvoker{running: make(chan struct{})}
	h.router = New(Config{Store: h.store, Invoker: inv, Now: func() time.Time { return h.now }, Inflight: inflight})

	sink := &logSink{log: &h.log}
	ended := make(chan error, 1)
	go func() {
		ended <- h.router.HandleTurn(t.Context(), connector.Turn{TenantID: tenantID, SessionID: "s", TurnID: "t1", AgentID: agentA, Text: "hi"}, sink)
	}()
	<-inv.running
	inflight.fence.cutNow()
	if err := <-ended; !errors.Is(err, connector.ErrCutOff) || len(sink.finals) != 0 {
		t.Fatalf("running turn: %v, finals %v; want ErrCutOff and no Final", err, sink.finals)
	}
	h.router.Wait()
	err := h.router.HandleTurn(t.Context(), connector.Turn{TenantID: tenantID, SessionID: "s", TurnID: "t2", AgentID: agentA, Text: "hi"}, sink)
	if !errors.Is(err, connector.ErrCutOff) || len(sink.finals) != 0 || len(inv.requests) != 0 {
		t.Fatalf("next turn: %v, finals %v, agent requests %d; want ErrCutOff, none, none", err, sink.finals, len(inv.requests))
	}
}

// cutNow cuts the replica off as the timer would once the deadline passed.
func (f *fence) cutNow() {
	f.mu.Lock()
	f.deadline = time.Now()
	if f.timer == nil {
		f.timer = time.NewTimer(time.Hour) // check resets it; nothing waits on it
	}
	f.mu.Unlock()
	f.check()
}

// BenchmarkFence_enter_and_leave is what the fence adds to every turn.
func BenchmarkFence_enter_and_leave(b *testing.B) {
	f := newFence(time.Hour, nil, slog.New(slog.DiscardHandler))
	defer f.stop()
	f.beat(time.Now())
	ctx, cancel := context.WithCancel(b.Context()) // a turn's RPC context is cancelable
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		_, leave, err := f.enter(ctx)
		if err != nil {
			b.Fatal(err)
		}
		_ = leave(nil)
	}
}
