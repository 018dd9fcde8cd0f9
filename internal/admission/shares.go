package admission

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// How the processes of a deployment share a tenant's or an agent's cap C (docs/decisions.md,
// "Caps per deployment"):
//
//   - Even split, no rows. Each live process holds a share of every cap, in millionths
//     (admission_replicas.share_ppm, about 1/R with R live processes), and may run
//     floor(C × share) turns of a key that has no lease. The shares of live processes never add
//     up to more than one: a process's share grows only under the deployment-wide lock, into
//     what the others' shares leave. So a quiet key costs Postgres nothing.
//   - Leases, when demand is uneven. A process whose demand for a key (turns in flight plus
//     turns refused for want of a share since its last sync, at most C) passes 3/4 of its even
//     share writes a lease row: its holding, max(grant, in flight), its demand, and that it is
//     pressed. While any process is pressed for a key, every process writes a row for it at its
//     next sync, with what it holds now, and so gives back what its demand does not need. Each
//     aims at a max-min fair share of C by demand (spare room spread evenly), and takes only
//     what C minus the others' holdings (rows, or even shares where they have none) leaves.
//     When no process is pressed any more, each goes back to its even share (deletes its row)
//     as soon as the others' holdings leave room for it.
//   - Ordering. A grant, or the even share, grows only in memory after the transaction that
//     published it committed, and shrinks in memory before it is published; the holding
//     published is read after the shrink. So what a process may admit is never above what the
//     others see it hold, and Σ over live processes stays ≤ C.
//   - Expiry. A process's rows live until its sync's database time + 3 × Sync; the others ignore
//     them afterwards (a dead process's share comes back within that and one sync). The process
//     itself stops using its leases by its own clock at its sync's start + 3 × Sync, which is
//     earlier. Then, Postgres out of reach, it admits max(1, floor(C × its last share)) of each
//     key: about C/R, which the others no longer count once its rows expired. So a process cut
//     off from Postgres may add up to C/R to the cap's bound while it serves (it serves little:
//     sessions live in Postgres), and no replica ever refuses everything.

// DefaultSync is how often a process renews its shares when Config.Sync is not set.
const DefaultSync = time.Second

const million = 1_000_000

// ShareStore keeps the deployment's shares of the caps (Store keeps them in Postgres).
type ShareStore interface {
	// SyncShares takes the deployment-wide lock, reads the live processes and their leases,
	// calls decide with them while it holds the lock, writes decide's claim as replicaID's
	// share and leases (its other rows deleted), live for ttl from the database's clock, and
	// releases the lock. An error means nothing may have been written.
	SyncShares(ctx context.Context, replicaID string, ttl time.Duration, decide func(View) Claim) error
	// LeaveShares deletes replicaID's share and leases: its share returns to the others at
	// their next sync.
	LeaveShares(ctx context.Context, replicaID string) error
}

// View is the deployment as one sync reads it: the live processes and their leases.
type View struct {
	Replicas []Member
	Leases   []Lease
}

// Member is a live process and its even share of every cap, in millionths.
type Member struct {
	ReplicaID string
	SharePPM  int64
}

// Lease is one process's lease on one cap: a tenant's (AgentID "") or one of its agents'.
type Lease struct {
	TenantID, AgentID, ReplicaID string
	// Holding is the most turns of the cap the process may be running: max(grant, in flight).
	Holding int64
	// Demand is its turns in flight plus the turns it refused for want of a share since its
	// last sync, at most the cap.
	Demand int64
	// Pressed says its demand passed 3/4 of its even share.
	Pressed bool
}

// Claim is what one process publishes at a sync: its even share and all of its leases.
type Claim struct {
	SharePPM int64
	Leases   []Lease
}

// sharing is a Limiter's side of the deployment's shares; its zero value (no store) makes
// every cap the process's own.
type sharing struct {
	store  ShareStore
	id     string
	every  time.Duration
	ttl    time.Duration
	now    func() time.Time
	log    *slog.Logger
	ppm    atomic.Int64 // even share, millionths
	target atomic.Int64 // the even share aimed at: a million / live processes at the last sync
	until  atomic.Int64 // the leases hold until this time (UnixNano of now); 0: never synced
	// lapsed says the leases expired (or were never had): the turn path reads it instead of a
	// clock, which costs more than the rest of an admission; timer sets it at until. expiry
	// orders the two, never held for long (mu is held for a whole sync).
	lapsed atomic.Bool
	expiry sync.Mutex
	timer  *time.Timer // under mu
	kick   chan struct{}
	mu     sync.Mutex // one sync at a time
	outage bool       // under mu: the failure was logged
}

// init sets s up from c; without a store it stays the zero value.
func (s *sharing) init(c Config) {
	if c.Shares == nil {
		return
	}
	every := c.Sync
	if every <= 0 {
		every = DefaultSync
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s.store, s.id, s.every, s.ttl, s.now, s.log = c.Shares, c.ReplicaID, every, 3*every, now, log
	s.kick = make(chan struct{}, 1)
	// Before its first sync a process knows of no other: the whole cap (see Start).
	s.ppm.Store(million)
	s.target.Store(million)
	s.lapsed.Store(true)
}

// expire marks the leases lapsed if their time has come: the timer's callback, and what a test
// with its own clock calls after moving it. Under expiry, so that it never marks lapsed a lease
// that a sync has just renewed.
func (s *sharing) expire() {
	s.expiry.Lock()
	defer s.expiry.Unlock()
	if s.now().UnixNano() >= s.until.Load() {
		s.lapsed.Store(true)
	}
}

// renew makes the leases hold until until.
func (s *sharing) renew(until time.Time) {
	s.expiry.Lock()
	s.until.Store(until.UnixNano())
	s.lapsed.Store(false)
	s.expiry.Unlock()
	if s.timer == nil {
		s.timer = time.AfterFunc(until.Sub(s.now()), s.expire)
	} else {
		s.timer.Reset(until.Sub(s.now()))
	}
}

// wake asks the sync loop for an early sync (a share refused a turn); it never blocks.
func (s *sharing) wake() {
	if s.kick == nil {
		return
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// allowance is how many turns of a key whose cap is limit this process may run now.
func (l *Limiter) allowance(e *entry, limit int64) int64 {
	s := &l.shares
	if s.store == nil {
		return limit
	}
	if s.lapsed.Load() {
		return fallbackShare(limit, s.ppm.Load())
	}
	if g := e.grant.Load(); g != noLease {
		return min(g, limit)
	}
	return evenShare(limit, s.ppm.Load())
}

// evenShare is the turns of a cap of limit that a share of ppm millionths covers.
func evenShare(limit, ppm int64) int64 { return limit * ppm / million }

// fallbackShare is what a process admits of a cap once its leases expired (Postgres out of
// reach): its last even share, at least one turn so that no tenant is refused everything.
func fallbackShare(limit, ppm int64) int64 { return min(limit, max(1, evenShare(limit, ppm))) }

// fairShare is process me's max-min fair share of limit by demands (one per live process, in
// the order of their ids): all of its demand when the demands fit, and the spare room on top in
// proportion to demand + 1, so that demand that grows finds room where it grows, and an idle
// process keeps a little; else the water level the demands share. Remainders go one turn each
// to the first processes by id. The shares of one view add up to limit.
func fairShare(limit int64, demands []int64, me int) int64 {
	r := int64(len(demands))
	var sum int64
	for _, d := range demands {
		sum += d
	}
	if sum <= limit {
		spare, weights := limit-sum, sum+r
		left := spare
		for _, d := range demands {
			left -= spare * (d + 1) / weights
		}
		s := demands[me] + spare*(demands[me]+1)/weights
		if int64(me) < left {
			s++
		}
		return s
	}
	sorted := slices.Sorted(slices.Values(demands))
	var used int64
	level := int64(0)
	for i, d := range sorted {
		rest := r - int64(i)
		if used+d*rest > limit {
			level = (limit - used) / rest
			break
		}
		used += d
	}
	if demands[me] <= level {
		return demands[me]
	}
	// The processes above the level share what the level leaves, in id order.
	var below, before int64
	for i, d := range demands {
		if d <= level {
			below += d
		} else if i < me {
			before++
		}
	}
	above := int64(0)
	for _, d := range demands {
		if d > level {
			above++
		}
	}
	left := limit - below - level*above
	if before < left {
		return level + 1
	}
	return level
}

// plan is what a sync applies once its transaction committed.
type plan struct {
	ppm     int64
	target  int64
	grows   map[*entry]int64 // grants that grow (noLease: back to an even share at least as large)
	refused map[*entry]int64 // the refusals this sync reported, to take off the counters
}

// shareable says whether k can have a lease row: ids come from requests, and Postgres text
// refuses NUL and invalid UTF-8. A key that cannot stays on the even split.
func shareable(k key) bool {
	for _, s := range []string{k.tenant, k.agent} {
		if len(s) > 256 || !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			return false
		}
	}
	return k.tenant != ""
}

// capOf is k's cap.
func (l *Limiter) capOf(k key) int64 {
	tenant, agent := l.limits(k.tenant)
	if k.agent != "" {
		return agent
	}
	return tenant
}

// local returns the entries that have something to say at a sync: turns in flight, refusals,
// or a lease.
func (l *Limiter) local() map[key]*entry {
	out := map[key]*entry{}
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.RLock()
		for k, e := range s.m {
			if e.n.Load() > 0 || e.refused.Load() > 0 || e.grant.Load() != noLease {
				out[k] = e
			}
		}
		s.mu.RUnlock()
	}
	return out
}

// decide computes this process's claim from the view, under the store's lock. It applies every
// shrink at once and leaves every growth in p for after the commit.
func (l *Limiter) decide(v View, p *plan) Claim {
	s := &l.shares
	me := s.id
	others := map[string]int64{}
	ids := []string{me}
	var theirs int64
	for _, m := range v.Replicas {
		if m.ReplicaID != me {
			others[m.ReplicaID] = m.SharePPM
			ids = append(ids, m.ReplicaID)
			theirs += m.SharePPM
		}
	}
	slices.Sort(ids)
	rank := slices.Index(ids, me)
	p.target = million / int64(len(ids))
	p.ppm = max(0, min(p.target, million-theirs))
	if p.ppm < s.ppm.Load() {
		s.ppm.Store(p.ppm) // before the others may count on the smaller share
	}
	// A lease that may lapse before this sync commits lets the turns run up to the fallback
	// share meanwhile, above a grant read here: publish at least that much.
	lapsing := s.now().Add(s.every).UnixNano() >= s.until.Load()

	rows := map[key]map[string]Lease{}
	for _, ls := range v.Leases {
		if _, live := others[ls.ReplicaID]; !live {
			continue // this process's own rows are rewritten from memory
		}
		k := key{tenant: ls.TenantID, agent: ls.AgentID}
		if rows[k] == nil {
			rows[k] = map[string]Lease{}
		}
		rows[k][ls.ReplicaID] = ls
	}
	local := l.local()
	keys := make([]key, 0, len(rows)+len(local))
	for k := range rows {
		keys = append(keys, k)
	}
	for k := range local {
		if rows[k] == nil {
			keys = append(keys, k)
		}
	}

	// A turn refused by its tenant's share never named its agent (the agent is known after the
	// session lookup). Counted as demand for each of the tenant's agents, it lets the agents'
	// shares follow the tenant's instead of lagging a sync behind them; an agent that did not
	// need it gives it back at the next sync.
	tenantRefused := map[string]int64{}
	for k, e := range local {
		if k.agent == "" {
			tenantRefused[k.tenant] = e.refused.Load()
		}
	}
	claim := Claim{SharePPM: p.ppm}
	demands := make([]int64, len(ids))
	for _, k := range keys {
		if !shareable(k) {
			continue
		}
		limit := l.capOf(k)
		var n, refused int64
		e := local[k]
		if e != nil {
			n, refused = e.n.Load(), e.refused.Load()
			p.refused[e] = refused
		}
		if k.agent != "" {
			refused += tenantRefused[k.tenant]
		}
		demand := min(limit, n+refused)
		even := evenShare(limit, p.ppm)
		pressed := demand > even*3/4
		anyPressed := pressed
		var othersHold int64
		for i, id := range ids {
			if id == me {
				demands[i] = demand
				continue
			}
			if ls, ok := rows[k][id]; ok {
				othersHold += ls.Holding
				demands[i] = min(limit, ls.Demand)
				anyPressed = anyPressed || ls.Pressed
			} else {
				share := evenShare(limit, others[id])
				othersHold += share
				demands[i] = share
			}
		}
		leased := e != nil && e.grant.Load() != noLease
		if !anyPressed && len(rows[k]) == 0 && !leased {
			continue // the even split: nothing to write
		}
		room := limit - othersHold
		if !anyPressed && even <= room && n <= even {
			if leased {
				l.setGrant(k, noLease, evenShare(limit, s.ppm.Load()), limit, p)
			}
			continue // back to the even split: the row goes
		}
		want := even
		if anyPressed {
			want = fairShare(limit, demands, rank)
		}
		g := max(0, min(want, room))
		holding := l.setGrant(k, g, g, limit, p)
		if lapsing {
			holding = max(holding, fallbackShare(limit, s.ppm.Load()))
		}
		claim.Leases = append(claim.Leases, Lease{TenantID: k.tenant, AgentID: k.agent, ReplicaID: me,
			Holding: holding, Demand: demand, Pressed: pressed})
	}
	return claim
}

// setGrant gives k the grant g, which lets it run allow turns of limit: at once if that is
// less than it may run now, after the commit (in p) otherwise. It returns the holding to
// publish: max(allow, turns in flight), read after a shrink took effect.
func (l *Limiter) setGrant(k key, g, allow, limit int64, p *plan) int64 {
	var n int64
	l.with(k, func(cur *entry) {
		now := cur.grant.Load()
		var before int64
		if now == noLease {
			before = evenShare(limit, l.shares.ppm.Load())
		} else {
			before = min(now, limit)
		}
		if allow < before {
			cur.grant.Store(g)
		} else {
			p.grows[cur] = g
		}
		n = cur.n.Load()
	})
	return max(allow, n)
}

// Sync renews this process's shares once: it reports its demand, publishes what it holds and
// takes what it may. Run calls it every Config.Sync; tests call it to step the deployment.
func (l *Limiter) Sync(ctx context.Context) error {
	s := &l.shares
	if s.store == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	start := s.now()
	p := &plan{grows: map[*entry]int64{}, refused: map[*entry]int64{}}
	err := s.store.SyncShares(ctx, s.id, s.ttl, func(v View) Claim {
		clear(p.grows)
		clear(p.refused)
		return l.decide(v, p)
	})
	if err != nil {
		if !s.outage && ctx.Err() == nil {
			s.outage = true
			until := time.Unix(0, s.until.Load())
			s.log.WarnContext(ctx, "admission: cannot renew this replica's shares of the caps; it keeps the last ones until they expire, then admits about cap / replicas of each tenant and agent",
				slog.Time("expires", until), slog.Any("error", err))
		}
		return fmt.Errorf("sync cap shares: %w", err)
	}
	for e, g := range p.grows {
		e.grant.Store(g)
	}
	for e, n := range p.refused {
		e.refused.Add(-n)
	}
	s.ppm.Store(p.ppm)
	s.target.Store(p.target)
	s.renew(start.Add(s.ttl))
	if s.outage {
		s.outage = false
		s.log.InfoContext(ctx, "admission: shares of the caps renewed")
	}
	return nil
}

// Run renews the shares every Config.Sync, and sooner (at most four times a Sync) while a
// share refuses turns, until ctx ends. A failed renewal is logged once per outage.
func (l *Limiter) Run(ctx context.Context) {
	s := &l.shares
	if s.store == nil {
		return
	}
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		l.syncOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
			// Early, but not more often than every quarter period.
			wait := time.NewTimer(s.every / 4)
			select {
			case <-ctx.Done():
				wait.Stop()
				return
			case <-wait.C:
			}
		}
	}
}

func (l *Limiter) syncOnce(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, l.shares.every)
	defer cancel()
	return l.Sync(ctx) == nil
}

// Start makes this process one of the deployment's: it syncs until it holds its even share (the
// others give theirs up at their next sync), for at most 3 × Sync so that a process that cannot
// reach Postgres still starts, then renews in the background. stop ends the renewals and
// deletes this process's rows, so that its share returns to the others at once: call it once
// its turns have ended.
func (l *Limiter) Start(ctx context.Context) (stop func()) {
	s := &l.shares
	if s.store == nil {
		return func() {}
	}
	deadline := time.Now().Add(3 * s.every)
	for l.syncOnce(ctx) && s.ppm.Load() < s.target.Load() && time.Now().Before(deadline) {
		t := time.NewTimer(s.every / 4)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		if ctx.Err() != nil {
			break
		}
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); l.Run(runCtx) }()
	return func() {
		cancel()
		<-done
		s.mu.Lock()
		if s.timer != nil {
			s.timer.Stop()
		}
		s.mu.Unlock()
		leaveCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.store.LeaveShares(leaveCtx, s.id); err != nil {
			l.log.Warn("admission: delete this replica's shares of the caps; they expire on their own", slog.Any("error", err))
		}
	}
}
