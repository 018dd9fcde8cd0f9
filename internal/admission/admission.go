// Package admission caps the turns running at once: per tenant and per agent for the whole
// deployment, and per process (replica). A turn is admitted or refused at once; it is never
// queued, because a voice user waiting behind other tenants' turns is worse than the dialog
// engine falling back at once.
//
// The counts live in this process's memory and a turn never waits for the network. With a
// ShareStore (Config.Shares), the processes of a deployment share each tenant's and agent's cap
// out by leases they renew in Postgres every Config.Sync, off the turn path (shares.go); without
// one, every cap is this process's own. The replica cap is always the process's own: it is about
// memory. It does not balance load, and it does not rate-limit (a tenant may start any number of
// turns a second, as long as no more than its cap run at once). Operators override a tenant's
// caps in Postgres; the Limiter reads them through Refresh, never on the turn path.
package admission

import (
	"context"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// Defaults of Config, sized in docs/operations.md ("Admission caps"): 8,000 open turns keep a
// replica at ~384 MiB, 75 % of the chart's 512 MiB limit, at ~44 KiB per open stream; a tenant
// gets a quarter of that, and one agent half of its tenant's.
const (
	DefaultReplica = 8000
	DefaultTenant  = DefaultReplica / 4
	DefaultAgent   = DefaultTenant / 2
)

// Metric names (see docs/operations.md).
const (
	MetricRefused  = "a2ac.admission.refused"
	MetricInFlight = "a2ac.admission.in_flight"
)

const scope = "github.com/a2a-connector/a2a-connector/internal/admission"

var attrCap = attribute.Key("a2ac.admission.cap")

// Config sizes a Limiter; a value ≤ 0 takes the default.
type Config struct {
	Replica, Tenant, Agent int
	// Shares, when set, makes the tenant and agent caps the deployment's: this process admits
	// turns within its share of each, renewed every Sync by Run (or Sync). Nil: every cap is
	// this process's own.
	Shares ShareStore
	// ReplicaID names this process among the deployment's (unique per process start).
	ReplicaID string
	// Sync is how often the shares are renewed (A2AC_CAP_SYNC, default DefaultSync); a lease
	// lasts 3 × Sync.
	Sync time.Duration
	// Now is the clock that times the leases out; nil: time.Now.
	Now func() time.Time
	// MeterProvider measures refusals and turns in flight; nil: no metrics.
	MeterProvider metric.MeterProvider
	Logger        *slog.Logger
}

// shards spreads the per-tenant and per-agent counters over locks, so that turns of different
// tenants rarely touch the same lock word; a power of two.
const shards = 64

// Limiter admits or refuses turns. It is safe for concurrent use; the zero value is not usable,
// but a nil *Limiter admits everything (for callers that run without caps).
type Limiter struct {
	replicaCap, tenantCap, agentCap int64
	inFlight                        atomic.Int64
	overrides                       atomic.Pointer[map[string]connector.TenantLimits]
	seed                            maphash.Seed
	shards                          [shards]shard
	log                             *slog.Logger
	shares                          sharing // zero (no store): caps per process

	refused    metric.Int64Counter
	refusedOpt map[connector.Cap][]metric.AddOption
}

type key struct{ tenant, agent string } // agent "" is the tenant's own counter

// entry is one key's state in this process.
type entry struct {
	n atomic.Int64 // turns in flight
	// grant is this process's lease on the key's cap (shares.go), or noLease: the key has no
	// lease row here, and the process's even share of the cap applies.
	grant atomic.Int64
	// refused counts the turns refused since the last sync: demand the share did not cover.
	refused atomic.Int64
}

const noLease = -1

func newEntry() *entry {
	e := new(entry)
	e.grant.Store(noLease)
	return e
}

// shard holds the entries of the keys that hash to it. Counters change with atomics under the
// read lock; the write lock is only for adding a key and for sweeping, so a sweep never removes
// an entry an acquire (or a sync) is between finding and changing.
type shard struct {
	mu sync.RWMutex
	m  map[key]*entry
	_  [64 - 8]byte // keep neighbouring shards' lock words off one cache line
}

// New returns a Limiter with c's caps.
func New(c Config) *Limiter {
	l := &Limiter{replicaCap: int64(orDefault(c.Replica, DefaultReplica)),
		tenantCap: int64(orDefault(c.Tenant, DefaultTenant)), agentCap: int64(orDefault(c.Agent, DefaultAgent)),
		seed: maphash.MakeSeed(), log: c.Logger, refusedOpt: map[connector.Cap][]metric.AddOption{}}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	for i := range l.shards {
		l.shards[i].m = map[key]*entry{}
	}
	l.shares.init(c)
	empty := map[string]connector.TenantLimits{}
	l.overrides.Store(&empty)
	m := telemetry.Meter(c.MeterProvider, scope)
	var err error
	l.refused, err = m.Int64Counter(MetricRefused, metric.WithUnit("{turn}"),
		metric.WithDescription("Turns refused with RESOURCE_EXHAUSTED (HTTP 429 in the console) by a concurrent-turn cap, by a2ac.admission.cap: tenant, agent or replica."))
	if err != nil {
		l.log.Warn("admission: create instruments", "error", err)
	}
	for _, c := range []connector.Cap{connector.CapTenant, connector.CapAgent, connector.CapReplica} {
		l.refusedOpt[c] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attrCap.String(string(c))))}
	}
	// A gauge read at collection time: admitting a turn costs no metric call.
	_, err = m.Int64ObservableGauge(MetricInFlight, metric.WithUnit("{turn}"),
		metric.WithDescription("Turns admitted and not yet ended in this process."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(l.inFlight.Load())
			return nil
		}))
	if err != nil {
		l.log.Warn("admission: create instruments", "error", err)
	}
	return l
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// Caps returns the process's default caps: replica, tenant, agent.
func (l *Limiter) Caps() (replica, tenant, agent int) {
	return int(l.replicaCap), int(l.tenantCap), int(l.agentCap)
}

// InFlight is the number of turns admitted and not yet released.
func (l *Limiter) InFlight() int { return int(l.inFlight.Load()) }

// SetOverrides replaces every tenant's overrides at once; tenants absent from m get the
// defaults. The map is kept: the caller must not change it afterwards.
func (l *Limiter) SetOverrides(m map[string]connector.TenantLimits) {
	if m == nil {
		m = map[string]connector.TenantLimits{}
	}
	l.overrides.Store(&m)
}

// limits is the tenant's effective caps.
func (l *Limiter) limits(tenantID string) (tenant, agent int64) {
	tenant, agent = l.tenantCap, l.agentCap
	if o, ok := (*l.overrides.Load())[tenantID]; ok {
		if o.MaxTurns > 0 {
			tenant = int64(o.MaxTurns)
		}
		if o.MaxTurnsPerAgent > 0 {
			agent = int64(o.MaxTurnsPerAgent)
		}
	}
	return tenant, agent
}

// Permit is an admitted turn's hold on its caps. Release it exactly once, in a defer right after
// Acquire succeeded, so that a panic or a canceled turn gives its place back too. It is a value
// (no allocation); its zero value holds nothing.
type Permit struct {
	l        *Limiter
	tenantID string
	tenant   *entry
	agent    *entry
	agentCap int64
}

// Acquire admits a turn of tenantID under the tenant and replica caps, or refuses it with a
// *connector.RefusedError. It never waits. The agent cap is taken later with Permit.AcquireAgent, once
// the turn's agent is known (a held session decides it, not the request).
func (l *Limiter) Acquire(ctx context.Context, tenantID string) (Permit, error) {
	if l == nil {
		return Permit{}, nil
	}
	tenantCap, agentCap := l.limits(tenantID)
	c, err := l.take(ctx, key{tenant: tenantID}, tenantCap, connector.CapTenant)
	if err != nil {
		return Permit{}, err
	}
	if n := l.inFlight.Add(1); n > l.replicaCap {
		l.inFlight.Add(-1)
		c.n.Add(-1)
		return Permit{}, l.refuse(ctx, connector.CapReplica, l.replicaCap)
	}
	return Permit{l: l, tenantID: tenantID, tenant: c, agentCap: agentCap}, nil
}

// Admit is Acquire for a turn admitted before the code that runs it: the returned context
// carries the permit (Admitted), which the session Router then uses for the agent's cap instead
// of acquiring its own, and release gives the places back; call it exactly once, after the turn
// has ended. grpcapi admits this way at a stream's start, before the request is decoded, so that
// a burst of streams is counted as it arrives. On a refusal, ctx is returned as it is, with a
// release that does nothing.
func (l *Limiter) Admit(ctx context.Context, tenantID string) (turnCtx context.Context, release func(), err error) {
	p, err := l.Acquire(ctx, tenantID)
	if err != nil {
		return ctx, func() {}, err
	}
	held := &p
	return context.WithValue(ctx, permitKey{}, held), held.Release, nil
}

type permitKey struct{}

// Admitted returns the permit of a turn Admit admitted with ctx, nil when none. Its holder
// releases it: the caller only adds the agent's cap to it.
func Admitted(ctx context.Context) *Permit {
	p, _ := ctx.Value(permitKey{}).(*Permit)
	return p
}

// AcquireAgent adds the cap of the turn's agent to the permit, or refuses with a *connector.RefusedError
// and leaves the permit as it was (still to be released). Call it at most once per permit.
func (p *Permit) AcquireAgent(ctx context.Context, agentID string) error {
	if p.l == nil {
		return nil
	}
	c, err := p.l.take(ctx, key{tenant: p.tenantID, agent: agentID}, p.agentCap, connector.CapAgent)
	if err != nil {
		// The turn wanted a place under the tenant's cap too, which it gives back now: demand
		// for the tenant's share as well, or the tenant's share would shrink to what the agent's
		// lets through and lag behind it.
		if p.l.shares.store != nil {
			p.tenant.refused.Add(1)
		}
		return err
	}
	p.agent = c
	return nil
}

// Release gives the permit's places back. The permit holds nothing afterwards, so a second call
// (by mistake) releases nothing twice.
func (p *Permit) Release() {
	if p.l == nil {
		return
	}
	over := p.l.release(p.tenant)
	if p.agent != nil {
		over = p.l.release(p.agent) || over
	}
	p.l.inFlight.Add(-1)
	if over {
		// Turns above a shrunk grant are ending: other replicas wait for this one to publish
		// the room they free, so the next sync comes early.
		p.l.shares.wake()
	}
	*p = Permit{}
}

// release ends a turn of e and says whether e still runs at least its lease's grant: the grant
// shrank under its turns in flight.
func (l *Limiter) release(e *entry) bool {
	n := e.n.Add(-1)
	g := e.grant.Load()
	return g != noLease && n >= g
}

// take increments k's counter unless it would pass the process's allowance under limit (the
// cap, or this process's share of it).
func (l *Limiter) take(ctx context.Context, k key, limit int64, which connector.Cap) (*entry, error) {
	var n int64
	e := l.with(k, func(e *entry) { n = e.n.Add(1) })
	if allow := l.allowance(e, limit); n > allow {
		e.n.Add(-1)
		if allow < limit {
			// Demand the share did not cover: the next sync asks for more, and comes sooner.
			e.refused.Add(1)
			l.shares.wake()
		}
		return nil, l.refuse(ctx, which, limit)
	}
	return e, nil
}

// with calls f with k's entry, made if need be, under its shard's read lock, so that no sweep
// removes the entry meanwhile.
func (l *Limiter) with(k key, f func(*entry)) *entry {
	s := &l.shards[l.shardOf(k)]
	for {
		s.mu.RLock()
		e := s.m[k]
		if e != nil {
			f(e)
			s.mu.RUnlock()
			return e
		}
		s.mu.RUnlock()
		s.mu.Lock()
		if s.m[k] == nil {
			s.m[k] = newEntry()
		}
		s.mu.Unlock()
		// The sweep may run between the two locks: look again under the read lock.
	}
}

func (l *Limiter) shardOf(k key) int {
	h := maphash.String(l.seed, k.tenant)
	if k.agent != "" {
		h = h*31 + maphash.String(l.seed, k.agent)
	}
	return int(h & (shards - 1))
}

func (l *Limiter) refuse(ctx context.Context, c connector.Cap, limit int64) error {
	l.refused.Add(ctx, 1, l.refusedOpt[c]...)
	return &connector.RefusedError{Cap: c, Limit: int(limit)}
}

// Sweep forgets the entries of tenants and agents with no turn in flight, no refusal to report
// and no lease, so that the map holds only the keys in use (tenant and agent ids come from
// requests). Refresh calls it.
func (l *Limiter) Sweep() {
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		for k, e := range s.m {
			if e.n.Load() == 0 && e.refused.Load() == 0 && e.grant.Load() == noLease {
				delete(s.m, k)
			}
		}
		s.mu.Unlock()
	}
}

// keys is how many counters the Limiter holds (for tests).
func (l *Limiter) keys() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}

// LoadFunc reads every tenant's overrides (internal/store's AllTenantLimits).
type LoadFunc func(ctx context.Context) (map[string]connector.TenantLimits, error)

// Refresh loads the overrides now and then every interval until ctx ends, and sweeps unused
// counters each time. A failed load keeps the overrides it had (logged once per failure), so a
// Postgres outage changes no cap. Run it on a goroutine the caller owns.
func (l *Limiter) Refresh(ctx context.Context, every time.Duration, load LoadFunc) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		lctx, cancel := context.WithTimeout(ctx, max(every, time.Second))
		m, err := load(lctx)
		cancel()
		switch {
		case err == nil:
			l.SetOverrides(m)
		case ctx.Err() == nil:
			l.log.WarnContext(ctx, "admission: load tenant limits; keeping the last ones", slog.Any("error", err))
		}
		l.Sweep()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RefreshInBackground runs Refresh on a goroutine of its own until the returned stop is called
// (or ctx ends); stop waits for the goroutine to return.
func (l *Limiter) RefreshInBackground(ctx context.Context, every time.Duration, load LoadFunc) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); l.Refresh(ctx, every, load) }()
	return func() { cancel(); <-done }
}
