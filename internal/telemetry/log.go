package telemetry

import (
	"context"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// NewLogger returns a JSON slog logger at the given level ("debug", "info", "warn", "error").
// Records logged with a context that carries a span get its trace_id and span_id, so a log
// line leads to its trace.
func NewLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(WithTraceIDs(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})))
}

// WithTraceIDs wraps h so that each record logged with a context carrying a valid span context
// gets trace_id and span_id attributes (hex, as in traceparent). Records without one are passed
// on unchanged. Like any record attribute, the IDs land inside a group opened with WithGroup;
// this code base logs without groups.
func WithTraceIDs(h slog.Handler) slog.Handler { return traceHandler{inner: h} }

type traceHandler struct{ inner slog.Handler }

func (h traceHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return h.inner.Handle(ctx, r)
	}
	r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	return h.inner.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{inner: h.inner.WithAttrs(attrs)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{inner: h.inner.WithGroup(name)}
}
