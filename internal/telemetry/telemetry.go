// Package telemetry sets up OpenTelemetry traces and metrics and JSON logging for both binaries,
// and holds the instrumentation choices the edges share: which gRPC methods and HTTP routes are
// traced, and what their spans may carry. It does not open the database (internal/pgpool traces
// its own queries).
//
// Setup builds the exporters, sampler, resource and propagators from the standard OTEL_*
// environment with the OpenTelemetry libraries that define those variables (autoexport, the SDK,
// autoprop) and returns Providers; callers pass them down explicitly. It never sets the
// OpenTelemetry providers as globals, so two Setups in one process (tests) do not interfere.
// Tracing is on when an OTLP endpoint (or OTEL_TRACES_EXPORTER) is set; metrics when an OTLP
// endpoint (or OTEL_METRICS_EXPORTER) is set or A2AC_METRICS_ADDR asks for a Prometheus endpoint.
// OTEL_SDK_DISABLED=true turns off everything the OTEL_* variables configure, not the Prometheus
// endpoint. What is off is the API's no-op provider: instrumented code then costs a few
// nanoseconds per call and allocates nothing per stream chunk.
//
// It refuses to put user text, API keys, tokens or full card URLs into spans, metrics or logs:
// the helpers here trace no request bodies and no card fetches (card hosts are recorded by
// internal/cardfetch itself).
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/contrib/propagators/autoprop"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Options configure Setup.
type Options struct {
	// ServiceName is service.name unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES set it.
	ServiceName string
	// Version is service.version; "" means the main module's version from the build info.
	Version string
	// MetricsAddr, when set (A2AC_METRICS_ADDR), serves the metrics in the Prometheus text format
	// at http://MetricsAddr/metrics.
	MetricsAddr string
	// Logger receives the metrics server's failures (nil: discard).
	Logger *slog.Logger

	// SpanExporter, when set, replaces the OTLP trace exporter and turns tracing on; spans are
	// exported synchronously as they end. Tests pass tracetest.NewInMemoryExporter().
	SpanExporter sdktrace.SpanExporter
	// MetricReader, when set, is added to the meter provider and turns metrics on. Tests pass
	// sdkmetric.NewManualReader().
	MetricReader sdkmetric.Reader
}

// Providers are what instrumented code needs. The zero value is not usable; build one with Setup.
type Providers struct {
	// TracerProvider creates tracers: an SDK provider, or the no-op one when tracing is off.
	TracerProvider trace.TracerProvider
	// MeterProvider creates meters: an SDK provider, or the no-op one when metrics are off.
	MeterProvider metric.MeterProvider
	// Propagator extracts trace context (and baggage) from incoming calls and injects it into
	// outgoing ones. It is set even when tracing is off, so that the dialog engine's trace still
	// reaches the agents.
	Propagator propagation.TextMapPropagator

	summary   string
	log       *slog.Logger
	shutdowns []func(context.Context) error
	metrics   *http.Server
	metricsLn net.Listener
	served    chan error
}

// Setup builds the providers from the standard OTEL_* variables of the process environment, read
// by the OpenTelemetry libraries themselves (autoexport, the SDK, autoprop): the SDK reads its
// environment and nothing else, so that is the one source (docs/decisions.md#opentelemetry-configuration).
// Two rules are the connector's own: nothing is exported until OTEL_<SIGNAL>_EXPORTER or an OTLP
// endpoint says so, and OTEL_SDK_DISABLED=true turns off what the OTEL_* variables configure.
// An exporter the libraries refuse (unknown OTEL_TRACES_EXPORTER, OTLP protocol) or a malformed
// OTEL_RESOURCE_ATTRIBUTES is an error; the libraries report other bad values (sampler, headers,
// propagators) through OpenTelemetry's error handler and logger, which Start routes to the log,
// and use their defaults. Setup does not connect to the collector: exporters connect when they
// first send. Call Shutdown when the process ends, after the servers drained, to flush what is
// buffered.
func Setup(ctx context.Context, o Options) (*Providers, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Providers{
		TracerProvider: tracenoop.NewTracerProvider(),
		MeterProvider:  metricnoop.NewMeterProvider(),
		Propagator:     autoprop.NewTextMapPropagator(),
		log:            o.Logger,
	}
	// OTEL_SDK_DISABLED turns off what the OTEL_* variables configure (spans, OTLP metrics); the
	// Prometheus endpoint is our own setting and stays as A2AC_METRICS_ADDR says.
	disabled := sdkDisabled()
	res, err := newResource(ctx, o)
	if err != nil {
		return nil, err
	}

	var summary []string
	defer func() { p.summary = strings.Join(summary, "; ") }()
	fail := func(err error) (*Providers, error) {
		// Whatever was started (exporters, the metrics listener) is released.
		_ = p.Shutdown(context.WithoutCancel(ctx))
		return nil, err
	}

	// No WithSampler: the SDK reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (default
	// parentbased_always_on: a turn is traced when the dialog engine's trace is, or has none).
	switch {
	case o.SpanExporter != nil:
		tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSyncer(redactingExporter{o.SpanExporter}))
		p.TracerProvider = tp
		p.shutdowns = append(p.shutdowns, tp.Shutdown)
		summary = append(summary, "traces: given exporter")
	case disabled:
		summary = append(summary, "traces: off (OTEL_SDK_DISABLED)")
	case exporterConfigured("TRACES"):
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return fail(fmt.Errorf("telemetry: trace exporter (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_*): %w", err))
		}
		if autoexport.IsNoneSpanExporter(exp) {
			summary = append(summary, "traces: off")
			break
		}
		// The batch processor reads its OTEL_BSP_* limits.
		tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(redactingExporter{exp}))
		p.TracerProvider = tp
		p.shutdowns = append(p.shutdowns, tp.Shutdown)
		summary = append(summary, "traces: "+describeExporter("TRACES"))
	default:
		summary = append(summary, "traces: off")
	}

	var readers []sdkmetric.Option
	if o.MetricReader != nil {
		readers = append(readers, sdkmetric.WithReader(o.MetricReader))
		summary = append(summary, "metrics: given reader")
	}
	if o.MetricsAddr != "" {
		reader, err := p.serveMetrics(o.MetricsAddr)
		if err != nil {
			return fail(err)
		}
		readers = append(readers, sdkmetric.WithReader(reader))
		summary = append(summary, "metrics: prometheus at http://"+p.metricsLn.Addr().String()+"/metrics")
	}
	if !disabled && exporterConfigured("METRICS") {
		// A periodic reader, which reads OTEL_METRIC_EXPORT_INTERVAL and _TIMEOUT. Built last:
		// nothing fails after it, so the meter provider is what shuts it down.
		reader, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			return fail(fmt.Errorf("telemetry: metric exporter (OTEL_METRICS_EXPORTER, OTEL_EXPORTER_OTLP_*): %w", err))
		}
		if !autoexport.IsNoneMetricReader(reader) {
			readers = append(readers, sdkmetric.WithReader(reader))
			summary = append(summary, "metrics: "+describeExporter("METRICS"))
		}
	}
	if len(readers) > 0 {
		mp := sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithResource(res))...)
		p.MeterProvider = mp
		// Flush the meter provider before the metrics server stops answering.
		p.shutdowns = append([]func(context.Context) error{mp.Shutdown}, p.shutdowns...)
	} else {
		summary = append(summary, "metrics: off")
	}
	return p, nil
}

// Summary says, in one line for the startup log, where traces and metrics go (hosts only).
func (p *Providers) Summary() string { return p.summary }

// MetricsAddr is the address the Prometheus endpoint listens on ("" when not serving); with
// A2AC_METRICS_ADDR=127.0.0.1:0 it tells tests the port.
func (p *Providers) MetricsAddr() string {
	if p.metricsLn == nil {
		return ""
	}
	return p.metricsLn.Addr().String()
}

// Shutdown flushes buffered spans and metrics and stops the metrics server, within ctx. It is
// safe to call more than once.
func (p *Providers) Shutdown(ctx context.Context) error {
	var errs []error
	for _, f := range p.shutdowns {
		if err := f(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	p.shutdowns = nil
	if p.metrics != nil {
		if err := p.metrics.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("telemetry: metrics server: %w", err))
		}
		if err := <-p.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("telemetry: metrics server: %w", err))
		}
		p.metrics = nil
	}
	return errors.Join(errs...)
}

// serveMetrics listens on addr and serves /metrics from a registry of its own (never the
// Prometheus default registry, which is process-global): the OpenTelemetry metrics plus the Go
// runtime and process collectors.
func (p *Providers) serveMetrics(addr string) (sdkmetric.Reader, error) {
	reg := prometheus.NewRegistry()
	if err := errors.Join(
		reg.Register(collectors.NewGoCollector()),
		reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
	); err != nil {
		return nil, fmt.Errorf("telemetry: prometheus collectors: %w", err)
	}
	reader, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("A2AC_METRICS_ADDR: listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	p.metricsLn = ln
	p.metrics = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	p.served = make(chan error, 1)
	srv, log := p.metrics, p.log
	go func() {
		err := srv.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", slog.Any("error", err))
		}
		p.served <- err
	}()
	return reader, nil
}

// newResource describes this process: service.name, service.version, service.instance.id (the
// host name, which is the pod name on Kubernetes; a random UUID when there is none), the SDK's
// own attributes, then OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME (read by the SDK's
// resource.WithFromEnv), which win: of the detectors, a later one wins.
func newResource(ctx context.Context, o Options) (*resource.Resource, error) {
	version := o.Version
	if version == "" {
		version = buildVersion()
	}
	instance, err := os.Hostname()
	if err != nil || instance == "" {
		instance = uuid.NewString()
	}
	res, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName(o.ServiceName), semconv.ServiceVersion(version),
			semconv.ServiceInstanceID(instance)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	return res, nil
}

// buildVersion is the main module's version as the Go toolchain stamped it ("(devel)" for a
// plain `go build`), with the VCS revision when stamped.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
	}
	if v == "" {
		return "unknown"
	}
	return v
}
