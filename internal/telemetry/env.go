package telemetry

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// OTLP protocols (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	protocolGRPC = "grpc"
	protocolHTTP = "http/protobuf"
)

// env reads the OTEL_* variables through getenv and collects one error line per bad variable.
type env struct {
	getenv func(string) string
	errs   []error
}

func (e *env) get(name string) string { return strings.TrimSpace(e.getenv(name)) }

// bad records a problem with a variable, once: the generic OTLP variables are read for each
// signal.
func (e *env) bad(name, format string, args ...any) {
	err := fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...))
	for _, prev := range e.errs {
		if prev.Error() == err.Error() {
			return
		}
	}
	e.errs = append(e.errs, err)
}

// disabled reports OTEL_SDK_DISABLED=true (the specification: only "true", any case, disables).
func (e *env) disabled() bool { return strings.EqualFold(e.get("OTEL_SDK_DISABLED"), "true") }

// otlp is one signal's OTLP exporter settings.
type otlp struct {
	protocol    string
	endpoint    string // the full URL to send to
	headers     map[string]string
	timeout     time.Duration // 0: the exporter's default (10 s)
	compression bool          // gzip
}

// host is the endpoint's host:port, for the startup log line (never the headers: they may hold
// the collector's credentials).
func (o otlp) host() string {
	u, err := url.Parse(o.endpoint)
	if err != nil {
		return ""
	}
	return u.Host
}

// signal reads the exporter settings of one signal ("TRACES" or "METRICS", with its OTLP/HTTP
// path "/v1/traces" or "/v1/metrics"). ok is false when the signal is not exported over OTLP:
// OTEL_<SIGNAL>_EXPORTER=none, or no endpoint at all. Signal-specific variables win over the
// generic ones, as the specification says. Every variable is checked even after a bad one, so
// that all problems are reported at once.
func (e *env) signal(sig, path string) (o otlp, ok bool) {
	ok = true
	exporterVar := "OTEL_" + sig + "_EXPORTER"
	switch v := strings.ToLower(e.get(exporterVar)); v {
	case "", "otlp":
	case "none":
		ok = false
	default:
		e.bad(exporterVar, "%q is not supported: want otlp or none", v)
	}

	pre, specific := "OTEL_EXPORTER_OTLP_", "OTEL_EXPORTER_OTLP_"+sig+"_"
	pick := func(name string) (value, from string) {
		if v := e.get(specific + name); v != "" {
			return v, specific + name
		}
		return e.get(pre + name), pre + name
	}

	o.protocol = protocolHTTP // the specification's default
	if v, from := pick("PROTOCOL"); v != "" {
		switch v {
		case protocolGRPC, protocolHTTP:
			o.protocol = v
		default:
			e.bad(from, "%q is not supported: want grpc or http/protobuf", v)
		}
	}

	raw, from := pick("ENDPOINT")
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		ok = false
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		e.bad(from, "want an http:// or https:// URL such as http://otel-collector:4318")
		ok = false
	}
	o.endpoint = raw
	if ok && from == pre+"ENDPOINT" && o.protocol == protocolHTTP {
		// The generic endpoint is a base URL: each signal appends its path. A signal-specific
		// endpoint is used as it is.
		u.Path = strings.TrimSuffix(u.Path, "/") + path
		u.RawPath = ""
		o.endpoint = u.String()
	}

	o.headers = e.headers(pre + "HEADERS")
	for k, v := range e.headers(specific + "HEADERS") {
		if o.headers == nil {
			o.headers = map[string]string{}
		}
		o.headers[k] = v
	}

	if v, from := pick("TIMEOUT"); v != "" {
		o.timeout = e.millis(from, v)
	}
	if v, from := pick("COMPRESSION"); v != "" {
		switch v {
		case "gzip":
			o.compression = true
		case "none":
		default:
			e.bad(from, "%q is not supported: want gzip or none", v)
		}
	}
	return o, ok
}

// headers parses "key=value,key2=value2" with percent-encoded values. Errors never quote a
// value: headers carry collector credentials.
func (e *env) headers(name string) map[string]string {
	raw := e.get(name)
	if raw == "" {
		return nil
	}
	out := map[string]string{}
	for i, pair := range strings.Split(raw, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, found := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		val, err := url.PathUnescape(strings.TrimSpace(v))
		if !found || k == "" || err != nil {
			e.bad(name, "entry %d is not key=value (percent-encoded)", i+1)
			continue
		}
		out[k] = val
	}
	return out
}

// millis parses a positive number of milliseconds.
func (e *env) millis(name, v string) time.Duration {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		e.bad(name, "%q is not a positive number of milliseconds", v)
		return 0
	}
	return time.Duration(n) * time.Millisecond
}

// sampler reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG; the default is
// parentbased_always_on: a turn is traced when the dialog engine's trace is (or when there is
// none).
func (e *env) sampler() sdktrace.Sampler {
	name := strings.ToLower(e.get("OTEL_TRACES_SAMPLER"))
	ratio := func() float64 {
		v := e.get("OTEL_TRACES_SAMPLER_ARG")
		if v == "" {
			return 1
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			e.bad("OTEL_TRACES_SAMPLER_ARG", "%q is not a ratio between 0 and 1", v)
			return 1
		}
		return f
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample())
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample())
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio()))
	case "always_on":
		return sdktrace.AlwaysSample()
	case "always_off":
		return sdktrace.NeverSample()
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio())
	}
	e.bad("OTEL_TRACES_SAMPLER", "%q is not supported: want always_on, always_off, traceidratio or their parentbased_ forms", name)
	return sdktrace.ParentBased(sdktrace.AlwaysSample())
}

// propagator reads OTEL_PROPAGATORS (default "tracecontext,baggage").
func (e *env) propagator() propagation.TextMapPropagator {
	v := e.get("OTEL_PROPAGATORS")
	if v == "" {
		v = "tracecontext,baggage"
	}
	var ps []propagation.TextMapPropagator
	for _, name := range strings.Split(v, ",") {
		switch name = strings.ToLower(strings.TrimSpace(name)); name {
		case "tracecontext":
			ps = append(ps, propagation.TraceContext{})
		case "baggage":
			ps = append(ps, propagation.Baggage{})
		case "none", "":
		default:
			e.bad("OTEL_PROPAGATORS", "%q is not supported: want tracecontext, baggage or none", name)
		}
	}
	return propagation.NewCompositeTextMapPropagator(ps...)
}

// resourceAttrs reads OTEL_RESOURCE_ATTRIBUTES ("key=value,…", percent-encoded values) and
// OTEL_SERVICE_NAME, which wins over a service.name given there.
func (e *env) resourceAttrs() []attribute.KeyValue {
	var out []attribute.KeyValue
	for k, v := range e.headers("OTEL_RESOURCE_ATTRIBUTES") {
		out = append(out, attribute.String(k, v))
	}
	if v := e.get("OTEL_SERVICE_NAME"); v != "" {
		out = append(out, attribute.String("service.name", v))
	}
	return out
}

// interval reads a metric export interval or timeout variable in milliseconds.
func (e *env) interval(name string) time.Duration {
	v := e.get(name)
	if v == "" {
		return 0
	}
	return e.millis(name, v)
}
