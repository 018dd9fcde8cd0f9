package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
)

// BenchmarkHandleTurn measures whole turns through the real connector (gRPC in, two Postgres
// round trips, A2A message/stream to the demo agent over HTTP, gRPC events out) and reports:
//
//   - first-text-ns: from sending the request to receiving the first TextDelta;
//   - overhead-ns/turn: the turn's time minus the time a plain HTTP client needs to run the same
//     message/stream against the same agent directly — what the connector adds per turn, all
//     included (gRPC both ways, session lookup and save in Postgres, JSON-RPC, SSE, assembly).
func BenchmarkHandleTurn(b *testing.B) {
	s := startStack(b, map[string]string{"A2AC_LOG_LEVEL": "error"})
	const text = "重复我说的话：今天天气很好，我们去公园散步吧"
	hc := &http.Client{}
	callDirect := func() {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"b","method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":%q,"parts":[{"kind":"text","text":%q}]}}}`, uuid.NewString(), text)
		resp, err := hc.Post(s.demoURL+agent.StreamPath, "application/json", bytes.NewBufferString(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	var firstText, direct time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		stream, err := s.client.HandleTurn(b.Context(), &pb.HandleTurnRequest{TenantId: s.tenant,
			SessionId: fmt.Sprintf("bench-%d", i), TurnId: uuid.NewString(), AgentId: s.agent, Text: text})
		if err != nil {
			b.Fatal(err)
		}
		var gotText bool
		for {
			ev, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if ev.GetTextDelta() != nil && !gotText {
				gotText = true
				firstText += time.Since(start)
			}
			if f := ev.GetFinal(); f != nil && f.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED {
				b.Fatalf("final = %v", f)
			}
		}
		b.StopTimer()
		t0 := time.Now()
		callDirect()
		direct += time.Since(t0)
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(firstText.Nanoseconds())/n, "first-text-ns")
	b.ReportMetric((float64(b.Elapsed().Nanoseconds())-float64(direct.Nanoseconds()))/n, "overhead-ns/turn")
}

// BenchmarkHandleTurnParallel runs turns from many concurrent dialog sessions (GOMAXPROCS × 8
// goroutines) through one connector: ns/op is the inverse of throughput on this machine, with
// the demo agent, Postgres and the client sharing its cores.
func BenchmarkHandleTurnParallel(b *testing.B) {
	s := startStack(b, map[string]string{"A2AC_LOG_LEVEL": "error"})
	const text = "重复我说的话：今天天气很好"
	b.SetParallelism(8)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb2 *testing.PB) {
		session := "par-" + uuid.NewString()
		for pb2.Next() {
			stream, err := s.client.HandleTurn(b.Context(), &pb.HandleTurnRequest{TenantId: s.tenant,
				SessionId: session, TurnId: uuid.NewString(), AgentId: s.agent, Text: text})
			if err != nil {
				b.Error(err)
				return
			}
			for {
				ev, err := stream.Recv()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					b.Error(err)
					return
				}
				if f := ev.GetFinal(); f != nil && f.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED {
					b.Errorf("final = %v", f)
					return
				}
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}
