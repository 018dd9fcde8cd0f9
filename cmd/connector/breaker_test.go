package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/breaker"
	"github.com/a2a-connector/a2a-connector/internal/clitest"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
)

// TestDeadAgentFailsFastWithAgentUnavailable: through the real binary's wiring, an agent that
// goes down costs only the breaker's first turns; later turns end FAILED agent_unavailable
// without reaching it, and the replica publishes the open breaker for the health view.
func TestDeadAgentFailsFastWithAgentUnavailable(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	var calls atomic.Int64
	s := startStack(t, map[string]string{
		"A2AC_BREAKER_FAILURES": "2",
		// Long enough that no probe goes during the test, however slow the machine.
		"A2AC_BREAKER_COOLDOWN": "1h", "A2AC_BREAKER_MAX_COOLDOWN": "2h",
	}, withAgentWrapper(func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if down.Load() && r.URL.Path != agent.CardPath {
				calls.Add(1)
				http.Error(w, "backend down", http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		})
	}))
	if r := s.turn(t, "s-breaker", s.agent, "hello"); r.final.GetOutcome() == pb.Outcome_OUTCOME_FAILED {
		t.Fatalf("the agent, still up, failed: %v", r.final.GetError())
	}

	down.Store(true)
	for i := range 2 {
		r := s.turn(t, "s-breaker", s.agent, "hello")
		wantOutcome(t, r, pb.Outcome_OUTCOME_FAILED)
		if code := r.final.GetError().GetCode(); code != connector.CodeAgentHTTPStatus {
			t.Fatalf("turn %d: code %q, want %s", i+1, code, connector.CodeAgentHTTPStatus)
		}
	}
	before := calls.Load()
	var slowest time.Duration
	for i := range 3 {
		start := time.Now()
		r := s.turn(t, "s-breaker", s.agent, "hello")
		took := time.Since(start)
		wantOutcome(t, r, pb.Outcome_OUTCOME_FAILED)
		if code := r.final.GetError().GetCode(); code != connector.CodeAgentUnavailable {
			t.Fatalf("turn %d after opening: code %q (%s), want %s", i+1, code, r.final.GetError().GetMessage(), connector.CodeAgentUnavailable)
		}
		// Generous against a busy machine; a turn that called the agent could take the
		// 10 s turn timeout.
		if took > 2*time.Second {
			t.Errorf("refused turn took %s", took)
		}
		slowest = max(slowest, took)
	}
	t.Logf("refused turns (gRPC round trip, hold lookup and save included): slowest %s", slowest)
	if got := calls.Load() - before; got != 0 {
		t.Errorf("the dead agent got %d requests after the breaker opened, want 0", got)
	}

	// The replica publishes the change off the turn path; it shows up within a bound.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var state, cause string
		err := testDB.Pool.QueryRow(t.Context(), `select state, cause from agent_breakers where tenant_id = $1 and agent_id = $2`,
			s.tenant, s.agent).Scan(&state, &cause)
		if err == nil && state == breaker.Open {
			if cause == "" {
				t.Error("published breaker has no cause")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent_breakers row: state %q, err %v; want open", state, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// frontedAgent is a stored streaming fixture agent behind a server of the test's that answers
// 500 (down: not retried, so one failed turn is one request) while down, and records when each
// turn's request arrived.
type frontedAgent struct {
	*pacedAgent
	down atomic.Bool
	mu   sync.Mutex
	hits []time.Time
}

func newFrontedAgent(t *testing.T) *frontedAgent {
	t.Helper()
	fx := fixtureagent.New(t)
	f := &frontedAgent{}
	f.down.Store(true)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.hits = append(f.hits, time.Now())
		f.mu.Unlock()
		if f.down.Load() {
			http.Error(w, "backend down", http.StatusInternalServerError)
			return
		}
		fx.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	u, err := url.Parse(fx.URL)
	if err != nil {
		t.Fatal(err)
	}
	f.pacedAgent = newPacedAgentOn(t, fx, connector.CardProfile{Name: "fronted", ProtocolVersion: "0.3.0", Streaming: true,
		EndpointURL: front.URL + u.Path}, 3, time.Millisecond)
	return f
}

// requests returns when each request reached the agent.
func (f *frontedAgent) requests() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.hits)
}

// turn runs one turn of f's agent on r, in a session of its own, and returns its final and how
// long the engine waited for it.
func (f *frontedAgent) turn(t *testing.T, r *replica) (*pb.TurnFinal, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	start := time.Now()
	e := f.startTurn(t, ctx, r, uuid.NewString(), uuid.NewString(), 0)
	e.finish(t)
	return e.final, time.Since(start)
}

// breakerLog is one "agent circuit breaker changed" line of a replica's log.
type breakerLog struct {
	Time    time.Time
	Msg     string
	AgentID string `json:"agent_id"`
	State   string
	Learned bool `json:"learned_from_deployment"`
}

// breakerLogs returns r's breaker changes of agentID, in order.
func breakerLogs(r *replica, agentID string) []breakerLog {
	var out []breakerLog
	for _, line := range strings.Split(r.stderr.String(), "\n") {
		var l breakerLog
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "agent circuit breaker changed" && l.AgentID == agentID {
			out = append(out, l)
		}
	}
	return out
}

// waitBreakerLog waits (bounded) until every replica logged that agentID's breaker entered
// state, and returns each one's first such line after after.
func waitBreakerLog(t *testing.T, rs []*replica, agentID, state string, after time.Time) []breakerLog {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var got []breakerLog
		for _, r := range rs {
			for _, l := range breakerLogs(r, agentID) {
				if l.State == state && !l.Time.Before(after) {
					got = append(got, l)
					break
				}
			}
		}
		if len(got) == len(rs) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d replicas logged the breaker of agent %s %s", len(got), len(rs), agentID, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBreakerAcrossThreeReplicas runs three connector processes on one Postgres against agents
// that die and come back: the deployment's breaker, not each replica's.
func TestBreakerAcrossThreeReplicas(t *testing.T) {
	t.Parallel()
	bin := clitest.Build(t, "connector")
	t.Run("a_dead_agent_costs_three_turns_then_every_replica_refuses", func(t *testing.T) {
		t.Parallel()
		testDeadAgentAcrossReplicas(t, bin)
	})
	t.Run("one_probe_per_cool-down_then_every_replica_closes", func(t *testing.T) {
		t.Parallel()
		testProbesAcrossReplicas(t, bin)
	})
}

// startReplicas starts n replicas of bin for p's tenant with env.
func startReplicas(t *testing.T, bin string, n int, p *pacedAgent, env ...string) []*replica {
	t.Helper()
	rs := make([]*replica, n)
	for i := range rs {
		rs[i] = startReplica(t, bin, p, env...)
	}
	return rs
}

// Agents that die one after the other, each sent turns in turn by the three replicas (turn i on
// replica i mod 3): 3 turns fail at the agent, then every replica refuses with
// agent_unavailable without calling it. Measured: from the opening replica's log line to the
// others', and the refused turns' round trips.
func testDeadAgentAcrossReplicas(t *testing.T, bin string) {
	first := newFrontedAgent(t)
	// No probe within the test, however slow the machine.
	rs := startReplicas(t, bin, 3, first.pacedAgent, "A2AC_BREAKER_COOLDOWN=1h", "A2AC_BREAKER_MAX_COOLDOWN=2h")
	const samples = 5
	var spreads, refusals []time.Duration
	for n := range samples {
		f := first
		if n > 0 {
			f = newFrontedAgent(t) // in a tenant of its own: the replicas serve every tenant
		}
		before := time.Now()
		for i := range 6 {
			final, _ := f.turn(t, rs[i%3])
			want := connector.CodeAgentUnavailable
			if i < 3 {
				want = connector.CodeAgentHTTPStatus
			}
			if final.GetOutcome() != pb.Outcome_OUTCOME_FAILED || final.GetError().GetCode() != want {
				t.Fatalf("agent %d, turn %d on replica %d: %v %v, want FAILED %s", n+1, i+1, i%3+1, final.GetOutcome(), final.GetError(), want)
			}
		}
		if got := len(f.requests()); got != 3 {
			t.Fatalf("agent %d got %d requests, want 3 (the failed turns)", n+1, got)
		}
		logs := waitBreakerLog(t, rs, f.agent, breaker.Open, before)
		var times []time.Time
		learned := 0
		for _, l := range logs {
			times = append(times, l.Time)
			if l.Learned {
				learned++
			}
		}
		if learned != 2 {
			t.Fatalf("agent %d: breaker logs %+v, want one replica that opened it and two that learned it", n+1, logs)
		}
		// From the first replica that knew (the opener's own log line may come after the
		// others': it logs once its statement's answer is back, they on the notification).
		spreads = append(spreads, slices.MaxFunc(times, time.Time.Compare).Sub(slices.MinFunc(times, time.Time.Compare)))
		for i, r := range rs {
			final, took := f.turn(t, r)
			if final.GetError().GetCode() != connector.CodeAgentUnavailable {
				t.Errorf("agent %d, replica %d: %v, want %s", n+1, i+1, final.GetError(), connector.CodeAgentUnavailable)
			}
			refusals = append(refusals, took)
		}
		if got := len(f.requests()); got != 3 {
			t.Errorf("agent %d got %d requests after its breaker opened, want none", n+1, got-3)
		}
	}
	slices.Sort(spreads)
	slices.Sort(refusals)
	t.Logf("open breaker logged by the first replica → by the last: median %s, max %s (%d agents); refused turns (gRPC round trip): median %s, max %s (%d turns)",
		spreads[len(spreads)/2], spreads[len(spreads)-1], samples, refusals[len(refusals)/2], refusals[len(refusals)-1], len(refusals))
}

// A dead agent behind a breaker with a 1 s cool-down that does not grow, sent turns in turn by
// the three replicas: the agent sees one probe at a time, each at least a cool-down after the
// last (three replicas probing on their own would send up to three per cool-down); when it is
// back, one probe succeeds and every replica closes.
func testProbesAcrossReplicas(t *testing.T, bin string) {
	const cooldown = time.Second
	f := newFrontedAgent(t)
	rs := startReplicas(t, bin, 3, f.pacedAgent, "A2AC_BREAKER_COOLDOWN=1s", "A2AC_BREAKER_MAX_COOLDOWN=1s")
	for i := range 3 {
		f.turn(t, rs[i])
	}
	// Turns in turn until the agent saw three probes.
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; len(f.requests()) < 6; i++ {
		final, _ := f.turn(t, rs[i%3])
		if code := final.GetError().GetCode(); code != connector.CodeAgentUnavailable && code != connector.CodeAgentHTTPStatus {
			t.Fatalf("turn on a dead agent: %v", final.GetError())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests at the agent in 60 s, want 3 probes", len(f.requests()))
		}
		time.Sleep(10 * time.Millisecond) // a pace, not a verdict
	}
	hits := f.requests()
	var gaps []string
	for i := 4; i < len(hits); i++ {
		gap := hits[i].Sub(hits[i-1])
		gaps = append(gaps, gap.Round(time.Millisecond).String())
		if gap < cooldown-10*time.Millisecond {
			t.Errorf("probes %d and %d came %s apart, want at least the cool-down (%s)", i-3, i-2, gap, cooldown)
		}
	}
	t.Logf("probes at the agent, %d requests in all: gaps %v (cool-down %s, three replicas)", len(hits), gaps, cooldown)

	// The agent is back: turns in turn until one completes (the probe); then every replica closes.
	f.down.Store(false)
	back := time.Now()
	for i := 0; ; i++ {
		final, _ := f.turn(t, rs[i%3])
		if final.GetOutcome() == pb.Outcome_OUTCOME_COMPLETED {
			break
		}
		if code := final.GetError().GetCode(); code != connector.CodeAgentUnavailable {
			t.Fatalf("turn while the agent is back: %v", final.GetError())
		}
		if time.Now().After(back.Add(60 * time.Second)) {
			t.Fatal("no probe completed within 60 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitBreakerLog(t, rs, f.agent, breaker.Closed, back)
	for i, r := range rs {
		if final, _ := f.turn(t, r); final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED {
			t.Errorf("replica %d after recovery: %v %v, want COMPLETED", i+1, final.GetOutcome(), final.GetError())
		}
	}
}
