package telemetry

import (
	"context"
	"log/slog"
	"time"

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
