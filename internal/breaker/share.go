package breaker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
)

const (
	// shareTimeout bounds one call to the deployment, however long the turn that made it
	// waited (ShareWait); a later answer is still taken.
	shareTimeout = 5 * time.Second
	// shareBackoff is how long turns stop asking the deployment after it failed or was slow:
	// while Postgres is away, only one turn in that time waits ShareWait for it.
	shareBackoff = 5 * time.Second
)

// ErrNotShared is returned by a Share for an agent the deployment keeps no breaker for (an
// agent that is not stored: a console check of a card not registered yet); the breaker decides
// from its own turns, without asking again.
var ErrNotShared = errors.New("the deployment keeps no circuit breaker for this agent")

// errGaveUp: the deployment did not answer within ShareWait (or the turn ended meanwhile).
var errGaveUp = errors.New("the deployment did not answer in time")

// CircuitKey names the breaker of one agent endpoint.
type CircuitKey struct{ TenantID, AgentID, Endpoint string }

// Circuit is the breaker of one agent endpoint as the deployment keeps it.
type Circuit struct {
	Key CircuitKey
	// State is Closed, Open or HalfOpen.
	State string
	// Fails counts the consecutive down turns while closed, across the deployment.
	Fails int
	// Gen changes at every change of state and reset of Fails; with Fails it orders what a
	// process learns (a newer Gen, or the same with more Fails, is newer). Zero: the
	// deployment keeps no row (closed, no failures).
	Gen int64
	// Since, Cause, Cooldown and RetryAt are as in Change and Options.
	Since    time.Time
	Cause    string
	Cooldown time.Duration
	RetryAt  time.Time
	// Prober is the process whose turn probes (half-open), until ProbeUntil.
	Prober     string
	ProbeUntil time.Time
	// Own: the process this Circuit is handed to made its last change.
	Own bool
}

// Policy is what a process's settings say about opening and probing.
type Policy struct {
	Failures              int
	Cooldown, MaxCooldown time.Duration
}

// Share keeps the breakers of a deployment, one per agent endpoint, for all its processes;
// each call is one atomic step, so that concurrent turns of several replicas neither lose a
// failure nor open, close or probe twice. Times are the caller's clock. A call that fails
// returns an error (ErrNotShared for an agent not kept); the breaker then decides from memory.
// The processes learn what others changed through Breaker.Learn and Breaker.Resync.
type Share interface {
	// Fail counts a down turn of a closed breaker; at p.Failures it opens, for p.Cooldown.
	// An open or half-open breaker is returned unchanged.
	Fail(ctx context.Context, k CircuitKey, now time.Time, cause string, p Policy) (Circuit, error)
	// Reset zeroes the failures of a closed breaker: a turn got an answer.
	Reset(ctx context.Context, k CircuitKey) (Circuit, error)
	// Claim makes the caller the prober of a breaker whose cool-down is over, or whose
	// prober's claim lapsed, until now+hold. Otherwise it returns the breaker as it is.
	Claim(ctx context.Context, k CircuitKey, now time.Time, hold time.Duration) (c Circuit, claimed bool, err error)
	// Settle ends the caller's probe claimed at gen: closed (the agent answered), open (it did
	// not: the cool-down doubles, up to p.MaxCooldown), or "" (the probe learned nothing: the
	// next turn anywhere may probe). A probe that is no longer the caller's changes nothing.
	Settle(ctx context.Context, k CircuitKey, gen int64, now time.Time, state, cause string, p Policy) (Circuit, error)
	// Get returns the breaker.
	Get(ctx context.Context, k CircuitKey) (Circuit, error)
}

func (b *Breaker) policy() Policy {
	return Policy{Failures: b.opts.Failures, Cooldown: b.opts.Cooldown, MaxCooldown: b.opts.MaxCooldown}
}

func (k breakerKey) circuit(tenantID string) CircuitKey {
	return CircuitKey{TenantID: tenantID, AgentID: k.agentID, Endpoint: k.endpoint}
}

// sharing reports whether turns of c ask the deployment now. Called with b.mu held.
func (b *Breaker) sharing(c *circuit, now time.Time) bool {
	return b.opts.Share != nil && !b.closed && !c.unshared && !now.Before(b.shareDownUntil)
}

// shareCall is one call to the deployment, handed over to the turn that made it, or, once that
// turn gave up waiting, to late.
type shareCall struct {
	mu      sync.Mutex
	done    chan struct{}
	gaveUp  bool
	c       Circuit
	claimed bool
	err     error
}

// ask calls op on a goroutine of the breaker and waits for it for up to ShareWait (or until ctx
// ends). An answer that comes later is passed to late (when set), on that goroutine. A failure
// other than ErrNotShared, or no answer in time, stops turns asking for shareBackoff.
func (b *Breaker) ask(ctx context.Context, op func(context.Context) (Circuit, bool, error), late func(context.Context, Circuit, bool)) (Circuit, bool, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return Circuit{}, false, errGaveUp
	}
	b.asks.Add(1)
	b.mu.Unlock()
	call := &shareCall{done: make(chan struct{})}
	bg := context.WithoutCancel(ctx)
	go func() {
		defer b.asks.Done()
		octx, cancel := context.WithTimeout(bg, shareTimeout)
		c, claimed, err := op(octx)
		cancel()
		call.mu.Lock()
		if !call.gaveUp {
			call.c, call.claimed, call.err = c, claimed, err
			close(call.done)
			call.mu.Unlock()
			return
		}
		call.mu.Unlock()
		if err != nil {
			b.shareFailed(err)
		} else if late != nil {
			late(bg, c, claimed)
		}
	}()
	timer := time.NewTimer(b.opts.ShareWait)
	defer timer.Stop()
	select {
	case <-call.done:
	case <-timer.C:
	case <-ctx.Done():
	}
	call.mu.Lock()
	defer call.mu.Unlock()
	select {
	case <-call.done:
		if call.err != nil {
			b.shareFailed(call.err)
		}
		return call.c, call.claimed, call.err
	default:
		call.gaveUp = true
		if ctx.Err() == nil {
			b.shareFailed(errGaveUp)
		}
		return Circuit{}, false, errGaveUp
	}
}

// shareFailed stops turns asking the deployment for a while after err.
func (b *Breaker) shareFailed(err error) {
	if errors.Is(err, ErrNotShared) {
		return
	}
	b.mu.Lock()
	b.shareDownUntil = b.opts.Now().Add(shareBackoff)
	b.mu.Unlock()
}

// markUnshared remembers that the deployment keeps no breaker for k.
func (b *Breaker) markUnshared(k breakerKey, err error) {
	if !errors.Is(err, ErrNotShared) {
		return
	}
	b.mu.Lock()
	if c := b.circuits[k]; c != nil {
		c.unshared = true
	}
	b.mu.Unlock()
}

// learnLate takes an answer that came after its turn stopped waiting.
func (b *Breaker) learnLate(ctx context.Context, c Circuit, _ bool) { b.learn(ctx, c) }

// allowAsked admits a turn while failures are counted: another replica may have opened the
// breaker since this process last heard.
func (b *Breaker) allowAsked(ctx context.Context, k breakerKey, tenantID string) (Ticket, *connector.TurnError) {
	share, ck := b.opts.Share, k.circuit(tenantID)
	row, _, err := b.ask(ctx, func(ctx context.Context) (Circuit, bool, error) {
		c, err := share.Get(ctx, ck)
		return c, false, err
	}, b.learnLate)
	if err != nil {
		b.markUnshared(k, err)
	} else {
		b.learn(ctx, row)
	}
	now := b.opts.Now()
	b.mu.Lock()
	c := b.circuits[k]
	if c == nil || c.state == Closed {
		t := Ticket{key: k, tenantID: tenantID}
		if c != nil {
			t.gen = c.gen
		}
		b.mu.Unlock()
		return t, nil
	}
	e := b.refusal(c, now)
	b.mu.Unlock()
	b.refused.Add(ctx, 1)
	return Ticket{}, e
}

// claim asks the deployment whether this turn probes k. Claimed: it does. Not claimed: the
// deployment's breaker is taken as it is (closed: the turn goes as any other; otherwise it is
// refused). No answer: the turn probes by this process's decision alone.
func (b *Breaker) claim(ctx context.Context, k breakerKey, tenantID string, now time.Time) (Ticket, *connector.TurnError) {
	share, ck, p := b.opts.Share, k.circuit(tenantID), b.policy()
	row, claimed, err := b.ask(ctx, func(ctx context.Context) (Circuit, bool, error) {
		return share.Claim(ctx, ck, now, b.opts.ProbeHold)
	}, func(ctx context.Context, c Circuit, claimed bool) {
		if claimed {
			// The turn went on without this claim: give the probe back at once rather than
			// keep every replica waiting for ProbeHold.
			if c2, err := share.Settle(ctx, ck, c.Gen, b.opts.Now(), "", "", p); err == nil {
				c = c2
			}
		}
		b.learn(ctx, c)
	})
	if err != nil {
		b.markUnshared(k, err)
	}
	b.mu.Lock()
	c := b.circuits[k]
	if c == nil { // gone meanwhile: nothing is known against the agent
		b.mu.Unlock()
		return Ticket{key: k, tenantID: tenantID}, nil
	}
	c.claiming = false
	var ch *Change
	var from string
	var t Ticket
	var refused *connector.TurnError
	switch {
	case err != nil:
		from = c.state
		if c.state == Closed {
			t = Ticket{key: k, tenantID: tenantID, gen: c.gen}
			break
		}
		t, ch = b.probeLocally(k, c)
	case claimed && row.Gen >= c.seenGen:
		from = c.state
		ch = b.adopt(k, c, row)
		c.probing, c.probeUntil = true, time.Time{}
		t = Ticket{key: k, tenantID: tenantID, gen: c.gen, probe: true, claimed: true, shareGen: row.Gen}
	default:
		from = c.state
		ch = b.adopt(k, c, row)
		if c.state == Closed {
			t = Ticket{key: k, tenantID: tenantID, gen: c.gen}
		} else {
			refused = b.refusal(c, b.opts.Now())
		}
	}
	b.mu.Unlock()
	if ch != nil {
		b.publish(ctx, ch, from)
	}
	if refused != nil {
		b.refused.Add(ctx, 1)
	}
	return t, refused
}

// fail counts a down turn in the deployment; without an answer, in this process.
func (b *Breaker) fail(ctx context.Context, t Ticket, cause string) {
	share, ck, p, now := b.opts.Share, t.key.circuit(t.tenantID), b.policy(), b.opts.Now()
	row, _, err := b.ask(ctx, func(ctx context.Context) (Circuit, bool, error) {
		c, err := share.Fail(ctx, ck, now, cause, p)
		return c, false, err
	}, b.learnLate)
	if err == nil {
		b.learn(ctx, row)
		return
	}
	b.markUnshared(t.key, err)
	b.mu.Lock()
	c := b.circuits[t.key]
	var ch *Change
	if c != nil && c.gen == t.gen {
		ch = b.failLocally(t.key, c, now, cause)
	}
	b.mu.Unlock()
	if ch != nil {
		b.publish(ctx, ch, Closed)
	}
}

// reset zeroes the deployment's count after a turn that got an answer.
func (b *Breaker) reset(ctx context.Context, t Ticket) {
	share, ck := b.opts.Share, t.key.circuit(t.tenantID)
	row, _, err := b.ask(ctx, func(ctx context.Context) (Circuit, bool, error) {
		c, err := share.Reset(ctx, ck)
		return c, false, err
	}, b.learnLate)
	if err == nil {
		b.learn(ctx, row)
		return
	}
	b.markUnshared(t.key, err)
	b.mu.Lock()
	if c := b.circuits[t.key]; c != nil && c.gen == t.gen && c.state == Closed {
		c.fails, c.shared = 0, false
	}
	b.mu.Unlock()
}

// settle ends a probe claimed in the deployment; without an answer, this process decides.
func (b *Breaker) settle(ctx context.Context, t Ticket, v Verdict, cause string) {
	state := ""
	switch v {
	case Up:
		state, cause = Closed, ""
	case Down:
		state = Open
	}
	share, ck, p, now := b.opts.Share, t.key.circuit(t.tenantID), b.policy(), b.opts.Now()
	row, _, err := b.ask(ctx, func(ctx context.Context) (Circuit, bool, error) {
		c, err := share.Settle(ctx, ck, t.shareGen, now, state, cause, p)
		return c, false, err
	}, b.learnLate)
	if err == nil {
		b.learn(ctx, row)
		return
	}
	b.mu.Lock()
	c := b.circuits[t.key]
	var ch *Change
	var from string
	if c != nil && c.gen == t.gen {
		from = c.state
		switch v {
		case Up:
			ch = b.closeCircuit(t.key, c, now)
		case Down:
			ch = b.reopen(t.key, c, now, cause)
		}
	}
	b.mu.Unlock()
	if ch != nil {
		b.publish(ctx, ch, from)
	}
}

// Learn takes a breaker the deployment changed (another process's change, or this one's echoed
// back): it replaces this process's copy unless that copy is newer.
func (b *Breaker) Learn(ctx context.Context, c Circuit) { b.learn(ctx, c) }

// learn applies row.
func (b *Breaker) learn(ctx context.Context, row Circuit) {
	k := breakerKey{agentID: row.Key.AgentID, endpoint: row.Key.Endpoint}
	b.mu.Lock()
	c := b.circuits[k]
	if c == nil {
		if row.State == Closed && row.Fails == 0 {
			b.mu.Unlock()
			return
		}
		if c = b.newCircuit(k, row.Key.TenantID, b.opts.Now()); c == nil {
			b.mu.Unlock()
			return
		}
	}
	from := c.state
	ch := b.adopt(k, c, row)
	b.mu.Unlock()
	if ch != nil {
		b.publish(ctx, ch, from)
	}
}

// adopt makes row c's state unless c knows a newer one, and returns the change of state, if
// any. Called with b.mu held.
func (b *Breaker) adopt(k breakerKey, c *circuit, row Circuit) *Change {
	if row.Gen < c.seenGen || (row.Gen == c.seenGen && c.shared && row.Fails <= c.seenFails && row.State == c.state) {
		return nil
	}
	from, fromRetry := c.state, c.retryAt
	c.shared, c.seenGen, c.seenFails, c.mark = true, row.Gen, row.Fails, b.marks
	c.fails, c.cooldown = row.Fails, row.Cooldown
	if row.Key.TenantID != "" {
		c.tenantID = row.Key.TenantID
	}
	switch row.State {
	case Open:
		c.state, c.retryAt, c.probing, c.probeUntil = Open, row.RetryAt, false, time.Time{}
	case HalfOpen:
		c.state, c.probing, c.probeUntil = HalfOpen, true, row.ProbeUntil
	default:
		c.state, c.retryAt, c.probing, c.probeUntil = Closed, time.Time{}, false, time.Time{}
	}
	if row.State != Closed || from != Closed {
		c.since, c.cause = row.Since, row.Cause
	} else {
		c.cause = row.Cause
	}
	if c.state == from && (c.state != Open || c.retryAt.Equal(fromRetry)) {
		return nil
	}
	if c.state != from {
		c.gen++
	}
	ch := b.change(k, c)
	ch.Learned = !row.Own
	return ch
}

// Mark starts a resync: Resync(mark, …) leaves alone what was learned after it.
func (b *Breaker) Mark() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.marks++
	return b.marks
}

// Resync takes every breaker the deployment keeps that is not closed or counts failures, read
// after Mark returned mark: those this process learned from the deployment earlier and that are
// not among them have closed meanwhile (a change this process missed while it was not
// listening). Breakers this process changed on its own (without the deployment) stay as they are.
func (b *Breaker) Resync(ctx context.Context, mark uint64, rows []Circuit) {
	keep := make(map[breakerKey]bool, len(rows))
	for _, row := range rows {
		keep[breakerKey{agentID: row.Key.AgentID, endpoint: row.Key.Endpoint}] = true
		b.learn(ctx, row)
	}
	type closing struct {
		ch   *Change
		from string
	}
	var changes []closing
	b.mu.Lock()
	for k, c := range b.circuits {
		if !c.shared || c.mark >= mark || keep[k] || (c.state == Closed && c.fails == 0) {
			continue
		}
		from := c.state
		if ch := b.adopt(k, c, Circuit{Key: k.circuit(c.tenantID), State: Closed, Gen: c.seenGen + 1, Since: b.opts.Now()}); ch != nil {
			changes = append(changes, closing{ch, from})
		}
	}
	b.mu.Unlock()
	for _, x := range changes {
		b.publish(ctx, x.ch, x.from)
	}
}

// Close waits, bounded by ctx, for the calls to the deployment under way; later turns decide
// from memory. Call it before the deployment's pool closes.
func (b *Breaker) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	done := make(chan struct{})
	go func() { b.asks.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("circuit breaker: calls to the deployment still under way: %w", ctx.Err())
	}
}
