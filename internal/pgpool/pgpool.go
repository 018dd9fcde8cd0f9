// Package pgpool opens the Postgres connection pool both binaries use: the connect timeout a
// DATABASE_URL without one gets, the pool size, a span per query and the pool's statistics as
// metrics (docs/operations.md).
//
// It does not query: internal/store does, on the pool it is given. Spans carry the SQL text (our
// statements take every value as a parameter) but never the arguments, which include session ids
// and sealed keys; the error of a DATABASE_URL that does not parse never repeats the URL.
package pgpool

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// DefaultConnectTimeout bounds a new Postgres connection when DATABASE_URL sets no
// connect_timeout.
const DefaultConnectTimeout = 2 * time.Second

// Options configure Open.
type Options struct {
	// MaxConns is the pool's size when DATABASE_URL sets no pool_max_conns; 0 keeps pgxpool's
	// default (4, or the CPU count).
	MaxConns int32
	// RuntimeParams are set on every connection (synchronous_commit, …).
	RuntimeParams map[string]string
	// TracerProvider traces queries, batches, prepares, connects and acquires; nil: no tracing.
	TracerProvider trace.TracerProvider
	// MeterProvider receives db.client.operation.duration and the a2ac.db.pool.* statistics;
	// nil: no metrics.
	MeterProvider metric.MeterProvider
	// Logger receives the failure to create an instrument (nil: discard).
	Logger *slog.Logger
}

// Pool is a pgx pool whose statistics are reported while it is open.
type Pool struct {
	*pgxpool.Pool
	stats metric.Registration
}

// Open parses databaseURL, applies o, and opens the pool. Like pgxpool.NewWithConfig it does not
// wait for a connection: a Postgres that is down fails the first query, not Open.
func Open(ctx context.Context, databaseURL string, o Options) (*Pool, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		// pgx's message never repeats the URL, so the password cannot leak through it.
		return nil, fmt.Errorf("database: %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// Without connect_timeout in the URL a dial to a host that drops packets would hang
		// each turn until its own deadline; a Postgres that is down must fail turns fast.
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	if !strings.Contains(databaseURL, "pool_ping_timeout") {
		// pgxpool pings a connection idle for over a second before handing it out, and
		// destroys it when the ping fails: after a Postgres restart that keeps most dead
		// connections from reaching a turn. Without a bound, a ping to a host that vanished
		// (no reset, packets dropped) would hold the turn until its own deadline; a connection
		// that does not answer in the time a new one may take to connect is not worth waiting for.
		cfg.PingTimeout = cfg.ConnConfig.ConnectTimeout
	}
	cfg.ConnConfig.OnPgError = closeOnPgError
	if o.MaxConns > 0 && !strings.Contains(databaseURL, "pool_max_conns") {
		cfg.MaxConns = o.MaxConns
	}
	for k, v := range o.RuntimeParams {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	// With nothing recording, no tracer at all: otelpgx still builds attributes and no-op spans
	// for every query, and its 1 KiB stack frame alone pushed a parked turn's goroutine stack
	// past 8 KiB (docs/performance.md, "Goroutine stacks of open streams"). otelpgx falls back
	// to the OpenTelemetry globals, which this project never sets, so nil is passed on as the
	// no-op provider.
	if !off(o.TracerProvider, o.MeterProvider) {
		cfg.ConnConfig.Tracer = otelpgx.NewTracer(
			otelpgx.WithTracerProvider(cmp.Or[trace.TracerProvider](o.TracerProvider, tracenoop.NewTracerProvider())),
			otelpgx.WithMeterProvider(cmp.Or[metric.MeterProvider](o.MeterProvider, metricnoop.NewMeterProvider())),
		)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	stats, err := observe(pool, telemetry.Meter(o.MeterProvider, scope), cmp.Or(o.Logger, slog.New(slog.DiscardHandler)))
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &Pool{Pool: pool, stats: stats}, nil
}

// closeOnPgError tells pgconn to close a connection on a FATAL error (its own default) and on
// 25006 read_only_sql_transaction: the server at the other end is a standby, or an old primary
// that came back read-only after a failover. Closed, the pool destroys the connection when it is
// released, so no later statement is sent there; a new connection goes to the primary that
// target_session_attrs=read-write finds.
func closeOnPgError(_ *pgconn.PgConn, err *pgconn.PgError) bool {
	return !strings.EqualFold(err.Severity, "FATAL") && err.Code != "25006"
}

// Close stops reporting the statistics and closes the pool, waiting for every connection to be
// returned.
func (p *Pool) Close() {
	_ = p.stats.Unregister() // fails only for a registration of another provider
	p.Pool.Close()
}

// off reports whether neither provider records anything: nil or the no-op ones.
func off(tp trace.TracerProvider, mp metric.MeterProvider) bool {
	_, noopTraces := tp.(tracenoop.TracerProvider)
	_, noopMetrics := mp.(metricnoop.MeterProvider)
	return (tp == nil || noopTraces) && (mp == nil || noopMetrics)
}
