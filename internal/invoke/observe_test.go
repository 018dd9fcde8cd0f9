package invoke_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// observed is an invoker whose spans and metrics the test reads, with the agent client wrapped
// for tracing as in the binaries.
type observed struct {
	*harness
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	tracer trace.Tracer
}

func newObserved(t testing.TB) *observed {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	p, err := telemetry.Setup(t.Context(), telemetry.Options{SpanExporter: spans, MetricReader: reader})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	h := newHarness(t, func(o *invoke.Options) {
		o.TracerProvider, o.MeterProvider = p.TracerProvider, p.MeterProvider
		o.Client = netguard.NewClient(netguard.Policy{AllowInsecureHTTP: true,
			AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
			netguard.ClientOptions{WrapTransport: p.AgentTransport, InlineHTTP1: true})
		t.Cleanup(o.Client.CloseIdleConnections)
	})
	return &observed{harness: h, spans: spans, reader: reader, tracer: p.TracerProvider.Tracer("test")}
}

// turnSpan is the one invoke.Turn span exported.
func (o *observed) turnSpan(t *testing.T) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range o.spans.GetSpans() {
		if s.Name == "invoke.Turn" {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d invoke.Turn spans, want 1", len(found))
	}
	return found[0]
}

// int64Metric is the value of an int64 sum at attrs; ok is false when it was never recorded.
func (o *observed) int64Metric(t *testing.T, name string, attrs ...attribute.KeyValue) (v int64, ok bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := o.reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	want := attribute.NewSet(attrs...)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if dp.Attributes.Equals(&want) {
					return dp.Value, true
				}
			}
		}
	}
	return 0, false
}

func attrOf(s tracetest.SpanStub, key string) any {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.AsInterface()
		}
	}
	return nil
}

func TestTurnSpanOfAStreamingTurn(t *testing.T) {
	t.Parallel()
	srv := fixtureagent.New(t)
	srv.SetChunks(50)
	o := newObserved(t)
	ctx, parent := o.tracer.Start(t.Context(), "session")
	var during int64
	var texts int
	res := o.inv.Turn(ctx, connector.TurnRequest{Agent: new(agentAt(srv.URL, true)), MessageID: "m1",
		Text: "behave:stream " + userWords}, func(e connector.TurnEvent) {
		if e.Kind == connector.TextEvent {
			if texts == 0 {
				during, _ = o.int64Metric(t, invoke.MetricStreamsActive)
			}
			texts++
		}
	})
	parent.End()
	if res.Outcome != connector.OutcomeCompleted || texts != 50 {
		t.Fatalf("turn = %s %+v, %d texts", res.Outcome, res.Err, texts)
	}
	if during != 1 {
		t.Errorf("a2ac.streams.active during the stream = %d, want 1", during)
	}
	if after, _ := o.int64Metric(t, invoke.MetricStreamsActive); after != 0 {
		t.Errorf("a2ac.streams.active after the turn = %d, want 0", after)
	}

	span := o.turnSpan(t)
	if span.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("invoke.Turn is not a child of the caller's span")
	}
	for key, want := range map[string]any{
		"a2a.method": "message/stream", "a2a.streaming": true, "a2a.continuing": false,
		"a2a.task.id": res.TaskID, "a2a.context.id": res.ContextID, "a2a.task.state": "completed",
		"a2ac.outcome": "COMPLETED", "a2ac.interrupted": false, "a2a.non_text_parts": int64(0),
	} {
		if got := attrOf(span, key); got != want {
			t.Errorf("%s = %#v, want %#v", key, got, want)
		}
	}
	// One event for 50 chunks: the chunk loop records nothing else.
	if len(span.Events) != 1 || span.Events[0].Name != "first_text" {
		t.Errorf("events = %v, want one first_text", span.Events)
	}
	// The agent call is a client span below the turn, and the agent got its traceparent.
	var client int
	for _, s := range o.spans.GetSpans() {
		if s.SpanKind == trace.SpanKindClient && s.Parent.SpanID() == span.SpanContext.SpanID() {
			client++
		}
	}
	if client != 1 {
		t.Errorf("%d client spans below invoke.Turn, want 1", client)
	}
	for _, r := range srv.RequestsFor("message/stream") {
		if !strings.Contains(r.Header.Get("Traceparent"), span.SpanContext.TraceID().String()) {
			t.Errorf("agent got traceparent %q", r.Header.Get("Traceparent"))
		}
	}
	for _, s := range o.spans.GetSpans() {
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), userWords) {
				t.Errorf("span %s: %s quotes the user", s.Name, kv.Key)
			}
		}
	}
}

func TestTurnSpanRecordsFallbackAndErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		behave    string
		wantCode  string
		wantEvent string
	}{
		{name: "stream_on_url_fallback_is_an_event", behave: "no-stream-path", wantEvent: "stream_on_url"},
		{name: "resubscribe_is_an_event", behave: "stream-cut-resumable", wantEvent: "resubscribe"},
		{name: "agent_failure_is_counted_by_code", behave: "failed", wantCode: connector.CodeTaskFailed},
		{name: "http_status_is_counted_by_code", behave: "http-500", wantCode: connector.CodeAgentHTTPStatus},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := fixtureagent.New(t)
			o := newObserved(t)
			res := o.inv.Turn(t.Context(), connector.TurnRequest{Agent: new(agentAt(srv.URL, true)), MessageID: "m1",
				Text: "behave:" + c.behave}, nil)
			span := o.turnSpan(t)
			if c.wantEvent != "" {
				var names []string
				for _, e := range span.Events {
					names = append(names, e.Name)
				}
				if !strings.Contains(strings.Join(names, ","), c.wantEvent) {
					t.Errorf("events %v lack %s", names, c.wantEvent)
				}
			}
			if c.wantCode == "" {
				if res.Err != nil {
					t.Fatalf("turn failed: %+v", res.Err)
				}
				return
			}
			if res.Err == nil || res.Err.Code != c.wantCode {
				t.Fatalf("error = %+v, want %s", res.Err, c.wantCode)
			}
			if n, _ := o.int64Metric(t, invoke.MetricAgentErrors, attribute.String("error.code", c.wantCode)); n != 1 {
				t.Errorf("a2ac.agent.errors{%s} = %d, want 1", c.wantCode, n)
			}
			if got := attrOf(span, "error.code"); got != c.wantCode {
				t.Errorf("error.code = %v", got)
			}
			// The status names the code, never the agent's message.
			if span.Status.Description != c.wantCode {
				t.Errorf("status = %+v, want the code only", span.Status)
			}
		})
	}
}

// A barge-in is not an agent error.
func TestCallerCancelIsNotAnAgentError(t *testing.T) {
	t.Parallel()
	srv := fixtureagent.New(t)
	o := newObserved(t)
	ctx, cancel := context.WithCancel(t.Context())
	res := o.inv.Turn(ctx, connector.TurnRequest{Agent: new(agentAt(srv.URL, true)), MessageID: "m1",
		Text: "behave:slow-stream"}, func(e connector.TurnEvent) {
		if e.Kind == connector.TextEvent {
			cancel()
		}
	})
	if res.Outcome != connector.OutcomeCanceled {
		t.Fatalf("outcome = %s %+v", res.Outcome, res.Err)
	}
	if n, ok := o.int64Metric(t, invoke.MetricAgentErrors, attribute.String("error.code", connector.CodeCanceled)); ok {
		t.Errorf("a barge-in was counted as an agent error (%d)", n)
	}
}
