package invoke

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/neterr"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

// failure is one call's error, read once (classify): what kind of ending it is, the Error code
// it maps to, what it tells the circuit breaker, which second call is safe, and what the
// operator's log says. Everything that asks what an error means reads this record instead of
// looking at the error's types again: the call (token refetch, `url` instead of `{url}/stream`,
// the card's other interface, a stream lost or ended), the Result (turnError) and the breaker
// (verdict).
//
// classify allocates nothing and calls no formatting, so the call path may use it on the stack
// of a turn that still streams; the Error's words (turnError) are written only when the turn
// ends.
type failure struct {
	err  error
	kind failureKind
	// retry says which second call is safe: the agent refused the first one before processing
	// anything.
	retry retrySafe
	// ctxEnded: the error is a context's end (canceled or past its deadline).
	ctxEnded bool
	// code is the Error code the turn ends with when this error ends it and our side did not
	// (the caller's cancel or deadline and the turn timeout come first: turnError).
	code string
	// breaker is what the error tells the circuit breaker when the agent had sent nothing
	// before it, breakerAnswered when it had (a slow agent is not a down one). The caller's own
	// cancel or deadline overrides both (verdict).
	breaker, breakerAnswered verdict
	// logText is the operator's log line of an ending whose details stay out of the Error (the
	// log has the whole error); "" when the Error says everything.
	logText string

	// The error's typed parts, each found on its own (whatever the kind): own an Error of ours,
	// status an HTTP status answer, rpc an A2A error (also the one an HTTP status's body held),
	// protocol a protocol breach or a cap the answer outgrew.
	own      *connector.TurnError
	status   *a2aclient.HTTPStatusError
	rpc      *a2a.RPCError
	protocol *a2a.ProtocolError
}

// failureKind is what ended a call. Kinds are told apart in this order: an Error of our own,
// our stream limits, the address guard, what the agent answered, and last a connection that
// could not be made or broke.
type failureKind uint8

const (
	// noFailure: the call ended without an error.
	noFailure failureKind = iota
	// ownError: an Error the turn made itself (credentials it could not use, the breaker's
	// refusal, a stream that ended before the agent named a task, a resumed task that never
	// ended). It is the turn's Error as it is.
	ownError
	// firstEventLimit, idleLimit: the stream saw no event within FirstEventTimeout, or nothing
	// of one for IdleTimeout.
	firstEventLimit
	idleLimit
	// blockedAddress: the guard refused the agent's address (netguard).
	blockedAddress
	// httpStatus: the agent answered an HTTP status instead of A2A, a redirect included.
	httpStatus
	// agentError: the agent answered an A2A error: a JSON-RPC error object, or on HTTP+JSON an
	// error status whose body holds one (that binding says every A2A error with a status).
	agentError
	// tooLarge: one event or body of the answer outgrew the client's caps.
	tooLarge
	// protocolBreach: the answer broke the A2A, JSON-RPC or SSE protocol.
	protocolBreach
	// unreachable: the call could not be made, or its connection broke (internal/neterr says
	// why).
	unreachable
)

// retrySafe says what a second call may change after the agent refused the first one before it
// processed anything, so that sending the message again is safe.
type retrySafe struct {
	// newToken: the agent refused the credentials (HTTP 401, or A2A's unauthenticated error);
	// a 403 says the token is valid but not enough, which a new token would not change.
	newToken bool
	// onBase: `{url}/stream` is simply not the agent's endpoint: a 404 or 405, or a 2xx page
	// that is neither an event stream nor JSON (web frameworks serve an HTML page for every
	// unknown path).
	onBase bool
	// otherVersion: the agent refused the call for its protocol generation: A2A 1.0's "version
	// not supported", or "method not found" for a method of the other generation.
	otherVersion bool
	// otherBinding: the interface answered as a server that does not serve this binding there:
	// 404, 405, 415 or 501 with no A2A error in the body but "method not found" (an HTTP+JSON
	// path on a JSON-RPC server, or a JSON-RPC POST on a REST one).
	otherBinding bool
}

// classify reads err once into a failure (see failure; a nil err is noFailure).
func classify(err error) failure {
	f := failure{err: err}
	if err == nil {
		f.breaker, f.breakerAnswered = up, up
		return f
	}
	f.own, _ = errors.AsType[*connector.TurnError](err)
	f.status, _ = errors.AsType[*a2aclient.HTTPStatusError](err)
	f.rpc, _ = errors.AsType[*a2a.RPCError](err)
	f.protocol, _ = errors.AsType[*a2a.ProtocolError](err)
	f.ctxEnded = errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	f.kind = f.kindOf()
	f.code, f.breaker, f.breakerAnswered, f.logText = f.meaning()
	f.retry = f.safeRetries()
	return f
}

// kindOf tells the error's kind from its typed parts and sentinels, in failureKind's order.
func (f *failure) kindOf() failureKind {
	switch {
	case f.own != nil:
		return ownError
	case errors.Is(f.err, a2aclient.ErrFirstEventTimeout):
		return firstEventLimit
	case errors.Is(f.err, a2aclient.ErrIdleTimeout):
		return idleLimit
	case errors.Is(f.err, netguard.ErrBlockedAddress) || errors.Is(f.err, netguard.ErrInsecureURL):
		return blockedAddress
	case f.status != nil:
		if f.status.RPC != nil && f.status.Binding == a2aclient.BindingHTTPJSON && (f.status.StatusCode < 300 || f.status.StatusCode >= 400) {
			// HTTP+JSON says every A2A error with a status: the error in the body is the
			// answer, as a JSON-RPC error object is on JSON-RPC (same codes, same outcome).
			return agentError
		}
		return httpStatus
	case f.rpc != nil:
		return agentError
	case f.protocol != nil:
		if f.protocol.Kind == a2a.ProtocolEventTooLarge || f.protocol.Kind == a2a.ProtocolBodyTooLarge {
			return tooLarge
		}
		return protocolBreach
	}
	return unreachable
}

// meaning is what the error's kind means: its Error code, what it tells the breaker before
// and after the agent answered, and the operator's log line.
//
// The breaker hears down when the agent could not be reached, sent no event in time, answered
// 5xx or broke the protocol; up when it answered as an agent (an error status below 500, a
// JSON-RPC error, a reply too large); neutral when our own policy refused the call (the address
// guard, credentials we could not use) or a slow agent had already started answering.
func (f *failure) meaning() (code string, breaker, breakerAnswered verdict, logText string) {
	switch f.kind {
	case ownError:
		if f.own.Code == connector.CodeProtocolError {
			return f.own.Code, down, down, ""
		}
		// Refused before the call (credentials, no endpoint), or after the agent answered.
		return f.own.Code, neutral, up, ""
	case firstEventLimit, idleLimit:
		return connector.CodeTimeout, down, neutral, ""
	case blockedAddress:
		return connector.CodeBlockedAddress, neutral, neutral, "agent address blocked"
	case httpStatus, agentError:
		v := up
		if f.status != nil && f.status.StatusCode >= 500 {
			v = down
		}
		return f.answerCode(), v, v, ""
	case tooLarge:
		return connector.CodeTooLarge, up, up, ""
	case protocolBreach:
		return connector.CodeProtocolError, down, down, ""
	}
	return connector.CodeAgentUnreachable, down, neutral, "agent unreachable"
}

// answerCode is the Error code of an HTTP status or an A2A error the agent answered.
func (f *failure) answerCode() string {
	if f.kind == agentError {
		switch f.rpc.Code {
		case a2a.CodeUnauthenticated, a2a.CodeUnauthorized:
			return connector.CodeAgentUnauthorized
		}
		return connector.CodeAgentRPCError
	}
	switch s := f.status.StatusCode; {
	case s >= 300 && s < 400:
		return connector.CodeRedirect
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return connector.CodeAgentUnauthorized
	}
	return connector.CodeAgentHTTPStatus
}

// safeRetries says which second call the error allows (see retrySafe).
func (f *failure) safeRetries() retrySafe {
	var r retrySafe
	if f.status != nil {
		s := f.status.StatusCode
		r.newToken = s == http.StatusUnauthorized
		r.onBase = s == http.StatusNotFound || s == http.StatusMethodNotAllowed
		if f.status.RPC == nil || f.status.RPC.Code == a2a.CodeMethodNotFound {
			switch s {
			case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusUnsupportedMediaType, http.StatusNotImplemented:
				r.otherBinding = true
			}
		}
	} else {
		r.newToken = f.rpc != nil && f.rpc.Code == a2a.CodeUnauthenticated
		r.onBase = f.protocol != nil && f.protocol.Kind == a2a.ProtocolUnexpectedContentType
	}
	r.otherVersion = f.rpc != nil && (f.rpc.Code == a2a.CodeVersionNotSupported || f.rpc.Code == a2a.CodeMethodNotFound)
	return r
}

// agentSaid reports whether the agent answered the call (an HTTP status, an A2A error, an
// answer that breaks the protocol or outgrows the caps) rather than the connection breaking.
func (f *failure) agentSaid() bool {
	return f.status != nil || f.rpc != nil || f.protocol != nil
}

// limit reports whether one of our stream limits (first event, idle) ended the call.
func (f *failure) limit() bool { return f.kind == firstEventLimit || f.kind == idleLimit }

// statusCode is the HTTP status the agent answered, 0 for none.
func (f *failure) statusCode() int {
	if f.status == nil {
		return 0
	}
	return f.status.StatusCode
}

// logCode is a short, log-safe description of the error (no agent text).
func (f *failure) logCode() string {
	switch {
	case f.rpc != nil:
		return "rpc " + strconv.Itoa(f.rpc.Code)
	case f.status != nil:
		return "http " + strconv.Itoa(f.status.StatusCode)
	}
	return "error"
}

// reason describes a failed call for a Result message: what the agent answered (status, A2A
// error, protocol breach), or why it could not be reached, in words that hold no transport
// internals.
func (f *failure) reason() string {
	if f.agentSaid() {
		return f.err.Error()
	}
	return transportReason(f.err)
}

// transportReason says why a connection failed or broke, without the transport's own text: that
// may name the resolver's address or the connector's own address, which are not the tenant's
// business (the log keeps the whole error). The words are internal/neterr's, which classifies
// transport errors for every outbound call.
func transportReason(err error) string { return neterr.Reason(err) }

// ours reports whether our side ended the call: the caller, the turn deadline, or the
// first-event or idle limit.
func (t *turn) ours(f *failure) bool {
	return t.ctx.Err() != nil || f.limit()
}

// credentialsRefused, streamFailed and failedCall read the failure record for run, consume and
// resume. They are not inlined on purpose: those frames stay on the stack of a turn whose agent
// streams, which must fit in 8 KiB (docs/performance.md, "Goroutine stacks of open streams"),
// and the record would add its size to them.

// credentialsRefused reports whether the agent refused the credentials, so that a new access
// token may be tried (retrySafe.newToken).
//
//go:noinline
func credentialsRefused(err error) bool { return classify(err).retry.newToken }

// streamFailed reports whether a stream's error ends the call as it is: our side ended it, or
// the agent said something (an A2A error, an answer that breaks the protocol), rather than the
// connection breaking (a lost stream, which the turn resumes).
//
//go:noinline
func (t *turn) streamFailed(err error) bool {
	f := classify(err)
	return t.ours(&f) || f.agentSaid()
}

// failedCall reads the error of a call that resumes a lost stream (resubscribe, tasks/get):
// whether our side ended it (the turn then ends with the error as it is), and otherwise why it
// failed, for the Error.
//
//go:noinline
func (t *turn) failedCall(err error) (ours bool, reason string) {
	f := classify(err)
	if t.ours(&f) {
		return true, ""
	}
	return false, f.reason()
}

// turnError maps a call's failure to an outcome, an Error, and whether our side ended the turn.
// An Error of our own is returned as it is. Our own endings are checked next: after a cancel or
// a deadline every layer reports some error, and only the context says which.
func (t *turn) turnError(f *failure) (connector.Outcome, *connector.TurnError, bool) {
	if f.kind == ownError {
		// A breaker's refusal ended the turn before the agent processed anything: like a turn
		// refused at admission, it counts as interrupted, and the hold stays as it was.
		return connector.OutcomeFailed, f.own, f.own == t.refusal
	}
	if outcome, e, ok := t.interruption(f); ok {
		return outcome, e, true
	}
	return connector.OutcomeFailed, t.agentFailure(f), false
}

// interruption says how our side ended the call, if it did: the caller canceled (a barge-in) or
// its deadline passed, the turn timeout, or the first-event or idle limit.
func (t *turn) interruption(f *failure) (connector.Outcome, *connector.TurnError, bool) {
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
	case f.kind == firstEventLimit:
		return timeout("the agent sent no event within %s", t.inv.opts.FirstEventTimeout)
	case f.kind == idleLimit:
		return timeout("the agent sent nothing of an event for %s", t.inv.opts.IdleTimeout)
	}
	return "", nil, false
}

// agentFailure is the Error of what went wrong on the agent's side, or on the way to it: a
// blocked address, an HTTP status, an A2A error, a protocol breach or a cap outgrown, or an
// unreachable agent. A refused SigV4 signature names what to check (a wrong key, region or
// service all look alike to the agent).
func (t *turn) agentFailure(f *failure) *connector.TurnError {
	if f.logText != "" {
		// The transport's or the guard's own words stay in the operator's log.
		t.inv.log.InfoContext(t.ctx, f.logText, "agent_id", t.req.Agent.ID, "error", f.err.Error())
	}
	if f.code == connector.CodeAgentUnauthorized && t.req.Agent.CredentialSetKind == connector.CredentialKindAWSSigV4 {
		return &connector.TurnError{Code: f.code, Message: f.sigV4Refusal()}
	}
	var msg string
	switch f.kind {
	case blockedAddress:
		msg = "the agent's address is one the connector may not call (loopback, private, link-local or another reserved range, or plain http where https is required)"
	case httpStatus:
		msg = httpStatusMessage(f.status)
	case agentError:
		msg = t.rpcMessage(f.rpc)
	case tooLarge, protocolBreach:
		msg = f.protocol.Error()
	default:
		msg = "the agent could not be reached: " + transportReason(f.err)
	}
	return &connector.TurnError{Code: f.code, Message: msg}
}

// httpStatusMessage is the Error message of an agent that answered with an HTTP status instead
// of A2A.
func httpStatusMessage(hse *a2aclient.HTTPStatusError) string {
	switch {
	case hse.StatusCode >= 300 && hse.StatusCode < 400:
		return hse.Error() + " (agent calls never follow redirects: the credentials must not reach another host)"
	case hse.StatusCode == http.StatusUnauthorized || hse.StatusCode == http.StatusForbidden:
		return hse.Error() + " (check the credentials set for this agent in the console)"
	}
	return hse.Error()
}

// rpcMessage is the Error message of an agent that answered with an A2A error.
func (t *turn) rpcMessage(rpc *a2a.RPCError) string {
	switch rpc.Code {
	case a2a.CodeUnauthenticated, a2a.CodeUnauthorized:
		return fmt.Sprintf("agent error %d: %s (check the credentials set for this agent in the console)", rpc.Code, rpc.Message)
	case a2a.CodeVersionNotSupported:
		return fmt.Sprintf("agent error %d: %s (the agent no longer speaks A2A %s at %s; refresh its card in the console)",
			rpc.Code, rpc.Message, t.rt.version, t.rt.url)
	}
	return fmt.Sprintf("agent error %d: %s", rpc.Code, rpc.Message)
}

// SigV4Refusal is what to tell a tenant whose agent refused the connector's SigV4 signature:
// the agent's own words and what to check.
func SigV4Refusal(err error) string {
	f := classify(err)
	return f.sigV4Refusal()
}

func (f *failure) sigV4Refusal() string {
	words := f.err.Error()
	if hse := f.status; hse != nil {
		words = fmt.Sprintf("HTTP %d", hse.StatusCode)
		if hse.RPC != nil && hse.RPC.Message != "" {
			words += ": " + hse.RPC.Message
		} else if hse.Body != "" {
			words += ": " + hse.Body
		}
	} else if f.rpc != nil {
		words = f.rpc.Message
	}
	return "the agent refused the SigV4 signature: " + words + "; check the access key, region and service set for this agent in the console"
}

// verdict says what the turn's ending tells the breaker about the agent (failure.breaker), or
// nothing when the caller ended the turn for reasons of its own (a barge-in, or its deadline).
func (t *turn) verdict(f *failure) verdict {
	switch {
	case f.kind == noFailure:
		return up
	case t.parent.Err() != nil:
		return neutral // barge-in or the caller's own deadline: nothing learned
	case t.answered:
		return f.breakerAnswered
	}
	return f.breaker
}
