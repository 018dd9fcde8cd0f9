package grpcapi

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
)

func TestEveryOutcomeHasAWireValue(t *testing.T) {
	t.Parallel()
	seen := map[pb.Outcome]bool{}
	for _, o := range []connector.Outcome{connector.OutcomeCompleted, connector.OutcomeInputRequired,
		connector.OutcomeHandback, connector.OutcomeFailed, connector.OutcomeCanceled, connector.OutcomeNoAgent} {
		got := toPBOutcome(o)
		if got == pb.Outcome_OUTCOME_UNSPECIFIED || seen[got] {
			t.Errorf("%s -> %v", o, got)
		}
		if strings.TrimPrefix(got.String(), "OUTCOME_") != string(o) {
			t.Errorf("%s maps to %v", o, got)
		}
		seen[got] = true
	}
}

func TestAgentCarriesSkillInputSchema(t *testing.T) {
	t.Parallel()
	a := connector.Agent{ID: "a1", CardProfile: connector.CardProfile{Name: "Weather", Streaming: true, Skills: []connector.Skill{
		{ID: "forecast", Name: "Forecast", Tags: []string{"weather"}, Examples: []string{"rain?"},
			InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{ID: "plain", Name: "Plain"},
	}}}
	got := toPBAgent(a)
	if got.GetAgentId() != "a1" || !got.GetStreaming() || len(got.GetSkills()) != 2 {
		t.Fatalf("agent = %v", got)
	}
	schema := got.GetSkills()[0].GetInputSchema().AsMap()
	if schema["type"] != "object" || schema["required"].([]any)[0] != "city" {
		t.Errorf("input schema = %v", schema)
	}
	if got.GetSkills()[1].GetInputSchema() != nil {
		t.Error("skill without a schema got one")
	}
}

func TestAgentCarriesItsInterface(t *testing.T) {
	t.Parallel()
	a := connector.Agent{ID: "a1", CardProfile: connector.CardProfile{
		Name: "Dual", ProtocolVersion: "1.0", EndpointURL: "https://agent.example.com/a2a", EndpointTenant: "acme",
		Fallback: &connector.Interface{URL: "https://agent.example.com/a2a", ProtocolVersion: "0.3"},
	}}
	got := toPBAgent(a)
	if got.GetEndpointUrl() != "https://agent.example.com/a2a" || got.GetProtocolVersion() != "1.0" {
		t.Errorf("endpoint_url = %q, protocol_version = %q", got.GetEndpointUrl(), got.GetProtocolVersion())
	}
}

func TestCheckTurn(t *testing.T) {
	t.Parallel()
	ok := &pb.HandleTurnRequest{TenantId: "t", SessionId: "s", TurnId: "1", Text: "hi"}
	if err := checkTurn(ok); err != nil {
		t.Fatalf("valid request: %v", err)
	}
	for name, mutate := range map[string]func(r *pb.HandleTurnRequest){
		"no_tenant":      func(r *pb.HandleTurnRequest) { r.TenantId = "" },
		"no_session":     func(r *pb.HandleTurnRequest) { r.SessionId = "" },
		"no_turn":        func(r *pb.HandleTurnRequest) { r.TurnId = "" },
		"blank_text":     func(r *pb.HandleTurnRequest) { r.Text = "  \n" },
		"text_too_long":  func(r *pb.HandleTurnRequest) { r.Text = strings.Repeat("x", MaxTextBytes+1) },
		"invalid_utf8":   func(r *pb.HandleTurnRequest) { r.Text = "\xff\xfe" },
		"long_session":   func(r *pb.HandleTurnRequest) { r.SessionId = strings.Repeat("s", MaxIDBytes+1) },
		"long_agent_id":  func(r *pb.HandleTurnRequest) { r.AgentId = strings.Repeat("a", MaxIDBytes+1) },
		"long_turn_id":   func(r *pb.HandleTurnRequest) { r.TurnId = strings.Repeat("t", MaxIDBytes+1) },
		"long_tenant_id": func(r *pb.HandleTurnRequest) { r.TenantId = strings.Repeat("t", MaxIDBytes+1) },
	} {
		t.Run(name, func(t *testing.T) {
			r := &pb.HandleTurnRequest{TenantId: "t", SessionId: "s", TurnId: "1", Text: "hi"}
			mutate(r)
			if err := checkTurn(r); status.Code(err) != codes.InvalidArgument {
				t.Errorf("checkTurn = %v, want INVALID_ARGUMENT", err)
			}
		})
	}
}
