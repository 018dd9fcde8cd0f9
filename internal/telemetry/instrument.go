package telemetry

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
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
func (p *Providers) AgentTransport(rt http.RoundTripper) http.RoundTripper {
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
