package main

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/clitest"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
)

// TestTenantCap_is_the_deployments_across_three_replicas: three connector processes on one
// Postgres (a database of their own: the shares are the deployment's), one tenant capped at 30
// concurrent turns, 45 callers that retry a refused turn after 50 ms, each turn a paced reply of
// ~2 s from the fixture agent, which counts the streams it answers at once. The callers first
// send everything through replica 0, then spread evenly, then replica 0 is killed and they spread
// over the other two. At no moment does the agent answer more than the cap + 10 %, and after each
// change the tenant gets back to at least 90 % of its cap. The times are logged, not judged:
// they depend on this machine.
func TestTenantCap_is_the_deployments_across_three_replicas(t *testing.T) {
	t.Parallel()
	const (
		capN    = 30
		callers = capN * 3 / 2
		chunks  = 20
	)
	bin := clitest.Build(t, "connector")
	db := testDB.Another(t)
	p := newPacedAgentIn(t, db, fixtureagent.New(t), connector.CardProfile{Name: "paced", ProtocolVersion: "0.3.0", Streaming: true},
		chunks, 100*time.Millisecond)
	env := []string{"A2AC_CAP_SYNC=1s", "A2AC_TENANT_MAX_TURNS=" + strconv.Itoa(capN),
		"A2AC_AGENT_MAX_TURNS=" + strconv.Itoa(capN), "A2AC_DRAIN_DELAY=0"}
	rs := []*replica{startReplica(t, bin, p, env...), startReplica(t, bin, p, env...), startReplica(t, bin, p, env...)}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var (
		phase     atomic.Int32 // 0: all through replica 0; 1: even; 2: replica 0 dead, even over 1 and 2
		running   [3]atomic.Int32
		completed atomic.Int64
		failures  = make(chan error, callers)
		wg        sync.WaitGroup
	)
	route := func(i int) int {
		switch phase.Load() {
		case 0:
			return 0
		case 1:
			return i % 3
		}
		return 1 + i%2
	}
	for i := range callers {
		wg.Go(func() {
			for ctx.Err() == nil {
				r := route(i)
				err := tenantTurn(ctx, rs[r], p, &running[r])
				switch {
				case err == nil:
					completed.Add(1)
				case status.Code(err) == codes.ResourceExhausted:
					select {
					case <-ctx.Done():
					case <-time.After(50 * time.Millisecond):
					}
				case ctx.Err() != nil:
				case r == 0 && phase.Load() == 2:
					// A turn on the killed replica broke with it: the engine retries elsewhere.
				default:
					select {
					case failures <- err:
					default:
					}
					return
				}
			}
		})
	}

	// reach waits until the agent answers ≥ 90 % of the cap at once and ok holds, and returns
	// how long that took.
	reach := func(what string, ok func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		deadline := start.Add(60 * time.Second) // tens of times what it takes
		for p.fx.Open() < capN*9/10 || !ok() {
			select {
			case err := <-failures:
				t.Fatalf("%s: a turn failed: %v", what, err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d turns at the agent (%d %d %d by replica) after 60 s; want ≥ %d",
					what, p.fx.Open(), running[0].Load(), running[1].Load(), running[2].Load(), capN*9/10)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return time.Since(start)
	}
	// hold keeps the load on for three turn lengths: the agent's high-water mark sees it all.
	hold := func() {
		select {
		case <-ctx.Done():
		case <-time.After(3 * chunks * 100 * time.Millisecond):
		}
	}

	first := reach("all through replica 0", func() bool { return true })
	hold()
	phase.Store(1)
	even := reach("spread evenly", func() bool { return min(running[0].Load(), running[1].Load(), running[2].Load()) >= capN/6 })
	hold()
	if err := rs[0].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	phase.Store(2)
	// The dead replica's share comes back once its leases expire: the survivors run ≥ 90 %.
	killed := reach("replica 0 killed", func() bool { return running[1].Load()+running[2].Load() >= capN*9/10 })
	hold()
	cancel()
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Errorf("a turn failed: %v", err)
	}
	if got := p.fx.MaxOpen(); got > capN*11/10 {
		t.Errorf("the agent answered %d turns of the tenant at once; cap %d (+10 %%: %d)", got, capN, capN*11/10)
	}
	t.Logf("cap %d over 3 replicas: most turns at the agent at once %d; 90 %% of the cap %s after the demand (all through one replica), %s after spreading it, %s after killing replica 0 (A2AC_CAP_SYNC=1s: leases last 3 s); %d turns completed",
		capN, p.fx.MaxOpen(), first.Round(10*time.Millisecond), even.Round(10*time.Millisecond), killed.Round(10*time.Millisecond), completed.Load())
}

// tenantTurn runs one turn of p's tenant on r to its end; running counts it from its first
// event (admitted) to its end.
func tenantTurn(ctx context.Context, r *replica, p *pacedAgent, running *atomic.Int32) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	stream, err := r.client.HandleTurn(ctx, &pb.HandleTurnRequest{TenantId: p.tenant, SessionId: uuid.NewString(),
		TurnId: uuid.NewString(), AgentId: p.agent, Text: "tell me"})
	if err != nil {
		return err
	}
	admitted := false
	defer func() {
		if admitted {
			running.Add(-1)
		}
	}()
	for {
		_, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if !admitted {
			admitted = true
			running.Add(1)
		}
	}
}
