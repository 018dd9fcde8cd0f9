package main

import (
	"testing"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"

	connector "github.com/a2a-connector/a2a-connector"
)

// A hold whose agent was disabled (or deleted) since is dropped: the turn goes where the engine
// said, and with no agent named there is nowhere to go.
func TestHoldOfDisabledAgentIsDropped(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	ctx := t.Context()
	wantOutcome(t, s.turn(t, "s-drop", s.agent, "帮我算加法"), pb.Outcome_OUTCOME_INPUT_REQUIRED)

	off := false
	if _, err := s.store.UpdateAgent(ctx, s.tenant, s.agent, connector.AgentPatch{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	got, err := s.client.GetSession(ctx, &pb.GetSessionRequest{TenantId: s.tenant, SessionId: "s-drop"})
	if err != nil || got.GetHeld() {
		t.Fatalf("GetSession with a disabled holder = %+v, %v", got, err)
	}
	wantOutcome(t, s.turn(t, "s-drop", "", "3和5"), pb.Outcome_OUTCOME_NO_AGENT)

	// Dropped for good: re-enabling the agent does not bring the hold back.
	on := true
	if _, err := s.store.UpdateAgent(ctx, s.tenant, s.agent, connector.AgentPatch{Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, s.turn(t, "s-drop", "", "3和5"), pb.Outcome_OUTCOME_NO_AGENT)
}

func TestHoldOfDeletedAgentIsDropped(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	ctx := t.Context()
	wantOutcome(t, s.turn(t, "s-del", s.agent, "帮我算加法"), pb.Outcome_OUTCOME_INPUT_REQUIRED)
	if _, err := s.store.DeleteAgent(ctx, s.tenant, s.agent); err != nil {
		t.Fatal(err)
	}
	got, err := s.client.GetSession(ctx, &pb.GetSessionRequest{TenantId: s.tenant, SessionId: "s-del"})
	if err != nil || got.GetHeld() {
		t.Fatalf("GetSession after delete = %+v, %v", got, err)
	}
	wantOutcome(t, s.turn(t, "s-del", "", "3和5"), pb.Outcome_OUTCOME_NO_AGENT)
}

// A held session routes to the holder even when the engine names another agent.
func TestLiveHoldWinsOverAgentID(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	first := s.turn(t, "s-win", s.agent, "帮我算加法")
	wantOutcome(t, first, pb.Outcome_OUTCOME_INPUT_REQUIRED)
	r := s.turn(t, "s-win", "00000000-0000-0000-0000-000000000001", "3和5")
	wantOutcome(t, r, pb.Outcome_OUTCOME_COMPLETED)
	if !r.started.GetHeld() || r.started.GetAgentId() != s.agent || r.final.GetTaskId() != first.final.GetTaskId() {
		t.Fatalf("started = %+v final task %s, want the holder continuing %s", r.started, r.final.GetTaskId(), first.final.GetTaskId())
	}
}
