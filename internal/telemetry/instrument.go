package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
)

// GRPCServerOptions instruments a gRPC server. With tracing or metrics on, that is otelgrpc's
// stats handler: a server span per RPC, child of the caller's trace context, and the
// rpc.server.* metrics. Health checks and reflection are left out: probes would drown the
// turns. No message events are recorded (they would cost an allocation per streamed chunk) and
// no message contents ever.
//
// With both off it is only an interceptor that puts the caller's W3C trace context into the
// handler's context, so the agent call still forwards the dialog engine's traceparent (see
// AgentTransport). A stats handler with nothing to record would still run on every message
// sent and received (a payload record per TextDelta), and otelgrpc would still start a no-op
// span and build attributes per RPC.
func (p *Providers) GRPCServerOptions() []grpc.ServerOption {
	if p.off() {
		return []grpc.ServerOption{
			grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				return h(withCallerTraceContext(ctx), req)
			}),
			grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
				ctx := withCallerTraceContext(ss.Context())
				if ctx == ss.Context() {
					return h(srv, ss)
				}
				return h(srv, tracedStream{ServerStream: ss, ctx: ctx})
			}),
		}
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(p.TracerProvider),
		otelgrpc.WithMeterProvider(p.MeterProvider),
		otelgrpc.WithPropagators(p.Propagator),
		otelgrpc.WithFilter(filters.None(filters.HealthCheck(), filters.ServicePrefix("grpc.reflection."))),
	))}
}

// withCallerTraceContext returns ctx with the remote span context of the call's traceparent
// (and tracestate) metadata, or ctx itself when there is none. Baggage is not read: with
// telemetry off nothing here would use it, and it never leaves the platform.
func withCallerTraceContext(ctx context.Context) context.Context {
	// ValueFromIncomingContext copies one key's values; FromIncomingContext would copy all the
	// metadata of every call, which mostly carries no trace context.
	if len(metadata.ValueFromIncomingContext(ctx, "traceparent")) == 0 {
		return ctx
	}
	md, _ := metadata.FromIncomingContext(ctx)
	return propagation.TraceContext{}.Extract(ctx, metadataCarrier(md))
}

// metadataCarrier reads gRPC metadata for a propagator (keys are lower case in both).
type metadataCarrier metadata.MD

func (c metadataCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c metadataCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c metadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// tracedStream is a server stream whose context carries the caller's trace context.
type tracedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s tracedStream) Context() context.Context { return s.ctx }

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

// AgentGRPCStatsHandler instruments the agent calls over gRPC (a2aclient.GRPCOptions
// .StatsHandler), as AgentTransport does the HTTP ones: a client span per call, the
// rpc.client.* metrics, and the W3C traceparent (and tracestate) naming that span in the call's
// metadata. Baggage is not forwarded, for AgentTransport's reason. Nil when tracing and metrics
// are both off: the client then sends the trace context the turn already carries (the dialog
// engine's), and no handler runs on every message for nothing recorded.
func (p *Providers) AgentGRPCStatsHandler() stats.Handler {
	if p.off() {
		return nil
	}
	return otelgrpc.NewClientHandler(
		otelgrpc.WithTracerProvider(p.TracerProvider),
		otelgrpc.WithMeterProvider(p.MeterProvider),
		otelgrpc.WithPropagators(propagation.TraceContext{}),
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
	if hasTraceContext(req.Context()) {
		req = withTraceContext(req)
	}
	return t.next.RoundTrip(req)
}

// hasTraceContext and withTraceContext keep the span context (~100 bytes) and the clone out of
// RoundTrip's stack frame, which stays on a turn's stack while it waits for the agent.
//
//go:noinline
func hasTraceContext(ctx context.Context) bool {
	return trace.SpanContextFromContext(ctx).IsValid()
}

//go:noinline
func withTraceContext(req *http.Request) *http.Request {
	r := req.Clone(req.Context()) // a RoundTripper must not change the caller's request
	propagation.TraceContext{}.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	return r
}
