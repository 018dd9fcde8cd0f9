package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/admission"
	"github.com/a2a-connector/a2a-connector/internal/breaker"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/pgpool"
	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/session"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"

	connector "github.com/a2a-connector/a2a-connector"
)

func withAPIKey(key string) stackOption { return func(c *stackConfig) { c.apiKey = key } }

func withTelemetry(o telemetry.Options) stackOption { return func(c *stackConfig) { c.telemetry = o } }

// One streaming turn, as the dialog engine would send it (with its own trace context and
// baggage), leaves one trace: the gRPC server span, below it the session span, below that the
// store's query spans and the invoke span, and below that the HTTP client span of the call to
// the agent, whose traceparent the agent received. Nothing recorded anywhere quotes the user or
// the agent's API key.
func TestTraceOfAStreamingTurn(t *testing.T) {
	t.Parallel()
	const (
		apiKey = "k3y-7f0c2d9e-only-the-agent-may-see-this"
		// The demo agent repeats it, so the reply would leak it too.
		userText = "重复我说的话：我的银行卡密码是 private-utterance-8841"
		marker   = "private-utterance-8841"
		userID   = "platform-user-private-5531"
	)
	spans := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	s := startStack(t, map[string]string{"A2AC_IDENTITY_ISSUER": "https://platform.example"}, withAPIKey(apiKey),
		withTelemetry(telemetry.Options{SpanExporter: spans, MetricReader: reader}), withDB(testDB.NewDatabase(t)))
	// The agent asks for the caller's identity: neither the user id nor the token may be
	// recorded either.
	on := true
	if _, err := s.store.UpdateAgent(t.Context(), s.tenant, s.agent, connector.AgentPatch{CallerIdentity: &on}); err != nil {
		t.Fatal(err)
	}

	// The dialog engine's span, as it would arrive in the gRPC metadata.
	engine := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	ctx := metadata.AppendToOutgoingContext(t.Context(),
		"traceparent", fmt.Sprintf("00-%s-%s-01", engine.TraceID(), engine.SpanID()),
		"baggage", "platform.user=u-1234")
	final := handleTurn(t, ctx, s, &pb.HandleTurnRequest{TenantId: s.tenant, SessionId: "s-trace",
		TurnId: uuid.NewString(), AgentId: s.agent, Text: userText, Caller: &pb.Caller{UserId: userID}})
	if final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED || !strings.Contains(final.GetText(), marker) {
		t.Fatalf("final = %v %q (error %v)", final.GetOutcome(), final.GetText(), final.GetError())
	}

	// The server span ends just after the client saw the end of the stream.
	serverName := pb.Connector_ServiceDesc.ServiceName + "/HandleTurn"
	got := waitForSpan(t, spans, serverName)

	server := only(t, got, func(s tracetest.SpanStub) bool { return s.Name == serverName })
	if server.SpanKind != trace.SpanKindServer || server.Parent.SpanID() != engine.SpanID() ||
		server.SpanContext.TraceID() != engine.TraceID() {
		t.Fatalf("server span %s kind %v parent %v, want a server span below the engine's %v",
			server.Name, server.SpanKind, server.Parent, engine)
	}
	sess := only(t, got, childOf(server, "session.HandleTurn"))
	wantAttrs(t, sess, map[attribute.Key]any{
		"a2ac.tenant.id": s.tenant, "a2ac.agent.id": s.agent, "a2ac.held": false, "a2ac.outcome": "COMPLETED",
	})
	inv := only(t, got, childOf(sess, "invoke.Turn"))
	wantAttrs(t, inv, map[attribute.Key]any{
		"a2ac.agent.id": s.agent, "a2a.method": "message/stream", "a2a.streaming": true,
		"a2a.task.id": final.GetTaskId(), "a2a.context.id": final.GetContextId(),
		"a2a.task.state": "completed", "a2ac.outcome": "COMPLETED", "a2a.non_text_parts": int64(0),
	})
	if n := countEvents(inv, "first_text"); n != 1 {
		t.Errorf("invoke span has %d first_text events, want 1", n)
	}
	var queries int
	for _, sp := range got {
		if sp.Parent.SpanID() == sess.SpanContext.SpanID() && attr(sp, "db.system.name") == "postgresql" {
			queries++
		}
	}
	if queries < 2 { // the turn's lookup and the save of its result, at least
		t.Errorf("%d database spans below the session span, want the lookup and the save", queries)
	}
	httpSpan := only(t, got, func(sp tracetest.SpanStub) bool {
		// The caller's identity keys are read (here: created) below the invoke span too.
		return sp.Parent.SpanID() == inv.SpanContext.SpanID() && sp.SpanKind == trace.SpanKindClient && attr(sp, "db.system.name") == nil
	})
	if u, _ := attr(httpSpan, "url.full").(string); !strings.HasSuffix(u, agent.StreamPath) {
		t.Errorf("agent call span url.full = %q, want the stream endpoint", u)
	}
	for _, sp := range got {
		if sp.SpanContext.TraceID() != engine.TraceID() {
			t.Errorf("span %s is in trace %s, want the engine's %s", sp.Name, sp.SpanContext.TraceID(), engine.TraceID())
		}
	}

	// The agent joined the trace: its traceparent names the HTTP client span. Baggage stays
	// inside the platform.
	var calls int
	var identityToken string
	for _, req := range s.demo.Requests() {
		if req.Method != "message/stream" {
			continue
		}
		calls++
		want := fmt.Sprintf("00-%s-%s-01", engine.TraceID(), httpSpan.SpanContext.SpanID())
		if got := req.Header.Get("Traceparent"); got != want {
			t.Errorf("agent got traceparent %q, want %q", got, want)
		}
		if b := req.Header.Get("Baggage"); b != "" {
			t.Errorf("agent got baggage %q; the platform's baggage must not leave it", b)
		}
		if identityToken = req.Header.Get("A2A-Caller-Identity"); identityToken == "" {
			t.Errorf("agent got no caller identity; the test would not prove the token stays out of spans")
		}
		if req.Header.Get("X-Api-Key") != "set" {
			t.Errorf("agent got no API key; the test would not prove the key stays out of spans")
		}
	}
	if calls != 1 {
		t.Fatalf("agent got %d message/stream calls, want 1", calls)
	}

	// Nothing anywhere quotes the user, the reply or the key.
	for _, sp := range spans.GetSpans() {
		for _, where := range spanStrings(sp) {
			for _, secret := range []string{marker, apiKey, userText, final.GetText(), userID, identityToken} {
				if strings.Contains(where, secret) {
					t.Errorf("span %s records %q", sp.Name, where)
				}
			}
		}
	}

	// The turn was measured.
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	m := metricsByName(rm)
	completed := attribute.NewSet(attribute.String("a2ac.outcome", "COMPLETED"))
	if got := sumOf(t, m, "a2ac.turns", completed); got != 1 {
		t.Errorf("a2ac.turns{COMPLETED} = %d, want 1", got)
	}
	for _, name := range []string{"a2ac.turn.duration", "a2ac.turn.time_to_first_text"} {
		if got := histCount(t, m, name, completed); got != 1 {
			t.Errorf("%s{COMPLETED} has %d observations, want 1", name, got)
		}
	}
	if got := sumOf(t, m, "a2ac.streams.active", *attribute.EmptySet()); got != 0 {
		t.Errorf("a2ac.streams.active = %d after the turn, want 0", got)
	}
	if _, ok := m["a2ac.agent.errors"]; ok {
		t.Error("a2ac.agent.errors recorded for a turn without error")
	}
	for _, name := range []string{pgpool.MetricPoolAcquired, pgpool.MetricPoolTotal, pgpool.MetricPoolAcquires} {
		if _, ok := m[name]; !ok {
			t.Errorf("pool metric %s missing", name)
		}
	}
	for name, md := range m {
		for _, kv := range dataAttrs(md.Data) {
			if v := kv.Value.String(); strings.Contains(v, marker) || strings.Contains(v, apiKey) {
				t.Errorf("metric %s has attribute %s=%q", name, kv.Key, v)
			}
		}
	}
}

// A failed agent call is a failed turn: error status and code on the spans, counted by code.
func TestTraceOfAFailedTurn(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	s := startStack(t, nil, withAPIKey("the-right-key"),
		withTelemetry(telemetry.Options{SpanExporter: spans, MetricReader: reader}))
	// A key sealed with a secret key the connector does not have cannot be opened.
	other, err := secret.New(bytes.Repeat([]byte{9}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := other.Seal(s.agent, []byte("the-right-key"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.store.UpdateAgent(t.Context(), s.tenant, s.agent, connector.AgentPatch{
		Credential: &connector.Sealed{Ciphertext: sealed.Ciphertext, KeyID: sealed.KeyID}}); err != nil {
		t.Fatal(err)
	}
	r := s.turn(t, "s-fail", s.agent, "重复我说的话：你好")
	wantOutcome(t, r, pb.Outcome_OUTCOME_FAILED)
	if r.final.GetError().GetCode() != "api_key" {
		t.Fatalf("error = %v, want api_key", r.final.GetError())
	}
	got := waitForSpan(t, spans, pb.Connector_ServiceDesc.ServiceName+"/HandleTurn")
	inv := only(t, got, func(sp tracetest.SpanStub) bool { return sp.Name == "invoke.Turn" })
	wantAttrs(t, inv, map[attribute.Key]any{"a2ac.outcome": "FAILED", "error.code": "api_key"})
	if inv.Status.Code.String() != "Error" || inv.Status.Description != "api_key" {
		t.Errorf("invoke span status = %+v, want Error with the code only", inv.Status)
	}
	if n := countEvents(inv, "first_text"); n != 0 {
		t.Errorf("a turn without text has %d first_text events", n)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	m := metricsByName(rm)
	if got := sumOf(t, m, "a2ac.agent.errors", attribute.NewSet(attribute.String("error.code", "api_key"))); got != 1 {
		t.Errorf("a2ac.agent.errors{api_key} = %d, want 1", got)
	}
	failed := attribute.NewSet(attribute.String("a2ac.outcome", "FAILED"))
	if got := sumOf(t, m, "a2ac.turns", failed); got != 1 {
		t.Errorf("a2ac.turns{FAILED} = %d, want 1", got)
	}
	if got := histCount(t, m, "a2ac.turn.time_to_first_text", failed); got != 0 {
		t.Errorf("time to first text measured for a turn without text (%d)", got)
	}
}

// With tracing and metrics off (no exporter: the default), the server records nothing, yet the
// agent still joins the dialog engine's trace: it gets the engine's own traceparent, and never
// the baggage. A turn that carries no trace context sends none.
func TestTraceContextPassesThroughWithTelemetryOff(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	engine := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c},
		SpanID:     trace.SpanID{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31},
		TraceFlags: trace.FlagsSampled,
	})
	traceparent := fmt.Sprintf("00-%s-%s-01", engine.TraceID(), engine.SpanID())
	ctx := metadata.AppendToOutgoingContext(t.Context(), "traceparent", traceparent,
		"tracestate", "platform=dialog", "baggage", "platform.user=u-1234")
	wantOutcome(t, turnResult{final: handleTurn(t, ctx, s, &pb.HandleTurnRequest{TenantId: s.tenant,
		SessionId: "s-off-1", TurnId: uuid.NewString(), AgentId: s.agent, Text: "重复我说的话：你好"})}, pb.Outcome_OUTCOME_COMPLETED)
	wantOutcome(t, turnResult{final: handleTurn(t, t.Context(), s, &pb.HandleTurnRequest{TenantId: s.tenant,
		SessionId: "s-off-2", TurnId: uuid.NewString(), AgentId: s.agent, Text: "重复我说的话：你好"})}, pb.Outcome_OUTCOME_COMPLETED)

	var got []http.Header
	for _, req := range s.demo.Requests() {
		if req.Method == "message/stream" {
			got = append(got, req.Header)
		}
	}
	if len(got) != 2 {
		t.Fatalf("agent got %d message/stream calls, want 2", len(got))
	}
	if tp, ts := got[0].Get("Traceparent"), got[0].Get("Tracestate"); tp != traceparent || ts != "platform=dialog" {
		t.Errorf("first turn: agent got traceparent %q tracestate %q, want the engine's %q and %q", tp, ts, traceparent, "platform=dialog")
	}
	if b := got[0].Get("Baggage"); b != "" {
		t.Errorf("agent got baggage %q; the platform's baggage must not leave it", b)
	}
	if tp := got[1].Get("Traceparent"); tp != "" {
		t.Errorf("a turn without trace context sent traceparent %q", tp)
	}
}

// The trace context reaches a gRPC agent as it reaches an HTTP one, in the call's metadata
// (seen by a2a-go v2's gRPC handler): with telemetry off the engine's own traceparent, with it
// on a traceparent in the engine's trace whose parent is the turn's invoke span (gRPC agent
// calls have no client span of their own); the engine's tracestate either way, never its
// baggage.
func TestTraceContextReachesGRPCAgents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		telemetry bool
	}{{"telemetry_off", false}, {"telemetry_on", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spans := tracetest.NewInMemoryExporter()
			var opts []stackOption
			if tc.telemetry {
				opts = append(opts, withTelemetry(telemetry.Options{SpanExporter: spans}))
			}
			s := startStack(t, nil, opts...)
			var mu sync.Mutex
			var got []metadata.MD
			const key = "k3y-of-the-grpc-agent"
			peer := sdkagent.New(t, sdkagent.Options{Streaming: true, GRPCOnly: true, APIKey: key,
				ObserveGRPC: func(method string, md metadata.MD, _ any) {
					mu.Lock()
					got = append(got, md.Copy())
					mu.Unlock()
				}})
			a := s.register(t, peer.CardURL, key)
			engine := trace.NewSpanContext(trace.SpanContextConfig{
				TraceID:    trace.TraceID{0x5c, 0x1e, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c},
				SpanID:     trace.SpanID{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31},
				TraceFlags: trace.FlagsSampled,
			})
			traceparent := fmt.Sprintf("00-%s-%s-01", engine.TraceID(), engine.SpanID())
			ctx := metadata.AppendToOutgoingContext(t.Context(), "traceparent", traceparent,
				"tracestate", "platform=dialog", "baggage", "platform.user=u-1234")
			final := handleTurn(t, ctx, s, &pb.HandleTurnRequest{TenantId: s.tenant, SessionId: "s-grpc-trace",
				TurnId: uuid.NewString(), AgentId: a.ID, Text: "hello"})
			wantOutcome(t, turnResult{final: final}, pb.Outcome_OUTCOME_COMPLETED)

			want := traceparent
			if tc.telemetry {
				turnSpans := waitForSpan(t, spans, pb.Connector_ServiceDesc.ServiceName+"/HandleTurn")
				inv := only(t, turnSpans, func(sp tracetest.SpanStub) bool { return sp.Name == "invoke.Turn" })
				// The agent call has a client span of its own below the turn's (otelgrpc, as
				// otelhttp's on HTTP), and the agent's traceparent names it.
				call := only(t, turnSpans, func(sp tracetest.SpanStub) bool {
					return sp.Parent.SpanID() == inv.SpanContext.SpanID() && sp.SpanKind == trace.SpanKindClient
				})
				if call.Name != "lf.a2a.v1.A2AService/SendStreamingMessage" {
					t.Errorf("agent call span %q, want the gRPC method's", call.Name)
				}
				want = fmt.Sprintf("00-%s-%s-01", engine.TraceID(), call.SpanContext.SpanID())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 {
				t.Fatalf("the agent got %d calls, want 1", len(got))
			}
			if tp := got[0].Get("traceparent"); len(tp) != 1 || tp[0] != want {
				t.Errorf("agent got traceparent %q, want %q", tp, want)
			}
			if ts := got[0].Get("tracestate"); len(ts) != 1 || ts[0] != "platform=dialog" {
				t.Errorf("agent got tracestate %q, want the engine's %q", ts, "platform=dialog")
			}
			if b := got[0].Get("baggage"); len(b) != 0 {
				t.Errorf("agent got baggage %q; the platform's baggage must not leave it", b)
			}
		})
	}
}

// handleTurn runs one turn with ctx (which carries the engine's metadata) and returns its final.
func handleTurn(t *testing.T, ctx context.Context, s *stack, req *pb.HandleTurnRequest) *pb.TurnFinal {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	stream, err := s.client.HandleTurn(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var final *pb.TurnFinal
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if f := ev.GetFinal(); f != nil {
			final = f
		}
	}
	if final == nil {
		t.Fatal("no final event")
	}
	return final
}

// waitForSpan waits until a span named name was exported and returns the spans of its trace.
func waitForSpan(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStubs {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // only a failing test waits this long
	for {
		all := exp.GetSpans()
		for _, sp := range all {
			if sp.Name != name {
				continue
			}
			var out tracetest.SpanStubs
			for _, o := range all {
				if o.SpanContext.TraceID() == sp.SpanContext.TraceID() {
					out = append(out, o)
				}
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span %q exported; got %v", name, spanNames(all))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func spanNames(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func childOf(parent tracetest.SpanStub, name string) func(tracetest.SpanStub) bool {
	return func(s tracetest.SpanStub) bool {
		return s.Name == name && s.Parent.SpanID() == parent.SpanContext.SpanID()
	}
}

// only returns the one span matching, failing the test when there is none or more.
func only(t *testing.T, spans tracetest.SpanStubs, match func(tracetest.SpanStub) bool) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if match(s) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans match, want 1; the trace has %v", len(found), tree(spans))
	}
	return found[0]
}

// tree lists "name <- parent name" for a failure message.
func tree(spans tracetest.SpanStubs) []string {
	names := map[trace.SpanID]string{}
	for _, s := range spans {
		names[s.SpanContext.SpanID()] = s.Name
	}
	var out []string
	for _, s := range spans {
		out = append(out, s.Name+" <- "+names[s.Parent.SpanID()])
	}
	return out
}

func attr(s tracetest.SpanStub, key attribute.Key) any {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.AsInterface()
		}
	}
	return nil
}

func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[attribute.Key]any) {
	t.Helper()
	for k, v := range want {
		if got := attr(s, k); got != v {
			t.Errorf("span %s: %s = %#v, want %#v", s.Name, k, got, v)
		}
	}
}

func countEvents(s tracetest.SpanStub, name string) int {
	n := 0
	for _, e := range s.Events {
		if e.Name == name {
			n++
		}
	}
	return n
}

// spanStrings is every string a span carries: its name, status, attribute values, events and
// their attributes, and links' attributes.
func spanStrings(s tracetest.SpanStub) []string {
	out := []string{s.Name, s.Status.Description}
	kvs := func(list []attribute.KeyValue) {
		for _, kv := range list {
			out = append(out, string(kv.Key), kv.Value.String())
		}
	}
	kvs(s.Attributes)
	for _, e := range s.Events {
		out = append(out, e.Name)
		kvs(e.Attributes)
	}
	for _, l := range s.Links {
		kvs(l.Attributes)
	}
	return out
}

func metricsByName(rm metricdata.ResourceMetrics) map[string]metricdata.Metrics {
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// sumOf is the value of a counter or gauge-like sum at the given attributes (0 when absent).
func sumOf(t *testing.T, m map[string]metricdata.Metrics, name string, set attribute.Set) int64 {
	t.Helper()
	md, ok := m[name]
	if !ok {
		t.Errorf("metric %s not recorded", name)
		return 0
	}
	sum, ok := md.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("metric %s is %T, want an int64 sum", name, md.Data)
	}
	for _, dp := range sum.DataPoints {
		if dp.Attributes.Equals(&set) {
			return dp.Value
		}
	}
	return 0
}

// histCount is how many observations a histogram has at the given attributes.
func histCount(t *testing.T, m map[string]metricdata.Metrics, name string, set attribute.Set) uint64 {
	t.Helper()
	md, ok := m[name]
	if !ok {
		return 0
	}
	h, ok := md.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("metric %s is %T, want a float64 histogram", name, md.Data)
	}
	for _, dp := range h.DataPoints {
		if dp.Attributes.Equals(&set) {
			return dp.Count
		}
	}
	return 0
}

// dataAttrs lists the attributes of every data point.
func dataAttrs(data metricdata.Aggregation) []attribute.KeyValue {
	var out []attribute.KeyValue
	switch d := data.(type) {
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes.ToSlice()...)
		}
	case metricdata.Sum[float64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes.ToSlice()...)
		}
	case metricdata.Gauge[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes.ToSlice()...)
		}
	case metricdata.Histogram[float64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes.ToSlice()...)
		}
	}
	return out
}

// The Prometheus endpoint of the real binary serves the turn's metrics under the names
// docs/operations.md documents.
func TestPrometheusEndpointServesTurnMetrics(t *testing.T) {
	t.Parallel()
	s := startStack(t, map[string]string{"A2AC_METRICS_ADDR": "127.0.0.1:0"})
	addr := s.server.MetricsAddr()
	wantOutcome(t, s.turn(t, "s-prom", s.agent, "重复我说的话：今天天气很好"), pb.Outcome_OUTCOME_COMPLETED)

	wants := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^a2ac_turns_total\{[^}]*a2ac_outcome="COMPLETED"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^a2ac_turn_duration_seconds_count\{[^}]*a2ac_outcome="COMPLETED"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^a2ac_turn_time_to_first_text_seconds_bucket\{[^}]*a2ac_outcome="COMPLETED"`),
		regexp.MustCompile(`(?m)^a2ac_streams_active\{[^}]*\} 0$`),
		regexp.MustCompile(`(?m)^a2ac_admission_in_flight\{[^}]*\} 0$`),
		regexp.MustCompile(`(?m)^a2ac_db_pool_acquires_total\{[^}]*\} [1-9]`),
		regexp.MustCompile(`(?m)^rpc_server_call_duration_seconds_count\{[^}]*HandleTurn`),
		regexp.MustCompile(`(?m)^http_client_request_duration_seconds_count\{`),
	}
	// The gRPC server records its call metrics when the handler returns, which can be a moment
	// after the client saw the end of the stream: scrape until everything is there (or 5 s).
	var text string
	var missing []string
	for i := 0; i < 50; i++ {
		res, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics: %s %v", res.Status, err)
		}
		text, missing = string(body), nil
		for _, want := range wants {
			if !want.MatchString(text) {
				missing = append(missing, want.String())
			}
		}
		if len(missing) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, m := range missing {
		t.Errorf("/metrics has no line matching %s", m)
	}
	doc := operationsDoc(t)
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (a2ac_\w+) `).FindAllStringSubmatch(text, -1) {
		if !strings.Contains(doc, "`"+m[1]+"`") {
			t.Errorf("metric %s is served but not documented in docs/operations.md", m[1])
		}
	}
}

// Every metric the code records is in the table of docs/operations.md, and the table names
// nothing the code does not record.
func TestMetricsAreDocumented(t *testing.T) {
	t.Parallel()
	doc := operationsDoc(t)
	code := []string{
		session.MetricTurns, session.MetricTurnDuration, session.MetricTimeToFirstText,
		invoke.MetricAgentErrors, invoke.MetricStreamsActive, cardfetch.MetricFetches,
		breaker.MetricTransitions, breaker.MetricRefused, breaker.MetricOpen,
		pgpool.MetricPoolAcquired, pgpool.MetricPoolIdle, pgpool.MetricPoolTotal, pgpool.MetricPoolMax,
		pgpool.MetricPoolAcquires, pgpool.MetricPoolAcquireTime, pgpool.MetricPoolWaits,
		pgpool.MetricPoolWaitTime, pgpool.MetricPoolCanceledWaits,
		admission.MetricRefused, admission.MetricInFlight,
	}
	for _, name := range code {
		if !strings.Contains(doc, "| `"+name+"` / ") {
			t.Errorf("metric %s has no row in docs/operations.md", name)
		}
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `(a2ac\\.[a-z_.]+)` / ").FindAllStringSubmatch(doc, -1) {
		if !slices.Contains(code, m[1]) {
			t.Errorf("docs/operations.md documents %s, which nothing records", m[1])
		}
	}
}

func operationsDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Turns that never reach an agent are measured too: NO_AGENT, and ERROR for a refused turn,
// whose session span says why without quoting the request.
func TestTurnsWithoutAnAgentAreMeasured(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	s := startStack(t, nil, withTelemetry(telemetry.Options{SpanExporter: spans, MetricReader: reader}))
	wantOutcome(t, s.turn(t, "s-none", "", "hello"), pb.Outcome_OUTCOME_NO_AGENT)
	unknown := uuid.NewString()
	if _, err := s.tryTurn(t, "s-unknown", unknown, "hello"); status.Code(err) != codes.NotFound {
		t.Fatalf("unknown agent: %v", err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	m := metricsByName(rm)
	for outcome, want := range map[string]int64{"NO_AGENT": 1, "ERROR": 1} {
		if got := sumOf(t, m, "a2ac.turns", attribute.NewSet(attribute.String("a2ac.outcome", outcome))); got != want {
			t.Errorf("a2ac.turns{%s} = %d, want %d", outcome, got, want)
		}
	}
	got := waitForSpans(t, spans, "session.HandleTurn", 2)
	var refused tracetest.SpanStub
	for _, sp := range got {
		if attr(sp, "a2ac.outcome") == "ERROR" {
			refused = sp
		}
	}
	if attr(refused, "error.type") != "not_found" || refused.Status.Description != "not_found" ||
		attr(refused, "a2ac.agent.id") != unknown {
		t.Errorf("refused turn span: error.type %v, status %+v, agent %v", attr(refused, "error.type"),
			refused.Status, attr(refused, "a2ac.agent.id"))
	}
	for _, sp := range got {
		for _, where := range spanStrings(sp) {
			// Session ids are not recorded; the requested agent id only as the session's
			// a2ac.agent.id (never inside SQL arguments, which are not recorded).
			if strings.Contains(where, "s-unknown") || (strings.Contains(where, unknown) && sp.Name != "session.HandleTurn") {
				t.Errorf("span %s records %q", sp.Name, where)
			}
		}
	}
}

// waitForSpans waits until n spans named name were exported and returns them.
func waitForSpans(t *testing.T, exp *tracetest.InMemoryExporter, name string, n int) tracetest.SpanStubs {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // only a failing test waits this long
	for {
		var out tracetest.SpanStubs
		for _, sp := range exp.GetSpans() {
			if sp.Name == name {
				out = append(out, sp)
			}
		}
		if len(out) >= n {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spans %q exported, want %d", len(out), name, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A2AC_DEBUG_ADDR serves Go's profiles; without it nothing listens (the default).
func TestDebugAddrServesProfiles(t *testing.T) {
	t.Parallel()
	addr := startStack(t, map[string]string{"A2AC_DEBUG_ADDR": "127.0.0.1:0"}).server.DebugAddr()
	res, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile:") {
		t.Fatalf("GET /debug/pprof/goroutine: %s %v\n%.200s", res.Status, err, body)
	}
}
