package telemetry

import (
	"net/url"
	"os"
	"strings"
)

// The OTEL_* variables are read by the libraries that define them, from the process environment
// (docs/decisions.md#opentelemetry-configuration): exporters by autoexport and the OTLP exporters,
// the sampler by the trace SDK, the export interval by the metric SDK, the resource by
// resource.WithFromEnv, the propagators by autoprop. What is left here are the two rules the SDK
// does not have.

// sdkDisabled reports OTEL_SDK_DISABLED=true (the specification: only "true", any case,
// disables). The Go SDK does not implement this variable.
func sdkDisabled() bool {
	return strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true")
}

// exporterConfigured reports whether signal ("TRACES" or "METRICS") is to be exported: its
// OTEL_<SIGNAL>_EXPORTER is set, or an OTLP endpoint is set for it. The SDK would otherwise send
// to localhost:4318; the connector exports nothing until told where to.
func exporterConfigured(signal string) bool {
	return os.Getenv("OTEL_"+signal+"_EXPORTER") != "" ||
		os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
}

// describeExporter says, for the startup log line, what signal is exported with: the exporter's
// name, and for OTLP the protocol and the collector's host (never the headers or the path: they
// may hold credentials).
func describeExporter(signal string) string {
	name := os.Getenv("OTEL_" + signal + "_EXPORTER")
	if name != "" && name != "otlp" {
		return name
	}
	pick := func(v string) string {
		if s := os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_" + v); s != "" {
			return s
		}
		return os.Getenv("OTEL_EXPORTER_OTLP_" + v)
	}
	protocol := pick("PROTOCOL")
	if protocol == "" {
		protocol = "http/protobuf"
	}
	host := "localhost (the SDK's default)"
	if u, err := url.Parse(pick("ENDPOINT")); err == nil && u.Host != "" {
		host = u.Host
	}
	return "otlp " + protocol + " to " + host
}
