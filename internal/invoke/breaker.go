package invoke

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// Defaults of BreakerOptions.
const (
	DefaultBreakerFailures    = 3
	DefaultBreakerCooldown    = 5 * time.Second
	DefaultBreakerMaxCooldown = 2 * time.Minute

	// maxCircuits bounds the breaker's memory: closed circuits are dropped first (they only hold
	// a failure count); beyond it a new agent's first failure is not remembered.
	maxCircuits = 100_000
	// idleCircuit is how long a closed circuit with some failures is kept without turns.
	idleCircuit = 10 * time.Minute
)

// Breaker states, as published and measured.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half_open"
)

// Metric names of the breaker (see docs/operations.md).
const (
	// MetricBreakerTransitions counts state changes, by the state entered (a2ac.breaker.state).
	MetricBreakerTransitions = "a2ac.breaker.transitions"
	// MetricBreakerRefused counts turns refused by an open or half-open breaker.
	MetricBreakerRefused = "a2ac.breaker.refused"
	// MetricBreakerOpen is the number of agent endpoints whose breaker is not closed now.
	MetricBreakerOpen = "a2ac.breaker.open"
)

var attrBreakerState = attribute.Key("a2ac.breaker.state")

// BreakerOptions configure a Breaker. Zero values mean the defaults.
type BreakerOptions struct {
	// Failures is how many consecutive "agent is down" failures open the breaker (default 3).
	Failures int
	// Cooldown is the first wait before a probe (default 5s); it doubles after every failed
	// probe, up to MaxCooldown (default 2m), and starts over once the agent answers.
	Cooldown, MaxCooldown time.Duration
	// Now is the clock (default time.Now). Tests inject one so that they never sleep.
	Now func() time.Time
	// OnChange, when set, is called on every state change, after the breaker's lock is released,
	// on the goroutine of the turn that caused it. It must not block (the turn waits): hand the
	// change to a goroutine of your own (health.BreakerPublisher does).
	OnChange func(BreakerChange)
	// MeterProvider measures transitions, refusals and open breakers; nil: no metrics.
	MeterProvider metric.MeterProvider
}

// BreakerChange is one state change of an agent endpoint's breaker.
type BreakerChange struct {
	TenantID, AgentID, Endpoint string
	// State is BreakerClosed, BreakerOpen or BreakerHalfOpen.
	State string
	// Since is when the agent was first found down (the breaker opened), for every state but
	// closed; for closed, when it closed.
	Since time.Time
	// Cause is the last failure that counted (code and the connector's message; never user
	// text); "" when closed.
	Cause string
	// RetryAt is when the next probe may go (open only).
	RetryAt time.Time
}

// Breaker is a per-process circuit breaker per agent endpoint, like a proxy's outlier detection:
// each replica keeps its own view, from its own turns. After Failures consecutive turns that say
// the agent is down (unreachable, no first event in time, HTTP 5xx, protocol garbage) it opens,
// and turns end at once with CodeAgentUnavailable. When the cool-down has passed, exactly one
// turn goes through as a probe while the others keep failing fast; its success closes the
// breaker, its failure opens it again for twice the cool-down (up to MaxCooldown). Turns that say
// nothing about whether the agent is up (the caller canceled, a slow agent that had started
// answering) change nothing. It is safe for concurrent use; one per process, shared by every
// Invoker of the process.
//
// Written here rather than taken from sony/gobreaker or failsafe-go: see docs/decisions.md.
type Breaker struct {
	opts BreakerOptions

	transitions metric.Int64Counter
	refused     metric.Int64Counter
	open        metric.Int64UpDownCounter

	mu       sync.Mutex
	circuits map[breakerKey]*circuit
	// sweepAt is when closed, idle circuits are next dropped.
	sweepAt time.Time
}

type breakerKey struct{ agentID, endpoint string }

// circuit is one agent endpoint's breaker. A closed circuit without failures is not stored.
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
	// probing: the probe turn is running (half-open).
	probing bool
	// gen changes at every state change, so that turns admitted under an older state do not
	// count (a slow turn started before the breaker opened must not close it).
	gen      uint64
	lastUsed time.Time
}

// NewBreaker returns a Breaker.
func NewBreaker(o BreakerOptions) *Breaker {
	if o.Failures <= 0 {
		o.Failures = DefaultBreakerFailures
	}
	if o.Cooldown <= 0 {
		o.Cooldown = DefaultBreakerCooldown
	}
	if o.MaxCooldown <= 0 {
		o.MaxCooldown = DefaultBreakerMaxCooldown
	}
	o.MaxCooldown = max(o.MaxCooldown, o.Cooldown)
	if o.Now == nil {
		o.Now = time.Now
	}
	b := &Breaker{opts: o, circuits: map[breakerKey]*circuit{}}
	m := telemetry.Meter(o.MeterProvider, scope)
	// Constant names the SDK accepts; on an error it still returns a working no-op instrument.
	b.transitions, _ = m.Int64Counter(MetricBreakerTransitions, metric.WithUnit("{transition}"),
		metric.WithDescription("Circuit breaker state changes of agent endpoints, by the state entered (a2ac.breaker.state)."))
	b.refused, _ = m.Int64Counter(MetricBreakerRefused, metric.WithUnit("{turn}"),
		metric.WithDescription("Turns ended at once because the agent's circuit breaker was open."))
	b.open, _ = m.Int64UpDownCounter(MetricBreakerOpen, metric.WithUnit("{breaker}"),
		metric.WithDescription("Agent endpoints whose circuit breaker is open or half-open now."))
	return b
}

// ticket is a turn admitted by the breaker; done reports how it went.
type ticket struct {
	key      breakerKey
	tenantID string
	gen      uint64
	probe    bool
}

// verdict is what a turn says about whether the agent is up.
type verdict int

const (
	// neutral: nothing learned (caller cancel, a slow agent that had started answering, a turn
	// that never called the agent).
	neutral verdict = iota
	// up: the agent answered as an A2A agent (whatever it answered: 4xx, JSON-RPC errors and
	// failed tasks included).
	up
	// down: unreachable, no first event in time, HTTP 5xx, protocol garbage.
	down
)

// allow admits a turn to agent a at endpoint, or returns the Error that refuses it.
func (b *Breaker) allow(ctx context.Context, a *connector.Agent, endpoint string) (ticket, *connector.TurnError) {
	k := breakerKey{agentID: a.ID, endpoint: endpoint}
	now := b.opts.Now()
	b.mu.Lock()
	c := b.circuits[k]
	if c == nil || c.state == BreakerClosed {
		t := ticket{key: k, tenantID: a.TenantID}
		if c != nil {
			t.gen = c.gen
			c.lastUsed = now
		}
		b.mu.Unlock()
		return t, nil
	}
	c.lastUsed = now
	if c.state == BreakerOpen && !now.Before(c.retryAt) {
		// The cool-down passed: this turn is the probe.
		c.state, c.probing = BreakerHalfOpen, true
		c.gen++
		ch := b.change(k, c)
		t := ticket{key: k, gen: c.gen, probe: true}
		b.mu.Unlock()
		b.publish(ctx, ch, BreakerOpen)
		return t, nil
	}
	if c.state == BreakerHalfOpen && !c.probing {
		// The last probe learned nothing (canceled): this one probes.
		c.probing = true
		t := ticket{key: k, gen: c.gen, probe: true}
		b.mu.Unlock()
		return t, nil
	}
	e := b.refusal(c, now)
	b.mu.Unlock()
	b.refused.Add(ctx, 1)
	return ticket{}, e
}

// refusal is the Error of a turn refused by c.
func (b *Breaker) refusal(c *circuit, now time.Time) *connector.TurnError {
	next := "after the probe turn now under way"
	if c.state == BreakerOpen {
		next = fmt.Sprintf("at %s (in %s)", c.retryAt.UTC().Format(time.RFC3339), c.retryAt.Sub(now).Round(100*time.Millisecond))
	}
	return &connector.TurnError{Code: connector.CodeAgentUnavailable, Message: fmt.Sprintf(
		"the agent has been failing since %s and this connector replica stopped calling it for now (last failure: %s); it tries the agent again %s",
		c.since.UTC().Format(time.RFC3339), c.cause, next)}
}

// done records how an admitted turn went. cause describes a down verdict.
func (b *Breaker) done(ctx context.Context, t ticket, v verdict, cause string) {
	now := b.opts.Now()
	b.mu.Lock()
	c := b.circuits[t.key]
	var ch *BreakerChange
	var from string
	switch {
	case c == nil:
		if v == down {
			c = b.newCircuit(t.key, t.tenantID, now)
			if c != nil {
				from = BreakerClosed
				ch = b.fail(t.key, c, now, cause)
			}
		}
	case t.gen != c.gen:
		// Admitted under an older state: a turn that started before the breaker opened (or
		// before a probe) says nothing about the agent now.
	case t.probe:
		c.probing = false
		from = c.state
		switch v {
		case up:
			ch = b.closeCircuit(t.key, c, now)
		case down:
			c.cooldown = min(c.cooldown*2, b.opts.MaxCooldown)
			c.cause, c.state = cause, BreakerOpen
			c.retryAt = now.Add(c.cooldown)
			c.gen++
			ch = b.change(t.key, c)
		}
	case v == up:
		if c.state == BreakerClosed {
			delete(b.circuits, t.key)
		}
	case v == down:
		from = c.state
		ch = b.fail(t.key, c, now, cause)
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
	c := &circuit{tenantID: tenantID, state: BreakerClosed, lastUsed: now}
	b.circuits[k] = c
	return c
}

// fail counts a down turn of a closed circuit and opens it at the threshold.
func (b *Breaker) fail(k breakerKey, c *circuit, now time.Time, cause string) *BreakerChange {
	if c.state != BreakerClosed {
		return nil
	}
	c.fails++
	c.cause = cause
	if c.fails < b.opts.Failures {
		return nil
	}
	c.state, c.since, c.cooldown = BreakerOpen, now, b.opts.Cooldown
	c.retryAt = now.Add(c.cooldown)
	c.gen++
	return b.change(k, c)
}

// closeCircuit forgets c: the agent answered its probe.
func (b *Breaker) closeCircuit(k breakerKey, c *circuit, now time.Time) *BreakerChange {
	delete(b.circuits, k)
	c.state, c.since, c.cause = BreakerClosed, now, ""
	c.gen++
	return b.change(k, c)
}

// change describes c's new state for OnChange.
func (b *Breaker) change(k breakerKey, c *circuit) *BreakerChange {
	ch := &BreakerChange{TenantID: c.tenantID, AgentID: k.agentID, Endpoint: k.endpoint, State: c.state, Since: c.since, Cause: c.cause}
	if c.state == BreakerOpen {
		ch.RetryAt = c.retryAt
	}
	return ch
}

// publish measures a change and hands it to OnChange, outside the lock.
func (b *Breaker) publish(ctx context.Context, ch *BreakerChange, from string) {
	b.transitions.Add(ctx, 1, metric.WithAttributes(attrBreakerState.String(ch.State)))
	switch {
	case from == BreakerClosed && ch.State != BreakerClosed:
		b.open.Add(ctx, 1)
	case from != BreakerClosed && ch.State == BreakerClosed:
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
		if c.state == BreakerClosed && now.Sub(c.lastUsed) > idleCircuit {
			delete(b.circuits, k)
		}
	}
}

// State returns the breaker state of agentID at endpoint (BreakerClosed when none is kept), for
// tests and diagnostics.
func (b *Breaker) State(agentID, endpoint string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.circuits[breakerKey{agentID: agentID, endpoint: endpoint}]; c != nil {
		return c.state
	}
	return BreakerClosed
}

// Resilience builds a process's Breaker (nil when failures is 0: breaking off) and RetryBudget
// from the settings (internal/config), with the process's MeterProvider and the publisher of
// breaker changes.
func Resilience(failures int, cooldown, maxCooldown time.Duration, retryPercent int, mp metric.MeterProvider,
	onChange func(BreakerChange)) (*Breaker, *a2aclient.RetryBudget) {
	var b *Breaker
	if failures > 0 {
		b = NewBreaker(BreakerOptions{Failures: failures, Cooldown: cooldown, MaxCooldown: maxCooldown,
			MeterProvider: mp, OnChange: onChange})
	}
	return b, a2aclient.NewRetryBudget(a2aclient.RetryBudgetOptions{Percent: retryPercent})
}
