package telemetry

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/stats"
)

// GRPCServerHandler is the stats handler of a gRPC server (grpc.StatsHandler): a server span
// per RPC, child of the caller's trace context, and the rpc.server.* metrics. Health checks and
// reflection are left out: probes would drown the turns. No message events are recorded (they
// would cost an allocation per streamed chunk) and no message contents ever.
func (p *Providers) GRPCServerHandler() stats.Handler {
	return otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(p.TracerProvider),
		otelgrpc.WithMeterProvider(p.MeterProvider),
		otelgrpc.WithPropagators(p.Propagator),
		otelgrpc.WithFilter(filters.None(filters.HealthCheck(), filters.ServicePrefix("grpc.reflection."))),
	)
}

// AgentTransport wraps the agent client's transport (netguard.ClientOptions.WrapTransport): a
// client span per agent call, the http.client.* metrics, and a W3C traceparent header so the
// agent can join the turn's trace. Baggage is not forwarded: tenant agents are outside the
// platform, and baggage from the dialog engine is the platform's business. The span's url.full
// is the agent endpoint from the card (never the card URL a tenant pasted).
//
// With tracing and metrics both off it only forwards the W3C trace context the call already
// carries (the dialog engine's, passed through): otelhttp would still build a metric attribute
// set on every call, about 8 % of a turn's CPU for nothing recorded.
func (p *Providers) AgentTransport(rt http.RoundTripper) http.RoundTripper {
	if p.off() {
		return traceContextTransport{next: rt}
	}
	return otelhttp.NewTransport(rt,
		otelhttp.WithTracerProvider(p.TracerProvider),
		otelhttp.WithMeterProvider(p.MeterProvider),
		otelhttp.WithPropagators(propagation.TraceContext{}),
	)
}

// HTTPHandler wraps a public HTTP API (the console): a server span per request named after the
// matched route, and the http.server.* metrics. Its callers are outside the platform, so their
// trace context is recorded as a link, not adopted as the parent. Probes (/healthz, /readyz) are
// not traced.
func (p *Providers) HTTPHandler(h http.Handler, operation string) http.Handler {
	return otelhttp.NewHandler(h, operation,
		otelhttp.WithTracerProvider(p.TracerProvider),
		otelhttp.WithMeterProvider(p.MeterProvider),
		otelhttp.WithPropagators(p.Propagator),
		otelhttp.WithPublicEndpointFn(func(*http.Request) bool { return true }),
		otelhttp.WithFilter(func(r *http.Request) bool {
			return r.URL.Path != "/healthz" && r.URL.Path != "/readyz"
		}),
	)
}

// off reports whether nothing records spans or metrics (both providers are the no-op ones).
func (p *Providers) off() bool {
	_, noTraces := p.TracerProvider.(tracenoop.TracerProvider)
	_, noMetrics := p.MeterProvider.(metricnoop.MeterProvider)
	return noTraces && noMetrics
}

// traceContextTransport adds the traceparent (and tracestate) of the request's context, as
// otelhttp does with no-op providers, and nothing else: no baggage, no span, no metrics.
type traceContextTransport struct{ next http.RoundTripper }

func (t traceContextTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(req.Context()).IsValid() {
		return t.next.RoundTrip(req)
	}
	r := req.Clone(req.Context()) // a RoundTripper must not change the caller's request
	propagation.TraceContext{}.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	return t.next.RoundTrip(r)
}
