package invoke_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/breaker"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// fastBound is what "fails fast" may take at most: generous against a busy machine, and still
// far below the first-event limit (20 s in the harness) that a turn calling the agent would wait.
const fastBound = 2 * time.Second

// fakeClock is a clock the test moves by hand, so that no test sleeps through a cool-down.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// breakerHarness is a harness whose Invoker has a Breaker on a fake clock, and collects the
// breaker's published changes.
type breakerHarness struct {
	*harness
	clock   *fakeClock
	breaker *breaker.Breaker
	mu      sync.Mutex
	changes []breaker.Change
}

func newBreakerHarness(t *testing.T, mod func(*invoke.Options)) *breakerHarness {
	t.Helper()
	bh := &breakerHarness{clock: newFakeClock()}
	bh.breaker = breaker.New(breaker.Options{Now: bh.clock.Now, OnChange: func(c breaker.Change) {
		bh.mu.Lock()
		defer bh.mu.Unlock()
		bh.changes = append(bh.changes, c)
	}})
	bh.harness = newHarness(t, func(o *invoke.Options) {
		o.Breaker = bh.breaker
		if mod != nil {
			mod(o)
		}
	})
	return bh
}

func (bh *breakerHarness) states() []string {
	bh.mu.Lock()
	defer bh.mu.Unlock()
	var out []string
	for _, c := range bh.changes {
		out = append(out, c.State)
	}
	return out
}

// run runs one turn with the text (a fixture behaviour) and returns its result and duration.
func (bh *breakerHarness) run(t *testing.T, a *connector.Agent, text string) (*connector.TurnResult, time.Duration) {
	t.Helper()
	start := time.Now()
	res := bh.inv.Turn(t.Context(), connector.TurnRequest{Agent: a, MessageID: "m-" + text, Text: text}, nil)
	return res, time.Since(start)
}

func wantUnavailable(t *testing.T, res *connector.TurnResult, took time.Duration) {
	t.Helper()
	if res.Outcome != connector.OutcomeFailed || res.Err == nil || res.Err.Code != connector.CodeAgentUnavailable {
		t.Errorf("result = %+v (err %+v), want FAILED %s", res, res.Err, connector.CodeAgentUnavailable)
		return
	}
	if took > fastBound {
		t.Errorf("refused turn took %s, want well under %s", took, fastBound)
	}
}

// TestBreakerOpensOnAgentDown: each way of being down costs the first three turns their full
// failure, then turns fail fast with agent_unavailable and never reach the agent.
func TestBreakerOpensOnAgentDown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		behavior  fixtureagent.Behavior
		streaming bool
		wantCode  string
		// grpcCode is the code over gRPC when it differs: a backend down is UNAVAILABLE there
		// (the agent is unreachable), and garbage cannot pass gRPC's own framing ("-": skipped).
		grpcCode string
	}{
		{name: "hang_before_headers", behavior: fixtureagent.HangHeaders, streaming: true, wantCode: connector.CodeTimeout},
		{name: "headers_then_nothing", behavior: fixtureagent.HeadersSilence, streaming: true, wantCode: connector.CodeTimeout},
		{name: "http_500", behavior: fixtureagent.HTTP500, streaming: true, wantCode: connector.CodeAgentHTTPStatus, grpcCode: connector.CodeAgentUnreachable},
		{name: "http_503_send", behavior: fixtureagent.HTTP503, streaming: false, wantCode: connector.CodeAgentHTTPStatus, grpcCode: connector.CodeAgentUnreachable},
		{name: "garbage_stream", behavior: fixtureagent.Garbage, streaming: true, wantCode: connector.CodeProtocolError, grpcCode: "-"},
		{name: "garbage_send", behavior: fixtureagent.Garbage, streaming: false, wantCode: connector.CodeProtocolError, grpcCode: "-"},
	}
	for _, tt := range tests {
		for _, w := range fixtureWires {
			want := tt.wantCode
			if w.name == "v1-grpc" && tt.grpcCode != "" {
				if tt.grpcCode == "-" {
					continue
				}
				want = tt.grpcCode
			}
			t.Run(tt.name+"/"+w.name, func(t *testing.T) {
				t.Parallel()
				bh := newBreakerHarness(t, func(o *invoke.Options) {
					// Short only where the agent never answers, so that an agent that does
					// answer is judged by its answer however slow the machine is today.
					o.FirstEventTimeout = slack
					if want == connector.CodeTimeout {
						o.FirstEventTimeout = shortLimit
					}
					o.TurnTimeout = 2 * time.Second // bounds the hanging send
					o.MaxRetries = -1               // the retry budget has its own test
				})
				srv := w.start(t)
				srv.SetBehavior(tt.behavior)
				a := fixtureAgentFor(srv, tt.streaming)
				for i := range breaker.DefaultFailures {
					res, _ := bh.run(t, &a, "hello")
					if res.Err == nil || res.Err.Code != want {
						t.Fatalf("turn %d: result = %+v (err %+v), want %s", i+1, res, res.Err, want)
					}
				}
				contacted := len(srv.Requests())
				for range 5 {
					res, took := bh.run(t, &a, "hello")
					wantUnavailable(t, res, took)
				}
				if got := len(srv.Requests()); got != contacted {
					t.Errorf("agent got %d requests after the breaker opened, want 0", got-contacted)
				}
				if got := bh.breaker.State(a.ID, a.EndpointURL); got != breaker.Open {
					t.Errorf("state = %s, want open", got)
				}
			})
		}
	}
	t.Run("connection_refused", func(t *testing.T) {
		t.Parallel()
		bh := newBreakerHarness(t, nil)
		a := agentAt(fixtureagent.RefusedURL(t), true)
		for range breaker.DefaultFailures {
			if res, _ := bh.run(t, &a, "hello"); res.Err == nil || res.Err.Code != connector.CodeAgentUnreachable {
				t.Fatalf("result = %+v, want agent_unreachable", res)
			}
		}
		res, took := bh.run(t, &a, "hello")
		wantUnavailable(t, res, took)
		for _, want := range []string{"since 2026-11-26T12:00:00Z", "agent_unreachable", "again at 2026-11-26T12:00:05Z"} {
			if !strings.Contains(res.Err.Message, want) {
				t.Errorf("message %q does not say %q", res.Err.Message, want)
			}
		}
		if !res.Interrupted {
			t.Error("a refused turn must keep the hold (Interrupted)")
		}
	})
}

// TestBreakerIgnoresAnswers: an agent that answers, whatever it answers (401, a JSON-RPC error,
// a failed or rejected task, a reply too large), is up: its breaker never opens.
func TestBreakerIgnoresAnswers(t *testing.T) {
	t.Parallel()
	bh := newBreakerHarness(t, nil)
	srv := fixtureagent.New(t)
	a := agentAt(srv.URL, true)
	behaviours := []fixtureagent.Behavior{fixtureagent.HTTP401, fixtureagent.JSONError, fixtureagent.RPCErrorEvent,
		fixtureagent.Failed, fixtureagent.Rejected, fixtureagent.HugeEvent, fixtureagent.AuthRequired}
	for _, b := range behaviours {
		for i := range breaker.DefaultFailures + 1 {
			res, _ := bh.run(t, &a, "behave:"+string(b))
			if res.Err != nil && res.Err.Code == connector.CodeAgentUnavailable {
				t.Fatalf("%s, turn %d: refused by the breaker: %s", b, i+1, res.Err.Message)
			}
		}
	}
	if got := bh.states(); len(got) != 0 {
		t.Errorf("breaker changes = %v, want none", got)
	}
}

// TestBreakerSuccessResetsTheCount: failures must be consecutive.
func TestBreakerSuccessResetsTheCount(t *testing.T) {
	t.Parallel()
	bh := newBreakerHarness(t, func(o *invoke.Options) { o.MaxRetries = -1 })
	srv := fixtureagent.New(t)
	a := agentAt(srv.URL, true)
	for range 3 {
		for range breaker.DefaultFailures - 1 {
			bh.run(t, &a, "behave:"+string(fixtureagent.HTTP500))
		}
		if res, _ := bh.run(t, &a, "hello"); res.Outcome != connector.OutcomeCompleted {
			t.Fatalf("result = %+v, want COMPLETED", res)
		}
	}
	if got := bh.breaker.State(a.ID, a.EndpointURL); got != breaker.Closed {
		t.Errorf("state = %s, want closed", got)
	}
}

// gatedAgent is a real HTTP server in front of a fixture agent: while failing it answers 500;
// while gated it holds each request until the gate opens, then lets the fixture answer.
type gatedAgent struct {
	srv      *fixtureagent.Server
	url      string
	failing  atomic.Bool
	gated    atomic.Bool
	gate     chan struct{}
	arrived  chan struct{}
	requests atomic.Int64
}

func newGatedAgent(t *testing.T) *gatedAgent {
	g := &gatedAgent{srv: fixtureagent.New(t), gate: make(chan struct{}), arrived: make(chan struct{}, 100)}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.requests.Add(1)
		if g.failing.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		if g.gated.Load() {
			// Read the body first: only then does the server notice a client that goes away
			// (and end r.Context()).
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			g.arrived <- struct{}{}
			select {
			case <-g.gate:
			case <-r.Context().Done():
				return
			}
		}
		g.srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	g.url = hs.URL + "/a2a"
	return g
}

// TestBreakerHalfOpenLetsOneProbeThrough: after the cool-down exactly one turn probes the agent;
// turns arriving meanwhile fail fast without reaching it; the probe's success closes the breaker.
func TestBreakerHalfOpenLetsOneProbeThrough(t *testing.T) {
	t.Parallel()
	bh := newBreakerHarness(t, func(o *invoke.Options) { o.MaxRetries = -1 })
	g := newGatedAgent(t)
	a := agentAt(g.url, true)
	g.failing.Store(true)
	for range breaker.DefaultFailures {
		bh.run(t, &a, "hello")
	}
	res, took := bh.run(t, &a, "hello")
	wantUnavailable(t, res, took)

	// The agent is back, but slow: the probe waits at the gate.
	g.failing.Store(false)
	g.gated.Store(true)
	bh.clock.Add(breaker.DefaultCooldown)
	probe := make(chan *connector.TurnResult, 1)
	go func() {
		probe <- bh.inv.Turn(t.Context(), connector.TurnRequest{Agent: &a, MessageID: "probe", Text: "hello"}, nil)
	}()
	<-g.arrived
	before := g.requests.Load()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			res, took := bh.run(t, &a, "hello")
			wantUnavailable(t, res, took)
			if res.Err != nil && !strings.Contains(res.Err.Message, "probe") {
				t.Errorf("message %q does not say a probe is under way", res.Err.Message)
			}
		})
	}
	wg.Wait()
	if got := g.requests.Load() - before; got != 0 {
		t.Errorf("agent got %d requests during the probe, want 0", got)
	}
	close(g.gate)
	if res := <-probe; res.Outcome != connector.OutcomeCompleted {
		t.Fatalf("probe = %+v, want COMPLETED", res)
	}
	if res, _ := bh.run(t, &a, "hello"); res.Outcome != connector.OutcomeCompleted {
		t.Errorf("turn after recovery = %+v, want COMPLETED", res)
	}
	want := []string{breaker.Open, breaker.HalfOpen, breaker.Closed}
	if got := bh.states(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("changes = %v, want %v", got, want)
	}
}

// TestBreakerCooldownDoubles: every failed probe doubles the wait, up to the maximum; success
// starts over at the base.
func TestBreakerCooldownDoubles(t *testing.T) {
	t.Parallel()
	bh := newBreakerHarness(t, func(o *invoke.Options) { o.MaxRetries = -1 })
	g := newGatedAgent(t)
	a := agentAt(g.url, true)
	g.failing.Store(true)
	for range breaker.DefaultFailures {
		bh.run(t, &a, "hello")
	}
	// probeAfter moves the clock to just before the cool-down ends (refused, agent untouched),
	// then to its end (one probe reaches the agent).
	probeAfter := func(cooldown time.Duration) *connector.TurnResult {
		t.Helper()
		bh.clock.Add(cooldown - time.Millisecond)
		n := g.requests.Load()
		res, took := bh.run(t, &a, "hello")
		wantUnavailable(t, res, took)
		bh.clock.Add(time.Millisecond)
		res, _ = bh.run(t, &a, "hello")
		if got := g.requests.Load() - n; got != 1 {
			t.Fatalf("cool-down %s: agent got %d requests, want exactly the probe", cooldown, got)
		}
		return res
	}
	cooldown := breaker.DefaultCooldown
	for range 7 { // 5s, 10s, ... up to the 2m cap, and once more at the cap
		if res := probeAfter(cooldown); res.Err == nil || res.Err.Code != connector.CodeAgentHTTPStatus {
			t.Fatalf("probe = %+v, want the agent's 500", res)
		}
		cooldown = min(2*cooldown, breaker.DefaultMaxCooldown)
	}
	g.failing.Store(false)
	if res := probeAfter(cooldown); res.Outcome != connector.OutcomeCompleted {
		t.Fatalf("probe = %+v, want COMPLETED", res)
	}
	g.failing.Store(true)
	for range breaker.DefaultFailures {
		bh.run(t, &a, "hello")
	}
	g.failing.Store(false)
	if res := probeAfter(breaker.DefaultCooldown); res.Outcome != connector.OutcomeCompleted {
		t.Fatalf("after recovery the cool-down must start over at %s; probe = %+v", breaker.DefaultCooldown, res)
	}
}

// TestBreakerIgnoresCallerCancel: a barge-in before the agent answered says nothing about it.
func TestBreakerIgnoresCallerCancel(t *testing.T) {
	t.Parallel()
	bh := newBreakerHarness(t, nil)
	srv := fixtureagent.New(t)
	srv.SetBehavior(fixtureagent.HangHeaders)
	a := agentAt(srv.URL, true)
	for range breaker.DefaultFailures + 1 {
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		res := bh.inv.Turn(ctx, connector.TurnRequest{Agent: &a, MessageID: "m", Text: "hello"}, nil)
		cancel()
		if res.Err != nil && res.Err.Code == connector.CodeAgentUnavailable {
			t.Fatal("caller deadlines opened the breaker")
		}
	}
	if got := bh.breaker.State(a.ID, a.EndpointURL); got != breaker.Closed {
		t.Errorf("state = %s, want closed", got)
	}
}

// TestRetryBudgetBoundsA503Agent: an agent that answers 503 to every call sees each turn once,
// plus at most the budget's share of retries (20% of the turns, at least one per window),
// never three requests per turn.
func TestRetryBudgetBoundsA503Agent(t *testing.T) {
	t.Parallel()
	clock := newFakeClock() // one instant: every call falls in one window
	budget := a2aclient.NewRetryBudget(a2aclient.RetryBudgetOptions{Percent: a2aclient.DefaultRetryBudgetPercent, Now: clock.Now})
	h := newHarness(t, func(o *invoke.Options) { o.RetryBudget = budget })
	const turns = 20
	for _, streaming := range []bool{true, false} {
		srv := fixtureagent.New(t)
		srv.SetBehavior(fixtureagent.HTTP503)
		a := agentAt(srv.URL, streaming)
		before := len(srv.Requests())
		for range turns {
			res := h.inv.Turn(t.Context(), connector.TurnRequest{Agent: &a, MessageID: "m", Text: "hello"}, nil)
			if res.Err == nil || res.Err.Code != connector.CodeAgentHTTPStatus {
				t.Fatalf("result = %+v, want agent_http_status", res)
			}
		}
		got := len(srv.Requests()) - before
		budgetShare := turns * a2aclient.DefaultRetryBudgetPercent / 100
		if got != turns+budgetShare {
			t.Errorf("streaming=%v: agent got %d requests for %d turns, want %d (turns + %d%%)", streaming, got, turns, turns+budgetShare, a2aclient.DefaultRetryBudgetPercent)
		}
	}
}

// TestBreakerCanceledProbeLetsTheNextTurnProbe: a probe the caller cancels (barge-in) says
// nothing about the agent; the breaker stays half-open and the next turn probes.
func TestBreakerCanceledProbeLetsTheNextTurnProbe(t *testing.T) {
	t.Parallel()
	bh := newBreakerHarness(t, func(o *invoke.Options) { o.MaxRetries = -1 })
	g := newGatedAgent(t)
	a := agentAt(g.url, true)
	g.failing.Store(true)
	for range breaker.DefaultFailures {
		bh.run(t, &a, "hello")
	}
	g.failing.Store(false)
	g.gated.Store(true)
	bh.clock.Add(breaker.DefaultCooldown)
	ctx, cancel := context.WithCancel(t.Context())
	probe := make(chan *connector.TurnResult, 1)
	go func() {
		probe <- bh.inv.Turn(ctx, connector.TurnRequest{Agent: &a, MessageID: "probe", Text: "hello"}, nil)
	}()
	<-g.arrived
	cancel()
	if res := <-probe; res.Outcome != connector.OutcomeCanceled {
		t.Fatalf("canceled probe = %+v, want CANCELED", res)
	}
	if got := bh.breaker.State(a.ID, a.EndpointURL); got != breaker.HalfOpen {
		t.Fatalf("state after a canceled probe = %s, want half_open", got)
	}
	g.gated.Store(false)
	if res, _ := bh.run(t, &a, "hello"); res.Outcome != connector.OutcomeCompleted {
		t.Fatalf("next turn = %+v, want it to probe and complete", res)
	}
	if got := bh.breaker.State(a.ID, a.EndpointURL); got != breaker.Closed {
		t.Errorf("state = %s, want closed", got)
	}
}

// TestBreakerMetrics: operators see transitions by state, refused turns and open breakers.
func TestBreakerMetrics(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	p, err := telemetry.Setup(t.Context(), telemetry.Options{MetricReader: reader})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	clock := newFakeClock()
	b := breaker.New(breaker.Options{Now: clock.Now, MeterProvider: p.MeterProvider})
	h := newHarness(t, func(o *invoke.Options) { o.Breaker, o.MaxRetries = b, -1 })
	o := &observed{reader: reader}
	g := newGatedAgent(t)
	a := agentAt(g.url, true)
	run := func() *connector.TurnResult {
		return h.inv.Turn(t.Context(), connector.TurnRequest{Agent: &a, MessageID: "m", Text: "hello"}, nil)
	}
	g.failing.Store(true)
	for range breaker.DefaultFailures + 2 {
		run()
	}
	if v, _ := o.int64Metric(t, breaker.MetricOpen); v != 1 {
		t.Errorf("%s = %d while open, want 1", breaker.MetricOpen, v)
	}
	g.failing.Store(false)
	clock.Add(breaker.DefaultCooldown)
	if res := run(); res.Outcome != connector.OutcomeCompleted {
		t.Fatalf("probe = %+v", res)
	}
	state := attribute.Key("a2ac.breaker.state")
	for _, s := range []string{breaker.Open, breaker.HalfOpen, breaker.Closed} {
		if v, _ := o.int64Metric(t, breaker.MetricTransitions, state.String(s)); v != 1 {
			t.Errorf("%s{%s} = %d, want 1", breaker.MetricTransitions, s, v)
		}
	}
	if v, _ := o.int64Metric(t, breaker.MetricRefused); v != 2 {
		t.Errorf("%s = %d, want 2", breaker.MetricRefused, v)
	}
	if v, ok := o.int64Metric(t, breaker.MetricOpen); !ok || v != 0 {
		t.Errorf("%s = %d (recorded %v) after recovery, want 0", breaker.MetricOpen, v, ok)
	}
}

// TestBreakerFollowsTheTurnToItsFallback: a turn that moves to the card's other interface (the
// preferred one refused the protocol version) reports to that interface's breaker, not to the
// one it started on; and when that breaker is open, the move ends the turn at once with
// agent_unavailable, without calling the fallback.
func TestBreakerFollowsTheTurnToItsFallback(t *testing.T) {
	t.Parallel()
	primary := fixtureagent.New(t) // a 0.x agent: it refuses the 1.0 methods the card prefers
	fallback := fixtureagent.New(t)
	fallback.SetBehavior(fixtureagent.HTTP503) // down
	clock := newFakeClock()
	brk := breaker.New(breaker.Options{Failures: 1, Now: clock.Now})
	a := agentAt(primary.URL, false)
	a.ProtocolVersion = "1.0"
	a.Fallback = &connector.Interface{URL: fallback.URL, ProtocolVersion: "0.3.0"}
	withBreaker := func(o *invoke.Options) { o.Breaker, o.MaxRetries = brk, -1 }

	res, _ := newHarness(t, withBreaker).turn(t, t.Context(), connector.TurnRequest{Agent: &a, MessageID: "m-1", Text: userWords})
	if res.Outcome != connector.OutcomeFailed || res.Err == nil || res.Err.Code != connector.CodeAgentHTTPStatus {
		t.Fatalf("turn on the fallback = %+v (err %+v), want FAILED %s", res, res.Err, connector.CodeAgentHTTPStatus)
	}
	if got := brk.State(a.ID, fallback.URL); got != breaker.Open {
		t.Errorf("fallback interface's breaker: %s, want open (the turn failed there)", got)
	}
	if got := brk.State(a.ID, primary.URL); got != breaker.Closed {
		t.Errorf("preferred interface's breaker: %s, want closed (it answered)", got)
	}

	// Another invoker (it has not learned the move) sharing the breaker: the turn starts on the
	// preferred interface, moves, and is refused by the fallback's open breaker.
	called := len(fallback.Requests())
	res, _ = newHarness(t, withBreaker).turn(t, t.Context(), connector.TurnRequest{Agent: &a, MessageID: "m-2", Text: userWords})
	if res.Outcome != connector.OutcomeFailed || res.Err == nil || res.Err.Code != connector.CodeAgentUnavailable || !res.Interrupted {
		t.Errorf("turn moving to an open breaker = %+v (err %+v), want FAILED %s, interrupted", res, res.Err, connector.CodeAgentUnavailable)
	}
	if n := len(fallback.Requests()) - called; n != 0 {
		t.Errorf("the fallback got %d requests behind its open breaker, want 0", n)
	}
	if got := brk.State(a.ID, primary.URL); got != breaker.Closed {
		t.Errorf("preferred interface's breaker: %s, want closed", got)
	}
}

// TestBreakerLearnsTheDeploymentsChanges: a process's breaker takes what other processes changed
// in the deployment (Learn, Resync) in order, newest wins, and decides its turns by it from
// memory: open refuses without calling the agent; half-open refuses while another process's
// probe holds its claim, then lets one turn probe; closed lets turns through. A resync closes
// what was learned before it and is no longer kept; what was learned after it stays.
func TestBreakerLearnsTheDeploymentsChanges(t *testing.T) {
	t.Parallel()
	bh := newBreakerHarness(t, func(o *invoke.Options) { o.MaxRetries = -1 })
	srv := fixtureagent.New(t)
	a := agentAt(srv.URL, true)
	a.TenantID = "tenant-1"
	now := bh.clock.Now()
	key := breaker.CircuitKey{TenantID: a.TenantID, AgentID: a.ID, Endpoint: a.EndpointURL}
	learn := func(c breaker.Circuit) { c.Key = key; bh.breaker.Learn(t.Context(), c) }
	wantState := func(step, want string) {
		t.Helper()
		if got := bh.breaker.State(a.ID, a.EndpointURL); got != want {
			t.Fatalf("%s: state %s, want %s", step, got, want)
		}
	}
	refused := func(step string) {
		t.Helper()
		before := len(srv.Requests())
		res, took := bh.run(t, &a, "hello")
		wantUnavailable(t, res, took)
		if n := len(srv.Requests()) - before; n != 0 {
			t.Errorf("%s: %d requests at the agent, want none", step, n)
		}
	}

	learn(breaker.Circuit{State: breaker.Open, Fails: 3, Gen: 2, Since: now, Cause: "agent_http_status: HTTP 503", RetryAt: now.Add(time.Minute)})
	wantState("learned open", breaker.Open)
	refused("learned open")
	learn(breaker.Circuit{State: breaker.Closed, Fails: 2, Gen: 1, Since: now})
	wantState("an older change learned late", breaker.Open)

	// Another process probes: refused until its claim lapses, then this process probes.
	learn(breaker.Circuit{State: breaker.HalfOpen, Fails: 3, Gen: 3, Since: now, Prober: "other", ProbeUntil: now.Add(2 * time.Minute)})
	wantState("another's probe", breaker.HalfOpen)
	bh.clock.Add(time.Minute)
	refused("during another's probe")
	bh.clock.Add(time.Minute)
	if res, _ := bh.run(t, &a, "hello"); res.Outcome != connector.OutcomeCompleted {
		t.Fatalf("turn after the other probe's claim lapsed = %+v, want it to probe and complete", res)
	}
	wantState("after this process's probe", breaker.Closed)

	learn(breaker.Circuit{State: breaker.Open, Fails: 3, Gen: 5, Since: now, RetryAt: now.Add(time.Hour)})
	mark := bh.breaker.Mark()
	bh.breaker.Resync(t.Context(), mark, nil)
	wantState("resynced without the breaker", breaker.Closed)
	learn(breaker.Circuit{State: breaker.Open, Fails: 3, Gen: 8, Since: now, RetryAt: now.Add(time.Hour)})
	mark = bh.breaker.Mark()
	learn(breaker.Circuit{State: breaker.Open, Fails: 3, Gen: 9, Since: now, RetryAt: now.Add(2 * time.Hour)})
	bh.breaker.Resync(t.Context(), mark, nil)
	wantState("learned after the resync began", breaker.Open)

	bh.mu.Lock()
	defer bh.mu.Unlock()
	var got []string
	for _, c := range bh.changes {
		got = append(got, fmt.Sprintf("%s learned=%v", c.State, c.Learned))
	}
	want := []string{"open learned=true", "half_open learned=true", "closed learned=false", "open learned=true", "closed learned=true",
		"open learned=true", "open learned=true"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}
