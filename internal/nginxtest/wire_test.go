package nginxtest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
)

// rounds is how many turns each scenario makes in a row.
const rounds = 3

// fronts are the two ways nginx stands in front of an agent.
var fronts = []struct {
	name string
	tls  bool
}{{"plain", false}, {"tls", true}}

// TestNginx_idle_close_costs_no_turn: nginx closes a client connection idle for its
// keepalive_timeout (over HTTP/2, with a GOAWAY first). Turn, wait until nginx has closed the
// client's idle connection (seen on the client's socket, so the verdict does not depend on the
// machine's speed), turn again: every turn succeeds, on every binding, plain and TLS.
func TestNginx_idle_close_costs_no_turn(t *testing.T) {
	t.Parallel()
	for _, b := range bindings {
		for _, f := range fronts {
			t.Run(b.name+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				_, agent := fixtureAgent(t, b)
				// Short, to keep the test fast; any value behaves the same, since the test waits
				// for the close itself.
				n := proxy(t, b, agent.Host, f.tls, "keepalive_timeout 300ms;")
				c, ep := agentClient(t, n.RootCAs), endpoint(n, b, agent.Path)
				for round := range rounds {
					mustTurn(t, c, ep, round, "hello", fixtureReply)
					n.WaitIdleClosed(t)
				}
				if t.Failed() {
					return
				}
				// Each turn came on a new connection: nginx had closed the one before.
				reqs := n.WaitRequests(t, rounds)
				if len(reqs) != rounds {
					t.Errorf("nginx had %d requests, want %d: %+v", len(reqs), rounds, reqs)
				}
				for i, r := range reqs {
					if r.ConnRequests != 1 || r.Status != http.StatusOK {
						t.Errorf("request %d = %+v, want status 200, alone on its connection", i, r)
					}
				}
			})
		}
	}
}

// TestNginx_idle_close_is_released: the client releases a connection nginx closed while it
// was idle (closes its end) on its own, without waiting for its next call or its own idle
// timeout: no socket is left half-open (CLOSE_WAIT). Every binding, plain and TLS.
func TestNginx_idle_close_is_released(t *testing.T) {
	t.Parallel()
	for _, b := range bindings {
		for _, f := range fronts {
			t.Run(b.name+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				_, agent := fixtureAgent(t, b)
				n := proxy(t, b, agent.Host, f.tls, "keepalive_timeout 300ms;")
				mustTurn(t, agentClient(t, n.RootCAs), endpoint(n, b, agent.Path), 0, "hello", fixtureReply)
				n.WaitIdleClosed(t)
				n.WaitReleased(t)
			})
		}
	}
}

// TestNginx_connection_close_costs_no_turn: turns back to back succeed when every answer
// closes its connection: nginx's (keepalive_requests 1: Connection: close on HTTP/1.1, GOAWAY
// on HTTP/2), the agent's behind nginx (nginx's upstream connection closes, the client's
// stays), and the agent's to the connector directly.
func TestNginx_connection_close_costs_no_turn(t *testing.T) {
	t.Parallel()
	for _, b := range bindings {
		for _, f := range fronts {
			t.Run("proxy_closes/"+b.name+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				_, agent := fixtureAgent(t, b)
				n := proxy(t, b, agent.Host, f.tls, keepLong+"\n\tkeepalive_requests 1;")
				c, ep := agentClient(t, n.RootCAs), endpoint(n, b, agent.Path)
				for round := range rounds {
					mustTurn(t, c, ep, round, "hello", fixtureReply)
				}
				if t.Failed() {
					return
				}
				// nginx did close after every answer: no connection carried two requests.
				for i, r := range n.WaitRequests(t, rounds) {
					if r.ConnRequests != 1 || r.Status != http.StatusOK {
						t.Errorf("request %d = %+v, want status 200, alone on its connection", i, r)
					}
				}
			})
		}
		if b.grpc() {
			continue // HTTP/2 has no Connection: close; its GOAWAY is nginx's case above
		}
		for _, f := range fronts {
			t.Run("agent_closes_behind_proxy/"+b.name+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				agent := closingAgent(t, b)
				n := proxy(t, b, agent.Host, f.tls, keepLong)
				c, ep := agentClient(t, n.RootCAs), endpoint(n, b, agent.Path)
				for round := range rounds {
					mustTurn(t, c, ep, round, "hello", fixtureReply)
				}
			})
		}
		t.Run("agent_closes/"+b.name, func(t *testing.T) {
			t.Parallel()
			agent := closingAgent(t, b)
			c := agentClient(t, nil)
			ep := a2aclient.Endpoint{URL: agent.String(), Binding: b.binding, Wire: b.wire}
			for round := range rounds {
				mustTurn(t, c, ep, round, "hello", fixtureReply)
			}
		})
	}
}

// TestNginx_agent_restart_costs_no_turn: an agent on the official SDK behind nginx (plain and
// TLS, kept-alive upstream connections) is restarted gracefully between turns: every turn succeeds. A
// restart in the middle of a streamed turn (its grace shorter than the turn) ends that turn
// cleanly, with an error, and the next turn succeeds.
func TestNginx_agent_restart_costs_no_turn(t *testing.T) {
	t.Parallel()
	for _, b := range bindings {
		for _, f := range fronts {
			t.Run(b.name+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				restartTurns(t, b, f.tls)
			})
		}
	}
}

// restartTurns is one case of TestNginx_agent_restart_costs_no_turn.
func restartTurns(t *testing.T, b binding, withTLS bool) {
	agent := startSDKAgent(t, b.grpc())
	n := proxy(t, b, agent.addr, withTLS, keepLong)
	c, ep := agentClient(t, n.RootCAs), endpoint(n, b, sdkPath(b))
	for round := range rounds {
		mustTurn(t, c, ep, round, "hello", sdkReply("hello"))
		agent.restart(10 * time.Second)
	}
	mustTurn(t, c, ep, rounds, "hello", sdkReply("hello"))

	// In flight: the first events have come through nginx when the agent goes. The stream's
	// deadline tells a turn the restart ended from one that never ended.
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	s, err := c.SendStreamingMessage(ctx, ep, &a2a.SendMessageRequest{Message: a2a.Message{
		Role: a2a.RoleUser, MessageID: "in-flight", Parts: a2a.Parts{a2a.TextPart(slowText)}}}, a2aclient.StreamOptions{})
	if err != nil {
		t.Fatalf("in-flight turn: %v", err)
	}
	defer s.Close()
	for range 2 {
		if _, err := s.Next(); err != nil {
			t.Fatalf("in-flight turn, before the restart: %v", err)
		}
	}
	ended := make(chan error, 1)
	go func() {
		_, err := readStream(s)
		ended <- err
	}()
	agent.restart(100 * time.Millisecond)
	switch err := <-ended; {
	case err == nil:
		t.Errorf("in-flight turn completed across the agent's restart, which cut it")
	case ctx.Err() != nil:
		t.Fatalf("in-flight turn still running %s after the agent's restart: %v", turnTimeout, err)
	default:
		t.Logf("in-flight turn ended: %v", err)
	}
	mustTurn(t, c, ep, rounds+1, "hello", sdkReply("hello"))
}

// closingAgent starts the fixture agent of b behind a server that answers every request with
// Connection: close, and returns the agent's URL there.
func closingAgent(t *testing.T, b binding) *url.URL {
	t.Helper()
	fa, u := fixtureAgent(t, b)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		fa.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	closing, err := url.Parse(srv.URL + u.Path)
	if err != nil {
		t.Fatal(err)
	}
	return closing
}
