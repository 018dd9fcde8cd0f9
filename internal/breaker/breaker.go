// Package breaker is the circuit breaker of agent endpoints: the state machine every turn is
// admitted by (Breaker, decided from memory), the deployment's share of it (Share: failures
// counted, breakers opened and probes claimed for every replica at once; internal/store keeps it
// in Postgres and listens to its changes), and the publisher of each process's copy for the
// tenants' health view (Publisher). internal/invoke admits turns through Allow and reports how
// they went through Done.
package breaker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// Defaults of Options.
const (
	DefaultFailures    = 3
	DefaultCooldown    = 5 * time.Second
	DefaultMaxCooldown = 2 * time.Minute
	DefaultShareWait   = 500 * time.Millisecond
	DefaultProbeHold   = time.Minute

	// maxCircuits bounds the breaker's memory: closed circuits are dropped first (they only hold
	// a failure count); beyond it a new agent's first failure is not remembered.
	maxCircuits = 100_000
	// idleCircuit is how long a closed circuit with some failures is kept without turns.
	idleCircuit = 10 * time.Minute
)

// Breaker states, as published and measured.
const (
	Closed   = "closed"
	Open     = "open"
	HalfOpen = "half_open"
)

// Metric names of the breaker (see docs/operations.md).
const (
	// MetricTransitions counts state changes, by the state entered (a2ac.breaker.state).
	MetricTransitions = "a2ac.breaker.transitions"
	// MetricRefused counts turns refused by an open or half-open breaker.
	MetricRefused = "a2ac.breaker.refused"
	// MetricOpen is the number of agent endpoints whose breaker is not closed now.
	MetricOpen = "a2ac.breaker.open"
)

// scope is the instrumentation scope of the breaker's metrics: still internal/invoke's, where
// the breaker was born, so that dashboards and alerts on these metrics keep matching.
const scope = "github.com/a2a-connector/a2a-connector/internal/invoke"

var attrBreakerState = attribute.Key("a2ac.breaker.state")

// Options configure a Breaker. Zero values mean the defaults.
type Options struct {
	// Failures is how many consecutive "agent is down" failures open the breaker (default 3).
	Failures int
	// Cooldown is the first wait before a probe (default 5s); it doubles after every failed
	// probe, up to MaxCooldown (default 2m), and starts over once the agent answers.
	Cooldown, MaxCooldown time.Duration
	// Now is the clock (default time.Now). Tests inject one so that they never sleep.
	Now func() time.Time
	// OnChange, when set, is called on every state change, after the breaker's lock is released,
	// on the goroutine of the turn that caused it (or of the Learn that brought it). It must not
	// block (the turn waits): hand the change to a goroutine of your own (Publisher does).
	OnChange func(Change)
	// MeterProvider measures transitions, refusals and open breakers; nil: no metrics.
	MeterProvider metric.MeterProvider

	// Share, when set, makes the breakers the deployment's: failures are counted, breakers opened
	// and probes claimed there, for every replica at once (store.Circuits, on Postgres).
	// Nil: this process's breakers are its own.
	Share Share
	// ShareWait is how long a turn waits for Share (default 500ms) before it decides from this
	// process's memory, as without Share. The answer is still taken when it comes.
	ShareWait time.Duration
	// ProbeHold is how long a probe claimed in Share keeps the other replicas from probing
	// (default 1m): longer than a turn may last, so that a live probe is never doubled, and
	// short, because a replica that died mid-probe holds the agent up until then.
	ProbeHold time.Duration
}

// Change is one state change of an agent endpoint's breaker.
type Change struct {
	TenantID, AgentID, Endpoint string
	// State is Closed, Open or HalfOpen.
	State string
	// Since is when the agent was first found down (the breaker opened), for every state but
	// closed; for closed, when it closed.
	Since time.Time
	// Cause is the last failure that counted (code and the connector's message; never user
	// text); "" when closed.
	Cause string
	// RetryAt is when the next probe may go (open only).
	RetryAt time.Time
	// Learned: another process made the change (this one learned it from the deployment).
	Learned bool
}

// Breaker is a circuit breaker per agent endpoint. After Failures consecutive turns that say the
// agent is down (unreachable, no first event in time, HTTP 5xx, protocol garbage) it opens, and
// turns end at once with CodeAgentUnavailable. When the cool-down has passed, exactly one turn
// goes through as a probe while the others keep failing fast; its success closes the breaker,
// its failure opens it again for twice the cool-down (up to MaxCooldown). Turns that say nothing
// about whether the agent is up (the caller canceled, a slow agent that had started answering)
// change nothing. It is safe for concurrent use; one per process, shared by every Invoker of the
// process.
//
// With a Share, the count, the state and the probe are the deployment's (see Share), and
// this Breaker is the process's copy: every turn is decided from memory, and only failures, the
// first success after failures and the probe ask the deployment (bounded by ShareWait). Without
// one, or while the deployment cannot be asked, each process decides from its own turns, like a
// proxy's outlier detection.
//
// Written here rather than taken from sony/gobreaker or failsafe-go: see docs/decisions.md.
type Breaker struct {
	opts Options

	transitions metric.Int64Counter
	refused     metric.Int64Counter
	open        metric.Int64UpDownCounter

	// asks are the calls to Share under way (Close waits for them).
	asks sync.WaitGroup

	mu       sync.Mutex
	circuits map[breakerKey]*circuit
	// sweepAt is when closed, idle circuits are next dropped.
	sweepAt time.Time
	// shareDownUntil: Share failed or was slow; until then turns do not ask it.
	shareDownUntil time.Time
	// marks counts the resyncs started (Mark), to tell circuits learned since.
	marks  uint64
	closed bool
}

type breakerKey struct{ agentID, endpoint string }

// circuit is one agent endpoint's breaker in this process.
type circuit struct {
	tenantID string
	state    string
	fails    int
	// since: when it opened (kept through half-open and re-opens).
	since time.Time
	// cause: the last failure that counted.
	cause string
	// cooldown: the current wait; retryAt: when the next probe may go.
	cooldown time.Duration
	retryAt  time.Time
	// probing: a probe turn is running (half-open), this process's or, until probeUntil,
	// another's. claiming: a turn of this process is asking the deployment for the probe.
	probing, claiming bool
	probeUntil        time.Time
	// gen changes at every state change, so that turns admitted under an older state do not
	// count (a slow turn started before the breaker opened must not close it).
	gen      uint64
	lastUsed time.Time

	// shared: the state is the deployment's as last learned, at seenGen and seenFails (which
	// order what is learned). False after a change this process made on its own.
	shared    bool
	seenGen   int64
	seenFails int
	// mark: the resync count when it was last learned.
	mark uint64
	// unshared: the deployment keeps no breaker for this agent (ErrNotShared): never asked.
	unshared bool
}

// New returns a Breaker.
func New(o Options) *Breaker {
	if o.Failures <= 0 {
		o.Failures = DefaultFailures
	}
	if o.Cooldown <= 0 {
		o.Cooldown = DefaultCooldown
	}
	if o.MaxCooldown <= 0 {
		o.MaxCooldown = DefaultMaxCooldown
	}
	o.MaxCooldown = max(o.MaxCooldown, o.Cooldown)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ShareWait <= 0 {
		o.ShareWait = DefaultShareWait
	}
	if o.ProbeHold <= 0 {
		o.ProbeHold = DefaultProbeHold
	}
	b := &Breaker{opts: o, circuits: map[breakerKey]*circuit{}}
	m := telemetry.Meter(o.MeterProvider, scope)
	// Constant names the SDK accepts; on an error it still returns a working no-op instrument.
	b.transitions, _ = m.Int64Counter(MetricTransitions, metric.WithUnit("{transition}"),
		metric.WithDescription("Circuit breaker state changes of agent endpoints, by the state entered (a2ac.breaker.state)."))
	b.refused, _ = m.Int64Counter(MetricRefused, metric.WithUnit("{turn}"),
		metric.WithDescription("Turns ended at once because the agent's circuit breaker was open."))
	b.open, _ = m.Int64UpDownCounter(MetricOpen, metric.WithUnit("{breaker}"),
		metric.WithDescription("Agent endpoints whose circuit breaker is open or half-open now."))
	return b
}

// Ticket is a turn admitted by the breaker; Done reports how it went.
type Ticket struct {
	key      breakerKey
	tenantID string
	gen      uint64
	probe    bool
	// claimed: the probe was claimed in the deployment, at gen shareGen.
	claimed  bool
	shareGen int64
}

// Verdict is what a turn says about whether the agent is up.
type Verdict int

const (
	// Neutral: nothing learned (caller cancel, a slow agent that had started answering, a turn
	// that never called the agent).
	Neutral Verdict = iota
	// Up: the agent answered as an A2A agent (whatever it answered: 4xx, JSON-RPC errors and
	// failed tasks included).
	Up
	// Down: unreachable, no first event in time, HTTP 5xx, protocol garbage.
	Down
)

// Allow admits a turn to agent a at endpoint, or returns the Error that refuses it. In the
// steady state (no failures known) and while the breaker is open it decides from memory; it
// asks the deployment only while failures are counted (has another replica opened the breaker
// meanwhile?) and for the probe (which replica may probe?).
func (b *Breaker) Allow(ctx context.Context, a *connector.Agent, endpoint string) (Ticket, *connector.TurnError) {
	k := breakerKey{agentID: a.ID, endpoint: endpoint}
	now := b.opts.Now()
	b.mu.Lock()
	c := b.circuits[k]
	if c == nil {
		b.mu.Unlock()
		return Ticket{key: k, tenantID: a.TenantID}, nil
	}
	c.lastUsed = now
	share := b.sharing(c, now)
	switch {
	case c.state == Closed && c.fails > 0 && share:
		b.mu.Unlock()
		return b.allowAsked(ctx, k, a.TenantID)
	case c.state == Closed:
		t := Ticket{key: k, tenantID: a.TenantID, gen: c.gen}
		b.mu.Unlock()
		return t, nil
	case c.claiming || (c.state == Open && now.Before(c.retryAt)) ||
		(c.state == HalfOpen && c.probing && (c.probeUntil.IsZero() || now.Before(c.probeUntil))):
		e := b.refusal(c, now)
		b.mu.Unlock()
		b.refused.Add(ctx, 1)
		return Ticket{}, e
	case share:
		// The cool-down passed (or the last probe learned nothing, or its replica's claim
		// lapsed): the deployment decides which replica's turn probes.
		c.claiming = true
		b.mu.Unlock()
		return b.claim(ctx, k, a.TenantID, now)
	}
	t, ch := b.probeLocally(k, c)
	b.mu.Unlock()
	if ch != nil {
		b.publish(ctx, ch, Open)
	}
	return t, nil
}

// probeLocally makes the turn c's probe, by this process's decision alone.
func (b *Breaker) probeLocally(k breakerKey, c *circuit) (Ticket, *Change) {
	var ch *Change
	if c.state == Open {
		c.state = HalfOpen
		c.gen++
		c.shared = false
		ch = b.change(k, c)
	}
	c.probing, c.probeUntil = true, time.Time{}
	return Ticket{key: k, tenantID: c.tenantID, gen: c.gen, probe: true}, ch
}

// refusal is the Error of a turn refused by c.
func (b *Breaker) refusal(c *circuit, now time.Time) *connector.TurnError {
	next := "after the probe turn now under way"
	if c.state == Open {
		next = fmt.Sprintf("at %s (in %s)", c.retryAt.UTC().Format(time.RFC3339), max(c.retryAt.Sub(now), 0).Round(100*time.Millisecond))
	}
	return &connector.TurnError{Code: connector.CodeAgentUnavailable, Message: fmt.Sprintf(
		"the agent has been failing since %s and the connector stopped calling it for now (last failure: %s); it tries the agent again %s",
		c.since.UTC().Format(time.RFC3339), c.cause, next)}
}

// Done records how a turn admitted by Allow went. cause describes a Down verdict.
func (b *Breaker) Done(ctx context.Context, t Ticket, v Verdict, cause string) {
	now := b.opts.Now()
	b.mu.Lock()
	c := b.circuits[t.key]
	var ch *Change
	var from string
	switch {
	case c != nil && t.gen != c.gen, c == nil && t.probe:
		// Admitted under an older state: a turn that started before the breaker opened (or
		// before a probe) says nothing about the agent now.
	case t.probe && t.claimed:
		c.probing = false
		b.mu.Unlock()
		b.settle(ctx, t, v, cause)
		return
	case t.probe:
		c.probing = false
		from = c.state
		switch v {
		case Up:
			ch = b.closeCircuit(t.key, c, now)
		case Down:
			ch = b.reopen(t.key, c, now, cause)
		}
	case v == Down && (c == nil || c.state == Closed):
		if c == nil {
			if c = b.newCircuit(t.key, t.tenantID, now); c == nil {
				break
			}
		}
		if b.sharing(c, now) {
			b.mu.Unlock()
			b.fail(ctx, t, cause)
			return
		}
		from = c.state
		ch = b.failLocally(t.key, c, now, cause)
	case v == Up && c != nil && c.state == Closed && c.fails > 0:
		if c.shared && b.sharing(c, now) {
			b.mu.Unlock()
			b.reset(ctx, t)
			return
		}
		c.fails = 0
	}
	b.sweep(now)
	b.mu.Unlock()
	if ch != nil {
		b.publish(ctx, ch, from)
	}
}

// newCircuit stores a closed circuit for k, or returns nil when the breaker is full.
func (b *Breaker) newCircuit(k breakerKey, tenantID string, now time.Time) *circuit {
	if len(b.circuits) >= maxCircuits {
		b.sweepAt = time.Time{}
		b.sweep(now)
		if len(b.circuits) >= maxCircuits {
			return nil
		}
	}
	c := &circuit{tenantID: tenantID, state: Closed, lastUsed: now}
	b.circuits[k] = c
	return c
}

// failLocally counts a down turn of a closed circuit and opens it at the threshold.
func (b *Breaker) failLocally(k breakerKey, c *circuit, now time.Time, cause string) *Change {
	if c.state != Closed {
		return nil
	}
	c.fails++
	c.cause = cause
	c.shared = false
	if c.fails < b.opts.Failures {
		return nil
	}
	c.state, c.since, c.cooldown = Open, now, b.opts.Cooldown
	c.retryAt = now.Add(c.cooldown)
	c.gen++
	return b.change(k, c)
}

// reopen opens c again after a failed probe, for twice the cool-down.
func (b *Breaker) reopen(k breakerKey, c *circuit, now time.Time, cause string) *Change {
	c.cooldown = min(max(c.cooldown*2, b.opts.Cooldown), b.opts.MaxCooldown)
	c.cause, c.state = cause, Open
	c.retryAt = now.Add(c.cooldown)
	c.gen++
	c.shared = false
	return b.change(k, c)
}

// closeCircuit closes c: the agent answered its probe.
func (b *Breaker) closeCircuit(k breakerKey, c *circuit, now time.Time) *Change {
	c.state, c.since, c.cause, c.fails = Closed, now, "", 0
	c.gen++
	c.shared = false
	return b.change(k, c)
}

// change describes c's new state for OnChange.
func (b *Breaker) change(k breakerKey, c *circuit) *Change {
	ch := &Change{TenantID: c.tenantID, AgentID: k.agentID, Endpoint: k.endpoint, State: c.state, Since: c.since, Cause: c.cause}
	if c.state == Open {
		ch.RetryAt = c.retryAt
	}
	return ch
}

// publish measures a change and hands it to OnChange, outside the lock.
func (b *Breaker) publish(ctx context.Context, ch *Change, from string) {
	b.transitions.Add(ctx, 1, metric.WithAttributes(attrBreakerState.String(ch.State)))
	switch {
	case from == Closed && ch.State != Closed:
		b.open.Add(ctx, 1)
	case from != Closed && ch.State == Closed:
		b.open.Add(ctx, -1)
	}
	if b.opts.OnChange != nil {
		b.opts.OnChange(*ch)
	}
}

// sweep drops closed circuits idle for idleCircuit, at most once a minute. Open circuits stay:
// they are what the breaker is for, and there is one per agent that is down.
func (b *Breaker) sweep(now time.Time) {
	if now.Before(b.sweepAt) {
		return
	}
	b.sweepAt = now.Add(time.Minute)
	for k, c := range b.circuits {
		if c.state == Closed && !c.claiming && now.Sub(c.lastUsed) > idleCircuit {
			delete(b.circuits, k)
		}
	}
}

// State returns the breaker state of agentID at endpoint (Closed when none is kept), for
// tests and diagnostics.
func (b *Breaker) State(agentID, endpoint string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.circuits[breakerKey{agentID: agentID, endpoint: endpoint}]; c != nil {
		return c.state
	}
	return Closed
}
