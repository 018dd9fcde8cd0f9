package main

import (
	"testing"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// At most two Postgres round trips on the turn path (docs/architecture.md §4). With the agent cached
// and the statements prepared (the second turn of a replica), a turn makes exactly two: the
// lookup of hold, context and agent versions, and the save of its result.
func TestWarmTurnMakesTwoDatabaseRoundTrips(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	s := startStack(t, nil, withTelemetry(telemetry.Options{SpanExporter: spans}))
	serverName := pb.Connector_ServiceDesc.ServiceName + "/HandleTurn"

	handleTurn(t, t.Context(), s, &pb.HandleTurnRequest{TenantId: s.tenant, SessionId: "warm-up",
		TurnId: uuid.NewString(), AgentId: s.agent, Text: "数一下我说了几句话"})
	waitForSpan(t, spans, serverName)
	spans.Reset()

	final := handleTurn(t, t.Context(), s, &pb.HandleTurnRequest{TenantId: s.tenant, SessionId: "measured",
		TurnId: uuid.NewString(), AgentId: s.agent, Text: "数一下我说了几句话"})
	if final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED {
		t.Fatalf("final = %v", final)
	}
	got := waitForSpan(t, spans, serverName)
	var names []string
	for _, sp := range got {
		// pool.acquire takes a pooled connection: no round trip. A prepare would be one.
		if attr(sp, "db.system.name") == "postgresql" && sp.Name != "pool.acquire" {
			names = append(names, sp.Name)
		}
	}
	t.Logf("database spans: %q", names)
	if len(names) != 2 {
		t.Fatalf("warm turn made %d database calls %q, want 2", len(names), names)
	}
}
