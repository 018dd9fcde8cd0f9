package admission

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	connector "github.com/a2a-connector/a2a-connector"
)

// clock is a settable clock for the leases' expiry.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_700_000_000, 0)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestFairShare(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		limit   int64
		demands []int64
		want    []int64
	}{
		{"demands_fit:_the_spare_room_goes_by_demand_+_1,_the_remainder_to_the_first_ids", 10, []int64{2, 0, 0}, []int64{7, 2, 1}},
		{"a_busy_replica_gets_most_of_the_spare_room", 100, []int64{17, 0, 0}, []int64{92, 4, 4}},
		{"all_want_it_all:_equal_shares", 10, []int64{10, 10, 10}, []int64{4, 3, 3}},
		{"a_small_demand_is_met_whole,_the_others_share_the_rest", 10, []int64{1, 10, 10}, []int64{1, 5, 4}},
		{"one_replica_alone_gets_the_cap", 7, []int64{3}, []int64{7}},
		{"no_demand:_the_even_split", 4, []int64{0, 0, 0}, []int64{2, 1, 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := make([]int64, len(tt.demands))
			for i := range got {
				got[i] = fairShare(tt.limit, tt.demands, i)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("shares (-want +got):\n%s", diff)
			}
		})
	}
	// Any view: the shares add up to the cap, and each replica gets at least its demand or an
	// even part of the cap.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		r := 1 + rng.IntN(6)
		limit := 1 + rng.Int64N(60)
		demands := make([]int64, r)
		for i := range demands {
			demands[i] = rng.Int64N(limit + 1)
		}
		var sum int64
		for i, d := range demands {
			s := fairShare(limit, demands, i)
			if floor := min(d, limit/int64(r)); s < floor {
				t.Fatalf("fairShare(%d, %v, %d) = %d, less than %d", limit, demands, i, s, floor)
			}
			sum += s
		}
		if sum != limit {
			t.Fatalf("fairShare(%d, %v) adds up to %d", limit, demands, sum)
		}
	}
}

func TestEvenAndFallbackShares(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		limit, ppm     int64
		even, fallback int64
	}{
		{2000, 333333, 666, 666},
		{2, 333333, 0, 1}, // a cap below the replica count: one turn, never none
		{10, 500000, 5, 5},
		{3, million, 3, 3},
		{1, 0, 0, 1},
	} {
		if got := evenShare(tt.limit, tt.ppm); got != tt.even {
			t.Errorf("evenShare(%d, %d) = %d, want %d", tt.limit, tt.ppm, got, tt.even)
		}
		if got := fallbackShare(tt.limit, tt.ppm); got != tt.fallback {
			t.Errorf("fallbackShare(%d, %d) = %d, want %d", tt.limit, tt.ppm, got, tt.fallback)
		}
	}
}

// admit acquires up to n turns of tenant (agent "" skips the agent cap) and returns how many it
// got; the permits are released when the test ends.
func admit(t *testing.T, l *Limiter, tenant, agent string, n int) int {
	t.Helper()
	got := 0
	for range n {
		p, err := l.Acquire(t.Context(), tenant)
		if err == nil && agent != "" {
			if err = p.AcquireAgent(t.Context(), agent); err != nil {
				p.Release()
			}
		}
		if err != nil {
			if _, ok := err.(*connector.RefusedError); !ok {
				t.Fatalf("acquire: %v", err)
			}
			continue
		}
		got++
		t.Cleanup(p.Release)
	}
	return got
}

// allowed is what l may admit of k's cap now.
func (l *Limiter) allowed(k key) int64 {
	var a int64
	l.with(k, func(e *entry) { a = l.allowance(e, l.capOf(k)) })
	return a
}

// A shrink takes effect in memory before the claim that publishes it is written; a growth only
// after the commit (Sync applies it), so a process never admits more than the others see it
// hold. decide is called directly here, with views made by hand: no store is reached.
func TestDecide_shrinks_at_once_and_grows_only_after_the_commit(t *testing.T) {
	t.Parallel()
	clk := newClock()
	l := New(Config{Replica: 100, Tenant: 10, Agent: 10, Shares: NewStore(nil), ReplicaID: "b", Now: clk.now})
	l.shares.until.Store(clk.now().Add(time.Hour).UnixNano())
	l.shares.lapsed.Store(false)
	l.shares.ppm.Store(million / 2)
	k := key{tenant: "t"}
	l.with(k, func(e *entry) { e.grant.Store(10) })
	if got := admit(t, l, "t", "", 4); got != 4 {
		t.Fatalf("admitted %d of 4 under a grant of 10", got)
	}
	members := []Member{{ReplicaID: "a", SharePPM: million / 2}, {ReplicaID: "b", SharePPM: million / 2}}

	// The other replica wants the whole cap and holds nothing yet: the max-min fair shares of
	// 10 by demands (a: 10, b: 4) are 6 and 4: b shrinks to its 4 turns in flight now.
	p := &plan{grows: map[*entry]int64{}, refused: map[*entry]int64{}}
	c := l.decide(View{Replicas: members, Leases: []Lease{{TenantID: "t", ReplicaID: "a", Holding: 0, Demand: 10, Pressed: true}}}, p)
	if got := l.allowed(k); got != 4 {
		t.Fatalf("allowance right after deciding a shrink: %d, want 4 (before any commit)", got)
	}
	want := []Lease{{TenantID: "t", ReplicaID: "b", Holding: 4, Demand: 4, Pressed: true}}
	if diff := cmp.Diff(want, c.Leases); diff != "" {
		t.Errorf("claim (-want +got):\n%s", diff)
	}
	if len(p.grows) != 0 {
		t.Errorf("growths planned: %v", p.grows)
	}

	// Shrunk under its turns in flight: it publishes them, not the smaller grant.
	p = &plan{grows: map[*entry]int64{}, refused: map[*entry]int64{}}
	c = l.decide(View{Replicas: members, Leases: []Lease{{TenantID: "t", ReplicaID: "a", Holding: 8, Demand: 10, Pressed: true}}}, p)
	if got := l.allowed(k); got != 2 {
		t.Fatalf("allowance with a holding 8: %d, want 2", got)
	}
	if c.Leases[0].Holding != 4 {
		t.Errorf("published holding %d, want the 4 turns in flight", c.Leases[0].Holding)
	}

	// The other gives everything back: b's share grows, but only once the sync committed.
	p = &plan{grows: map[*entry]int64{}, refused: map[*entry]int64{}}
	l.decide(View{Replicas: members, Leases: []Lease{{TenantID: "t", ReplicaID: "a", Holding: 0, Demand: 0, Pressed: false}}}, p)
	if got := l.allowed(k); got != 2 {
		t.Fatalf("allowance after deciding a growth, before the commit: %d, want still 2", got)
	}
	if len(p.grows) != 1 {
		t.Fatalf("growths planned: %v, want one", p.grows)
	}
}

// The leases hold until they expire by the process's own clock, then the process admits its
// fallback share (its last even share) of each cap: never its whole grant, never nothing.
func TestLeases_hold_until_they_expire_then_the_fallback_share(t *testing.T) {
	clk := newClock()
	ls := deployment(t, 2, Config{Replica: 100, Tenant: 10, Agent: 10, Sync: time.Second, Now: clk.now})
	a, b := ls[0], ls[1]
	k := key{tenant: "t"}
	syncAll(t, a, b, a, b)
	if got := a.allowed(k); got != 5 {
		t.Fatalf("a's even share of 10 with two replicas: %d, want 5", got)
	}
	// a's demand is the whole cap (its callers retry between syncs), b's none: after a round
	// of syncs a holds it all.
	if got := admit(t, a, "t", "", 10); got != 5 {
		t.Fatalf("admitted %d, want a's even share 5", got)
	}
	syncAll(t, a, b)
	if got := admit(t, a, "t", "", 5); got != 0 {
		t.Fatalf("admitted %d before b gave its share back", got)
	}
	syncAll(t, a)
	if got := a.allowed(k); got != 10 {
		t.Fatalf("a's grant with all the demand: %d, want 10", got)
	}
	if got := admit(t, a, "t", "", 5); got != 5 {
		t.Fatalf("admitted %d more, want 5", got)
	}

	clk.add(2 * time.Second) // less than the lease's 3 × Sync
	a.shares.expire()        // what its timer does, on the test's clock
	if got := a.allowed(k); got != 10 {
		t.Fatalf("before the lease expired: %d, want the grant 10", got)
	}
	clk.add(time.Second)
	a.shares.expire()
	if got := a.allowed(k); got != 5 {
		t.Fatalf("after the lease expired: %d, want the fallback 5 (cap / 2 replicas)", got)
	}
	if got := admit(t, a, "t", "", 1); got != 0 {
		t.Fatal("a turn admitted over the fallback share")
	}
	if got := a.allowed(key{tenant: "other"}); got != 5 {
		t.Errorf("another tenant after the expiry: %d, want 5", got)
	}
	// A sync renews the leases.
	syncAll(t, a)
	if got := a.allowed(k); got != 10 {
		t.Errorf("after a renewal: %d, want the grant 10", got)
	}
}

// With Postgres out of reach from the start, a process logs it once, however many syncs fail,
// and admits turns: it counts itself alone until it reaches Postgres (it cannot run a turn
// without Postgres anyway: sessions live there).
func TestSync_without_Postgres_logs_once_and_admits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	pool, err := pgxpool.New(t.Context(), "postgres://nobody@"+addr+"/none?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var logs bytes.Buffer
	l := New(Config{Replica: 100, Tenant: 4, Agent: 4, Shares: NewStore(pool), ReplicaID: "cut-off",
		Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs}, nil))})
	for range 3 {
		if err := l.Sync(t.Context()); err == nil {
			t.Fatal("a sync without Postgres succeeded")
		}
	}
	if n := strings.Count(logs.String(), "cannot renew"); n != 1 {
		t.Errorf("%d warnings after three failed syncs, want 1:\n%s", n, logs.String())
	}
	if got := admit(t, l, "t", "a", 5); got != 4 {
		t.Errorf("admitted %d of 5 turns over a cap of 4, want 4", got)
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// deployment returns n Limiters that share testDB's tables as the replicas of one deployment,
// with cfg's caps and Sync (10 s when unset: rounds are stepped by the test, and a lease outlives
// any round). Their rows are deleted when the test ends.
func deployment(t *testing.T, n int, cfg Config) []*Limiter {
	t.Helper()
	st := NewStore(testDB.Pool)
	var out []*Limiter
	for i := range n {
		c := cfg
		c.Shares, c.ReplicaID = st, fmt.Sprintf("%s/%d", t.Name(), i)
		if c.Sync == 0 {
			c.Sync = 10 * time.Second
		}
		out = append(out, New(c))
		t.Cleanup(func() {
			if err := st.LeaveShares(context.Background(), c.ReplicaID); err != nil {
				t.Error(err)
			}
		})
	}
	return out
}

func syncAll(t *testing.T, ls ...*Limiter) {
	t.Helper()
	for _, l := range ls {
		if err := l.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}
