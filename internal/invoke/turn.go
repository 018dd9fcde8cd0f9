package invoke

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/neterr"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
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

// run calls the agent (stream or send) and returns how the call ended; finish makes the Result.
func (t *turn) run() error {
	var herr *connector.TurnError
	if t.ctx, herr = t.inv.withTLS(t.ctx, t.req.Agent, t.req.APIKey); herr != nil {
		return herr
	}
	hdr, accessToken, herr := t.inv.turnHeader(t.ctx, &t.req)
	if herr != nil {
		return herr
	}
	if t.req.Agent.EndpointURL == "" {
		return &connector.TurnError{Code: connector.CodeAgentUnreachable, Message: "the agent has no endpoint URL"}
	}
	t.rt, t.alt = t.inv.routes(t.req.Agent)
	// One copy of the params, passed by pointer down to the encoder: every frame between here
	// and the agent's body read stays on the goroutine's stack while the agent streams.
	params := &a2a.SendMessageRequest{Message: a2a.Message{
		Role:      a2a.RoleUser,
		Parts:     a2a.Parts{a2a.TextPart(t.req.Text)},
		MessageID: t.req.MessageID,
		ContextID: t.req.ContextID,
		TaskID:    t.req.TaskID,
		Metadata:  t.req.Metadata,
	}}
	err := t.call(hdr, params)
	if accessToken != "" && unauthorized(err) && !t.taskSeen && !t.emittedAnyStatus && t.ctx.Err() == nil {
		// The agent refused an access token we still held as valid (revoked, or its key
		// rotated): one new token and one more call. The 401 came before any event, so nothing
		// was processed and sending again is safe. A second refusal ends the turn.
		t.inv.tokens.Forget(t.req.Agent.ID, accessToken)
		t.span.AddEvent(eventTokenRefetch)
		if hdr, _, herr = t.inv.turnHeader(t.ctx, &t.req); herr != nil {
			return herr
		}
		err = t.call(hdr, params)
	}
	return err
}

// call sends the message once, streaming or not.
func (t *turn) call(hdr callAuth, params *a2a.SendMessageRequest) error {
	if t.req.Agent.Streaming {
		return t.streamCounted(hdr, params)
	}
	return t.send(hdr, params)
}

// streamCounted is stream, counted in a2ac.streams.active while it runs.
func (t *turn) streamCounted(hdr callAuth, params *a2a.SendMessageRequest) error {
	active := t.inv.obs.streamsActive
	active.Add(t.ctx, 1)
	defer active.Add(t.ctx, -1)
	return t.stream(hdr, params)
}

// stream runs message/stream (1.0: SendStreamingMessage) and, when the stream ends or breaks
// before a final state, resumes the task (resume).
func (t *turn) stream(hdr callAuth, params *a2a.SendMessageRequest) error {
	so := t.streamOptions()
	st, err := t.openStream(hdr, params, so)
	if err != nil {
		var switched bool
		if switched, err = t.switchWire(err); switched {
			st, err = t.openStream(hdr, params, so)
		}
	}
	if err != nil {
		return err
	}
	done, lostErr, err := t.consume(st, t.req.TaskID)
	if done || err != nil {
		return err
	}
	return t.resume(hdr, so, lostErr)
}

func (t *turn) streamOptions() a2aclient.StreamOptions {
	return a2aclient.StreamOptions{FirstEventTimeout: t.inv.opts.FirstEventTimeout, IdleTimeout: t.inv.opts.IdleTimeout}
}

// openStream opens the turn's stream. On the 0.x wire that is `{url}/stream` (the platform's
// convention), or `url` when `{url}/stream` answered 404/405 before (for this agent and
// endpoint) or does now; 1.0 agents stream on their interface URL.
func (t *turn) openStream(hdr callAuth, params *a2a.SendMessageRequest, so a2aclient.StreamOptions) (*a2aclient.Stream, error) {
	inv := t.inv
	base := t.rt.url
	if !t.rt.streamsOnSuffix() {
		t.streamURL = base
		return inv.client.SendStreamingMessage(t.ctx, t.rt.endpoint(base, hdr), params, so)
	}
	key := streamKey{agentID: t.req.Agent.ID, endpoint: base}
	target := streamURL(base)
	if _, ok := inv.streamOnBase.Load(key); ok {
		target = base
	}
	t.streamURL = target
	st, err := inv.client.SendStreamingMessage(t.ctx, t.rt.endpoint(target, hdr), params, so)
	if err != nil && target != base && notFoundOrNotAllowed(err) && t.ctx.Err() == nil {
		return t.streamOnBase(hdr, params, so, key, err)
	}
	return st, err
}

// streamOnBase opens the stream on the interface URL after `{url}/stream` answered 404 or 405,
// and remembers that for the agent. Standard A2A servers (the official SDKs among them) stream
// on url itself. Nothing was processed: the 404/405 came before any event, so sending again is
// safe. (Apart from openStream so that its frame, with the logging's, is not on the stack of
// every turn.)
func (t *turn) streamOnBase(hdr callAuth, params *a2a.SendMessageRequest, so a2aclient.StreamOptions, key streamKey, err error) (*a2aclient.Stream, error) {
	inv, base := t.inv, t.rt.url
	inv.streamOnBase.Store(key, struct{}{})
	t.span.AddEvent(eventStreamFallback, trace.WithAttributes(attrHTTPStatus.Int(statusCode(err))))
	inv.log.InfoContext(t.ctx, "agent streams on its url, not url/stream; remembered for this agent",
		"agent_id", t.req.Agent.ID, "status", statusCode(err))
	t.streamURL = base
	return inv.client.SendStreamingMessage(t.ctx, t.rt.endpoint(base, hdr), params, so)
}

// switchWire moves the turn to the card's other interface when the first call was refused for
// its protocol version (-32009, or -32601 for a method of the other generation), and remembers
// that for the agent. Nothing was processed by the agent, so sending again is safe. It returns
// whether the turn moved, and the error the turn ends with otherwise: err, or the refusal of the
// other interface's circuit breaker (the turn then never calls it).
func (t *turn) switchWire(err error) (bool, error) {
	if t.alt == nil || t.ctx.Err() != nil || !(versionRefused(err) || (t.alt.binding != t.rt.binding && bindingRefused(err))) {
		return false, err
	}
	from := t.rt
	t.rt, t.alt = *t.alt, nil
	t.inv.remember(t.ctx, t.req.Agent, t.rt)
	t.span.AddEvent(eventVersionFallback, trace.WithAttributes(attrProtocolFrom.String(from.version), attrProtocolTo.String(t.rt.version)))
	t.inv.log.InfoContext(t.ctx, "agent refused the protocol version; switched to the card's other interface and remembered it",
		"agent_id", t.req.Agent.ID, "from", from.version, "to", t.rt.version, "error", errorCode(err))
	if refused := t.rekey(); refused != nil {
		return false, refused
	}
	return true, nil
}

// resume handles a stream that ended, cleanly or broken (lostErr), before a final state. When
// the agent named a task, the turn reattaches once (tasks/resubscribe, 1.0 SubscribeToTask),
// then asks for the task (tasks/get, polled while it works), and only then fails. Text already
// forwarded is not forwarded again: a replayed snapshot or artifact only adds what extends it.
func (t *turn) resume(hdr callAuth, so a2aclient.StreamOptions, lostErr error) error {
	ended := "the stream ended without a final state"
	if lostErr != nil {
		ended = "the connection to the agent broke (" + transportReason(lostErr) + ")"
	}
	if t.taskID == "" {
		if lostErr != nil {
			return lostErr
		}
		return &connector.TurnError{Code: connector.CodeStreamEnded, Message: "the stream ended before the agent named a task or a final state"}
	}
	t.lost = true
	inv := t.inv
	inv.log.DebugContext(t.ctx, "stream ended early; resubscribing", "agent_id", t.req.Agent.ID, "task_id", t.taskID, "broken", lostErr != nil)
	t.span.AddEvent(eventResubscribe)
	var why string
	rs, err := inv.client.SubscribeToTask(t.ctx, t.rt.endpoint(t.streamURL, hdr), a2a.SubscribeToTaskRequest{ID: t.taskID}, so)
	if err == nil {
		done, lost, serr := t.consume(rs, "")
		switch {
		case done:
			return nil
		case serr != nil && t.ours(serr):
			return serr
		case serr != nil:
			// An error event instead of the task's events (an SDK answering for a task it
			// no longer streams): the task itself may still say how it ended.
			why = "the resubscribed stream failed: " + callReason(serr)
		default:
			lostErr = lost
			why = "the resubscribed stream ended without a final state too"
		}
	} else {
		if t.ours(err) {
			return err
		}
		why = "resubscribing failed: " + callReason(err)
	}
	t.span.AddEvent(eventGetTask)
	code := connector.CodeStreamEnded
	if lostErr != nil {
		code = connector.CodeAgentUnreachable
	}
	// A task that keeps saying "working" without a stream is given what a silent stream gets:
	// the idle limit. Agents whose executor died with the connection never finish it.
	pollCtx, cancel := context.WithTimeoutCause(t.ctx, inv.opts.IdleTimeout, errStillWorking)
	defer cancel()
	if err := t.poll(pollCtx, t.rt.endpoint(t.rt.url, hdr), 0); err != nil {
		switch {
		case errors.Is(err, errStillWorking) && t.ctx.Err() == nil:
			return &connector.TurnError{Code: code, Message: fmt.Sprintf("%s; %s; the task was still %s %s later", ended, why, apiState(t.state), inv.opts.IdleTimeout)}
		case t.ours(err):
			return err
		}
		return &connector.TurnError{Code: code, Message: ended + "; " + why + "; asking for the task failed: " + callReason(err)}
	}
	return nil
}

// errStillWorking ends the tasks/get polling of a resumed turn.
var errStillWorking = errors.New("task still working")

// consume reads events until one ends the turn (done), the stream ends cleanly (false, nil,
// nil) or breaks on the agent's side (false, lostErr, nil), or fails (err: our limits, a
// protocol error, an agent error). continuing is the held task a continuation sent: a first
// event that merely replays that task still interrupted (some 1.0 servers open a continuation
// with the stored snapshot, old question included) neither speaks nor ends the turn.
func (t *turn) consume(st *a2aclient.Stream, continuing string) (done bool, lostErr, err error) {
	defer st.Close() // also how the connector closes its side at input-required
	for first := true; ; first = false {
		ev, err := st.Next()
		if err == io.EOF {
			return false, nil, nil
		}
		if err != nil {
			if t.ours(err) || agentAnswered(err) {
				return false, nil, err
			}
			return false, err, nil
		}
		t.answered = true
		if first && continuing != "" && replaysHeldTask(ev, continuing) {
			task := ev.(*a2a.Task)
			t.note(task.ID, task.ContextID)
			continue
		}
		if t.handle(ev) || t.asm.tooLarge {
			return true, nil, nil
		}
	}
}

// replaysHeldTask reports whether ev is the snapshot of the held task, still interrupted.
func replaysHeldTask(ev a2a.Event, taskID string) bool {
	task, ok := ev.(*a2a.Task)
	return ok && task.ID == taskID && task.Status.State.IsInterrupted()
}

// agentAnswered reports whether a stream error is something the agent said (a JSON-RPC error,
// or an answer that breaks the protocol) rather than a connection that broke.
func agentAnswered(err error) bool {
	var rpc *a2a.RPCError
	var pe *a2a.ProtocolError
	var hse *a2aclient.HTTPStatusError
	return errors.As(err, &rpc) || errors.As(err, &pe) || errors.As(err, &hse)
}

// send runs message/send (1.0: SendMessage) and polls tasks/get, with backoff, while the task is
// submitted or working.
func (t *turn) send(hdr callAuth, params *a2a.SendMessageRequest) error {
	inv := t.inv
	params.Configuration = &a2a.SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}}
	ev, err := inv.client.SendMessage(t.ctx, t.rt.endpoint(t.rt.url, hdr), params)
	if err != nil {
		var switched bool
		if switched, err = t.switchWire(err); switched {
			ev, err = inv.client.SendMessage(t.ctx, t.rt.endpoint(t.rt.url, hdr), params)
		}
	}
	if err != nil {
		return err
	}
	if t.handle(ev) || t.asm.tooLarge {
		return nil
	}
	if t.taskID == "" {
		return &connector.TurnError{Code: connector.CodeProtocolError, Message: fmt.Sprintf("the agent answered a %s task without an id, which cannot be polled", apiState(t.state))}
	}
	return t.poll(t.ctx, t.rt.endpoint(t.rt.url, hdr), inv.opts.PollInterval)
}

// poll calls tasks/get (1.0: GetTask) after wait, and again with a doubling wait while the task is
// submitted or working, until a state ends the turn or the turn's deadline passes.
func (t *turn) poll(ctx context.Context, ep a2aclient.Endpoint, wait time.Duration) error {
	for {
		if wait > 0 {
			if err := sleep(ctx, wait); err != nil {
				return err
			}
		}
		task, err := t.inv.client.GetTask(ctx, ep, a2a.GetTaskRequest{ID: t.taskID})
		if err != nil {
			if cause := context.Cause(ctx); cause != nil {
				return cause
			}
			return err
		}
		if t.handle(task) || t.asm.tooLarge {
			return nil
		}
		wait = min(max(wait*2, t.inv.opts.PollInterval), maxPollInterval)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-tm.C:
		return nil
	}
}

// handle applies one event and reports whether it ends the turn: the first interrupted or
// terminal state (or one we do not understand) or a Message, whatever `final` says.
func (t *turn) handle(ev a2a.Event) bool {
	t.answered = true
	switch e := ev.(type) {
	case *a2a.Task:
		t.note(e.ID, e.ContextID)
		t.metadata(statusMetadata(e.Status), e.Metadata)
		t.text(t.asm.snapshot(e))
		return t.ends(t.status(e.Status), statusMetadata(e.Status), e.Metadata)
	case *a2a.TaskStatusUpdateEvent:
		t.note(e.TaskID, e.ContextID)
		t.metadata(statusMetadata(e.Status), e.Metadata)
		return t.ends(t.status(e.Status), statusMetadata(e.Status), e.Metadata)
	case *a2a.TaskArtifactUpdateEvent:
		t.note(e.TaskID, e.ContextID)
		t.metadata(e.Artifact.Metadata, e.Metadata)
		t.text(t.asm.artifact(e))
		return false
	case *a2a.Message:
		if e.ContextID != "" {
			t.contextID = e.ContextID
		}
		t.metadata(e.Metadata, nil)
		t.text(t.asm.message(e))
		t.messageResult = true
		return t.ends(true, e.Metadata, nil)
	}
	return false
}

// metadata hands an event's metadata to the request's OnMetadata, if any (one nil check per
// event for turns without it).
func (t *turn) metadata(inner, outer map[string]any) {
	if t.req.OnMetadata == nil {
		return
	}
	if inner != nil {
		t.req.OnMetadata(inner)
	}
	if outer != nil {
		t.req.OnMetadata(outer)
	}
}

// ends notes the metadata of the event that ends the turn (ended): its message's, or the event's
// own when the message has none.
func (t *turn) ends(ended bool, inner, outer map[string]any) bool {
	if ended {
		t.endMetadata = inner
		if inner == nil {
			t.endMetadata = outer
		}
	}
	return ended
}

func statusMetadata(st a2a.TaskStatus) map[string]any {
	if st.Message == nil {
		return nil
	}
	return st.Message.Metadata
}

func (t *turn) note(taskID, contextID string) {
	if taskID != "" {
		if taskID != t.taskID && t.req.OnTask != nil {
			t.req.OnTask(taskID)
		}
		t.taskID = taskID
		t.taskSeen = true
	}
	if contextID != "" {
		t.contextID = contextID
	}
}

func (t *turn) text(delta string) {
	if delta == "" {
		return
	}
	if !t.sawText {
		// The one telemetry cost inside the chunk loop: an event on the first text only.
		t.sawText = true
		t.span.AddEvent(eventFirstText)
	}
	t.emit(connector.TurnEvent{Kind: connector.TextEvent, Text: delta})
}

// status records a task status, emits it unless it repeats the last one, and reports whether it
// ends the turn.
func (t *turn) status(st a2a.TaskStatus) bool {
	t.state = st.State
	text := statusText(st)
	if state := apiState(st.State); !t.emittedAnyStatus || state != t.emittedState || text != t.emittedStatusText {
		t.emittedAnyStatus, t.emittedState, t.emittedStatusText = true, state, text
		t.emit(connector.TurnEvent{Kind: connector.StatusEvent, State: state, Text: text})
	}
	switch st.State {
	case a2a.TaskStateSubmitted, a2a.TaskStateWorking:
		return false
	}
	end := st
	t.end = &end
	return true
}

func statusText(st a2a.TaskStatus) string {
	if st.Message == nil {
		return ""
	}
	text, _ := partsText(st.Message.Parts)
	return text
}

// finish builds the Result: how the turn ended, overridden by a reply that grew too large, and
// sends tasks/cancel when the cancel policy (cancelAfter) says our side abandons a live task.
func (t *turn) finish(err error) *connector.TurnResult {
	res := &connector.TurnResult{TaskID: t.taskID, ContextID: t.contextID, State: apiState(t.state)}
	res.Outcome, res.Err, res.Interrupted = t.ending(err)
	if err == nil && t.messageResult {
		res.State = "" // a Message has no task state
	}
	if t.asm.tooLarge {
		res.Outcome, res.Err = connector.OutcomeFailed, t.tooLarge()
	}
	res.Text = t.asm.text()
	res.Metadata = t.asm.meta
	res.EndMetadata = t.endMetadata
	res.NonTextParts = t.asm.nonText()
	if res.Err != nil {
		res.Err.Message = a2aclient.Clip(res.Err.Message, 512, "…")
	}
	if cancelAfter(t.turnEnd(res)) {
		t.inv.CancelTask(t.parent, *t.req.Agent, t.req.APIKey, t.taskID)
	}
	return res
}

// ending is how the turn ended before any override: the call's error, a Message, or the status
// that ended it.
func (t *turn) ending(err error) (connector.Outcome, *connector.TurnError, bool) {
	switch {
	case err != nil:
		return t.classify(err)
	case t.messageResult:
		return connector.OutcomeCompleted, nil, false
	case t.end != nil:
		outcome, e := t.outcome(*t.end)
		return outcome, e, false
	default:
		// Only a too-large reply (see finish) stops a turn without an error or an ending state;
		// anything else would be a bug here, and must still not leave the outcome empty.
		return connector.OutcomeFailed, &connector.TurnError{Code: connector.CodeProtocolError, Message: "the turn ended without a final state"}, false
	}
}

// tooLarge is the error of a reply that outgrew MaxTextBytes. It overrides whatever ended the
// turn: the text was cut, so no other outcome would be true.
func (t *turn) tooLarge() *connector.TurnError {
	return &connector.TurnError{Code: connector.CodeTooLarge, Message: fmt.Sprintf("the reply exceeds %d bytes; the text sent so far is kept", t.inv.opts.MaxTextBytes)}
}

// turnEnd is what the cancel policy needs to know of the turn and its result.
func (t *turn) turnEnd(res *connector.TurnResult) turnEnd {
	return turnEnd{
		taskID:        t.taskID,
		heldTaskID:    t.req.TaskID,
		state:         t.state,
		outcome:       res.Outcome,
		interrupted:   res.Interrupted,
		taskSeen:      t.taskSeen,
		endedByStatus: t.end != nil,
		lost:          t.lost,
	}
}

// outcome maps the status that ended the turn. The status message is the reply of a completed
// or input-required task that sent no other text.
func (t *turn) outcome(st a2a.TaskStatus) (connector.Outcome, *connector.TurnError) {
	text := statusText(st)
	switch st.State {
	case a2a.TaskStateCompleted:
		t.text(t.asm.finalStatus([]byte(text)))
		return connector.OutcomeCompleted, nil
	case a2a.TaskStateInputRequired:
		t.text(t.asm.finalStatus([]byte(text)))
		return connector.OutcomeInputRequired, nil
	case a2a.TaskStateRejected:
		return connector.OutcomeHandback, nil
	case a2a.TaskStateCanceled:
		return connector.OutcomeCanceled, nil
	case a2a.TaskStateFailed:
		if text == "" {
			text = "the agent reported the task failed"
		}
		return connector.OutcomeFailed, &connector.TurnError{Code: connector.CodeTaskFailed, Message: text}
	case a2a.TaskStateAuthRequired:
		msg := "the agent requires authentication the platform cannot provide"
		if text != "" {
			msg += ": " + text
		}
		return connector.OutcomeFailed, &connector.TurnError{Code: connector.CodeAuthRequired, Message: msg}
	case a2a.TaskStateUnspecified:
		return connector.OutcomeFailed, &connector.TurnError{Code: connector.CodeUnknownState, Message: "the agent reported the task state unknown"}
	default:
		return connector.OutcomeFailed, &connector.TurnError{Code: connector.CodeUnknownState, Message: fmt.Sprintf("the agent reported task state %q, which A2A does not define", a2aclient.Clip(apiState(st.State), 64, "…"))}
	}
}

// ours reports whether err means our side ended the call: the caller, the turn deadline, or the
// first-event or idle limit.
func (t *turn) ours(err error) bool {
	return t.ctx.Err() != nil || errors.Is(err, a2aclient.ErrFirstEventTimeout) || errors.Is(err, a2aclient.ErrIdleTimeout)
}

// classify maps a call's error to an outcome, an Error, and whether our side ended the turn. An
// Error of our own is returned as it is. Our own endings are checked next: after a cancel or a
// deadline every layer reports some error, and only the context says which.
func (t *turn) classify(err error) (connector.Outcome, *connector.TurnError, bool) {
	if own, ok := errors.AsType[*connector.TurnError](err); ok {
		// A breaker's refusal ended the turn before the agent processed anything: like a turn
		// refused at admission, it counts as interrupted, and the hold stays as it was.
		return connector.OutcomeFailed, own, own == t.refusal
	}
	if outcome, e, ok := t.interruption(err); ok {
		return outcome, e, true
	}
	return connector.OutcomeFailed, t.agentFailure(err), false
}

// interruption says how our side ended the call, if it did: the caller canceled (a barge-in) or
// its deadline passed, the turn timeout, or the first-event or idle limit.
func (t *turn) interruption(err error) (connector.Outcome, *connector.TurnError, bool) {
	timeout := func(format string, args ...any) (connector.Outcome, *connector.TurnError, bool) {
		return connector.OutcomeFailed, &connector.TurnError{Code: connector.CodeTimeout, Message: fmt.Sprintf(format, args...)}, true
	}
	if perr := t.parent.Err(); perr != nil {
		if errors.Is(perr, context.Canceled) {
			return connector.OutcomeCanceled, &connector.TurnError{Code: connector.CodeCanceled, Message: "the caller canceled the turn"}, true
		}
		return timeout("the caller's deadline passed before the agent finished")
	}
	switch {
	case t.ctx.Err() != nil:
		return timeout("the agent did not finish within the turn timeout of %s", t.inv.opts.TurnTimeout)
	case errors.Is(err, a2aclient.ErrFirstEventTimeout):
		return timeout("the agent sent no event within %s", t.inv.opts.FirstEventTimeout)
	case errors.Is(err, a2aclient.ErrIdleTimeout):
		return timeout("the agent sent nothing of an event for %s", t.inv.opts.IdleTimeout)
	}
	return "", nil, false
}

// agentFailure is agentFailureOf, said for the credential the agent refused: a refused SigV4
// signature names what to check (a wrong key, region or service all look alike to the agent).
func (t *turn) agentFailure(err error) *connector.TurnError {
	te := t.agentFailureOf(err)
	if te != nil && te.Code == connector.CodeAgentUnauthorized && t.req.Agent.CredentialSetKind == connector.CredentialKindAWSSigV4 {
		te = &connector.TurnError{Code: te.Code, Message: SigV4Refusal(err)}
	}
	return te
}

// SigV4Refusal is what to tell a tenant whose agent refused the connector's SigV4 signature:
// the agent's own words and what to check.
func SigV4Refusal(err error) string {
	words := err.Error()
	if hse, ok := errors.AsType[*a2aclient.HTTPStatusError](err); ok {
		words = fmt.Sprintf("HTTP %d", hse.StatusCode)
		if hse.RPC != nil && hse.RPC.Message != "" {
			words += ": " + hse.RPC.Message
		} else if hse.Body != "" {
			words += ": " + hse.Body
		}
	} else if rpc, ok := errors.AsType[*a2a.RPCError](err); ok {
		words = rpc.Message
	}
	return "the agent refused the SigV4 signature: " + words + "; check the access key, region and service set for this agent in the console"
}

// agentFailureOf maps what went wrong on the agent's side, or on the way to it, to an Error: a
// blocked address, an HTTP status, a JSON-RPC error, a protocol breach, or an unreachable agent.
func (t *turn) agentFailureOf(err error) *connector.TurnError {
	if errors.Is(err, netguard.ErrBlockedAddress) || errors.Is(err, netguard.ErrInsecureURL) {
		t.inv.log.InfoContext(t.ctx, "agent address blocked", "agent_id", t.req.Agent.ID, "error", err.Error())
		return &connector.TurnError{Code: connector.CodeBlockedAddress, Message: "the agent's address is one the connector may not call (loopback, private, link-local or another reserved range, or plain http where https is required)"}
	}
	if hse, ok := errors.AsType[*a2aclient.HTTPStatusError](err); ok {
		if hse.RPC != nil && hse.Binding == a2aclient.BindingHTTPJSON && (hse.StatusCode < 300 || hse.StatusCode >= 400) {
			// HTTP+JSON says every A2A error with a status: the error in the body is the
			// answer, as a JSON-RPC error object is on JSON-RPC (same codes, same outcome).
			return t.rpcFailure(hse.RPC)
		}
		return httpStatusFailure(hse)
	}
	if rpc, ok := errors.AsType[*a2a.RPCError](err); ok {
		return t.rpcFailure(rpc)
	}
	if pe, ok := errors.AsType[*a2a.ProtocolError](err); ok {
		if pe.Kind == a2a.ProtocolEventTooLarge || pe.Kind == a2a.ProtocolBodyTooLarge {
			return &connector.TurnError{Code: connector.CodeTooLarge, Message: pe.Error()}
		}
		return &connector.TurnError{Code: connector.CodeProtocolError, Message: pe.Error()}
	}
	// The transport's own words stay in the operator's log.
	t.inv.log.InfoContext(t.ctx, "agent unreachable", "agent_id", t.req.Agent.ID, "error", err.Error())
	return &connector.TurnError{Code: connector.CodeAgentUnreachable, Message: "the agent could not be reached: " + transportReason(err)}
}

// httpStatusFailure is the Error of an agent that answered with an HTTP status instead of A2A.
func httpStatusFailure(hse *a2aclient.HTTPStatusError) *connector.TurnError {
	switch {
	case hse.StatusCode >= 300 && hse.StatusCode < 400:
		return &connector.TurnError{Code: connector.CodeRedirect, Message: hse.Error() + " (agent calls never follow redirects: the credentials must not reach another host)"}
	case hse.StatusCode == http.StatusUnauthorized || hse.StatusCode == http.StatusForbidden:
		return &connector.TurnError{Code: connector.CodeAgentUnauthorized, Message: hse.Error() + " (check the credentials set for this agent in the console)"}
	}
	return &connector.TurnError{Code: connector.CodeAgentHTTPStatus, Message: hse.Error()}
}

// rpcFailure is the Error of an agent that answered with a JSON-RPC error.
func (t *turn) rpcFailure(rpc *a2a.RPCError) *connector.TurnError {
	switch rpc.Code {
	case a2a.CodeUnauthenticated, a2a.CodeUnauthorized:
		return &connector.TurnError{Code: connector.CodeAgentUnauthorized, Message: fmt.Sprintf("agent error %d: %s (check the credentials set for this agent in the console)", rpc.Code, rpc.Message)}
	case a2a.CodeVersionNotSupported:
		return &connector.TurnError{Code: connector.CodeAgentRPCError, Message: fmt.Sprintf("agent error %d: %s (the agent no longer speaks A2A %s at %s; refresh its card in the console)",
			rpc.Code, rpc.Message, t.rt.version, t.rt.url)}
	}
	return &connector.TurnError{Code: connector.CodeAgentRPCError, Message: fmt.Sprintf("agent error %d: %s", rpc.Code, rpc.Message)}
}

// notFoundOrNotAllowed reports whether `{url}/stream` is simply not the agent's endpoint: a 404
// or 405, or a 2xx page that is neither an event stream nor JSON (web frameworks that serve an
// HTML page for every unknown path). In each case the agent processed nothing.
func notFoundOrNotAllowed(err error) bool {
	var hse *a2aclient.HTTPStatusError
	if errors.As(err, &hse) {
		return hse.StatusCode == http.StatusNotFound || hse.StatusCode == http.StatusMethodNotAllowed
	}
	var pe *a2a.ProtocolError
	return errors.As(err, &pe) && pe.Kind == a2a.ProtocolUnexpectedContentType
}

func statusCode(err error) int {
	var hse *a2aclient.HTTPStatusError
	if errors.As(err, &hse) {
		return hse.StatusCode
	}
	return 0
}

// streamURL is the platform's streaming endpoint: the url's path with "/stream" appended (the
// query, if any, stays where it is).
func streamURL(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimSuffix(base, "/") + "/stream"
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/stream"
	if u.RawPath != "" {
		u.RawPath = strings.TrimSuffix(u.RawPath, "/") + "/stream"
	}
	return u.String()
}

// versionRefused reports whether the agent refused the call for its protocol generation: A2A
// 1.0's "version not supported", or "method not found" for a method of the other generation.
func versionRefused(err error) bool {
	var rpc *a2a.RPCError
	return errors.As(err, &rpc) && (rpc.Code == a2a.CodeVersionNotSupported || rpc.Code == a2a.CodeMethodNotFound)
}

// bindingRefused reports whether the interface answered the first call as a server that does not
// serve this binding there: 404, 405, 415 or 501 with no A2A error in the body (an HTTP+JSON path
// on a JSON-RPC server, or a JSON-RPC POST on a REST one). Only consulted when the card's next
// interface has another binding.
func bindingRefused(err error) bool {
	var hse *a2aclient.HTTPStatusError
	if !errors.As(err, &hse) || (hse.RPC != nil && hse.RPC.Code != a2a.CodeMethodNotFound) {
		return false
	}
	switch hse.StatusCode {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusUnsupportedMediaType, http.StatusNotImplemented:
		return true
	}
	return false
}

// errorCode is a short, log-safe description of a call error (no agent text).
func errorCode(err error) string {
	var rpc *a2a.RPCError
	if errors.As(err, &rpc) {
		return fmt.Sprintf("rpc %d", rpc.Code)
	}
	var hse *a2aclient.HTTPStatusError
	if errors.As(err, &hse) {
		return fmt.Sprintf("http %d", hse.StatusCode)
	}
	return "error"
}

// callReason describes a failed call for a Result message: what the agent answered (status,
// JSON-RPC error, protocol breach), or why it could not be reached, in words that hold no
// transport internals.
func callReason(err error) string {
	if agentAnswered(err) {
		return err.Error()
	}
	return transportReason(err)
}

// transportReason says why a connection failed or broke, without the transport's own text: that
// may name the resolver's address or the connector's own address, which are not the tenant's
// business (the log keeps the whole error). The words are internal/neterr's, which classifies
// transport errors for every outbound call.
func transportReason(err error) string { return neterr.Reason(err) }

// verdict says what the turn's ending tells the breaker about the agent: down when it could not
// be reached, sent no event in time, answered 5xx or broke the protocol; up when it answered as
// an agent (an error status below 500, a JSON-RPC error, a failed task, a reply too large);
// neutral when our side ended the turn for reasons of its own (the caller canceled, or its
// deadline passed) or a slow agent had already started answering.
func (t *turn) verdict(err error) verdict {
	if err == nil {
		return up
	}
	if t.parent.Err() != nil {
		return neutral // barge-in or the caller's own deadline: nothing learned
	}
	if pe, ok := errors.AsType[*a2a.ProtocolError](err); ok {
		if pe.Kind == a2a.ProtocolEventTooLarge || pe.Kind == a2a.ProtocolBodyTooLarge {
			return up
		}
		return down
	}
	if hse, ok := errors.AsType[*a2aclient.HTTPStatusError](err); ok {
		if hse.StatusCode >= 500 {
			return down
		}
		return up
	}
	if _, ok := errors.AsType[*a2a.RPCError](err); ok {
		return up
	}
	if own, ok := errors.AsType[*connector.TurnError](err); ok {
		if own.Code == connector.CodeProtocolError {
			return down
		}
		if t.answered {
			return up
		}
		return neutral // refused before the call (API key, no endpoint)
	}
	if t.answered {
		return neutral // events flowed, then a timeout or a broken connection: slow, not down
	}
	if errors.Is(err, netguard.ErrBlockedAddress) || errors.Is(err, netguard.ErrInsecureURL) {
		return neutral // our policy, not the agent's health
	}
	// Unreachable, or nothing (no headers, no first event) before our limits ran out.
	return down
}
