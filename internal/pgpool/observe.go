package pgpool

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"
)

// scope is the instrumentation scope of the pool statistics.
const scope = "github.com/a2a-connector/a2a-connector/internal/pgpool"

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

// observe reports the pool's statistics (pgxpool.Stat) at each collection: connections in use,
// idle and in total against the maximum, and the cumulative acquire count and time, how often and
// how long an acquire had to wait for a free connection, and how many waits were canceled. Pool.Close
// removes the callback.
func observe(pool *pgxpool.Pool, m metric.Meter, log *slog.Logger) (metric.Registration, error) {
	gauge := func(name, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit("{connection}"), metric.WithDescription(desc))
		if err != nil {
			// The names are constants the SDK accepts; a working instrument comes back anyway.
			log.Warn("pgpool: create instrument", "name", name, "error", err)
		}
		return g
	}
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			log.Warn("pgpool: create instrument", "name", name, "error", err)
		}
		return c
	}
	seconds := func(name, desc string) metric.Float64ObservableCounter {
		c, err := m.Float64ObservableCounter(name, metric.WithUnit("s"), metric.WithDescription(desc))
		if err != nil {
			log.Warn("pgpool: create instrument", "name", name, "error", err)
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
		return nil, fmt.Errorf("pgpool: observe pool: %w", err)
	}
	return reg, nil
}
