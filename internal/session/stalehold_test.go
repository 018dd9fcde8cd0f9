package session

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
)

// refused is the agent's answer to a message for a task it will not continue (a task that is
// over, A2A's -32602 in a2a-go and the reference SDK).
func refused(task string) reply {
	return reply{result: connector.TurnResult{Outcome: connector.OutcomeFailed, TaskID: task,
		Err: &connector.TurnError{Code: connector.CodeAgentRPCError, Message: "agent error -32602: task is completed"}}}
}

// A held task finishes while the store cannot take the release: the engine is told the session
// is free (it is), and the release is saved once the store is back, with no turn asking for it.
func TestRouter_a_release_that_cannot_be_saved_is_saved_later(t *testing.T) {
	h := newHarness(t, asks("几点？", "task-1", "ctx-1"), completed("好的", "task-1", "ctx-1"))
	h.turn(t, "s", "t1", agentA)
	h.store.mu.Lock()
	h.store.saveErr = fmt.Errorf("%w: connection refused", connector.ErrUnavailable)
	h.store.mu.Unlock()

	h.now = h.now.Add(time.Minute)
	sink := &logSink{log: new([]string)}
	if err := h.router.HandleTurn(t.Context(), connector.Turn{TenantID: tenantID, SessionID: "s", TurnID: "t2", Text: "三点"}, sink); err != nil {
		t.Fatalf("HandleTurn: %v", err)
	}
	if f := sink.finals[0]; f.Outcome != connector.OutcomeCompleted || !f.HoldExpiresAt.IsZero() {
		t.Fatalf("final = %+v; want COMPLETED and no hold", f)
	}
	if l, _ := h.store.LookupTurn(t.Context(), tenantID, "s", "", h.now); l.Hold == nil {
		t.Fatal("the hold is gone while the store refuses every save (the premise of this test)")
	}
	h.store.mu.Lock()
	h.store.saveErr = nil
	h.store.mu.Unlock()
	if err := h.store.WaitSaves(t.Context(), tenantID, "s"); err != nil {
		t.Fatalf("WaitSaves: %v", err)
	}
	if l, _ := h.store.LookupTurn(t.Context(), tenantID, "s", "", h.now); l.Hold != nil {
		t.Fatalf("hold once the store is back: %+v; want the release saved", l.Hold)
	}
}

// A hold whose release was lost routes the next turn to a task that is over: the agent refuses
// it, says the task is over when asked, and the turn runs as on a free session, on the agent the
// engine chose, with one Started and the stale hold dropped.
func TestRouter_a_stale_hold_is_dropped_and_the_turn_runs_as_on_a_free_session(t *testing.T) {
	h := newHarness(t, asks("几点？", "task-1", "ctx-1"), refused("task-1"), completed("我是B", "task-2", "ctx-2"))
	h.inv.ended = []string{"task-1"}
	// Started waits for the agent's first event for longer than this test lasts.
	h.router = New(Config{Store: h.store, Invoker: h.inv, Now: func() time.Time { return h.now }, StartedWithin: time.Hour})
	h.turn(t, "s", "t1", agentA)

	h.now = h.now.Add(time.Minute)
	f, log := h.turn(t, "s", "t2", agentB)
	want := []string{"save set=false release=true", `started B held=false task=""`, "text 我是B", "final COMPLETED", "save set=false release=true"}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Fatalf("log (-want +got):\n%s", diff)
	}
	if f.Outcome != connector.OutcomeCompleted || f.TaskID != "task-2" {
		t.Fatalf("final = %+v", f)
	}
	if held, again := h.inv.requests[1], h.inv.requests[2]; held.TaskID != "task-1" || again.Agent.ID != agentB || again.TaskID != "" {
		t.Fatalf("requests: held %s/%q, then %s/%q; want the held task, then a new task of B", held.Agent.ID, held.TaskID, again.Agent.ID, again.TaskID)
	}
	if diff := cmp.Diff([]string{agentA + "/task-1"}, h.inv.asked); diff != "" {
		t.Errorf("tasks asked about (-want +got):\n%s", diff)
	}
}

// The agent took longer than StartedWithin to refuse: Started already named the held task, and
// the turn's run on a free session sends no second one.
func TestRouter_a_stale_hold_found_after_Started_sends_one_Started(t *testing.T) {
	h := newHarness(t)
	started := make(chan struct{})
	inv := &gatedInvoker{scriptedInvoker: scriptedInvoker{replies: []reply{asks("几点？", "task-1", "ctx-1"), refused("task-1"),
		completed("我是B", "task-2", "ctx-2")}, ended: []string{"task-1"}}, started: started}
	h.router = New(Config{Store: h.store, Invoker: inv, Now: func() time.Time { return h.now }, StartedWithin: time.Millisecond})
	first := &startedSignal{logSink: logSink{log: &h.log}, started: started}
	if err := h.router.HandleTurn(t.Context(), connector.Turn{TenantID: tenantID, SessionID: "s", TurnID: "t1", AgentID: agentA, Text: "hi"}, first); err != nil {
		t.Fatalf("HandleTurn: %v", err)
	}
	h.router.Wait()

	h.log = nil
	started = make(chan struct{})
	inv.started = started
	sink := &startedSignal{logSink: logSink{log: &h.log}, started: started}
	if err := h.router.HandleTurn(t.Context(), connector.Turn{TenantID: tenantID, SessionID: "s", TurnID: "t2", AgentID: agentB, Text: "三点"}, sink); err != nil {
		t.Fatalf("HandleTurn: %v", err)
	}
	h.router.Wait()
	want := []string{`started A held=true task="task-1"`, "save set=false release=true", "text 我是B", "final COMPLETED", "save set=false release=true"}
	if diff := cmp.Diff(want, h.log); diff != "" {
		t.Fatalf("log (-want +got):\n%s", diff)
	}
}

// startedSignal closes started once Started is in the log (startSignal closes it before, for
// tests where nothing else writes the log meanwhile).
type startedSignal struct {
	logSink
	started chan struct{}
}

func (k *startedSignal) Started(a *connector.Agent, held bool, taskID string) error {
	err := k.logSink.Started(a, held, taskID)
	close(k.started)
	return err
}

// A refusal of a held task the agent says is still waiting is the agent's answer: the turn
// fails as it did, and nothing is run again.
func TestRouter_a_refused_held_task_that_is_not_over_fails_the_turn(t *testing.T) {
	h := newHarness(t, asks("几点？", "task-1", "ctx-1"), refused("task-1"))
	h.turn(t, "s", "t1", agentA)
	f, _ := h.turn(t, "s", "t2", agentB)
	if f.Outcome != connector.OutcomeFailed || f.Err == nil || f.Err.Code != connector.CodeAgentRPCError {
		t.Fatalf("final = %+v; want FAILED agent_rpc_error", f)
	}
	if len(h.inv.requests) != 2 || len(h.inv.asked) != 1 {
		t.Fatalf("requests %d, tasks asked about %v; want 2 and the held task once", len(h.inv.requests), h.inv.asked)
	}
}
