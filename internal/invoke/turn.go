package invoke

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2a"
)

// turn is the state of one Turn call. It lives on the calling goroutine only.
type turn struct {
	inv    *Invoker
	parent context.Context // the caller's: tells caller cancel and caller deadline apart
	ctx    context.Context // parent bounded by TurnTimeout
	req    connector.TurnRequest
	emit   func(connector.TurnEvent)
	asm    *assembler
	span   trace.Span // the turn's span (no-op when tracing is off)
	// sawText: a text delta was emitted (the span got its first_text event).
	sawText bool
	// answered: the agent sent at least one A2A event or result (it is up, whatever it said).
	answered bool
	// ticket is the breaker's admission of the turn (nil without a breaker) to the interface
	// it calls now (rt): moving to the fallback moves it (rekey).
	ticket *ticket
	// refusal is the breaker's refusal of the fallback interface, when that ended the turn.
	refusal *connector.TurnError

	// rt is the interface the turn talks to; alt the other generation's interface of the same
	// card, tried once when rt refuses the protocol version (nil when none, or once used).
	rt  route
	alt *route
	// streamURL is where the stream was opened (0.x: url + "/stream" or url), for resubscribe.
	streamURL string

	taskID, contextID string
	// taskSeen: the agent named a task during this turn (it started or continued one).
	taskSeen bool
	// lost: the stream ended or broke before a final state, on the agent's side. The task may
	// be running fine, so it is resumed or looked up, never canceled for that.
	lost bool
	// state is the last task state seen.
	state a2a.TaskState
	// end is the status that ended the turn (interrupted, terminal or not understood).
	end *a2a.TaskStatus
	// messageResult: a Message ended the turn.
	messageResult bool
	// endMetadata is TurnResult.EndMetadata.
	endMetadata map[string]any

	// Last status event emitted, to skip repeats while polling.
	emittedState, emittedStatusText string
	emittedAnyStatus                bool
}
