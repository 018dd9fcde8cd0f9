package telemetry

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
)

// flushTimeout bounds the final export of spans and metrics at shutdown.
const flushTimeout = 5 * time.Second

// Start is Setup plus what every binary does around it: OpenTelemetry's own reports — export
// errors (collector down), and the OTEL_* values the libraries ignored as malformed (a sampler,
// headers, a propagator) — become JSON warnings on o.Logger, the setup is logged once, and stop
// flushes and shuts the providers down within a few seconds, even when ctx is already canceled.
// The libraries report only through their process-wide error handler and logger: the two
// globals this package sets, before Setup so that its warnings are seen.
func Start(ctx context.Context, o Options) (p *Providers, stop func(), err error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("opentelemetry", slog.Any("error", err))
	}))
	// The libraries log errors, warnings at verbosity 1, information at 4 and debug detail at 8.
	otel.SetLogger(logr.FromSlogHandler(warnOnly{log.Handler()}))
	p, err = Setup(ctx, o)
	if err != nil {
		return nil, nil, err
	}
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

// warnOnly passes on the OpenTelemetry logger's errors, and its warnings (logr verbosity 1,
// which logr.FromSlogHandler makes slog level -1) as warnings; its information and debug
// records are dropped.
type warnOnly struct{ slog.Handler }

func (h warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.Level(-1) && h.Handler.Enabled(ctx, max(l, slog.LevelWarn))
}

func (h warnOnly) Handle(ctx context.Context, r slog.Record) error {
	level := max(r.Level, slog.LevelWarn)
	if !strings.Contains(r.Message, "header") {
		r.Level = level
		return h.Handler.Handle(ctx, r)
	}
	// A malformed OTEL_EXPORTER_OTLP_HEADERS entry is logged with its text, which may hold the
	// collector's credentials: only the key survives.
	out := slog.NewRecord(r.Time, level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "input" && a.Key != "value" {
			out.AddAttrs(a)
		}
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h warnOnly) WithAttrs(as []slog.Attr) slog.Handler { return warnOnly{h.Handler.WithAttrs(as)} }
func (h warnOnly) WithGroup(g string) slog.Handler       { return warnOnly{h.Handler.WithGroup(g)} }
