package invoke

import (
	"fmt"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
)

// result is the turn's Result once the call returned err: err is classified once, and the
// failure record is read for the Result (finish) and by the breaker (report). Not inlined on
// purpose: the record stays off Turn's frame, which is on the stack of every parked turn
// (newTurn).
//
//go:noinline
func (t *turn) result(err error) *connector.TurnResult {
	f := classify(err)
	res := t.finish(&f)
	t.report(&f, res)
	return res
}

// finish builds the Result: how the turn ended, overridden by a reply that grew too large, and
// sends tasks/cancel when the cancel policy (cancelAfter) says our side abandons a live task.
func (t *turn) finish(f *failure) *connector.TurnResult {
	res := &connector.TurnResult{TaskID: t.taskID, ContextID: t.contextID, State: apiState(t.state)}
	res.Outcome, res.Err, res.Interrupted = t.ending(f)
	if f.kind == noFailure && t.messageResult {
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
		t.inv.CancelTask(t.parent, *t.req.Agent, t.req.Credential, t.taskID)
	}
	return res
}

// ending is how the turn ended before any override: the call's failure, a Message, or the
// status that ended it.
func (t *turn) ending(f *failure) (connector.Outcome, *connector.TurnError, bool) {
	switch {
	case f.kind != noFailure:
		return t.turnError(f)
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
