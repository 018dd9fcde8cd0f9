package invoke_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
)

// A card that offers both generations, whose preferred interface speaks the one the agent
// refuses: the first turn is refused (1.0 servers: -32009 for a 0.x call; 0.x servers: -32601
// for a 1.0 method), retried once on the other interface, and later turns go there at once.
// The move is reported once (Options.OnFallback, which the binaries store), and a replica that
// reads it from the store (Agent.OnFallback) goes there from its first turn.
func TestTurnSwitchesToTheCardsOtherGenerationAndRemembers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		newAgent  func(testing.TB) *fixtureagent.Server
		preferred string // the version the card prefers, which the agent refuses
		fallback  string
		streaming bool
		// first turn's requests (path and method), then the second turn's
		wantFirst, wantSecond []string
	}{
		{
			name: "0.3_preferred_on_a_1.0_only_agent", newAgent: func(tb testing.TB) *fixtureagent.Server { return fixtureagent.NewV1(tb) },
			preferred: "0.3.0", fallback: "1.0", streaming: true,
			// url/stream is 404 on a 1.0 agent, url refuses the 0.x method, then 1.0 on url.
			wantFirst:  []string{"/a2a/stream message/stream", "/a2a message/stream", "/a2a SendStreamingMessage"},
			wantSecond: []string{"/a2a SendStreamingMessage"},
		},
		{
			name: "1.0_preferred_on_a_0.x_agent", newAgent: func(tb testing.TB) *fixtureagent.Server { return fixtureagent.New(tb) },
			preferred: "1.0", fallback: "0.3.0", streaming: true,
			wantFirst:  []string{"/a2a SendStreamingMessage", "/a2a/stream message/stream"},
			wantSecond: []string{"/a2a/stream message/stream"},
		},
		{
			name: "send_1.0_preferred_on_a_0.x_agent", newAgent: func(tb testing.TB) *fixtureagent.Server { return fixtureagent.New(tb) },
			preferred: "1.0", fallback: "0.3.0",
			wantFirst:  []string{"/a2a SendMessage", "/a2a message/send"},
			wantSecond: []string{"/a2a message/send"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := tt.newAgent(t)
			type moved struct {
				tenant, agent string
				revision      int
			}
			reported := make(chan moved, 4)
			h := newHarness(t, func(o *invoke.Options) {
				o.OnFallback = func(_ context.Context, tenantID, agentID string, revision int) error {
					reported <- moved{tenantID, agentID, revision}
					return nil
				}
			})
			agent := agentAt(srv.URL, tt.streaming)
			agent.TenantID, agent.Revision = "tenant-1", 7
			agent.ProtocolVersion = tt.preferred
			agent.Fallback = &connector.Interface{URL: srv.URL, ProtocolVersion: tt.fallback}
			var seen int
			turns := func(h *harness, agent connector.Agent, wants ...[]string) {
				t.Helper()
				for i, want := range wants {
					res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &agent, MessageID: "turn-" + string(rune('1'+i)), Text: userWords})
					if res.Outcome != connector.OutcomeCompleted {
						t.Fatalf("turn %d = %+v, want COMPLETED", i+1, res)
					}
					reqs := srv.Requests()
					var got []string
					for _, r := range reqs[seen:] {
						got = append(got, r.Path+" "+r.RPCMethod)
					}
					seen = len(reqs)
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("turn %d requests (-want +got):\n%s", i+1, diff)
					}
				}
			}
			turns(h, agent, tt.wantFirst, tt.wantSecond)
			select {
			case m := <-reported:
				if m != (moved{"tenant-1", agent.ID, 7}) {
					t.Errorf("reported %+v, want the agent at its revision", m)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the move to the fallback was not reported")
			}
			// Another replica, told by the store: straight to the fallback.
			stored := agent
			stored.OnFallback = true
			turns(newHarness(t, nil), stored, tt.wantSecond)
			if n := len(reported); n != 0 {
				t.Errorf("%d more reports, want the one", n)
			}
			if logs := h.logs.String(); !strings.Contains(logs, "switched to the card's other interface") {
				t.Errorf("the switch is not logged:\n%s", logs)
			}
		})
	}
}

// Without another interface on the card, a refused version is a clear failure that tells the
// tenant what to do.
func TestTurnVersionRefusedWithoutFallbackFails(t *testing.T) {
	t.Parallel()
	srv := fixtureagent.NewV1(t)
	h := newHarness(t, nil)
	agent := agentAt(srv.URL, false)
	agent.ProtocolVersion = "0.3.0"
	res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &agent, MessageID: "turn-1", Text: userWords})
	if res.Outcome != connector.OutcomeFailed || res.Err == nil || res.Err.Code != connector.CodeAgentRPCError {
		t.Fatalf("result = %+v, want FAILED agent_rpc_error", res)
	}
	if !strings.Contains(res.Err.Message, "-32009") || !strings.Contains(res.Err.Message, "refresh its card") {
		t.Errorf("message %q does not name the code and the fix", res.Err.Message)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// An agent that cannot be reached is explained in the tenant's terms; the transport's own text
// (which names addresses, the connector's among them) stays in the log.
func TestUnreachableAgentIsExplainedWithoutTransportText(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	h := newHarness(t, func(o *invoke.Options) { o.MaxRetries = -1 })
	res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: new(agentAt("http://"+addr+"/a2a", false)), MessageID: "turn-1", Text: userWords})
	if res.Outcome != connector.OutcomeFailed || res.Err == nil || res.Err.Code != connector.CodeAgentUnreachable {
		t.Fatalf("result = %+v, want FAILED agent_unreachable", res)
	}
	if want := "the agent could not be reached: the connection was refused"; res.Err.Message != want {
		t.Errorf("message = %q, want %q", res.Err.Message, want)
	}
	if !strings.Contains(h.logs.String(), "dial tcp") {
		t.Errorf("the transport error is not in the log:\n%s", h.logs.String())
	}
}
