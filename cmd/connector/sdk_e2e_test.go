package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
)

// A tenant builds an agent with today's Go SDK quickstart (A2A 1.0, a2a-go v2), mounted under a
// path prefix, and pastes a URL of it: the card is discovered and validated, its 1.0 interface
// chosen, and the dialog engine holds a whole conversation with it through HandleTurn —
// streamed text, a question and its continuation, a refusal — without ever seeing which A2A
// version the agent speaks.
func TestConversationWithAnA2A1SDKAgent(t *testing.T) {
	t.Parallel()
	const key = "sk-sdk-e2e"
	tests := []struct {
		name         string
		compat       bool // the agent also serves 0.3 (dual)
		restOnly     bool // the agent serves HTTP+JSON only (as Google's hosted agents do)
		grpcOnly     bool // the agent serves gRPC only
		grpcBare     bool // its card writes the gRPC url as a bare host:port (a2a-go's samples)
		paste        func(*sdkagent.Server) string
		wantFallback bool
	}{
		{name: "pasted_prefix", paste: func(s *sdkagent.Server) string { return s.Base }},
		{name: "pasted_card_url", paste: func(s *sdkagent.Server) string { return s.CardURL }},
		{name: "pasted_origin_of_a_dual_agent_at_the_root", compat: true, wantFallback: true,
			paste: func(s *sdkagent.Server) string { return s.Origin }},
		{name: "pasted_prefix_of_an_http_json_only_agent", restOnly: true, paste: func(s *sdkagent.Server) string { return s.Base }},
		{name: "pasted_card_url_of_a_grpc_only_agent", grpcOnly: true, paste: func(s *sdkagent.Server) string { return s.CardURL }},
		{name: "pasted_card_url_of_a_grpc_only_agent_at_a_bare_address", grpcOnly: true, grpcBare: true,
			paste: func(s *sdkagent.Server) string { return s.CardURL }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := startStack(t, nil)
			prefix := "/agents/weather"
			if tt.compat {
				prefix = ""
			}
			peer := sdkagent.New(t, sdkagent.Options{Prefix: prefix, Streaming: true, Compat: tt.compat, RESTOnly: tt.restOnly, GRPCOnly: tt.grpcOnly,
				GRPCBareAddress: tt.grpcBare, APIKey: key})
			a := s.register(t, tt.paste(peer), key)
			wantURL := peer.V1URL
			if tt.restOnly {
				wantURL = peer.RESTURL
			}
			if tt.grpcOnly {
				wantURL = peer.GRPCURL
			}
			if a.ProtocolVersion != "1.0" || a.EndpointURL != wantURL {
				t.Fatalf("registered %s at %s, want A2A 1.0 at %s", a.ProtocolVersion, a.EndpointURL, wantURL)
			}
			if got := a.Fallback != nil && a.Fallback.URL == peer.V0URL; got != tt.wantFallback {
				t.Errorf("fallback = %+v, want the 0.3 interface: %v", a.Fallback, tt.wantFallback)
			}
			list, err := s.client.ListAgents(t.Context(), &pb.ListAgentsRequest{TenantId: s.tenant})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(list.GetAgents(), func(g *pb.Agent) bool { return g.GetAgentId() == a.ID })
			wantBinding := "JSONRPC"
			switch {
			case tt.restOnly:
				wantBinding = "HTTP+JSON"
			case tt.grpcOnly:
				wantBinding = "GRPC"
			}
			if i < 0 || list.GetAgents()[i].GetProtocolVersion() != "1.0" || list.GetAgents()[i].GetEndpointUrl() != wantURL ||
				list.GetAgents()[i].GetEndpointBinding() != wantBinding {
				t.Errorf("ListAgents = %v, want the agent with its 1.0 interface", list.GetAgents())
			}

			// Streamed text, one delta per artifact chunk; states in the one spelling.
			r := s.turn(t, "sdk-stream", a.ID, "weather please")
			wantOutcome(t, r, pb.Outcome_OUTCOME_COMPLETED)
			if diff := cmp.Diff(sdkagent.Chunks(), r.deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
			if r.final.GetText() != strings.Join(sdkagent.Chunks(), "") {
				t.Errorf("final text = %q", r.final.GetText())
			}
			for _, st := range r.states {
				if strings.HasPrefix(st, "TASK_STATE_") {
					t.Errorf("status %q in the 1.0 spelling reached the engine", st)
				}
			}
			if !slices.Contains(r.states, "working") {
				t.Errorf("states = %q, want working among them", r.states)
			}

			// A question holds the session; the answer continues the same task.
			ask := s.turn(t, "sdk-hold", a.ID, "ask me")
			wantOutcome(t, ask, pb.Outcome_OUTCOME_INPUT_REQUIRED)
			if ask.final.GetText() != sdkagent.Question || ask.final.GetHold() == nil {
				t.Errorf("question turn: text %q hold %v, want the question and a hold", ask.final.GetText(), ask.final.GetHold())
			}
			answer := s.turn(t, "sdk-hold", "", "Berlin")
			wantOutcome(t, answer, pb.Outcome_OUTCOME_COMPLETED)
			if !answer.started.GetHeld() || answer.final.GetTaskId() != ask.final.GetTaskId() || answer.final.GetContextId() != ask.final.GetContextId() {
				t.Errorf("continuation: held %v, task %s context %s; want the held task %s context %s", answer.started.GetHeld(),
					answer.final.GetTaskId(), answer.final.GetContextId(), ask.final.GetTaskId(), ask.final.GetContextId())
			}
			if diff := cmp.Diff([]string{sdkagent.Answer("Berlin")}, answer.deltas); diff != "" {
				t.Errorf("continuation deltas (-want +got):\n%s", diff)
			}

			// A refusal hands the turn back to the platform.
			wantOutcome(t, s.turn(t, "sdk-reject", a.ID, "reject this"), pb.Outcome_OUTCOME_HANDBACK)
		})
	}
}
