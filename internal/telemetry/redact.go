package telemetry

import (
	"context"
	"net/url"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// redactingExporter keeps query strings and user info out of exported URLs. Agent endpoints come
// from tenants' cards, and a tenant may have put a credential in one ("…/a2a?key=…"); the HTTP
// client instrumentation records the full URL. Spans are rewritten on their way out, so nothing
// on the hot path pays for it unless a URL actually carries a query.
type redactingExporter struct {
	sdktrace.SpanExporter
}

// urlKeys are the span attributes that hold whole URLs.
var urlKeys = map[attribute.Key]bool{"url.full": true, "http.url": true}

func (e redactingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out := spans
	for i, s := range spans {
		if attrs, changed := redactAttrs(s.Attributes()); changed {
			if &out[0] == &spans[0] {
				out = append([]sdktrace.ReadOnlySpan(nil), spans...)
			}
			out[i] = redactedSpan{ReadOnlySpan: s, attrs: attrs}
		}
	}
	return e.SpanExporter.ExportSpans(ctx, out)
}

// redactedSpan is a span with rewritten attributes; everything else is the original's.
type redactedSpan struct {
	sdktrace.ReadOnlySpan
	attrs []attribute.KeyValue
}

func (s redactedSpan) Attributes() []attribute.KeyValue { return s.attrs }

// redactAttrs returns attrs with URL values stripped of user info, query and fragment (a
// non-empty query becomes "?REDACTED"), and url.query dropped.
func redactAttrs(attrs []attribute.KeyValue) ([]attribute.KeyValue, bool) {
	var out []attribute.KeyValue
	for i, kv := range attrs {
		v, changed := redactValue(kv)
		if !changed {
			if out != nil {
				out = append(out, kv)
			}
			continue
		}
		if out == nil {
			out = append(make([]attribute.KeyValue, 0, len(attrs)), attrs[:i]...)
		}
		if v.Valid() {
			out = append(out, v)
		}
	}
	if out == nil {
		return attrs, false
	}
	return out, true
}

// redactValue rewrites one attribute; an invalid KeyValue means "drop it".
func redactValue(kv attribute.KeyValue) (attribute.KeyValue, bool) {
	if kv.Key == "url.query" {
		return attribute.KeyValue{}, true
	}
	if !urlKeys[kv.Key] {
		return kv, false
	}
	u, err := url.Parse(kv.Value.AsString())
	if err != nil {
		return kv.Key.String("REDACTED"), true
	}
	if u.User == nil && u.RawQuery == "" && u.Fragment == "" {
		return kv, false
	}
	u.User = nil
	u.Fragment, u.RawFragment = "", ""
	if u.RawQuery != "" {
		u.RawQuery = "REDACTED"
	}
	return kv.Key.String(u.String()), true
}
