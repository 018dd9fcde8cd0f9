package session

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
)

// taskNamingInvoker names a task the way invoke does (Request.OnTask) and notes what the
// replica's in-flight set held while the turn ran.
type taskNamingInvoker struct {
	scriptedInvoker
	inflight *Inflight
	during   []connector.InflightTask
}

func (v *taskNamingInvoker) Turn(ctx context.Context, req connector.TurnRequest, emit func(connector.TurnEvent)) *connector.TurnResult {
	req.OnTask("task-1")
	v.during = v.inflight.snapshot()
	return v.scriptedInvoker.Turn(ctx, req, emit)
}

func TestRouter_tracks_a_turns_task_while_it_runs(t *testing.T) {
	h := newHarness(t)
	f := NewInflight(InflightConfig{ReplicaID: "r1"})
	inv := &taskNamingInvoker{scriptedInvoker: scriptedInvoker{replies: []reply{completed("hi", "task-1", "ctx-1")}}, inflight: f}
	h.router = New(Config{Store: h.store, Invoker: inv, Now: func() time.Time { return h.now }, Inflight: f})
	h.turn(t, "s1", "t1", agentA)
	want := []connector.InflightTask{{TenantID: tenantID, AgentID: agentA, TaskID: "task-1", SessionID: "s1"}}
	if diff := cmp.Diff(want, inv.during); diff != "" {
		t.Errorf("in flight during the turn (-want +got):\n%s", diff)
	}
	if got := f.snapshot(); len(got) != 0 {
		t.Errorf("in flight after the turn: %v, want none", got)
	}
}

func TestRouter_withholds_what_the_engine_received(t *testing.T) {
	h := newHarness(t, reply{texts: []string{"你好", "世界"},
		result: connector.TurnResult{Outcome: connector.OutcomeCompleted, Text: "你好世界", TaskID: "task-1"}})
	h.log = nil
	sink := &logSink{log: &h.log}
	// 4 bytes fall inside 好: the whole character is withheld.
	err := h.router.HandleTurn(t.Context(), connector.Turn{TenantID: tenantID, SessionID: "s", TurnID: "t1", AgentID: agentA,
		Text: "hi", ReceivedTextBytes: 4}, sink)
	if err != nil {
		t.Fatal(err)
	}
	h.router.Wait()
	if diff := cmp.Diff([]string{`started A held=false task=""`, "text 世界", "final COMPLETED", "save set=false release=true"}, h.log); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	if f := sink.finals[0]; f.Text != "你好世界" || f.WithheldTextBytes != 6 {
		t.Errorf("final text %q, withheld %d; want the whole reply, 6", f.Text, f.WithheldTextBytes)
	}
}
