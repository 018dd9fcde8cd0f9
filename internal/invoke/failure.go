package invoke

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/neterr"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

// agentAnswered reports whether a stream error is something the agent said (a JSON-RPC error,
// or an answer that breaks the protocol) rather than a connection that broke.
func agentAnswered(err error) bool {
	var rpc *a2a.RPCError
	var pe *a2a.ProtocolError
	var hse *a2aclient.HTTPStatusError
	return errors.As(err, &rpc) || errors.As(err, &pe) || errors.As(err, &hse)
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
