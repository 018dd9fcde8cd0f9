package admission

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	connector "github.com/a2a-connector/a2a-connector"
)

// refusal returns err's cap and limit, failing unless it is a *connector.RefusedError.
func refusal(t *testing.T, err error) (connector.Cap, int) {
	t.Helper()
	var re *connector.RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("error %v is not a *connector.RefusedError", err)
	}
	return re.Cap, re.Limit
}

func TestTenantCap_refuses_the_turn_over_it_at_once_and_not_other_tenants(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l := New(Config{Replica: 100, Tenant: 2, Agent: 2})
	var held []Permit
	for range 2 {
		p, err := l.Acquire(ctx, "a")
		if err != nil {
			t.Fatalf("turn under the cap: %v", err)
		}
		held = append(held, p)
	}
	_, err := l.Acquire(ctx, "a")
	if c, n := refusal(t, err); c != connector.CapTenant || n != 2 {
		t.Fatalf("refused by %s %d, want tenant 2", c, n)
	}
	if want := "tenant cap reached: at most 2 concurrent turns per deployment"; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
	other, err := l.Acquire(ctx, "b")
	if err != nil {
		t.Fatalf("another tenant: %v", err)
	}
	other.Release()
	held[0].Release()
	p, err := l.Acquire(ctx, "a")
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	p.Release()
	held[1].Release()
	if n := l.InFlight(); n != 0 {
		t.Errorf("in flight after every release: %d", n)
	}
}

func TestAgentCap_refuses_one_agent_and_leaves_the_permit_to_release(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l := New(Config{Replica: 100, Tenant: 10, Agent: 1})
	first, err := l.Acquire(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := first.AcquireAgent(ctx, "x"); err != nil {
		t.Fatalf("first turn of agent x: %v", err)
	}
	second, err := l.Acquire(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if c, n := refusal(t, second.AcquireAgent(ctx, "x")); c != connector.CapAgent || n != 1 {
		t.Fatalf("refused by %s %d, want agent 1", c, n)
	}
	second.Release() // the refused turn gives its tenant and replica places back
	third, err := l.Acquire(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := third.AcquireAgent(ctx, "y"); err != nil {
		t.Fatalf("another agent of the tenant: %v", err)
	}
	// The same agent id in another tenant is another agent.
	other, err := l.Acquire(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.AcquireAgent(ctx, "x"); err != nil {
		t.Fatalf("agent x of another tenant: %v", err)
	}
	for _, p := range []*Permit{&first, &third, &other} {
		p.Release()
	}
	if n := l.InFlight(); n != 0 {
		t.Errorf("in flight after every release: %d", n)
	}
}

func TestReplicaCap_refuses_when_the_process_is_full(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l := New(Config{Replica: 3, Tenant: 2, Agent: 2})
	var held []Permit
	for _, tenant := range []string{"a", "a", "b"} {
		p, err := l.Acquire(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	_, err := l.Acquire(ctx, "b")
	if c, n := refusal(t, err); c != connector.CapReplica || n != 3 {
		t.Fatalf("refused by %s %d, want replica 3", c, n)
	}
	// A tenant at its own cap hears about its own cap, even with the replica full.
	_, err = l.Acquire(ctx, "a")
	if c, _ := refusal(t, err); c != connector.CapTenant {
		t.Fatalf("refused by %s, want tenant", c)
	}
	for i := range held {
		held[i].Release()
	}
	// The refused turns took nothing: the replica's three places are free again.
	for _, tenant := range []string{"c", "d", "e"} {
		p, err := l.Acquire(ctx, tenant)
		if err != nil {
			t.Fatalf("after the releases: %v", err)
		}
		defer p.Release()
	}
}

// Admit takes the places Acquire takes and hands the permit on in the context, where the agent's
// cap is added to it; release gives every place back. A refusal takes nothing and carries
// nothing.
func TestAdmit_carries_the_permit_in_the_context(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l := New(Config{Replica: 3, Tenant: 1, Agent: 1})
	if Admitted(ctx) != nil {
		t.Fatal("a context nothing admitted carries a permit")
	}
	turnCtx, release, err := l.Admit(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	p := Admitted(turnCtx)
	if p == nil {
		t.Fatal("the admitted context carries no permit")
	}
	if err := p.AcquireAgent(turnCtx, "x"); err != nil {
		t.Fatal(err)
	}
	refusedCtx, noop, err := l.Admit(ctx, "a")
	if c, n := refusal(t, err); c != connector.CapTenant || n != 1 {
		t.Fatalf("a second turn of a: refused by %s %d, want tenant 1", c, n)
	}
	if Admitted(refusedCtx) != nil {
		t.Error("a refused turn's context carries a permit")
	}
	noop()
	if n := l.InFlight(); n != 1 {
		t.Fatalf("in flight %d, want the one admitted turn", n)
	}
	// The agent's place is the permit's: another turn of a (under a raised cap) cannot have it.
	l.SetOverrides(map[string]connector.TenantLimits{"a": {MaxTurns: 2}})
	q, err := l.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := refusal(t, q.AcquireAgent(ctx, "x")); c != connector.CapAgent {
		t.Errorf("the agent's second turn: refused by %s, want agent", c)
	}
	q.Release()
	release()
	if n := l.InFlight(); n != 0 {
		t.Errorf("in flight after the release: %d", n)
	}
	if p2, err := l.Acquire(ctx, "a"); err != nil {
		t.Errorf("after the release: %v", err)
	} else if err := p2.AcquireAgent(ctx, "x"); err != nil {
		t.Errorf("the agent after the release: %v", err)
	} else {
		p2.Release()
	}
}

func TestOverrides_replace_the_defaults_per_tenant(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l := New(Config{Replica: 100, Tenant: 1, Agent: 1})
	l.SetOverrides(map[string]connector.TenantLimits{"big": {MaxTurns: 3, MaxTurnsPerAgent: 2}, "half": {MaxTurnsPerAgent: 5}})
	count := func(tenant, agent string) (admitted int, refusedBy connector.Cap, limit int) {
		var held []Permit
		defer func() {
			for i := range held {
				held[i].Release()
			}
		}()
		for {
			p, err := l.Acquire(ctx, tenant)
			if err == nil {
				held = append(held, p)
				err = held[len(held)-1].AcquireAgent(ctx, agent)
			}
			if err != nil {
				c, n := refusal(t, err)
				return len(held), c, n
			}
			admitted++
		}
	}
	type got struct {
		Admitted int
		Cap      connector.Cap
		Limit    int
	}
	for _, tt := range []struct {
		tenant string
		want   got
	}{
		{"big", got{2, connector.CapAgent, 2}},   // the agent override binds first
		{"half", got{1, connector.CapTenant, 1}}, // no tenant override: the default tenant cap
		{"other", got{1, connector.CapTenant, 1}},
	} {
		a, c, n := count(tt.tenant, "x")
		// count returns the permits it held, the refused one included when the agent refused.
		if c == connector.CapAgent {
			a--
		}
		if diff := cmp.Diff(tt.want, got{a, c, n}); diff != "" {
			t.Errorf("tenant %s (-want +got):\n%s", tt.tenant, diff)
		}
	}
	l.SetOverrides(nil)
	if a, c, n := count("big", "x"); a != 1 || c != connector.CapTenant || n != 1 {
		t.Errorf("after the override is gone: %d admitted, refused by %s %d; want 1, tenant 1", a, c, n)
	}
}

func TestRelease_twice_and_on_a_panic_gives_back_exactly_once(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l := New(Config{Replica: 10, Tenant: 1, Agent: 1})
	p, err := l.Acquire(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	p.Release()
	p.Release()
	if n := l.InFlight(); n != 0 {
		t.Fatalf("in flight after a double release: %d", n)
	}
	q, err := l.Acquire(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	q.Release()
	turn := func() {
		p, err := l.Acquire(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release()
		if err := p.AcquireAgent(ctx, "x"); err != nil {
			t.Fatal(err)
		}
		panic("the turn broke")
	}
	func() {
		defer func() { _ = recover() }()
		turn()
	}()
	if n := l.InFlight(); n != 0 {
		t.Fatalf("in flight after a panicking turn: %d", n)
	}
	r, err := l.Acquire(ctx, "t")
	if err != nil {
		t.Fatalf("after the panic: %v", err)
	}
	if err := r.AcquireAgent(ctx, "x"); err != nil {
		t.Fatalf("agent after the panic: %v", err)
	}
	r.Release()
}

func TestNilLimiter_admits_everything(t *testing.T) {
	t.Parallel()
	var l *Limiter
	p, err := l.Acquire(t.Context(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AcquireAgent(t.Context(), "x"); err != nil {
		t.Fatal(err)
	}
	p.Release()
}

// TestConcurrentTurns_never_pass_a_cap: many goroutines acquire and release at once (run it with
// -race); the turns in flight per tenant, per agent and in all never pass the caps, and every
// count is back to zero at the end.
func TestConcurrentTurns_never_pass_a_cap(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const (
		replicaCap, tenantCap, agentCap = 12, 6, 4
		tenants, agents, workers, turns = 3, 2, 32, 300
	)
	l := New(Config{Replica: replicaCap, Tenant: tenantCap, Agent: agentCap})
	var all atomic.Int64
	var perTenant [tenants]atomic.Int64
	var perAgent [tenants][agents]atomic.Int64
	var over atomic.Int64
	var admitted, refused atomic.Int64
	check := func(n, limit int64) {
		if n > limit {
			over.Add(1)
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range turns {
				ti, ai := (w+i)%tenants, (w*7+i)%agents
				p, err := l.Acquire(ctx, "t"+strconv.Itoa(ti))
				if err != nil {
					refused.Add(1)
					continue
				}
				if err := p.AcquireAgent(ctx, "a"+strconv.Itoa(ai)); err != nil {
					refused.Add(1)
					p.Release()
					continue
				}
				admitted.Add(1)
				check(all.Add(1), replicaCap)
				check(perTenant[ti].Add(1), tenantCap)
				check(perAgent[ti][ai].Add(1), agentCap)
				if i%16 == 0 {
					l.Sweep() // sweeps race with acquires too
				}
				perAgent[ti][ai].Add(-1)
				perTenant[ti].Add(-1)
				all.Add(-1)
				p.Release()
			}
		})
	}
	wg.Wait()
	if n := over.Load(); n > 0 {
		t.Errorf("a cap was passed %d times", n)
	}
	if admitted.Load() == 0 || admitted.Load()+refused.Load() != workers*turns {
		t.Errorf("admitted %d + refused %d, want %d with some admitted", admitted.Load(), refused.Load(), workers*turns)
	}
	if n := l.InFlight(); n != 0 {
		t.Errorf("in flight at the end: %d", n)
	}
	l.Sweep()
	if n := l.keys(); n != 0 {
		t.Errorf("%d counters left after a sweep with nothing in flight", n)
	}
}

func TestSweep_forgets_idle_counters_and_keeps_busy_ones(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l := New(Config{Replica: 10, Tenant: 1, Agent: 1})
	busy, err := l.Acquire(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	if err := busy.AcquireAgent(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	idle, err := l.Acquire(ctx, "idle")
	if err != nil {
		t.Fatal(err)
	}
	idle.Release()
	l.Sweep()
	if n := l.keys(); n != 2 {
		t.Fatalf("%d counters after the sweep, want the busy tenant's and its agent's", n)
	}
	// The busy tenant is still counted: its cap still refuses.
	if _, err := l.Acquire(ctx, "busy"); err == nil {
		t.Fatal("the busy tenant's cap was forgotten by the sweep")
	}
	busy.Release()
}

func TestRefresh_loads_at_once_and_keeps_the_last_overrides_when_a_load_fails(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	l := New(Config{Replica: 10, Tenant: 1, Agent: 1})
	loads := make(chan struct{}, 1)
	var n atomic.Int32
	load := func(context.Context) (map[string]connector.TenantLimits, error) {
		defer func() { loads <- struct{}{} }()
		if n.Add(1) == 1 {
			return map[string]connector.TenantLimits{"t": {MaxTurns: 2}}, nil
		}
		return nil, errors.New("database down")
	}
	done := make(chan struct{})
	go func() { defer close(done); l.Refresh(ctx, time.Millisecond, load) }()
	<-loads
	<-loads // a failed load after the first
	<-loads
	if got, _ := l.limits("t"); got != 2 {
		t.Errorf("tenant cap after failed loads: %d, want the loaded 2", got)
	}
	cancel()
	for {
		select {
		case <-loads:
			continue
		case <-done:
		}
		break
	}
}

func TestMetrics_count_refusals_by_cap_and_turns_in_flight(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	reader := sdkmetric.NewManualReader()
	l := New(Config{Replica: 2, Tenant: 1, Agent: 1, MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	p, err := l.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	_, _ = l.Acquire(ctx, "a") // tenant
	_, _ = l.Acquire(ctx, "a") // tenant
	q, err := l.Acquire(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	_, _ = l.Acquire(ctx, "c") // replica
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	refused, inFlight := map[string]int64{}, int64(-1)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if m.Name == MetricRefused {
					for _, dp := range d.DataPoints {
						v, _ := dp.Attributes.Value(attribute.Key("a2ac.admission.cap"))
						refused[v.AsString()] += dp.Value
					}
				}
			case metricdata.Gauge[int64]:
				if m.Name == MetricInFlight && len(d.DataPoints) == 1 {
					inFlight = d.DataPoints[0].Value
				}
			}
		}
	}
	if diff := cmp.Diff(map[string]int64{"tenant": 2, "replica": 1}, refused); diff != "" {
		t.Errorf("refusals by cap (-want +got):\n%s", diff)
	}
	if inFlight != 2 {
		t.Errorf("in flight = %d, want 2", inFlight)
	}
}

// BenchmarkAdmitAndRelease is the hot path of every turn: tenant and replica, then agent, then
// release, from all Ps at once over a thousand tenants; with caps per process, and shared by the
// deployment (valid leases: the turn reads a clock and the even share).
func BenchmarkAdmitAndRelease(b *testing.B) {
	b.Run("per_process", func(b *testing.B) { benchAdmit(b, New(Config{})) })
	shared := New(Config{Shares: NewStore(nil), ReplicaID: "bench"})
	shared.shares.until.Store(time.Now().Add(time.Hour).UnixNano())
	shared.shares.lapsed.Store(false)
	b.Run("shared", func(b *testing.B) { benchAdmit(b, shared) })
}

func benchAdmit(b *testing.B, l *Limiter) {
	ctx := context.Background()
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = "3f1c2d4e-0000-4000-8000-" + strconv.Itoa(100000000000+i)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1)) * 7919
		for pb.Next() {
			i++
			id := ids[i%len(ids)]
			p, err := l.Acquire(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			if err := p.AcquireAgent(ctx, id); err != nil {
				b.Fatal(err)
			}
			p.Release()
		}
	})
}
