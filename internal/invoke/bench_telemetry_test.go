package invoke_test

import (
	"context"
	"net/netip"
	"strconv"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// BenchmarkStreamTurnTraced is BenchmarkStreamTurn with telemetry fully on, as in production
// with a collector: every turn sampled (spans handed to an exporter that drops them, so the
// benchmark measures the SDK's work and not a network), the agent client wrapped in otelhttp,
// and metrics recorded into a manual reader. BenchmarkStreamTurn itself runs with telemetry off
// (the no-op providers), which is the default. Compare allocs/op between the two: the
// difference per turn is constant, not per chunk.
func BenchmarkStreamTurnTraced(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run("chunks="+strconv.Itoa(n), func(b *testing.B) {
			p, err := telemetry.Setup(b.Context(), telemetry.Options{
				SpanExporter: tracetest.NewNoopExporter(), MetricReader: sdkmetric.NewManualReader()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = p.Shutdown(context.Background()) })
			srv := fixtureagent.New(b)
			srv.SetChunks(n)
			h := newHarness(b, func(o *invoke.Options) {
				o.TurnTimeout = time.Minute
				o.TracerProvider, o.MeterProvider = p.TracerProvider, p.MeterProvider
				o.Client = netguard.NewClient(netguard.Policy{AllowInsecureHTTP: true,
					AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
					netguard.ClientOptions{WrapTransport: p.AgentTransport, InlineHTTP1: true})
				b.Cleanup(o.Client.CloseIdleConnections)
			})
			req := connector.TurnRequest{Agent: new(agentAt(srv.URL, true)), MessageID: "bench", Text: "behave:stream"}
			want := fixtureagent.StreamText(n)
			tracer := p.TracerProvider.Tracer("bench")

			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				// A sampled parent, as the session's span would be.
				ctx, parent := tracer.Start(b.Context(), "session")
				chunks := 0
				res := h.inv.Turn(ctx, req, func(e connector.TurnEvent) {
					if e.Kind == connector.TextEvent {
						chunks++
					}
				})
				parent.End()
				if res.Outcome != connector.OutcomeCompleted || len(res.Text) != len(want) || chunks != n {
					b.Fatalf("turn = %s %+v, %d chunks", res.Outcome, res.Err, chunks)
				}
			}
		})
	}
}
