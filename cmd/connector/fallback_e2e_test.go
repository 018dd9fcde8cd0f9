package main

import (
	"slices"
	"testing"
	"time"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
)

// A card lists an interface its agent refuses (A2A 0.3 on an agent that speaks only 1.0)
// before one it answers: the first turn moves to the second interface, and from then on
// ListAgents, like the console and every replica, names the interface turns use.
func TestAgentOnItsFallbackInterfaceIsShownWhereTurnsGo(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	fx := fixtureagent.NewV1(t)
	host := fixtureagent.NewCardHost(t, false)
	cardURL := host.Set("/.well-known/agent-card.json", `{
		"name": "Two interfaces", "description": "Refuses its first one.", "version": "1.0.0",
		"supportedInterfaces": [
			{"url": "`+fx.URL+`", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
			{"url": "`+fx.URL+`", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
		"capabilities": {"streaming": true}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
		"skills": [{"id": "s", "name": "S", "description": "Does s.", "tags": ["demo"]}]}`)
	a := s.register(t, cardURL, "")
	if a.ProtocolVersion != "0.3" || a.Fallback == nil || a.Fallback.ProtocolVersion != "1.0" {
		t.Fatalf("registered %s with fallback %+v, want 0.3 then 1.0", a.ProtocolVersion, a.Fallback)
	}
	listed := func() *pb.Agent {
		list, err := s.client.ListAgents(t.Context(), &pb.ListAgentsRequest{TenantId: s.tenant})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(list.GetAgents(), func(g *pb.Agent) bool { return g.GetAgentId() == a.ID })
		if i < 0 {
			t.Fatalf("ListAgents has no %s", a.ID)
		}
		return list.GetAgents()[i]
	}
	if g := listed(); g.GetOnFallback() || g.GetProtocolVersion() != "0.3" {
		t.Fatalf("before any turn: %v, want the preferred 0.3 interface", g)
	}

	wantOutcome(t, s.turn(t, "fallback-1", a.ID, "weather please"), pb.Outcome_OUTCOME_COMPLETED)
	// The move is recorded off the turn path: wait for it, with a generous bound.
	deadline := time.Now().Add(20 * time.Second)
	for g := listed(); !g.GetOnFallback(); g = listed() {
		if time.Now().After(deadline) {
			t.Fatalf("after the turn: %v, want on_fallback", g)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if g := listed(); g.GetProtocolVersion() != "1.0" || g.GetEndpointUrl() != fx.URL || g.GetEndpointBinding() != "JSONRPC" {
		t.Errorf("on the fallback: %v, want the 1.0 interface", g)
	}
	before := len(fx.Requests())
	wantOutcome(t, s.turn(t, "fallback-2", a.ID, "weather please"), pb.Outcome_OUTCOME_COMPLETED)
	for _, r := range fx.Requests()[before:] {
		if r.RPCMethod != "SendStreamingMessage" {
			t.Errorf("second turn called %s %s, want only the 1.0 interface", r.Path, r.RPCMethod)
		}
	}
}
