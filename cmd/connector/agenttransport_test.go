package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

// TestMemoryPerOpenStream_h1_against_net_http is the measurement behind the agent calls'
// transport (docs/decisions.md, "Runtime", its entry on agent calls over HTTP/1.1):
// internal/h1 is kept, rather than net/http's Transport, because an open stream costs less
// through it. It opens N streams to `loadgen agent` (another process, so that only the client
// side is counted) through the connector's agent client (a2aclient.Client over netguard's client,
// with internal/h1 or with net/http's Transport tuned as netguard tunes it), each parked on its
// goroutine waiting for the next event after the first text, and reads this process's live heap,
// goroutine stacks (after a forced collection) and goroutines against the same with none open.
// It fails when h1 stops saving a fifth of net/http's bytes per stream, or net/http's two
// goroutines per connection come back.
func TestMemoryPerOpenStream_h1_against_net_http(t *testing.T) {
	// Not parallel: it reads this process's memory, which parallel tests would change.
	if testing.Short() {
		t.Skip("opens 2,600 streams to a separately built agent")
	}
	url := startLoadgenAgent(t)
	for _, n := range []int{300, 1000} {
		costs := map[bool]streamCost{}
		for _, inline := range []bool{true, false} {
			c := openStreamsCost(t, url, inline, n)
			costs[inline] = c
			name := map[bool]string{true: "h1", false: "net/http"}[inline]
			t.Logf("%d open streams through %s: %.1f KiB each (live heap %.1f, stacks %.1f), %.2f goroutines each",
				n, name, c.bytes/1024, (c.bytes-c.stack)/1024, c.stack/1024, c.goroutines)
		}
		h1, std := costs[true], costs[false]
		// The gap measured here (docs/decisions.md) is about half of net/http's cost, with and
		// without -race; the spread between runs, a few percent.
		if h1.bytes > 0.8*std.bytes {
			t.Errorf("%d streams: h1 costs %.1f KiB a stream, net/http %.1f: h1 no longer saves a fifth", n, h1.bytes/1024, std.bytes/1024)
		}
		if std.goroutines-h1.goroutines < 1.5 {
			t.Errorf("%d streams: %.2f goroutines a stream with h1, %.2f with net/http; want net/http's two per connection fewer", n, h1.goroutines, std.goroutines)
		}
	}
}

// streamCost is what one open stream costs this process, in bytes and goroutines.
type streamCost struct {
	bytes, stack, goroutines float64
}

// startLoadgenAgent builds cmd/loadgen and runs its stub agent until the test ends; it returns
// the agent's base URL.
func startLoadgenAgent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "loadgen")
	build := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-o", bin, "../loadgen")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build loadgen: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	cmd := exec.CommandContext(ctx, bin, "agent", "-addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("loadgen agent: %v", err)
	}
	fields := strings.Fields(line) // listening on http://ADDR grpc ADDR
	if len(fields) < 3 || !strings.HasPrefix(fields[2], "http://") {
		t.Fatalf("loadgen agent said %q", line)
	}
	return fields[2]
}

// openStreamsCost opens n streams to the agent at url through a client with or without
// internal/h1 and returns what each costs while parked.
func openStreamsCost(t *testing.T, url string, inline bool, n int) streamCost {
	t.Helper()
	hc := netguard.NewClient(netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		netguard.ClientOptions{MaxRedirects: 0, InlineHTTP1: inline})
	defer hc.CloseIdleConnections()
	c := a2aclient.NewClient(hc, a2aclient.ClientOptions{})
	defer c.Close()
	ep := a2aclient.Endpoint{URL: url + "/"}
	// stream opens one stream of chunks text chunks, delay apart, and returns once the first
	// text arrived; the stream stays open until ctx ends.
	stream := func(ctx context.Context, i int, chunks int, delay time.Duration) (*a2aclient.Stream, error) {
		s, err := c.SendStreamingMessage(ctx, ep, &a2a.SendMessageRequest{Message: a2a.Message{Role: a2a.RoleUser,
			MessageID: fmt.Sprint(i), Parts: a2a.Parts{a2a.TextPart(fmt.Sprintf("id=s%d chunks=%d delay=%s", i, chunks, delay))}}}, a2aclient.StreamOptions{})
		if err != nil {
			return nil, err
		}
		for {
			ev, err := s.Next()
			if err != nil {
				s.Close()
				return nil, err
			}
			if _, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
				return s, nil
			}
		}
	}
	// Whole streams first, so that what the first calls set up once is in the baseline.
	for i := range 8 {
		s, err := stream(t.Context(), i, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		for err == nil {
			_, err = s.Next()
		}
		s.Close()
	}
	before := readOwnMem()

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var (
		wg, started sync.WaitGroup
		errs        = make(chan error, n)
	)
	started.Add(n)
	for i := range n {
		wg.Go(func() {
			s, err := stream(ctx, i, 2, time.Minute) // the agent allows no longer pause
			started.Done()
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			if _, err := s.Next(); err != nil && !errors.Is(err, context.Canceled) {
				errs <- err // parked here until cancel
			}
		})
	}
	opened := make(chan struct{})
	go func() { started.Wait(); close(opened) }()
	select {
	case <-opened:
	case <-time.After(60 * time.Second): // some twenty times what opening them takes here
		t.Fatalf("%d streams did not all open within a minute", n)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	after := readOwnMem()
	cancel()
	wg.Wait()
	per := func(f func(streamCost) float64) float64 { return (f(after) - f(before)) / float64(n) }
	return streamCost{bytes: per(func(m streamCost) float64 { return m.bytes }), stack: per(func(m streamCost) float64 { return m.stack }),
		goroutines: per(func(m streamCost) float64 { return m.goroutines })}
}

// readOwnMem collects garbage and returns this process's live heap plus goroutine stacks, the
// stacks alone, and its goroutines.
func readOwnMem() streamCost {
	runtime.GC()
	runtime.GC() // the second also shrinks stacks the first found mostly unused
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return streamCost{bytes: float64(ms.HeapAlloc + ms.StackInuse), stack: float64(ms.StackInuse), goroutines: float64(runtime.NumGoroutine())}
}
