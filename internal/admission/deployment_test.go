package admission

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"
)

// The tests of this file run a deployment of Limiters on one real Postgres, stepped by the test
// in rounds: in a round, turns that are due end, every replica's callers without a turn try to
// start one (a refused caller tries again next round), then every replica syncs once. A round
// is one sync period (A2AC_CAP_SYNC, 1 s by default) of every replica; the verdicts count rounds,
// never time.

const (
	capTenant = 100
	capAgent  = 60 // per agent; turns alternate between two agents
	turnLen   = 3  // rounds a turn runs
)

type simTurn struct {
	p     Permit
	ends  int
	agent int
}

// sim is the callers of one tenant, spread over a deployment's replicas.
type sim struct {
	t        *testing.T
	ls       []*Limiter
	running  [][]simTurn
	round    int
	next     int        // the agent of the next turn
	maxAll   int        // the most turns of the tenant in flight at once, over every step
	maxAgent [2]int     // and of each agent
	perAgent [2]int     // now
	inFlight func() int // all the tenant's turns now
}

func newSim(t *testing.T, ls []*Limiter) *sim {
	s := &sim{t: t, ls: ls, running: make([][]simTurn, len(ls))}
	s.inFlight = func() int {
		n := 0
		for _, r := range s.running {
			n += len(r)
		}
		return n
	}
	return s
}

// step runs one round with callers[i] callers on replica i and returns the turns in flight
// after the admissions, by replica.
func (s *sim) step(callers []int) []int {
	t := s.t
	for i := range s.running {
		kept := s.running[i][:0]
		for _, tr := range s.running[i] {
			if tr.ends <= s.round {
				tr.p.Release()
				s.perAgent[tr.agent]--
				continue
			}
			kept = append(kept, tr)
		}
		s.running[i] = kept
	}
	for i, l := range s.ls {
		for range callers[i] - len(s.running[i]) {
			agent := s.next % 2
			s.next++
			p, err := l.Acquire(t.Context(), "t")
			if err == nil {
				if err = p.AcquireAgent(t.Context(), "agent-"+strconv.Itoa(agent)); err != nil {
					p.Release()
				}
			}
			if err != nil {
				continue
			}
			s.running[i] = append(s.running[i], simTurn{p: p, ends: s.round + turnLen, agent: agent})
			s.perAgent[agent]++
			s.maxAll = max(s.maxAll, s.inFlight())
			s.maxAgent[agent] = max(s.maxAgent[agent], s.perAgent[agent])
			// The bound is the cap + 10 %; the design's is the cap itself.
			if n := s.inFlight(); n > capTenant {
				t.Fatalf("round %d: %d turns of the tenant in flight over the deployment, cap %d", s.round, n, capTenant)
			}
			if n := s.perAgent[agent]; n > capAgent {
				t.Fatalf("round %d: %d turns of agent %d in flight, cap %d", s.round, n, agent, capAgent)
			}
		}
	}
	out := make([]int, len(s.ls))
	for i := range s.ls {
		out[i] = len(s.running[i])
	}
	for _, l := range s.ls {
		if err := l.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		s.checkAllowances()
	}
	s.round++
	return out
}

// checkAllowances: what the replicas may admit adds up to no more than each cap, at every step.
func (s *sim) checkAllowances() {
	s.t.Helper()
	for _, k := range []key{{tenant: "t"}, {tenant: "t", agent: "agent-0"}, {tenant: "t", agent: "agent-1"}} {
		var sum int64
		for _, l := range s.ls {
			sum += l.allowed(k)
		}
		if c := s.ls[0].capOf(k); sum > c {
			s.t.Fatalf("round %d: the replicas may admit %d turns of %v, cap %d", s.round, sum, k, c)
		}
	}
}

func (s *sim) releaseAll() {
	for i := range s.running {
		for _, tr := range s.running[i] {
			tr.p.Release()
		}
		s.running[i] = nil
	}
}

func sum(ns []int) int {
	n := 0
	for _, v := range ns {
		n += v
	}
	return n
}

// One tenant capped at 100 (60 per agent) on three replicas: all its callers on one replica,
// then spread evenly. The turns in flight never pass the cap at any step, reach 90 % of it within
// 5 rounds of the demand in both phases, and the spread follows the callers.
func TestShares_follow_demand_and_never_pass_the_cap(t *testing.T) {
	ls := deployment(t, 3, Config{Replica: 10_000, Tenant: capTenant, Agent: capAgent})
	syncAll(t, ls[0], ls[1], ls[2], ls[0], ls[1], ls[2]) // joined: a third each
	s := newSim(t, ls)
	defer s.releaseAll()

	reach := func(phase string, callers []int, fair func([]int) bool) {
		t.Helper()
		start := s.round
		for {
			by := s.step(callers)
			if sum(by) >= capTenant*9/10 && fair(by) {
				t.Logf("%s: %v in flight by replica (%d) after %d rounds", phase, by, sum(by), s.round-start)
				break
			}
			if s.round-start >= 5 {
				t.Fatalf("%s: %v in flight by replica after %d rounds; want ≥ %d", phase, by, s.round-start, capTenant*9/10)
			}
		}
		for range 3 * turnLen { // and it stays there
			if by := s.step(callers); sum(by) < capTenant*9/10 {
				t.Fatalf("%s, round %d: %v in flight, fell under 90 %% of the cap", phase, s.round, by)
			}
		}
	}
	reach("all on replica 0", []int{150, 0, 0}, func([]int) bool { return true })
	reach("spread evenly", []int{50, 50, 50}, func(by []int) bool { return min(by[0], by[1], by[2]) >= capTenant/4 })
	t.Logf("most turns in flight at once: %d (cap %d); per agent %v (cap %d)", s.maxAll, capTenant, s.maxAgent, capAgent)
}

// A replica that stops gracefully gives its share back at once; one that dies, once its rows
// expire (3 × A2AC_CAP_SYNC after its last renewal). Until then the survivor never takes what
// the dead one still holds.
func TestShares_of_a_stopped_or_dead_replica_come_back(t *testing.T) {
	ls := deployment(t, 3, Config{Replica: 10_000, Tenant: capTenant, Agent: capTenant, Sync: time.Second})
	a, stopped, dead := ls[0], ls[1], ls[2]
	k := key{tenant: "t"}
	// The stopped replica runs its loop as a process does (it gives up its share of a third at
	// its next renewal, within a second); stop leaves.
	stop := stopped.Start(t.Context())
	eventually(t, "a's even share of three", func() bool {
		syncAll(t, a, dead)
		return a.allowed(k) == capTenant/3
	})
	stop()
	syncAll(t, a, dead)
	if got := a.allowed(k); got != capTenant/2 {
		t.Fatalf("a's even share once the stopped replica left: %d, want %d", got, capTenant/2)
	}

	// The dead replica has all the tenant's demand and holds nearly all of its cap.
	ctx := t.Context()
	for range 4 {
		admit(t, dead, "t", "", capTenant)
		syncAll(t, dead, a)
	}
	if got := dead.allowed(k); got < capTenant*9/10 {
		t.Fatalf("the replica about to die holds %d, want ≥ %d", got, capTenant*9/10)
	}
	if err := dead.Sync(ctx); err != nil { // its last renewal
		t.Fatal(err)
	}
	died := time.Now()

	// a gets the demand now; it syncs every 50 ms until it holds 90 % of the cap.
	deadline := died.Add(20 * time.Second)
	for {
		admit(t, a, "t", "", capTenant)
		if err := a.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if held, live := heldBy(t, dead); live && a.allowed(k)+held > capTenant {
			t.Fatalf("a may admit %d while the dead replica's live lease holds %d: over the cap %d", a.allowed(k), held, capTenant)
		}
		if a.allowed(k) >= capTenant*9/10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a holds %d of %d %s after the other replica died", a.allowed(k), capTenant, time.Since(died))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the dead replica's share came back to a %s after its last renewal (leases last 3 s, syncs 1 s)", time.Since(died).Round(10*time.Millisecond))
}

// heldBy is what replica l's lease on tenant "t" holds in Postgres, and whether l is live there.
func heldBy(t *testing.T, l *Limiter) (int64, bool) {
	t.Helper()
	var held int64
	var live bool
	err := testDB.Pool.QueryRow(t.Context(), `
		select coalesce((select holding from admission_leases where replica_id = r.replica_id and tenant_id = 't' and agent_id = ''), 0),
		       r.expires_at > clock_timestamp()
		  from admission_replicas r where r.replica_id = $1`, l.shares.id).Scan(&held, &live)
	if errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if err != nil {
		return 0, false // no row: gone
	}
	return held, live
}

// eventually calls cond every 20 ms until it holds, for at most 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
