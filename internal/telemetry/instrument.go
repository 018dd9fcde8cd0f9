package telemetry

import (
	"context"
	"fmt"
	"net/http"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc/stats"
)

// scope is the instrumentation scope of what this package measures itself (the pool gauges).
const scope = "github.com/a2a-connector/a2a-connector/internal/telemetry"

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

// InstrumentPool sets the pgx tracer on a pool's config before the pool is opened: a span per
// query, batch, prepare, connect and pool acquire, and the db.client.operation.duration metric.
// Spans carry the SQL text (our statements take every value as a parameter) but never the
// arguments, which include session ids and sealed keys.
func (p *Providers) InstrumentPool(cfg *pgxpool.Config) {
	cfg.ConnConfig.Tracer = otelpgx.NewTracer(
		otelpgx.WithTracerProvider(p.TracerProvider),
		otelpgx.WithMeterProvider(p.MeterProvider),
	)
}

// Pool metric names (see docs/operations.md).
const (
	MetricPoolAcquired      = "a2ac.db.pool.acquired_connections"
	MetricPoolIdle          = "a2ac.db.pool.idle_connections"
	MetricPoolTotal         = "a2ac.db.pool.total_connections"
	MetricPoolMax           = "a2ac.db.pool.max_connections"
	MetricPoolAcquires      = "a2ac.db.pool.acquires"
	MetricPoolAcquireTime   = "a2ac.db.pool.acquire.duration"
	MetricPoolWaits         = "a2ac.db.pool.acquire.waits"
	MetricPoolWaitTime      = "a2ac.db.pool.acquire.wait_duration"
	MetricPoolCanceledWaits = "a2ac.db.pool.acquire.canceled"
)

// ObservePool reports the pool's statistics (pgxpool.Stat) at each collection: connections in
// use, idle and in total against the maximum, and the cumulative acquire count and time, how
// often and how long an acquire had to wait for a free connection, and how many waits were
// canceled. The callback is removed by Shutdown.
func (p *Providers) ObservePool(pool *pgxpool.Pool) error {
	m := p.MeterProvider.Meter(scope)
	gauge := func(name, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit("{connection}"), metric.WithDescription(desc))
		if err != nil {
			// The names are constants the SDK accepts; a working instrument comes back anyway.
			p.log.Warn("telemetry: create instrument", "name", name, "error", err)
		}
		return g
	}
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			p.log.Warn("telemetry: create instrument", "name", name, "error", err)
		}
		return c
	}
	seconds := func(name, desc string) metric.Float64ObservableCounter {
		c, err := m.Float64ObservableCounter(name, metric.WithUnit("s"), metric.WithDescription(desc))
		if err != nil {
			p.log.Warn("telemetry: create instrument", "name", name, "error", err)
		}
		return c
	}
	acquired := gauge(MetricPoolAcquired, "Connections in use by the connector.")
	idle := gauge(MetricPoolIdle, "Open connections waiting to be used.")
	total := gauge(MetricPoolTotal, "Open connections (in use, idle and being opened).")
	maxConns := gauge(MetricPoolMax, "The pool's connection limit (pool_max_conns).")
	acquires := counter(MetricPoolAcquires, "{acquire}", "Connections handed out by the pool.")
	acquireTime := seconds(MetricPoolAcquireTime, "Total time spent acquiring connections.")
	waits := counter(MetricPoolWaits, "{acquire}", "Acquires that had to wait because no connection was idle.")
	waitTime := seconds(MetricPoolWaitTime, "Total time acquires waited for a connection.")
	canceled := counter(MetricPoolCanceledWaits, "{acquire}", "Acquires given up by their caller while waiting.")

	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := pool.Stat()
		o.ObserveInt64(acquired, int64(s.AcquiredConns()))
		o.ObserveInt64(idle, int64(s.IdleConns()))
		o.ObserveInt64(total, int64(s.TotalConns()))
		o.ObserveInt64(maxConns, int64(s.MaxConns()))
		o.ObserveInt64(acquires, s.AcquireCount())
		o.ObserveFloat64(acquireTime, s.AcquireDuration().Seconds())
		o.ObserveInt64(waits, s.EmptyAcquireCount())
		o.ObserveFloat64(waitTime, s.EmptyAcquireWaitTime().Seconds())
		o.ObserveInt64(canceled, s.CanceledAcquireCount())
		return nil
	}, acquired, idle, total, maxConns, acquires, acquireTime, waits, waitTime, canceled)
	if err != nil {
		return fmt.Errorf("telemetry: observe pool: %w", err)
	}
	p.shutdowns = append([]func(context.Context) error{func(context.Context) error { return reg.Unregister() }}, p.shutdowns...)
	return nil
}
