package cardfetch

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// scope names this package's tracer and meter.
const scope = "github.com/a2a-connector/a2a-connector/internal/cardfetch"

// MetricFetches counts FetchAndValidate calls by result (attribute a2ac.card.result): "valid",
// "invalid" (fetched, but the card has errors), or the FetchErrorKind of a failed fetch.
const MetricFetches = "a2ac.card.fetches"

// Results of MetricFetches besides the fetch error kinds.
const (
	ResultValid   = "valid"
	ResultInvalid = "invalid"
)

// Spans and their attributes. A card URL may carry a token in its path or query, so only its
// host is recorded; the card itself, and the problems' messages, are never recorded.
const (
	spanFetch    = "cardfetch.Fetch"
	spanValidate = "cardfetch.Validate"

	attrHost      = attribute.Key("a2ac.card.host")
	attrResult    = attribute.Key("a2ac.card.result")
	attrAttempts  = attribute.Key("a2ac.card.attempts")
	attrStatus    = attribute.Key("http.response.status_code")
	attrBytes     = attribute.Key("a2ac.card.bytes")
	attrValid     = attribute.Key("a2ac.card.valid")
	attrProblems  = attribute.Key("a2ac.card.problems")
	attrErrors    = attribute.Key("a2ac.card.errors")
	attrStreaming = attribute.Key("a2a.streaming")

	// resultOK is the fetch span's a2ac.card.result of a fetched card.
	resultOK = "ok"
)

type observer struct {
	tracer  trace.Tracer
	fetches metric.Int64Counter
}

func newObserver(tp trace.TracerProvider, mp metric.MeterProvider) *observer {
	// A constant name the SDK accepts; on error it would still return a working instrument.
	c, _ := telemetry.Meter(mp, scope).Int64Counter(MetricFetches, metric.WithUnit("{fetch}"),
		metric.WithDescription("Agent card fetches (console validate, register, refresh), by a2ac.card.result."))
	return &observer{tracer: telemetry.Tracer(tp, scope), fetches: c}
}

// hostOf is the host (and port) of a card URL, "" when it has none.
func hostOf(cardURL string) string {
	u, err := url.Parse(strings.TrimSpace(cardURL))
	if err != nil {
		return ""
	}
	return u.Host
}

// startFetch opens the fetch span.
func (o *observer) startFetch(ctx context.Context, cardURL string) (context.Context, trace.Span) {
	ctx, span := o.tracer.Start(ctx, spanFetch)
	if span.IsRecording() {
		if h := hostOf(cardURL); h != "" {
			span.SetAttributes(attrHost.String(h))
		}
	}
	return ctx, span
}

// endFetch records how the fetch went: the error kind, never the error's text (it quotes the
// URL).
func endFetch(span trace.Span, got Fetched, err error) {
	if span.IsRecording() {
		var fe *FetchError
		switch {
		case err == nil:
			span.SetAttributes(attrResult.String(resultOK), attrBytes.Int(len(got.Raw)))
		case errors.As(err, &fe):
			span.SetAttributes(attrResult.String(string(fe.Kind)), attrAttempts.Int(max(1, len(fe.Tried))))
			if fe.StatusCode != 0 {
				span.SetAttributes(attrStatus.Int(fe.StatusCode))
			}
			span.SetStatus(codes.Error, string(fe.Kind))
		default:
			span.SetAttributes(attrResult.String(string(KindNetwork)))
			span.SetStatus(codes.Error, string(KindNetwork))
		}
	}
	span.End()
}

// validateObserved runs the Checker on the card served at cardURL in its own span and counts
// the fetch.
func (f *Fetcher) validateObserved(ctx context.Context, raw []byte, cardURL string) cardcheck.Report {
	_, span := f.obs.tracer.Start(ctx, spanValidate)
	rep := f.checker.CheckAt(raw, cardURL)
	result := ResultInvalid
	if rep.Valid {
		result = ResultValid
	}
	f.obs.count(ctx, result)
	if span.IsRecording() {
		errs := 0
		for _, p := range rep.Problems {
			if p.Severity == connector.SeverityError {
				errs++
			}
		}
		span.SetAttributes(attrValid.Bool(rep.Valid), attrProblems.Int(len(rep.Problems)), attrErrors.Int(errs),
			attrStreaming.Bool(rep.Profile.Streaming))
	}
	span.End()
	return rep
}

func (o *observer) count(ctx context.Context, result string) {
	o.fetches.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(attrResult.String(result))))
}
