package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/baggage"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// setenv sets the OTEL_* variables for one test, which then cannot run in parallel: the
// OpenTelemetry libraries read the process environment.
func setenv(t *testing.T, m map[string]string) {
	t.Helper()
	for k, v := range m {
		t.Setenv(k, v)
	}
}

func setup(t *testing.T, o telemetry.Options) *telemetry.Providers {
	t.Helper()
	p, err := telemetry.Setup(t.Context(), o)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return p
}

func TestSetupWithoutExporterIsNoop(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
	}{
		{name: "no_endpoint", env: nil},
		{name: "exporters_none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
			"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}},
		{name: "sdk_disabled_wins_over_the_endpoint", env: map[string]string{
			"OTEL_SDK_DISABLED": "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			setenv(t, c.env)
			p := setup(t, telemetry.Options{ServiceName: "x"})
			if _, ok := p.TracerProvider.(tracenoop.TracerProvider); !ok {
				t.Errorf("TracerProvider is %T, want the no-op one", p.TracerProvider)
			}
			if _, ok := p.MeterProvider.(metricnoop.MeterProvider); !ok {
				t.Errorf("MeterProvider is %T, want the no-op one", p.MeterProvider)
			}
			if p.MetricsAddr() != "" {
				t.Errorf("serving metrics at %s", p.MetricsAddr())
			}
			// Propagation still works, so the engine's trace reaches the agents.
			if p.Propagator == nil || len(p.Propagator.Fields()) == 0 {
				t.Errorf("no propagator")
			}
		})
	}
}

// What the libraries refuse is a startup error naming the variable; what they ignore (and
// replace by their default) is a warning in the log that never quotes a header.
func TestSetupRefusesWhatTheLibrariesRefuse(t *testing.T) {
	for _, c := range []struct {
		name, want string
		env        map[string]string
	}{
		{name: "unknown_traces_exporter", want: "OTEL_TRACES_EXPORTER", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}},
		{name: "unknown_metrics_exporter", want: "OTEL_METRICS_EXPORTER", env: map[string]string{"OTEL_METRICS_EXPORTER": "statsd"}},
		{name: "unknown_protocol", want: "OTLP protocol", env: map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}},
		{name: "malformed_resource_attributes", want: "OTEL_RESOURCE_ATTRIBUTES", env: map[string]string{
			"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			setenv(t, c.env)
			_, err := telemetry.Setup(t.Context(), telemetry.Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Setup: %v, want an error naming %s", err, c.want)
			}
		})
	}
}

func TestStartWarnsOfIgnoredValues(t *testing.T) {
	setenv(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
		"OTEL_EXPORTER_OTLP_HEADERS":  "authorization Bearer s3cr3t-token",
		"OTEL_TRACES_SAMPLER":         "sometimes",
		"OTEL_PROPAGATORS":            "carrier-pigeon",
	})
	// The OpenTelemetry error handler and logger that Start sets are process-wide: whatever the
	// libraries report later, from other tests, lands here too, hence the lock.
	var buf lockedBuffer
	_, stop, err := telemetry.Start(t.Context(), telemetry.Options{Logger: telemetry.NewLogger(&buf, "info")})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	for _, want := range []string{"sometimes", "carrier-pigeon", "parse headers"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the log does not warn of %q:\n%s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "s3cr3t") {
		t.Errorf("the log quotes a header value:\n%s", buf.String())
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// collector is a real OTLP/HTTP receiver on loopback that keeps what it got.
type collector struct {
	mu      sync.Mutex
	paths   []string
	headers []http.Header
	traces  []*coltracepb.ExportTraceServiceRequest
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paths = append(c.paths, r.URL.Path)
	c.headers = append(c.headers, r.Header.Clone())
	if strings.HasSuffix(r.URL.Path, "/v1/traces") {
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err == nil {
			c.traces = append(c.traces, &req)
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	return m
}

func TestOTLPHTTPExportsSpansAndMetrics(t *testing.T) {
	col := &collector{}
	srv := httptest.NewServer(col)
	t.Cleanup(srv.Close)
	setenv(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL + "/otlp/",
		"OTEL_EXPORTER_OTLP_HEADERS":  "x-collector-token=t%20ok",
		"OTEL_RESOURCE_ATTRIBUTES":    "deployment.environment.name=test,service.name=ignored",
		"OTEL_SERVICE_NAME":           "connector-eu",
	})
	p, err := telemetry.Setup(t.Context(), telemetry.Options{ServiceName: "a2a-connector", Version: "v9.9.9"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Summary(), "traces: otlp http/protobuf") || !strings.Contains(p.Summary(), "metrics: otlp http/protobuf") {
		t.Errorf("Summary = %q", p.Summary())
	}
	_, span := p.TracerProvider.Tracer("test").Start(t.Context(), "turn")
	span.End()
	counter, _ := p.MeterProvider.Meter("test").Int64Counter("a2ac.test")
	counter.Add(t.Context(), 1)
	if err := p.Shutdown(t.Context()); err != nil { // flushes both
		t.Fatal(err)
	}

	col.mu.Lock()
	defer col.mu.Unlock()
	if diff := cmp.Diff([]string{"/otlp/v1/metrics", "/otlp/v1/traces"}, sorted(col.paths)); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	for _, h := range col.headers {
		if h.Get("X-Collector-Token") != "t ok" {
			t.Errorf("header = %q, want the decoded OTEL_EXPORTER_OTLP_HEADERS value", h.Get("X-Collector-Token"))
		}
	}
	if len(col.traces) != 1 {
		t.Fatalf("got %d trace exports", len(col.traces))
	}
	rs := col.traces[0].GetResourceSpans()[0]
	res := attrMap(rs.GetResource().GetAttributes())
	if res["service.name"] != "connector-eu" || res["service.version"] != "v9.9.9" ||
		res["deployment.environment.name"] != "test" || res["service.instance.id"] == "" {
		t.Errorf("resource = %v", res)
	}
	if name := rs.GetScopeSpans()[0].GetSpans()[0].GetName(); name != "turn" {
		t.Errorf("span name = %q", name)
	}
}

// traceService is a real OTLP/gRPC trace receiver.
type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	got chan metadata.MD
}

func (s *traceService) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if len(req.GetResourceSpans()) > 0 {
		s.got <- md
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func TestOTLPGRPCExportsSpans(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	svc := &traceService{got: make(chan metadata.MD, 4)}
	coltracepb.RegisterTraceServiceServer(gs, svc)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)

	setenv(t, map[string]string{
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://" + ln.Addr().String(),
		"OTEL_EXPORTER_OTLP_PROTOCOL":        "grpc",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS":  "x-collector-token=abc",
		"OTEL_EXPORTER_OTLP_COMPRESSION":     "gzip",
	})
	p, err := telemetry.Setup(t.Context(), telemetry.Options{ServiceName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "traces: otlp grpc to " + ln.Addr().String() + "; metrics: off"; p.Summary() != want {
		t.Errorf("Summary = %q, want %q", p.Summary(), want)
	}
	_, span := p.TracerProvider.Tracer("test").Start(t.Context(), "turn")
	span.End()
	if err := p.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case md := <-svc.got:
		if got := md.Get("x-collector-token"); len(got) != 1 || got[0] != "abc" {
			t.Errorf("collector metadata = %v", md)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no spans reached the gRPC collector")
	}
}

func TestPrometheusEndpoint(t *testing.T) {
	t.Parallel()
	p := setup(t, telemetry.Options{ServiceName: "x", MetricsAddr: "127.0.0.1:0"})
	if p.MetricsAddr() == "" || !strings.Contains(p.Summary(), "prometheus at http://"+p.MetricsAddr()+"/metrics") {
		t.Fatalf("MetricsAddr %q, Summary %q", p.MetricsAddr(), p.Summary())
	}
	h, _ := p.MeterProvider.Meter("test").Float64Histogram("a2ac.test.duration")
	h.Record(t.Context(), 0.2)
	res, err := http.Get("http://" + p.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"a2ac_test_duration_bucket", "go_goroutines", "process_cpu_seconds_total", `service_name="x"`} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}

	// A second process on the same address is a startup error naming the setting.
	_, err = telemetry.Setup(t.Context(), telemetry.Options{MetricsAddr: p.MetricsAddr()})
	if err == nil || !strings.HasPrefix(err.Error(), "A2AC_METRICS_ADDR:") {
		t.Errorf("Setup on a busy address: %v", err)
	}
}

// The Prometheus endpoint is our own setting (the chart enables it by default): it stays on when
// OTEL_SDK_DISABLED switches off spans and OTLP metrics.
func TestPrometheusEndpointSurvivesSDKDisabled(t *testing.T) {
	setenv(t, map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"})
	p := setup(t, telemetry.Options{MetricsAddr: "127.0.0.1:0"})
	if _, ok := p.TracerProvider.(tracenoop.TracerProvider); !ok {
		t.Errorf("TracerProvider is %T, want the no-op one", p.TracerProvider)
	}
	if want := "traces: off (OTEL_SDK_DISABLED); metrics: prometheus at http://" + p.MetricsAddr() + "/metrics"; p.Summary() != want {
		t.Errorf("Summary = %q, want %q", p.Summary(), want)
	}
	res, err := http.Get("http://" + p.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("GET /metrics: %s", res.Status)
	}
}

func TestPrometheusEndpointStopsAtShutdown(t *testing.T) {
	t.Parallel()
	p, err := telemetry.Setup(t.Context(), telemetry.Options{MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := p.MetricsAddr()
	if err := p.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(t.Context()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("metrics port still open after Shutdown")
	}
}

func TestSamplerFromEnvironment(t *testing.T) {
	for _, c := range []struct {
		sampler    string
		wantSpans  int
		withParent bool
	}{
		{sampler: "", wantSpans: 1},
		{sampler: "always_off", wantSpans: 0},
		{sampler: "traceidratio", wantSpans: 0}, // OTEL_TRACES_SAMPLER_ARG=0 below
		// parentbased: an unsampled parent (the engine decided) is followed.
		{sampler: "parentbased_always_on", withParent: true, wantSpans: 0},
	} {
		t.Run(c.sampler+map[bool]string{true: "_with_unsampled_parent"}[c.withParent], func(t *testing.T) {
			setenv(t, map[string]string{"OTEL_TRACES_SAMPLER": c.sampler, "OTEL_TRACES_SAMPLER_ARG": "0"})
			exp := tracetest.NewInMemoryExporter()
			p := setup(t, telemetry.Options{SpanExporter: exp})
			ctx := t.Context()
			if c.withParent {
				ctx = trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
					TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}}))
			}
			_, span := p.TracerProvider.Tracer("test").Start(ctx, "turn")
			span.End()
			if got := len(exp.GetSpans()); got != c.wantSpans {
				t.Errorf("%d spans exported, want %d", got, c.wantSpans)
			}
		})
	}
}

func TestPropagators(t *testing.T) {
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xab}, SpanID: trace.SpanID{0xcd},
		TraceFlags: trace.FlagsSampled})
	member, _ := baggage.NewMember("k", "v")
	bag, _ := baggage.New(member)
	ctx := baggage.ContextWithBaggage(trace.ContextWithSpanContext(t.Context(), parent), bag)
	for _, c := range []struct {
		env  string
		want []string
	}{
		{env: "", want: []string{"Baggage", "Traceparent"}},
		{env: "tracecontext", want: []string{"Traceparent"}},
		{env: "none", want: nil},
	} {
		t.Setenv("OTEL_PROPAGATORS", c.env)
		p := setup(t, telemetry.Options{})
		h := http.Header{}
		p.Propagator.Inject(ctx, propagation.HeaderCarrier(h))
		var got []string
		for k := range h {
			got = append(got, k)
		}
		if diff := cmp.Diff(c.want, sorted(got)); diff != "" {
			t.Errorf("OTEL_PROPAGATORS=%q: headers (-want +got):\n%s", c.env, diff)
		}
	}
}

// The agent transport propagates trace context but never baggage.
func TestAgentTransportSendsTraceparentOnly(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() }))
	t.Cleanup(srv.Close)
	exp := tracetest.NewInMemoryExporter()
	p := setup(t, telemetry.Options{SpanExporter: exp})
	member, _ := baggage.NewMember("platform.user", "u-1")
	bag, _ := baggage.New(member)
	ctx, span := p.TracerProvider.Tracer("test").Start(baggage.ContextWithBaggage(t.Context(), bag), "turn")
	hc := &http.Client{Transport: p.AgentTransport(http.DefaultTransport)}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/a2a?token=x", strings.NewReader("{}"))
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	span.End()
	h := <-got
	if !strings.Contains(h.Get("Traceparent"), span.SpanContext().TraceID().String()) {
		t.Errorf("traceparent = %q, want trace %s", h.Get("Traceparent"), span.SpanContext().TraceID())
	}
	if h.Get("Baggage") != "" {
		t.Errorf("baggage %q reached the agent", h.Get("Baggage"))
	}
}

func TestLoggerAddsTraceIDs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := telemetry.NewLogger(&buf, "info").With("component", "test")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x0a, 0xf7}, SpanID: trace.SpanID{0x0b}})
	log.InfoContext(trace.ContextWithSpanContext(context.Background(), sc), "with span")
	log.InfoContext(context.Background(), "without span")
	log.DebugContext(trace.ContextWithSpanContext(context.Background(), sc), "below the level")

	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("not JSON: %s", l)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), buf.String())
	}
	if lines[0]["trace_id"] != sc.TraceID().String() || lines[0]["span_id"] != sc.SpanID().String() ||
		lines[0]["component"] != "test" {
		t.Errorf("line with span = %v", lines[0])
	}
	if _, ok := lines[1]["trace_id"]; ok {
		t.Errorf("line without span has a trace_id: %v", lines[1])
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// The console's handler names spans after the matched route, does not adopt a caller's trace
// (the console is public: the caller's context becomes a link) and does not trace probes.
func TestHTTPHandlerSpans(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	p := setup(t, telemetry.Options{SpanExporter: exp})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/agents/{id}", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {})
	srv := httptest.NewServer(p.HTTPHandler(mux, "console-api"))
	t.Cleanup(srv.Close)

	caller := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, path := range []string{"/healthz", "/v1/agents/42?x=1"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Traceparent", caller)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1 (probes are not traced): %v", len(spans), spans)
	}
	s := spans[0]
	if s.Name != "GET /v1/agents/{id}" {
		t.Errorf("span name = %q, want the route", s.Name)
	}
	if s.Parent.IsValid() || s.SpanContext.TraceID().String() == "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("the server span adopted the caller's trace: parent %v", s.Parent)
	}
	if len(s.Links) != 1 || s.Links[0].SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("links = %v, want the caller's span", s.Links)
	}
}

// With tracing and metrics off, the agent transport still forwards the trace context the turn
// carries (the dialog engine's, passed through the gRPC server) — exactly that traceparent, no
// baggage — and adds nothing to a call that carries none.
func TestAgentTransportWithTelemetryOffForwardsTheCallersTrace(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() }))
	t.Cleanup(srv.Close)
	p := setup(t, telemetry.Options{})
	hc := &http.Client{Transport: p.AgentTransport(http.DefaultTransport)}
	engine := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x4b, 0xf9}, SpanID: trace.SpanID{0x00, 0xf0, 0x67},
		TraceFlags: trace.FlagsSampled, Remote: true})
	member, _ := baggage.NewMember("platform.user", "u-1")
	bag, _ := baggage.New(member)
	ctx := trace.ContextWithRemoteSpanContext(baggage.ContextWithBaggage(t.Context(), bag), engine)
	for _, ctx := range []context.Context{ctx, t.Context()} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("{}"))
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if req.Header.Get("Traceparent") != "" {
			t.Error("the transport changed the caller's request")
		}
	}
	want := fmt.Sprintf("00-%s-%s-01", engine.TraceID(), engine.SpanID())
	if h := <-got; h.Get("Traceparent") != want || h.Get("Baggage") != "" {
		t.Errorf("traceparent %q (want %q), baggage %q (want none)", h.Get("Traceparent"), want, h.Get("Baggage"))
	}
	if h := <-got; h.Get("Traceparent") != "" {
		t.Errorf("a call without trace context got traceparent %q", h.Get("Traceparent"))
	}
}
