package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	connector "github.com/a2a-connector/a2a-connector"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/clitest"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
)

// Budgets of TestMemoryPerOpenTurn, from what one open turn cost the connector when they were
// set (docs/performance.md, "Memory per open turn": 34 KiB, of it 20 KiB of stacks, and 1.74
// goroutines). Twice that, so that the spread between runs and small changes pass; the stacks
// get 1.5 times, because they come in power-of-two sizes: the regression to catch is a parked
// turn's stack growing to the next size (16 → 32 KiB makes 37 KiB a turn), and their spread
// between runs is 3 %.
const (
	openTurns = 1000
	// openingAtOnce bounds the turns waiting for their first words at once.
	openingAtOnce = 100
	// budgetBytesPerTurn bounds the live heap plus the goroutine stacks per open turn.
	budgetBytesPerTurn = 68 << 10
	// budgetStackPerTurn bounds the goroutine stacks alone.
	budgetStackPerTurn = 30 << 10
	// budgetGoroutinesPerTurn bounds the goroutines an open turn keeps (net/http's two
	// connection loops per agent call, which internal/h1 does without, make 3.74).
	budgetGoroutinesPerTurn = 3.5
)

// TestMemoryPerOpenTurn opens openTurns turns at once on the real binary, each streaming from an
// agent that sends a chunk a second and never ends, and measures what they cost the connector's
// process: its live heap and goroutine stacks after a forced collection, and its goroutines,
// read from its pprof endpoint (so the test's own client and agent are not counted), against
// the same with no turn open. It guards what keeps a parked turn small, which no other test
// sees: the thin frames under a parked turn (the noinline and split-off functions of
// docs/performance.md) — 8 KiB more of frame there takes the turn's stack to the next size and
// fails the stack budget — and agent calls on the caller's goroutine (internal/h1) — net/http's
// connection loops fail the goroutine budget. It does not see a change within a stack size
// (newTurn inlined stays within today's 16 KiB), nor what only costs CPU (growStack).
func TestMemoryPerOpenTurn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		agent func(t *testing.T) *pacedAgent
	}{
		{"jsonrpc", func(t *testing.T) *pacedAgent { return newPacedAgent(t, 3, time.Second) }},
		// Over gRPC every open turn is a stream on grpc-go's one connection to the agent, with
		// grpc-go's context watcher goroutine per streaming call.
		// HTTP+JSON streams like JSON-RPC (SSE over internal/h1), with 1.0's paths and JSON.
		{"rest", func(t *testing.T) *pacedAgent {
			return newPacedAgentOn(t, fixtureagent.NewREST(t), connector.CardProfile{Name: "paced", ProtocolVersion: "1.0",
				EndpointBinding: fixtureagent.BindingHTTPJSON, Streaming: true}, 3, time.Second)
		}},
		{"grpc", func(t *testing.T) *pacedAgent {
			return newPacedAgentOn(t, fixtureagent.NewGRPC(t), connector.CardProfile{Name: "paced", ProtocolVersion: "1.0",
				EndpointBinding: fixtureagent.BindingGRPC, Streaming: true}, 3, time.Second)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { memoryPerOpenTurn(t, tc.agent(t)) })
	}
}

func memoryPerOpenTurn(t *testing.T, p *pacedAgent) {
	bin := clitest.Build(t, "connector")
	caps := strconv.Itoa(4 * openTurns)
	r := startReplica(t, bin, p, "A2AC_DEBUG_ADDR=127.0.0.1:0", "A2AC_TURN_TIMEOUT=2m",
		"A2AC_MAX_TURNS="+caps, "A2AC_TENANT_MAX_TURNS="+caps, "A2AC_AGENT_MAX_TURNS="+caps)
	debug := strings.TrimSuffix(loggedAddr(r.stderr.String(), "debug profiles served"), "/debug/pprof/")
	if debug == "" {
		t.Fatalf("no debug address logged:\n%s", r.stderr)
	}

	// A few whole turns first: the database connections, the agent's connection and what the
	// first turn sets up once are there before the baseline.
	p.fx.SetBehavior(fixtureagent.Stream)
	for i := range 8 {
		p.startTurn(t, t.Context(), r, fmt.Sprintf("warm-%d", i), uuid.NewString(), 0).finish(t)
	}
	p.fx.SetBehavior(fixtureagent.SlowStream) // one chunk a second, until the caller goes away
	before := readMem(t, debug)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var (
		wg      sync.WaitGroup
		started sync.WaitGroup // done when a turn's first words arrived: it is open and parked
		errs    = make(chan error, openTurns)
	)
	started.Add(openTurns)
	// At most openingAtOnce turns wait for their first words at a time: what is measured is
	// turns parked mid-reply, and a thousand opened in the same instant on a loaded 2-core box
	// could wait past the connector's first-event timeout before the agent's first chunk.
	opening := make(chan struct{}, openingAtOnce)
	for i := range openTurns {
		wg.Add(1)
		opening <- struct{}{}
		go func() {
			defer wg.Done()
			stream, err := r.client.HandleTurn(ctx, &pb.HandleTurnRequest{TenantId: p.tenant, SessionId: fmt.Sprintf("open-%d", i),
				TurnId: uuid.NewString(), AgentId: p.agent, Text: "tell me"})
			first := true
			for err == nil {
				var ev *pb.TurnEvent
				if ev, err = stream.Recv(); err == nil && first && ev.GetTextDelta() != nil {
					first = false
					<-opening
					started.Done()
				}
			}
			if first {
				errs <- fmt.Errorf("turn %d ended before its first words: %w", i, err)
				<-opening
				started.Done()
			}
		}()
	}
	opened := make(chan struct{})
	go func() { started.Wait(); close(opened) }()
	select {
	case <-opened:
	case <-time.After(60 * time.Second): // some twenty times what opening them takes here
		t.Fatal("the turns did not all start streaming within a minute")
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	after := readMem(t, debug)
	cancel()
	wg.Wait()

	perTurn := func(f func(mem) float64) float64 { return (f(after) - f(before)) / openTurns }
	total := perTurn(func(m mem) float64 { return float64(m.heapAlloc + m.stackInuse) })
	stack := perTurn(func(m mem) float64 { return float64(m.stackInuse) })
	goroutines := perTurn(func(m mem) float64 { return float64(m.goroutines) })
	t.Logf("per open turn: %.1f KiB (live heap %.1f KiB, stacks %.1f KiB), %.2f goroutines; before: %+v; after: %+v",
		total/1024, (total-stack)/1024, stack/1024, goroutines, before, after)
	if total > budgetBytesPerTurn {
		t.Errorf("an open turn costs the connector %.1f KiB of heap and stack, over the budget of %d KiB", total/1024, budgetBytesPerTurn>>10)
	}
	if stack > budgetStackPerTurn {
		t.Errorf("an open turn costs the connector %.1f KiB of goroutine stacks, over the budget of %d KiB", stack/1024, budgetStackPerTurn>>10)
	}
	if goroutines > budgetGoroutinesPerTurn {
		t.Errorf("an open turn keeps %.2f goroutines in the connector, over the budget of %.1f", goroutines, budgetGoroutinesPerTurn)
	}
}

// mem is what the connector's process holds: live heap, goroutine stacks, goroutines.
type mem struct {
	heapAlloc, stackInuse, goroutines uint64
}

// readMem collects the connector's garbage (the heap profile's gc=1) and reads its MemStats
// from the profile's text form, then counts its goroutines.
func readMem(t *testing.T, debugURL string) mem {
	t.Helper()
	var m mem
	get := func(path string, line func(string)) {
		res, err := http.Get(debugURL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, res.Status)
		}
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line(sc.Text())
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
	}
	get("/debug/pprof/heap?gc=1&debug=1", func(l string) {
		if rest, ok := strings.CutPrefix(l, "# HeapAlloc = "); ok {
			m.heapAlloc, _ = strconv.ParseUint(rest, 10, 64)
		}
		if rest, ok := strings.CutPrefix(l, "# Stack = "); ok { // in use / from the OS
			inuse, _, _ := strings.Cut(rest, " ")
			m.stackInuse, _ = strconv.ParseUint(inuse, 10, 64)
		}
	})
	get("/debug/pprof/goroutine?debug=1", func(l string) {
		if rest, ok := strings.CutPrefix(l, "goroutine profile: total "); ok {
			m.goroutines, _ = strconv.ParseUint(rest, 10, 64)
		}
	})
	if m.heapAlloc == 0 || m.stackInuse == 0 || m.goroutines == 0 {
		t.Fatalf("could not read the connector's memory: %+v", m)
	}
	return m
}
