package pgpool_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/a2a-connector/a2a-connector/internal/pgpool"
	"github.com/a2a-connector/a2a-connector/internal/pgtest"
)

var testDB *pgtest.DB

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &testDB)) }

// withParam adds a query parameter to the test database's URL.
func withParam(u, kv string) string {
	if strings.Contains(u, "?") {
		return u + "&" + kv
	}
	return u + "?" + kv
}

func TestOpen_applies_the_defaults_unless_the_url_sets_them(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		url         string
		opts        pgpool.Options
		wantTimeout time.Duration
		wantMax     int32
	}{
		{"connect_timeout_defaults_to_two_seconds", testDB.URL, pgpool.Options{}, pgpool.DefaultConnectTimeout, 0},
		{"connect_timeout_from_the_url_wins", withParam(testDB.URL, "connect_timeout=7"), pgpool.Options{}, 7 * time.Second, 0},
		{"max_conns_when_the_url_sets_none", testDB.URL, pgpool.Options{MaxConns: 23}, pgpool.DefaultConnectTimeout, 23},
		{"pool_max_conns_from_the_url_wins", withParam(testDB.URL, "pool_max_conns=3"), pgpool.Options{MaxConns: 23}, pgpool.DefaultConnectTimeout, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool, err := pgpool.Open(t.Context(), tt.url, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			cfg := pool.Config()
			if got := cfg.ConnConfig.ConnectTimeout; got != tt.wantTimeout {
				t.Errorf("ConnectTimeout = %s, want %s", got, tt.wantTimeout)
			}
			if tt.wantMax != 0 && cfg.MaxConns != tt.wantMax {
				t.Errorf("MaxConns = %d, want %d", cfg.MaxConns, tt.wantMax)
			}
		})
	}
}

func TestOpen_sets_the_runtime_params_on_every_connection(t *testing.T) {
	t.Parallel()
	pool, err := pgpool.Open(t.Context(), testDB.URL, pgpool.Options{RuntimeParams: map[string]string{"synchronous_commit": "off"}})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var got string
	if err := pool.QueryRow(t.Context(), "show synchronous_commit").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "off" {
		t.Errorf("synchronous_commit = %q, want off", got)
	}
}

// The pool traces its queries (under a recording span) without their arguments and reports its statistics until Close.
func TestOpen_traces_queries_and_reports_the_pool(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(t.Context())
		_ = mp.Shutdown(t.Context())
	})
	pool, err := pgpool.Open(t.Context(), testDB.URL, pgpool.Options{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "argument-that-must-not-be-traced"
	// Queries are traced inside a turn's or a request's span, never on their own.
	ctx, parent := tp.Tracer("test").Start(t.Context(), "parent")
	var echo string
	if err := pool.QueryRow(ctx, "select $1::text", secret).Scan(&echo); err != nil {
		t.Fatal(err)
	}
	parent.End()
	sawQuery := false
	for _, s := range spans.GetSpans() {
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), secret) {
				t.Errorf("span %s carries the query argument in %s", s.Name, kv.Key)
			}
			sawQuery = sawQuery || strings.Contains(kv.Value.String(), "select $1::text")
		}
	}
	if !sawQuery {
		t.Errorf("no span carries the SQL text; spans: %d", len(spans.GetSpans()))
	}

	names := func() []string {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(t.Context(), &rm); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if strings.HasPrefix(m.Name, "a2ac.db.pool.") {
					out = append(out, m.Name)
				}
			}
		}
		return out
	}
	want := []string{pgpool.MetricPoolAcquired, pgpool.MetricPoolIdle, pgpool.MetricPoolTotal, pgpool.MetricPoolMax,
		pgpool.MetricPoolAcquires, pgpool.MetricPoolAcquireTime, pgpool.MetricPoolWaits, pgpool.MetricPoolWaitTime,
		pgpool.MetricPoolCanceledWaits}
	if diff := cmp.Diff(want, names()); diff != "" {
		t.Errorf("pool metrics while open (-want +got):\n%s", diff)
	}
	pool.Close()
	if got := names(); len(got) != 0 {
		t.Errorf("pool metrics after Close = %v, want none", got)
	}
}

func TestOpen_does_not_repeat_a_bad_url(t *testing.T) {
	t.Parallel()
	_, err := pgpool.Open(t.Context(), "postgres://user:hunter2@localhost:5432/db?sslmode=bogus", pgpool.Options{})
	if err == nil {
		t.Fatal("Open accepted sslmode=bogus")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error shows the password: %v", err)
	}
}

// With nothing recording, the pool has no query tracer at all: otelpgx would still build
// attributes and no-op spans for every query of every turn.
func TestOpen_installs_no_tracer_when_nothing_records(t *testing.T) {
	t.Parallel()
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	for _, tc := range []struct {
		name   string
		opts   pgpool.Options
		traced bool
	}{
		{"no providers", pgpool.Options{}, false},
		{"no-op providers", pgpool.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}, false},
		{"a tracer provider", pgpool.Options{TracerProvider: tp}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, err := pgpool.Open(t.Context(), testDB.URL, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			if got := pool.Config().ConnConfig.Tracer != nil; got != tc.traced {
				t.Errorf("query tracer installed: %v, want %v", got, tc.traced)
			}
		})
	}
}

// A connection whose server refuses writes (25006: an old primary come back read-only, or a
// standby) is closed at once, so the pool never hands it out again; the next write goes to a
// fresh connection.
func TestOpen_closes_a_connection_that_is_read_only(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, err := pgpool.Open(ctx, withParam(testDB.URL, "pool_max_conns=1"), pgpool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// What a server in recovery does to every transaction, on this connection only.
	if _, err := conn.Exec(ctx, "set default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "create temporary table t (x int)")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "25006" {
		t.Fatalf("write on a read-only connection: %v; want SQLSTATE 25006", err)
	}
	if !conn.Conn().IsClosed() {
		t.Error("the read-only connection is still open; the pool would hand it out again")
	}
	conn.Release()
	if _, err := pool.Exec(ctx, "create temporary table t (x int)"); err != nil {
		t.Errorf("write after the read-only connection went: %v", err)
	}
}

func TestOpen_bounds_the_ping_before_reuse(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, url string
		want      time.Duration
	}{
		{"the_connect_timeout_by_default", withParam(testDB.URL, "connect_timeout=3"), 3 * time.Second},
		{"pool_ping_timeout_from_the_url_wins", withParam(testDB.URL, "pool_ping_timeout=250ms"), 250 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool, err := pgpool.Open(t.Context(), tt.url, pgpool.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			if got := pool.Config().PingTimeout; got != tt.want {
				t.Errorf("PingTimeout = %s, want %s", got, tt.want)
			}
		})
	}
}
