package invoke_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
)

// BenchmarkStreamTurn runs whole streaming turns against a local fixture agent that sends n small
// chunks. Besides ns/op and allocs/op it reports overhead-ns/chunk: the turn's time minus the
// time a plain HTTP client needs to read the very same event stream to the end (same server, same
// bytes), divided by n. That difference is what the connector adds per chunk — SSE framing,
// JSON-RPC and event decoding, text assembly, emitting — without the agent's and the network's
// share. (allocs/op and B/op include the in-process fixture agent's; a CPU profile shows the
// client side dominated by JSON decoding in internal/a2a, with invoke's own work about 1%.)
func BenchmarkStreamTurn(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run("chunks="+strconv.Itoa(n), func(b *testing.B) {
			srv := fixtureagent.New(b)
			srv.SetChunks(n)
			h := newHarness(b, func(o *invoke.Options) { o.TurnTimeout = time.Minute })
			agent := agentAt(srv.URL, true)
			req := connector.TurnRequest{Agent: &agent, MessageID: "bench", Text: "behave:stream"}
			want := fixtureagent.StreamText(n)
			hc := loopbackClient(b)
			raw := rawStreamRequest(b)

			var baseline time.Duration
			var chunks int
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				chunks = 0
				res := h.inv.Turn(b.Context(), req, func(e connector.TurnEvent) {
					if e.Kind == connector.TextEvent {
						chunks++
					}
				})
				if res.Outcome != connector.OutcomeCompleted || len(res.Text) != len(want) || chunks != n {
					b.Fatalf("turn = %s %+v, %d chunks", res.Outcome, res.Err, chunks)
				}
				b.StopTimer()
				start := time.Now()
				readRaw(b, hc, srv.URL+"/stream", raw)
				baseline += time.Since(start)
				b.StartTimer()
			}
			b.StopTimer()
			perTurn := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			perRead := float64(baseline.Nanoseconds()) / float64(b.N)
			b.ReportMetric((perTurn-perRead)/float64(n), "overhead-ns/chunk")
		})
	}
}

func rawStreamRequest(b *testing.B) []byte {
	b.Helper()
	params, err := json.Marshal(a2av0.MessageSendParams{Message: a2av0.Message{Role: a2av0.RoleUser, MessageID: "raw",
		Parts: a2av0.Parts{a2av0.TextPart("behave:stream")}}})
	if err != nil {
		b.Fatal(err)
	}
	body, err := json.Marshal(a2aclient.Request{JSONRPC: "2.0", ID: json.RawMessage(`"raw"`), Method: a2av0.MethodMessageStream, Params: params})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func readRaw(b *testing.B, hc *http.Client, url string, body []byte) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkTurnPerBinding runs whole streaming turns of three text chunks (the shape of the
// loadtest's turns) against the fixture agent's face of each binding and generation, in one
// process: time and allocations per turn, connector and agent together. It compares the
// bindings' cost without the load generator and the database, which make the loadtest's rows
// noisy on a shared machine.
func BenchmarkTurnPerBinding(b *testing.B) {
	for _, w := range fixtureWires {
		b.Run(w.name, func(b *testing.B) {
			srv := w.start(b)
			srv.SetChunks(3)
			h := newHarness(b, func(o *invoke.Options) { o.TurnTimeout = time.Minute })
			agent := fixtureAgentFor(srv, true)
			req := connector.TurnRequest{Agent: &agent, MessageID: "bench", Text: "behave:stream"}
			b.ReportAllocs()
			for b.Loop() {
				if res := h.inv.Turn(b.Context(), req, func(connector.TurnEvent) {}); res.Outcome != connector.OutcomeCompleted {
					b.Fatalf("turn = %s %+v", res.Outcome, res.Err)
				}
			}
		})
	}
}
