package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
)

func withChunkDelay(d time.Duration) stackOption { return func(c *stackConfig) { c.chunkDelay = d } }

// SIGTERM while a turn streams: the server stops taking new work but lets the running turn
// finish — every chunk and the final reach the client — and then exits cleanly.
func TestShutdownDrainsInFlightTurns(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil, withChunkDelay(50*time.Millisecond))
	stream, err := s.client.HandleTurn(t.Context(), &pb.HandleTurnRequest{TenantId: s.tenant, SessionId: "s-drain",
		TurnId: uuid.NewString(), AgentId: s.agent, Text: "如何打好篮球"})
	if err != nil {
		t.Fatal(err)
	}
	var (
		deltas   int
		final    *pb.TurnFinal
		stopped  = make(chan error, 1)
		signaled bool
	)
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("stream broke during shutdown after %d deltas: %v", deltas, err)
		}
		if ev.GetTextDelta() != nil {
			deltas++
			if !signaled {
				// The first words are out: now the operator rolls the pod.
				signaled = true
				go func() { stopped <- s.shutdown() }()
			}
		}
		if f := ev.GetFinal(); f != nil {
			final = f
		}
	}
	if !signaled || final == nil || final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED {
		t.Fatalf("final = %v after %d deltas (shutdown signaled: %v)", final, deltas, signaled)
	}
	if deltas < 8 || !strings.Contains(final.GetText(), "篮球") {
		t.Fatalf("got %d deltas, final text %q: the turn did not run to its end", deltas, final.GetText())
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("run returned %v after draining", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the connector did not exit after the last turn finished")
	}
}
