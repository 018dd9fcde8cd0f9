package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel"
)

// flushTimeout bounds the final export of spans and metrics at shutdown.
const flushTimeout = 5 * time.Second

// Start is Setup plus what every binary does around it: OpenTelemetry export errors (collector
// down) become JSON warnings on o.Logger — the SDK reports them only through its process-wide
// handler, the one global this package sets — the setup is logged once, and stop flushes and
// shuts the providers down within a few seconds, even when ctx is already canceled.
func Start(ctx context.Context, o Options) (p *Providers, stop func(), err error) {
	p, err = Setup(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("opentelemetry", slog.Any("error", err))
	}))
	log.Info("telemetry", "setup", p.Summary())
	stop = func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			log.Warn("telemetry shutdown", slog.Any("error", err))
		}
	}
	return p, stop, nil
}

// OpenPool opens a pgx pool whose queries are traced and whose statistics are exported as
// metrics. tune, when not nil, adjusts the parsed configuration first.
// DefaultConnectTimeout bounds a new Postgres connection when DATABASE_URL sets no
// connect_timeout.
const DefaultConnectTimeout = 2 * time.Second

func (p *Providers) OpenPool(ctx context.Context, databaseURL string, tune func(*pgxpool.Config)) (*pgxpool.Pool, error) {
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
	if tune != nil {
		tune(cfg)
	}
	p.InstrumentPool(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	if err := p.ObservePool(pool); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}
