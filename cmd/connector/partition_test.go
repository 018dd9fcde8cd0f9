package main

import (
	"context"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/clitest"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/pgtest"
)

// A replica cut off from Postgres (a network partition between it and the database, the agent
// still reachable) while another replica stays connected. The other replica takes it for dead
// once its heartbeat is A2AC_INFLIGHT_STALE old by the database's clock, and cancels its synced
// agent tasks. Before that may happen, the cut replica must have said NOT_SERVING (its Connector
// service, which readiness asks; "" stays SERVING for liveness), refused new
// turns and ended its running one; at the agent, the running turn's stream ends before its task
// is canceled. Healed, the replica serves again.
//
// The orders are checked against the database's own judgement: right after the three
// observations, the cut replica's heartbeat row is still there and younger than the stale bound,
// so none of them can have come after another replica could claim it. The fence fires at half
// the stale bound: 3 s of margin over what takes milliseconds.
func TestReplicaCutOffFromPostgres(t *testing.T) {
	t.Parallel()
	bin := clitest.Build(t, "connector")
	const stale = 6 * time.Second
	// A reply of 30 s: far longer than the cut takes to end it (stale/2). A database of its own:
	// other tests' replicas, with shorter stale bounds, would sweep these.
	db := testDB.NewDatabase(t)
	p := newPacedAgentIn(t, db, fixtureagent.New(t), connector.CardProfile{Name: "paced", ProtocolVersion: "0.3.0", Streaming: true},
		600, 50*time.Millisecond)
	partition := newPGPartition(t, db.URL)
	env := []string{"A2AC_INFLIGHT_SYNC=250ms", "A2AC_INFLIGHT_STALE=" + stale.String(), "A2AC_DRAIN_DELAY=0", "A2AC_TURN_TIMEOUT=60s"}
	cut := startReplica(t, bin, p, append(env, "DATABASE_URL="+partition.url)...)
	other := startReplica(t, bin, p, env...)
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()

	running := p.startTurn(t, ctx, cut, "s-cut", uuid.NewString(), 0)
	for len(running.deltas) == 0 {
		if more, err := running.next(); err != nil || !more {
			t.Fatalf("running turn ended before its first delta: %v", err)
		}
	}
	task := waitInflightTask(t, ctx, db, p.tenant) // synced: the other replica would cancel it
	watch, err := cut.health.Watch(ctx, &healthpb.HealthCheckRequest{Service: pb.Connector_ServiceDesc.ServiceName})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := watch.Recv(); err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health before the cut: %v, %v", res, err)
	}
	ended := make(chan error, 1)
	go func() {
		for {
			if more, err := running.next(); err != nil || !more {
				ended <- err
				return
			}
		}
	}()

	partition.cut()
	cutAt := time.Now()
	if res, err := watch.Recv(); err != nil || res.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health after the cut: %v, %v; want NOT_SERVING", res, err)
	}
	notServing := time.Since(cutAt)
	refused := p.startTurn(t, ctx, cut, "s-refused", uuid.NewString(), 0)
	_, refusal := refused.next()
	endErr := <-ended
	turnEnded := time.Since(cutAt)
	heartbeatStillFresh(t, ctx, db, cut, stale)
	for what, err := range map[string]error{"a new turn": refusal, "the running turn": endErr} {
		if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "cannot reach its database") {
			t.Errorf("%s on the cut replica: %v; want UNAVAILABLE, cannot reach its database", what, err)
		}
	}
	if len(refused.deltas) != 0 || refused.final != nil {
		t.Errorf("the refused turn streamed %q, final %v; want nothing", refused.deltas, refused.final)
	}
	if res, err := other.health.Check(ctx, &healthpb.HealthCheckRequest{Service: pb.Connector_ServiceDesc.ServiceName}); err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("the connected replica's health: %v, %v; want SERVING", res, err)
	}
	// The process itself is fine: liveness ("") must not restart it.
	if res, err := cut.health.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf(`the cut replica's health "": %v, %v; want SERVING`, res, err)
	}

	// The other replica takes the cut one for dead and claims its rows; by then the agent had
	// seen the turn's stream end. Then its sweep cancels the task: the second cancel, after the
	// stream's end. (The first is the cut replica's own, of the turn it ended: it closes the
	// stream, then sends tasks/cancel on another connection, which the agent may read before it
	// notices the close. No agent can order those two; this test does not ask it to.)
	claimed := waitReplicaGone(t, ctx, db, cut)
	if marks := p.fx.Marks(); !slices.Contains(marks, fixtureagent.Mark{Kind: fixtureagent.MarkStreamEnded, TaskID: task}) {
		t.Fatalf("the other replica claimed the cut one while its turn still streamed at the agent: %v", marks)
	}
	marks := waitCancels(t, ctx, p.fx, task, 2)
	streamEnd, swept := slices.Index(marks, fixtureagent.Mark{Kind: fixtureagent.MarkStreamEnded, TaskID: task}), -1
	for i, m := range marks {
		if m == (fixtureagent.Mark{Kind: fixtureagent.MarkCancel, TaskID: task}) {
			swept = i
		}
	}
	if swept < streamEnd {
		t.Errorf("task %s canceled by the other replica's sweep while its stream was live: %v", task, marks)
	}
	t.Logf("timeline after the cut (A2AC_INFLIGHT_SYNC=250ms, STALE=%s): NOT_SERVING at %s, running turn ended at %s, claimed by the other replica at %s",
		stale, notServing.Round(time.Millisecond), turnEnded.Round(time.Millisecond), claimed.Sub(cutAt).Round(time.Millisecond))

	// Healed: a heartbeat succeeds, the replica says SERVING and serves.
	partition.heal()
	healedAt := time.Now()
	if res, err := watch.Recv(); err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health after the heal: %v, %v; want SERVING", res, err)
	}
	t.Logf("SERVING again %s after the heal", time.Since(healedAt).Round(time.Millisecond))
	p.fx.SetChunks(3)
	back := p.startTurn(t, ctx, cut, "s-back", uuid.NewString(), 0)
	back.finish(t)
	if back.final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED {
		t.Errorf("turn after the heal: %v", back.final.GetOutcome())
	}
}

// heartbeatStillFresh fails unless r's heartbeat row exists and is younger than stale by the
// database's clock: no other replica may have taken it for dead yet.
func heartbeatStillFresh(t *testing.T, ctx context.Context, db *pgtest.DB, r *replica, stale time.Duration) {
	t.Helper()
	var fresh bool
	err := db.Pool.QueryRow(ctx, `select heartbeat_at > now() - make_interval(secs => $2)
		from connector_replicas where split_part(replica_id, '/', 2) = $1`, strconv.Itoa(r.cmd.Process.Pid), stale.Seconds()).Scan(&fresh)
	if err != nil || !fresh {
		t.Fatalf("the cut replica's heartbeat after NOT_SERVING and the ended turns: fresh %v, %v; want a row younger than %s", fresh, err, stale)
	}
}

// waitReplicaGone waits until another replica has claimed r's rows, and returns when it saw it.
func waitReplicaGone(t *testing.T, ctx context.Context, db *pgtest.DB, r *replica) time.Time {
	t.Helper()
	for {
		if !slices.Contains(countReplicaRows(t, db), r.cmd.Process.Pid) {
			return time.Now()
		}
		if ctx.Err() != nil {
			t.Fatal("the cut replica's heartbeat row was never claimed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitCancels waits until the agent got n cancels of task, and returns its marks then.
func waitCancels(t *testing.T, ctx context.Context, fx *fixtureagent.Server, task string, n int) []fixtureagent.Mark {
	t.Helper()
	for {
		marks := fx.Marks()
		got := 0
		for _, m := range marks {
			if m == (fixtureagent.Mark{Kind: fixtureagent.MarkCancel, TaskID: task}) {
				got++
			}
		}
		if got >= n {
			return marks
		}
		if ctx.Err() != nil {
			t.Fatalf("task %s got %d cancels, want %d: %v", task, got, n, marks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pgPartition is a TCP proxy on loopback between one replica and Postgres that the test cuts as
// a network partition does: bytes stop flowing both ways and new connections get no answer,
// while every socket stays open (nothing is refused or reset, so the replica learns only from
// its timeouts). heal closes what the cut held, as the timeouts of a real partition's end would,
// and forwards new connections again.
type pgPartition struct {
	url    string // DATABASE_URL through the proxy
	ln     net.Listener
	target string

	mu     sync.Mutex
	isCut  bool
	healed chan struct{} // closed by heal
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func newPGPartition(t *testing.T, databaseURL string) *pgPartition {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil || u.Port() == "" {
		t.Fatalf("the test database's URL %q names no TCP port: %v", databaseURL, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pgPartition{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}, healed: make(chan struct{})}
	u.Host = ln.Addr().String()
	p.url = u.String()
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.heal() // closes every connection, so the pumps return
		p.wg.Wait()
	})
	return p
}

func (p *pgPartition) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = struct{}{}
		held := p.isCut
		p.mu.Unlock()
		if held {
			continue // no answer until heal closes it
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[up] = struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { p.pump(up, c) })
		p.wg.Go(func() { p.pump(c, up) })
	}
}

// pump copies src to dst while the partition is whole; during a cut it holds what it read.
func (p *pgPartition) pump(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			cut, healed := p.isCut, p.healed
			p.mu.Unlock()
			if cut {
				<-healed // heal closes both ends
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF, or closed by heal
		}
	}
}

// cut stops every byte, from now on, both ways.
func (p *pgPartition) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isCut, p.healed = true, make(chan struct{})
}

// heal closes every connection the partition held and forwards new ones again.
func (p *pgPartition) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
	if p.isCut {
		p.isCut = false
		close(p.healed)
	}
}
