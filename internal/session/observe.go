package session

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// scope names this package's tracer and meter.
const scope = "github.com/a2a-connector/a2a-connector/internal/session"

// Metric names (see docs/operations.md). Every turn that reaches HandleTurn is measured once,
// with its outcome (attribute a2ac.outcome): a connector.Outcome, or OutcomeError.
const (
	MetricTurns           = "a2ac.turns"
	MetricTurnDuration    = "a2ac.turn.duration"
	MetricTimeToFirstText = "a2ac.turn.time_to_first_text"
)

// OutcomeError is the a2ac.outcome of a turn refused before it started (unknown or disabled
// agent, missing API key, database down, over an admission cap) or whose caller went away before it started; the
// gRPC status says which.
const OutcomeError connector.Outcome = "ERROR"

const (
	spanHandleTurn = "session.HandleTurn"
	// spanSaveAfterFinal is a turn's save that runs after its Final, when its RPC has ended.
	spanSaveAfterFinal = "session.SaveAfterFinal"

	attrTenantID  = attribute.Key("a2ac.tenant.id")
	attrAgentID   = attribute.Key("a2ac.agent.id")
	attrHeld      = attribute.Key("a2ac.held")
	attrOutcome   = attribute.Key("a2ac.outcome")
	attrErrorType = attribute.Key("error.type")
	// The voice extension's (docs/voice-extension.md), on turns that carry any of it: never the
	// digits or the heard text.
	attrInputKind   = attribute.Key("a2ac.voice.input_kind")
	attrInterrupted = attribute.Key("a2ac.voice.interrupted")
	attrFinish      = attribute.Key("a2ac.voice.finish")
)

// turnObs is what HandleTurn learns about a turn for its span and metrics.
type turnObs struct {
	start     time.Time
	tenantID  string
	agentID   string
	errCode   string // the Final's error code, "" when none
	errMsg    string // the Final's error message (the connector's sentence), "" when none
	routed    bool   // an agent of the tenant was chosen for the turn
	held      bool
	outcome   connector.Outcome // "" until the turn has one
	firstText time.Duration     // since start; valid when sawText
	sawText   bool
	// voice: the turn carries voice fields (input other than text, interruption, channel);
	// then its input kind and interruption go on the span. finish is the agent's, when said.
	voice       bool
	inputKind   connector.InputKind
	interrupted bool
	finish      *connector.Finish
}

// noteVoice notes the voice fields of turn t.
func (o *turnObs) noteVoice(t *connector.Turn) {
	o.voice = t.DTMF != nil || t.NoInput != nil || t.Interruption != nil || t.Channel != nil
	if o.voice {
		o.inputKind, o.interrupted = t.InputKind(), t.Interruption != nil
	}
}

// text notes the first text delta. It is called for every event, so it allocates nothing.
func (o *turnObs) text() {
	if !o.sawText {
		o.sawText = true
		// Wall-clock latency, not r.now: the configured clock is for holds (tests fake it).
		o.firstText = time.Since(o.start)
	}
}

// observer holds the Router's tracer and instruments, created once in New.
type observer struct {
	log       *slog.Logger
	tracer    trace.Tracer
	turns     metric.Int64Counter
	duration  metric.Float64Histogram
	firstText metric.Float64Histogram
	// One option slice per outcome, made once, so that measuring a turn allocates nothing.
	add    map[connector.Outcome][]metric.AddOption
	record map[connector.Outcome][]metric.RecordOption
}

func newObserver(tp trace.TracerProvider, mp metric.MeterProvider, log *slog.Logger) *observer {
	m := telemetry.Meter(mp, scope)
	o := &observer{log: log, tracer: telemetry.Tracer(tp, scope),
		add: map[connector.Outcome][]metric.AddOption{}, record: map[connector.Outcome][]metric.RecordOption{}}
	// Histogram buckets in seconds: a spoken reply should start well within a second; turns are
	// bounded by A2AC_TURN_TIMEOUT (30 s by default).
	durationBuckets := []float64{0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10, 15, 20, 30, 60}
	firstTextBuckets := []float64{0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10}
	var errs [3]error
	o.turns, errs[0] = m.Int64Counter(MetricTurns, metric.WithUnit("{turn}"),
		metric.WithDescription("Dialog turns handled, by a2ac.outcome."))
	o.duration, errs[1] = m.Float64Histogram(MetricTurnDuration, metric.WithUnit("s"),
		metric.WithDescription("Time from the turn's arrival to its end, by a2ac.outcome."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	o.firstText, errs[2] = m.Float64Histogram(MetricTimeToFirstText, metric.WithUnit("s"),
		metric.WithDescription("Time from the turn's arrival to the first reply text sent on, by a2ac.outcome; turns without text are not measured."),
		metric.WithExplicitBucketBoundaries(firstTextBuckets...))
	if err := errors.Join(errs[:]...); err != nil {
		// Constant names the SDK accepts; it returns working instruments even so.
		log.Warn("session: create instruments", "error", err)
	}
	for _, oc := range []connector.Outcome{connector.OutcomeCompleted, connector.OutcomeInputRequired,
		connector.OutcomeHandback, connector.OutcomeFailed, connector.OutcomeCanceled, connector.OutcomeNoAgent,
		OutcomeError} {
		o.options(oc)
	}
	return o
}

// options returns (making them on first use) the measurement options of an outcome. Only New
// calls it with an outcome that is not there yet; at turn time every outcome is known.
func (o *observer) options(oc connector.Outcome) ([]metric.AddOption, []metric.RecordOption) {
	if a, ok := o.add[oc]; ok {
		return a, o.record[oc]
	}
	set := metric.WithAttributeSet(attribute.NewSet(attrOutcome.String(string(oc))))
	o.add[oc], o.record[oc] = []metric.AddOption{set}, []metric.RecordOption{set}
	return o.add[oc], o.record[oc]
}

func (o *observer) start(ctx context.Context, tenantID string) (context.Context, trace.Span) {
	ctx, span := o.tracer.Start(ctx, spanHandleTurn)
	if span.IsRecording() {
		span.SetAttributes(attrTenantID.String(tenantID))
	}
	return ctx, span
}

// startLateSave starts the span of a save that runs after the turn's Final, in the turn's trace;
// with the turn unsampled (tracing off) it starts nothing.
func (o *observer) startLateSave(ctx context.Context, tenantID string) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsSampled() {
		return ctx, nil
	}
	ctx, span := o.tracer.Start(ctx, spanSaveAfterFinal)
	span.SetAttributes(attrTenantID.String(tenantID))
	return ctx, span
}

// endLateSave ends a span startLateSave started (nil: none).
func (o *observer) endLateSave(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, "save failed")
		span.SetAttributes(attrErrorType.String(errorType(err)))
	}
	span.End()
}

// end measures the turn and ends its span.
func (o *observer) end(ctx context.Context, span trace.Span, t *turnObs, err error) {
	outcome := t.outcome
	if outcome == "" {
		outcome = OutcomeError
	}
	add, rec := o.add[outcome], o.record[outcome]
	if add == nil {
		// An outcome New did not know: measured without the precomputed options.
		set := metric.WithAttributeSet(attribute.NewSet(attrOutcome.String(string(outcome))))
		add, rec = []metric.AddOption{set}, []metric.RecordOption{set}
	}
	took := time.Since(t.start)
	o.turns.Add(ctx, 1, add...)
	o.duration.Record(ctx, took.Seconds(), rec...)
	// One line per turn, so that an operator sees traffic without tracing: ids, outcome,
	// code and durations, never the user's or the agent's words.
	attrs := []slog.Attr{slog.String("tenant_id", t.tenantID), slog.String("agent_id", t.agentID),
		slog.Bool("held", t.held), slog.String("outcome", string(outcome)),
		slog.Float64("duration_ms", float64(took.Microseconds())/1000)}
	if t.sawText {
		attrs = append(attrs, slog.Float64("first_text_ms", float64(t.firstText.Microseconds())/1000))
	}
	if t.errCode != "" {
		attrs = append(attrs, slog.String("error_code", t.errCode))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error_type", errorType(err)))
	}
	o.log.LogAttrs(ctx, slog.LevelInfo, "turn", attrs...)
	if t.sawText {
		o.firstText.Record(ctx, t.firstText.Seconds(), rec...)
	}
	if span.IsRecording() {
		span.SetAttributes(attrAgentID.String(t.agentID), attrHeld.Bool(t.held), attrOutcome.String(string(outcome)))
		if t.voice {
			span.SetAttributes(attrInputKind.String(string(t.inputKind)), attrInterrupted.Bool(t.interrupted))
		}
		if t.finish != nil {
			span.SetAttributes(attrFinish.String(string(t.finish.Type)))
		}
		if err != nil {
			span.SetAttributes(attrErrorType.String(errorType(err)))
		}
		// A barge-in (the caller left after the turn had an outcome) is not an error.
		switch outcome {
		case OutcomeError:
			span.SetStatus(codes.Error, errorType(err))
		case connector.OutcomeFailed:
			span.SetStatus(codes.Error, "turn failed")
		}
	}
	span.End()
}

// errorType names a HandleTurn error without its text (which names the session).
func errorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.Is(err, connector.ErrNotFound):
		return "not_found"
	case errors.Is(err, connector.ErrAgentDisabled):
		return "agent_disabled"
	case errors.Is(err, connector.ErrCredentialsMissing):
		return "api_key_missing"
	case errors.Is(err, connector.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, connector.ErrInvalid):
		return "invalid"
	case errors.Is(err, connector.ErrNoInputUnsupported):
		return "no_input_unsupported"
	}
	var refused *connector.RefusedError
	if errors.As(err, &refused) {
		return "resource_exhausted"
	}
	return "internal"
}
