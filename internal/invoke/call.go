package invoke

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
)

// run calls the agent (stream or send) and returns how the call ended; finish makes the Result.
func (t *turn) run() error {
	var herr *connector.TurnError
	if t.ctx, herr = t.inv.withTLS(t.ctx, t.req.Agent, t.req.Credential); herr != nil {
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
	if accessToken != "" && credentialsRefused(err) && !t.taskSeen && !t.emittedAnyStatus && t.ctx.Err() == nil {
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
	if err != nil && target != base && classify(err).retry.onBase && t.ctx.Err() == nil {
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
	f := classify(err)
	status := f.statusCode()
	t.span.AddEvent(eventStreamFallback, trace.WithAttributes(attrHTTPStatus.Int(status)))
	inv.log.InfoContext(t.ctx, "agent streams on its url, not url/stream; remembered for this agent",
		"agent_id", t.req.Agent.ID, "status", status)
	t.streamURL = base
	return inv.client.SendStreamingMessage(t.ctx, t.rt.endpoint(base, hdr), params, so)
}

// switchWire moves the turn to the card's other interface when the first call was refused for
// its protocol version (-32009, or -32601 for a method of the other generation), and remembers
// that for the agent. Nothing was processed by the agent, so sending again is safe. It returns
// whether the turn moved, and the error the turn ends with otherwise: err, or the refusal of the
// other interface's circuit breaker (the turn then never calls it).
func (t *turn) switchWire(err error) (bool, error) {
	if t.alt == nil || t.ctx.Err() != nil {
		return false, err
	}
	f := classify(err)
	if refused := f.retry.otherVersion || (t.alt.binding != t.rt.binding && f.retry.otherBinding); !refused {
		return false, err
	}
	from := t.rt
	t.rt, t.alt = *t.alt, nil
	t.inv.remember(t.ctx, t.req.Agent, t.rt)
	t.span.AddEvent(eventVersionFallback, trace.WithAttributes(attrProtocolFrom.String(from.version), attrProtocolTo.String(t.rt.version)))
	t.inv.log.InfoContext(t.ctx, "agent refused the protocol version; switched to the card's other interface and remembered it",
		"agent_id", t.req.Agent.ID, "from", from.version, "to", t.rt.version, "error", f.logCode())
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
		case serr != nil:
			ours, reason := t.failedCall(serr)
			if ours {
				return serr
			}
			// An error event instead of the task's events (an SDK answering for a task it
			// no longer streams): the task itself may still say how it ended.
			why = "the resubscribed stream failed: " + reason
		default:
			lostErr = lost
			why = "the resubscribed stream ended without a final state too"
		}
	} else {
		ours, reason := t.failedCall(err)
		if ours {
			return err
		}
		why = "resubscribing failed: " + reason
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
		if errors.Is(err, errStillWorking) && t.ctx.Err() == nil {
			return &connector.TurnError{Code: code, Message: fmt.Sprintf("%s; %s; the task was still %s %s later", ended, why, apiState(t.state), inv.opts.IdleTimeout)}
		}
		ours, reason := t.failedCall(err)
		if ours {
			return err
		}
		return &connector.TurnError{Code: code, Message: ended + "; " + why + "; asking for the task failed: " + reason}
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
			if t.streamFailed(err) {
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
