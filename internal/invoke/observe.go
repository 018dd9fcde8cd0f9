package invoke

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// scope names this package's tracer and meter.
const scope = "github.com/a2a-connector/a2a-connector/internal/invoke"

// Metric names (see docs/operations.md).
const (
	// MetricAgentErrors counts turns that ended with an Error, by its code (attribute
	// error.code); turns the caller canceled (barge-in) are not agent errors and not counted.
	MetricAgentErrors = "a2ac.agent.errors"
	// MetricStreamsActive is the number of message/stream calls (and their resubscribes) open
	// now.
	MetricStreamsActive = "a2ac.streams.active"
)

// Span and event names, and span attribute keys. Attributes never hold the user's text, the
// reply, an API key or agent error messages (which may quote the user): codes and ids only.
const (
	spanTurn            = "invoke.Turn"
	eventFirstText      = "first_text"
	eventStreamFallback = "stream_on_url"
	eventResubscribe    = "resubscribe"
	eventGetTask        = "get_task"
	// eventVersionFallback: the preferred interface refused the protocol version; the turn
	// moved to the card's other interface.
	eventVersionFallback = "version_fallback"
	// eventTokenRefetch: the agent refused the cached access token (401); the turn fetched a
	// new one and called once more.
	eventTokenRefetch = "token_refetch"

	attrAgentID      = attribute.Key("a2ac.agent.id")
	attrMethod       = attribute.Key("a2a.method")
	attrStreaming    = attribute.Key("a2a.streaming")
	attrContinuing   = attribute.Key("a2a.continuing")
	attrTaskID       = attribute.Key("a2a.task.id")
	attrContextID    = attribute.Key("a2a.context.id")
	attrTaskState    = attribute.Key("a2a.task.state")
	attrOutcome      = attribute.Key("a2ac.outcome")
	attrErrorCode    = attribute.Key("error.code")
	attrInterrupted  = attribute.Key("a2ac.interrupted")
	attrNonTextParts = attribute.Key("a2a.non_text_parts")
	attrHTTPStatus   = attribute.Key("http.response.status_code")
	attrProtocol     = attribute.Key("a2a.protocol.version")
	attrProtocolFrom = attribute.Key("a2a.protocol.from")
	attrProtocolTo   = attribute.Key("a2a.protocol.to")
)

// observer holds the Invoker's tracer and instruments, created once in New. With nil providers
// they are no-ops.
type observer struct {
	tracer        trace.Tracer
	agentErrors   metric.Int64Counter
	streamsActive metric.Int64UpDownCounter
	// byCode holds one option slice per error code, so that counting an error allocates
	// nothing.
	byCode map[string][]metric.AddOption
}

func newObserver(tp trace.TracerProvider, mp metric.MeterProvider, log *slog.Logger) *observer {
	m := telemetry.Meter(mp, scope)
	o := &observer{tracer: telemetry.Tracer(tp, scope), byCode: map[string][]metric.AddOption{}}
	var err1, err2 error
	o.agentErrors, err1 = m.Int64Counter(MetricAgentErrors, metric.WithUnit("{error}"),
		metric.WithDescription("Turns that ended with an error, by error.code."))
	o.streamsActive, err2 = m.Int64UpDownCounter(MetricStreamsActive, metric.WithUnit("{stream}"),
		metric.WithDescription("Agent streams (message/stream, tasks/resubscribe) open now."))
	for _, err := range []error{err1, err2} {
		if err != nil {
			// Constant names the SDK accepts; it returns a working instrument even so.
			log.Warn("invoke: create instrument", "error", err)
		}
	}
	for _, c := range []string{
		connector.CodeTimeout, connector.CodeAgentUnreachable, connector.CodeAgentHTTPStatus, connector.CodeAgentUnauthorized, connector.CodeRedirect, connector.CodeAgentRPCError,
		connector.CodeProtocolError, connector.CodeBlockedAddress, connector.CodeTooLarge, connector.CodeAuthRequired, connector.CodeUnknownState,
		connector.CodeStreamEnded, connector.CodeCredentials, connector.CodeTaskFailed, connector.CodeAgentUnavailable,
	} {
		o.byCode[c] = codeOption(c)
	}
	return o
}

func codeOption(code string) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attrErrorCode.String(code)))}
}

// start opens the turn's span.
func (o *observer) start(ctx context.Context, req connector.TurnRequest) (context.Context, trace.Span) {
	ctx, span := o.tracer.Start(ctx, spanTurn)
	if span.IsRecording() {
		wire := a2aclient.WireFor(req.Agent.ProtocolVersion)
		op := a2aclient.OpSendMessage
		if req.Agent.Streaming {
			op = a2aclient.OpStreamMessage
		}
		span.SetAttributes(
			attrAgentID.String(req.Agent.ID),
			attrMethod.String(a2aclient.Method(wire, op)),
			attrProtocol.String(wire.String()),
			attrStreaming.Bool(req.Agent.Streaming),
			attrContinuing.Bool(req.TaskID != ""),
		)
	}
	return ctx, span
}

// end records the turn's result on its span and counts an agent error.
func (o *observer) end(ctx context.Context, span trace.Span, res *connector.TurnResult) {
	if res.Err != nil && res.Err.Code != connector.CodeCanceled {
		opts, ok := o.byCode[res.Err.Code]
		if !ok {
			opts = codeOption(res.Err.Code)
		}
		o.agentErrors.Add(ctx, 1, opts...)
	}
	if span.IsRecording() {
		span.SetAttributes(
			attrTaskID.String(res.TaskID),
			attrContextID.String(res.ContextID),
			attrTaskState.String(res.State),
			attrOutcome.String(string(res.Outcome)),
			attrInterrupted.Bool(res.Interrupted),
			attrNonTextParts.Int(res.NonTextParts),
		)
		if res.Err != nil {
			span.SetAttributes(attrErrorCode.String(res.Err.Code))
		}
		if res.Outcome == connector.OutcomeFailed {
			// The code only: the message may quote what the agent said, which may quote the user.
			span.SetStatus(codes.Error, errCode(res.Err))
		}
	}
	span.End()
}
