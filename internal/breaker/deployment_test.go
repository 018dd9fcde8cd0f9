package breaker_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/breaker"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// The tests of this file run several processes' breakers (replicas) in one test process: each
// has its own breaker.Breaker and Invoker, its own store.Circuits and listener on the package's
// Postgres, and turns go to real fixture agents. Their clock is one the test moves, so no test
// waits through a cool-down.

const cooldown = 5 * time.Second

// replicaUnderTest is one process's breaker, invoker and listener.
type replicaUnderTest struct {
	name    string
	breaker *breaker.Breaker
	inv     *invoke.Invoker
	stop    func() // stops listening
}

// newReplica starts a replica on pool (nil: the package database) with the clock c; listen
// starts its listener.
func newReplica(t *testing.T, name string, c *clock, pool *pgxpool.Pool, listen bool, mod func(*breaker.Options)) *replicaUnderTest {
	t.Helper()
	if pool == nil {
		pool = testDB.Pool
	}
	shared := store.NewCircuits(pool, "test/"+name, nil)
	o := breaker.Options{Now: c.now, Share: shared, Cooldown: cooldown, MaxCooldown: 4 * cooldown,
		// Far above a round trip to Postgres on a busy machine: turns take the deployment's
		// answer in these tests, except where it cannot come.
		ShareWait: 10 * time.Second}
	if mod != nil {
		mod(&o)
	}
	b := breaker.New(o)
	box, err := secret.New(bytes.Repeat([]byte{7}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	policy := netguard.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AllowInsecureHTTP: true}
	client := netguard.NewClient(policy, netguard.ClientOptions{MaxRedirects: 0, InlineHTTP1: true})
	inv := invoke.New(invoke.Options{Client: client, GRPCPolicy: &policy, Secrets: box, Breaker: b, MaxRetries: -1,
		TurnTimeout: 30 * time.Second, FirstEventTimeout: 20 * time.Second, IdleTimeout: 20 * time.Second})
	r := &replicaUnderTest{name: name, breaker: b, inv: inv, stop: func() {}}
	if listen {
		r.listen(t, shared)
	}
	t.Cleanup(func() {
		r.stop()
		_ = inv.Close(context.Background())
		if err := b.Close(context.Background()); err != nil {
			t.Error(err)
		}
		client.CloseIdleConnections()
	})
	return r
}

// listen runs shared's listener for r until r.stop.
func (r *replicaUnderTest) listen(t *testing.T, shared *store.Circuits) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); shared.Listen(ctx, r.breaker) }()
	r.stop = func() { cancel(); <-done }
}

// turn runs one turn of a and returns its result.
func (r *replicaUnderTest) turn(t *testing.T, a *connector.Agent) *connector.TurnResult {
	t.Helper()
	return r.inv.Turn(t.Context(), connector.TurnRequest{Agent: a, MessageID: "m-" + r.name, Text: "hello"}, nil)
}

// deadAgent is a stored agent whose endpoint is a fixture agent answering 503 (down) until
// revived.
func deadAgent(t *testing.T) (*connector.Agent, *fixtureagent.Server) {
	t.Helper()
	tenantID, agentID := newAgent(t)
	fx := fixtureagent.New(t)
	fx.SetBehavior(fixtureagent.HTTP503)
	return &connector.Agent{ID: agentID, TenantID: tenantID, Enabled: true,
		CardProfile: connector.CardProfile{Name: "dead", EndpointURL: fx.URL, Streaming: false}}, fx
}

func code(res *connector.TurnResult) string {
	if res.Err == nil {
		return ""
	}
	return res.Err.Code
}

// waitState waits (bounded) until r's breaker for a is in state.
func waitState(t *testing.T, r *replicaUnderTest, a *connector.Agent, state string) time.Duration {
	t.Helper()
	start := time.Now()
	for r.breaker.State(a.ID, a.EndpointURL) != state {
		if time.Since(start) > 15*time.Second {
			t.Fatalf("replica %s: breaker %s, want %s", r.name, r.breaker.State(a.ID, a.EndpointURL), state)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

// TestSharedBreakerOpensOnceForTheDeployment: three replicas take turns to a dead agent, one
// after the other and each on the next replica: the deployment counts the failures together, so
// three turns fail at the agent, and from the fourth every replica refuses without calling it.
// The replica that saw none of the failures learns the open breaker by notification alone.
func TestSharedBreakerOpensOnceForTheDeployment(t *testing.T) {
	t.Parallel()
	c := &clock{t: base}
	a, fx := deadAgent(t)
	rs := []*replicaUnderTest{newReplica(t, "a", c, nil, true, nil), newReplica(t, "b", c, nil, true, nil), newReplica(t, "c", c, nil, true, nil)}
	bystander := newReplica(t, "d", c, nil, true, nil)
	for i := range 9 {
		res := rs[i%3].turn(t, a)
		want := connector.CodeAgentUnavailable
		if i < breaker.DefaultFailures {
			want = connector.CodeAgentHTTPStatus
		}
		if code(res) != want {
			t.Fatalf("turn %d on replica %s: %s (%v), want %s", i+1, rs[i%3].name, code(res), res.Err, want)
		}
	}
	if n := len(fx.Requests()); n != breaker.DefaultFailures {
		t.Errorf("the dead agent got %d requests, want %d (one per failure that opened the breaker)", n, breaker.DefaultFailures)
	}
	took := waitState(t, bystander, a, breaker.Open)
	t.Logf("a replica without turns learned the open breaker within %s", took)
	var state string
	var fails int
	if err := testDB.Pool.QueryRow(t.Context(), `select state, fails from agent_circuits where agent_id = $1`, a.ID).Scan(&state, &fails); err != nil {
		t.Fatal(err)
	}
	if state != breaker.Open || fails != breaker.DefaultFailures {
		t.Errorf("agent_circuits: %s with %d failures, want open with %d", state, fails, breaker.DefaultFailures)
	}
	if res := bystander.turn(t, a); code(res) != connector.CodeAgentUnavailable {
		t.Errorf("bystander: %s, want %s", code(res), connector.CodeAgentUnavailable)
	}

	// The operator's way to close it for the deployment (docs/operations.md, runbook): every
	// replica follows.
	if _, err := testDB.Pool.Exec(t.Context(), `UPDATE agent_circuits SET state = 'closed', fails = 0, gen = gen + 1,
		cause = '', retry_at = NULL, prober = NULL, probe_until = NULL, changed_by = 'operator' WHERE agent_id = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	for _, r := range append(rs, bystander) {
		waitState(t, r, a, breaker.Closed)
	}
}

// TestSharedBreakerCountsConcurrentFailuresOnce: failures reported at once by many turns of
// several processes are counted one after the other: two see the breaker still closed (with 1
// and 2 failures), every other sees it open, opened once.
func TestSharedBreakerCountsConcurrentFailuresOnce(t *testing.T) {
	t.Parallel()
	a, _ := deadAgent(t)
	k := breaker.CircuitKey{TenantID: a.TenantID, AgentID: a.ID, Endpoint: a.EndpointURL}
	p := breaker.Policy{Failures: 3, Cooldown: cooldown, MaxCooldown: 4 * cooldown}
	shares := []*store.Circuits{store.NewCircuits(testDB.Pool, "a", nil), store.NewCircuits(testDB.Pool, "b", nil)}
	const n = 24
	got := make([]breaker.Circuit, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := shares[i%2].Fail(t.Context(), k, base, "agent_http_status: 503", p)
			if err != nil {
				t.Error(err)
			}
			got[i] = c
		})
	}
	wg.Wait()
	closedFails := map[int]int{}
	openGens := map[int64]int{}
	for _, c := range got {
		switch c.State {
		case breaker.Closed:
			closedFails[c.Fails]++
		case breaker.Open:
			openGens[c.Gen]++
			if c.Fails != 3 || !c.RetryAt.Equal(base.Add(cooldown)) {
				t.Errorf("open breaker %+v, want 3 failures and a probe after the cool-down", c)
			}
		default:
			t.Errorf("breaker %+v", c)
		}
	}
	if len(closedFails) != 2 || closedFails[1] != 1 || closedFails[2] != 1 {
		t.Errorf("closed answers by failure count: %v, want one with 1 and one with 2", closedFails)
	}
	if len(openGens) != 1 {
		t.Errorf("open answers by generation: %v, want one generation (opened once)", openGens)
	}
}

// TestSharedBreakerProbesOncePerCooldown: when the cool-down is over, turns on every replica at
// once get exactly one probe to the agent; a failed probe doubles the cool-down for the whole
// deployment; when the agent is back, one probe closes the breaker on every replica.
func TestSharedBreakerProbesOncePerCooldown(t *testing.T) {
	t.Parallel()
	c := &clock{t: base}
	a, fx := deadAgent(t)
	var gated atomic.Pointer[gateway]
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g := gated.Load(); g != nil {
			select {
			case g.arrived <- struct{}{}:
			default: // a second request while gated: counted by the test
			}
			<-g.gate
		}
		fx.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	u, err := url.Parse(fx.URL)
	if err != nil {
		t.Fatal(err)
	}
	a.EndpointURL = front.URL + u.Path
	rs := []*replicaUnderTest{newReplica(t, "a", c, nil, true, nil), newReplica(t, "b", c, nil, true, nil), newReplica(t, "c", c, nil, true, nil)}
	for i := range breaker.DefaultFailures {
		rs[i].turn(t, a)
	}
	for _, r := range rs {
		waitState(t, r, a, breaker.Open)
	}
	// concurrently runs turns on every replica at once and returns how many reached the agent.
	concurrently := func(perReplica int) (results []*connector.TurnResult, requests int) {
		before := len(fx.Requests())
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, r := range rs {
			for range perReplica {
				wg.Go(func() {
					res := r.turn(t, a)
					mu.Lock()
					results = append(results, res)
					mu.Unlock()
				})
			}
		}
		wg.Wait()
		return results, len(fx.Requests()) - before
	}

	c.set(base.Add(cooldown))
	if _, n := concurrently(4); n != 1 {
		t.Fatalf("%d requests at the agent after the cool-down, want one probe", n)
	}
	for _, r := range rs {
		waitState(t, r, a, breaker.Open)
	}
	// The probe failed: the next wait is twice as long, for every replica.
	c.set(base.Add(2 * cooldown))
	if _, n := concurrently(2); n != 0 {
		t.Fatalf("%d requests before the doubled cool-down ended, want none", n)
	}
	// The agent is back, slow: its probe is held at a gate while turns on every replica are
	// refused, then lets it through; the breaker closes on every replica.
	c.set(base.Add(3 * cooldown))
	gate, arrived := make(chan struct{}), make(chan struct{}, 1)
	fx.SetBehavior(fixtureagent.Send)
	gated.Store(&gateway{gate: gate, arrived: arrived})
	probe := make(chan *connector.TurnResult, 1)
	go func() { probe <- rs[0].turn(t, a) }()
	select {
	case <-arrived:
	case <-time.After(15 * time.Second):
		t.Fatal("no probe reached the agent")
	}
	results, n := concurrently(3)
	if n != 0 {
		t.Errorf("%d requests at the agent during the probe, want none", n)
	}
	for _, res := range results {
		if code(res) != connector.CodeAgentUnavailable {
			t.Errorf("turn during the probe: %s, want %s", code(res), connector.CodeAgentUnavailable)
		}
	}
	gated.Store(nil)
	close(gate)
	if res := <-probe; res.Outcome != connector.OutcomeCompleted {
		t.Fatalf("probe: %+v, want COMPLETED", res)
	}
	for _, r := range rs {
		waitState(t, r, a, breaker.Closed)
		if res := r.turn(t, a); res.Outcome != connector.OutcomeCompleted {
			t.Errorf("replica %s after recovery: %+v, want COMPLETED", r.name, res)
		}
	}
}

// gateway holds each request to the agent at gate, after telling arrived.
type gateway struct {
	gate    chan struct{}
	arrived chan struct{}
}

// TestSharedBreakerResyncCatchesWhatItMissed: a replica that was not listening when the breaker
// opened, and again when it closed, learns both when it listens again.
func TestSharedBreakerResyncCatchesWhatItMissed(t *testing.T) {
	t.Parallel()
	c := &clock{t: base}
	a, fx := deadAgent(t)
	r := newReplica(t, "a", c, nil, true, nil)
	deaf := newReplica(t, "deaf", c, nil, false, nil)
	for range breaker.DefaultFailures {
		r.turn(t, a)
	}
	shared := store.NewCircuits(testDB.Pool, "test/deaf", nil)
	deaf.listen(t, shared)
	waitState(t, deaf, a, breaker.Open)
	deaf.stop()

	fx.SetBehavior(fixtureagent.Send)
	c.set(base.Add(cooldown))
	if res := r.turn(t, a); res.Outcome != connector.OutcomeCompleted {
		t.Fatalf("probe: %+v, want COMPLETED", res)
	}
	if got := deaf.breaker.State(a.ID, a.EndpointURL); got != breaker.Open {
		t.Fatalf("the deaf replica's breaker: %s, want still open (it heard nothing)", got)
	}
	deaf.listen(t, shared)
	waitState(t, deaf, a, breaker.Closed)
}

// TestSharedBreakerWithoutPostgresDecidesLocally: with a database that accepts connections and
// never answers, turns wait at most ShareWait for it, and the breaker works as each process's
// own: three failures on this replica open it, then turns are refused without calling the agent.
func TestSharedBreakerWithoutPostgresDecidesLocally(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	t.Cleanup(func() { ln.Close(); conns.Wait() })
	conns.Go(func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, conn) // silent: a Postgres that hangs
		}
	})
	cfg, err := pgxpool.ParseConfig("postgres://u:p@" + ln.Addr().String() + "/db?sslmode=disable&connect_timeout=30")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	c := &clock{t: base}
	a, fx := deadAgent(t)
	const wait = 100 * time.Millisecond
	r := newReplica(t, "alone", c, pool, true, func(o *breaker.Options) { o.ShareWait = wait })
	var slowest time.Duration
	for i := range breaker.DefaultFailures + 3 {
		start := time.Now()
		res := r.turn(t, a)
		took := time.Since(start)
		slowest = max(slowest, took)
		want := connector.CodeAgentUnavailable
		if i < breaker.DefaultFailures {
			want = connector.CodeAgentHTTPStatus
		}
		if code(res) != want {
			t.Fatalf("turn %d: %s (%v), want %s", i+1, code(res), res.Err, want)
		}
		// A turn that waited for the database would wait for its 5 s bound, or 30 s to connect.
		if took > 3*time.Second {
			t.Errorf("turn %d took %s: it waited for the database", i+1, took)
		}
	}
	if n := len(fx.Requests()); n != breaker.DefaultFailures {
		t.Errorf("the dead agent got %d requests, want %d", n, breaker.DefaultFailures)
	}
	t.Logf("slowest turn with Postgres hanging: %s (ShareWait %s)", slowest, wait)
}
