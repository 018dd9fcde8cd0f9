package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// At most two Postgres round trips on the turn path (docs/architecture.md §4). With the agent cached
// and the statements prepared (the second turn of a replica), a turn makes exactly two: the
// lookup of hold, context and agent versions, and the save of its result.
//
// "Prepared" is per connection: pgx caches a statement on the connection that first ran it, and
// runs it there without a prepare; on another connection it prepares it first (a span of the same
// name, a round trip of its own). The connector's pool holds several connections, and its
// background statements (in-flight sync, health flush, limits refresh) open some of them, so
// the measured turn could land on one its warm-up never used and pay a prepare: the 1-in-5-to-12
// flake under load. It was never a retry (every span's status was Unset; the extra span was
// the prepare, a child of the lookup's own span). With one connection the warm-up prepares the
// turn's statements on the connection the measured turn will use, so a prepare there counts as
// an extra round trip, as it should: a statement cache that stopped working still fails here.
func TestWarmTurnMakesTwoDatabaseRoundTrips(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	oneConn := map[string]string{"DATABASE_URL": withPoolMaxConns(testDB.URL, 1)}
	s := startStack(t, oneConn, withTelemetry(telemetry.Options{SpanExporter: spans}))
	serverName := pb.Connector_ServiceDesc.ServiceName + "/HandleTurn"

	handleTurn(t, t.Context(), s, &pb.HandleTurnRequest{TenantId: s.tenant, SessionId: "warm-up",
		TurnId: uuid.NewString(), AgentId: s.agent, Text: "数一下我说了几句话"})
	turnDatabaseCalls(t, spans, serverName) // its save too, which comes after its RPC ended
	spans.Reset()

	final := handleTurn(t, t.Context(), s, &pb.HandleTurnRequest{TenantId: s.tenant, SessionId: "measured",
		TurnId: uuid.NewString(), AgentId: s.agent, Text: "数一下我说了几句话"})
	if final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED {
		t.Fatalf("final = %v", final)
	}
	names := turnDatabaseCalls(t, spans, serverName)
	t.Logf("database spans: %q", names)
	if len(names) != 2 {
		t.Fatalf("warm turn made %d database calls %q, want 2", len(names), names)
	}
}

// turnDatabaseCalls returns the names of the database calls in the trace of the turn whose
// server span is serverName, once its save after the Final (the turn's last call; it runs when
// the RPC and its span have ended) is over: its span ends once the save's connection is back
// in the pool, so the next turn finds that connection, and its prepared statements, idle.
func turnDatabaseCalls(t *testing.T, spans *tracetest.InMemoryExporter, serverName string) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // only a failing test waits this long
	for {
		var names []string
		saved := false
		for _, sp := range waitForSpan(t, spans, serverName) {
			// pool.acquire takes a pooled connection: no round trip. A prepare would be one.
			if attr(sp, "db.system.name") == "postgresql" && sp.Name != "pool.acquire" {
				name := sp.Name
				if attr(sp, "pgx.prepare_stmt.name") != nil {
					name = "prepare " + name // otelpgx names a prepare like the statement
				}
				names = append(names, name)
				// Which statement, for the failure message: a count alone does not say which
				// round trip was extra.
				t.Logf("database span %s (%s %s): %.120s", name, sp.Status.Code, sp.Status.Description, attr(sp, "db.query.text"))
			}
			saved = saved || sp.Name == "session.SaveAfterFinal"
		}
		if saved {
			return names
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn's save was not exported; its database calls: %q", names)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// withPoolMaxConns returns databaseURL (postgres://…?…) with the pool's size set to n.
func withPoolMaxConns(databaseURL string, n int) string {
	sep := "?"
	if strings.Contains(databaseURL, "?") {
		sep = "&"
	}
	return databaseURL + sep + "pool_max_conns=" + strconv.Itoa(n)
}
