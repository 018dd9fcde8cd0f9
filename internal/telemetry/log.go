// Package telemetry sets up logging (and, later, OpenTelemetry traces and metrics) for both
// binaries. It owns no global state: callers get a logger and pass it down.
package telemetry

import (
	"io"
	"log/slog"
)

// NewLogger returns a JSON slog logger at the given level ("debug", "info", "warn", "error").
func NewLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}
