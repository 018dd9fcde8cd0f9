package telemetry

import (
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Tracer is the tracer of the instrumentation scope name (the package's import path) from tp.
// Packages take an optional TracerProvider in their options; nil means tracing is off, and the
// no-op tracer then costs a few nanoseconds per span and allocates nothing.
func Tracer(tp trace.TracerProvider, name string) trace.Tracer {
	if tp == nil {
		return tracenoop.Tracer{}
	}
	return tp.Tracer(name)
}

// Meter is the meter of the instrumentation scope name from mp; nil means metrics are off (the
// no-op meter, whose instruments record nothing).
func Meter(mp metric.MeterProvider, name string) metric.Meter {
	if mp == nil {
		return metricnoop.Meter{}
	}
	return mp.Meter(name)
}
