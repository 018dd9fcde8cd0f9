package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
)

// fixEndpointFirst is the fix of a check that could not run because no interface answered.
const fixEndpointFirst = "Fix the endpoint check first; this check runs once the agent answers."

func cardCheck(a connector.Agent, ferr error, r cardcheck.Report) Result {
	if ferr != nil {
		msg := "The card could not be fetched."
		var fe *cardfetch.FetchError
		if errors.As(ferr, &fe) {
			msg = fe.Explain()
		}
		return Result{Check: CheckCard, Status: Fail, Message: msg,
			Fix: fmt.Sprintf("Serve the card at %s again (HTTPS, JSON, at most 1 MiB, at most 3 redirects). Until then turns keep using revision %d and a refresh fails.", a.CardURL, a.Revision)}
	}
	var errs, warns []connector.Problem
	for _, p := range r.Problems {
		if p.Severity == connector.SeverityError {
			errs = append(errs, p)
		} else {
			warns = append(warns, p)
		}
	}
	switch {
	case !r.Valid:
		return Result{Check: CheckCard, Status: Fail,
			Message: fmt.Sprintf("The card served now is invalid: %s.", problemList(errs)),
			Fix:     fmt.Sprintf("Fix these fields of the card (each path points into the card as served). A refresh refuses an invalid card, so turns keep using revision %d.", a.Revision)}
	case len(warns) > 0:
		return Result{Check: CheckCard, Status: Warn,
			Message: fmt.Sprintf("The card is valid, with %s: %s.", plural(len(warns), "warning", "warnings"), problemList(warns)),
			Fix:     "Optional: each warning names a card field the platform ignores or works around; fix it in the card, then refresh."}
	}
	return Result{Check: CheckCard, Status: Pass, Message: "The card is valid, without warnings."}
}

// problemList names at most three problems, "path: message", and how many more there are.
func problemList(ps []connector.Problem) string {
	const show = 3
	var parts []string
	for i, p := range ps {
		if i == show {
			parts = append(parts, fmt.Sprintf("and %d more", len(ps)-show))
			break
		}
		path := p.Path
		if path == "" {
			path = "(card)"
		}
		parts = append(parts, path+": "+strings.TrimSuffix(p.Message, "."))
	}
	return strings.Join(parts, "; ")
}

func revisionCheck(a connector.Agent, stored []byte, ferr error, r cardcheck.Report) Result {
	if ferr != nil {
		return Result{Check: CheckRevision, Status: Warn, Message: "Not compared: the card could not be fetched.",
			Fix: "Fix the card check first."}
	}
	if jsonEqual(stored, r.Card) {
		return Result{Check: CheckRevision, Status: Pass,
			Message: fmt.Sprintf("The card served now is the one stored as revision %d, which turns use.", a.Revision)}
	}
	msg := fmt.Sprintf("The card served now differs from revision %d, which turns use", a.Revision)
	if changes := profileChanges(a.CardProfile, r.Profile); len(changes) > 0 {
		msg += "; it changes the " + strings.Join(changes, ", ")
	}
	fix := "Refresh the card in the console (POST /v1/agents/{id}/refresh) to make it live."
	if !r.Valid {
		fix = "Fix the new card's errors (see the card check) first: a refresh refuses an invalid card."
	}
	return Result{Check: CheckRevision, Status: Warn, Message: msg + ".", Fix: fix}
}

// jsonEqual compares two JSON documents by value (member order and spacing aside).
func jsonEqual(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// profileChanges names what the platform uses that differs between two profiles.
func profileChanges(old, cur connector.CardProfile) []string {
	var out []string
	if old.EndpointURL != cur.EndpointURL || old.EndpointTenant != cur.EndpointTenant || !reflect.DeepEqual(old.Fallback, cur.Fallback) {
		out = append(out, "endpoint")
	}
	if old.ProtocolVersion != cur.ProtocolVersion {
		out = append(out, "protocol version")
	}
	if old.Streaming != cur.Streaming {
		out = append(out, "streaming capability")
	}
	if old.APIKeyRequired != cur.APIKeyRequired || !slices.Equal(old.APIKeyHeaders, cur.APIKeyHeaders) {
		out = append(out, "API key requirement")
	}
	if old.Credential() != cur.Credential() || old.OAuth2TokenURL != cur.OAuth2TokenURL {
		out = append(out, "credential requirement")
	}
	if !reflect.DeepEqual(old.Skills, cur.Skills) {
		out = append(out, "skills")
	}
	return out
}

// errorFixes are what to change for each way a turn fails (invoke's error codes). %[1]s stands
// for the URL called and %[2]s for the A2A version, where a text names them (replaced, not
// formatted: see endpointCheck).
var errorFixes = map[string]string{
	connector.CodeAgentUnreachable: "Make sure the agent runs and %[1]s is reachable from the internet over HTTPS (DNS name, firewall, a TLS certificate a public CA signed).",
	connector.CodeBlockedAddress:   "Publish the endpoint on a public address: the connector calls no private, loopback or reserved address (an operator can allow a range with A2AC_ALLOWED_CIDRS).",
	connector.CodeAgentHTTPStatus:  "Serve A2A JSON-RPC with POST at %[1]s: the card's url (or interface URL) must be the JSON-RPC endpoint itself, not a web page or a base path.",
	connector.CodeRedirect:         "Put the final URL in the card: the connector never follows redirects of agent calls, so that the credentials cannot reach another host.",
	connector.CodeAgentRPCError:    "Make %[1]s accept a message with one text part (A2A %[2]s) and look up this error in the agent's logs.",
	connector.CodeProtocolError:    "The answer breaks the A2A %[2]s wire: compare it with the specification or an official SDK (member names, kinds, SSE framing, the JSON-RPC id).",
	connector.CodeTooLarge:         "Keep replies within the connector's limits: 1 MiB per event and 256 KiB of text per turn.",
	connector.CodeAuthRequired:     "auth-required asks for a user signing in, and the platform calls agents with no user present: authenticate the platform with what the card declares (an API key, a bearer token, OAuth 2.0 client credentials, a Google service account) instead.",
	connector.CodeUnknownState:     "Use only the task states the A2A specification defines.",
	connector.CodeStreamEnded:      "End every stream with a final state (completed, input-required, rejected or failed; with final: true on A2A 0.x) before closing it.",
	connector.CodeTaskFailed:       "The agent reported the task failed (its words are above): look up this task in the agent's logs.",
	connector.CodeCredentials:      "The stored credentials cannot be used: set the agent's credentials again in the console.",
	connector.CodeTimeout:          "Answer at once with a first event (a Task in submitted or working state), and finish within the turn timeout.",
	connector.CodeCanceled:         "Run the check again: it was canceled before the agent finished.",
	connector.CodeAgentUnavailable: "The agent failed several times in a row (see the cause above), so the connector stops calling it for a while: fix what failed, then run the check again after the time it names.",
}

func endpointCheck(a connector.Agent, keySet bool, t turn) Result {
	res := t.res
	url := a.EndpointURL
	if c, ok := t.answer(); ok {
		url = c.url
	} else if len(t.calls) > 0 {
		url = t.calls[len(t.calls)-1].url
	}
	if res.Err == nil {
		switch res.Outcome {
		case connector.OutcomeCompleted:
			return Result{Check: CheckEndpoint, Status: Pass, Message: url + " answered the message and completed the task."}
		case connector.OutcomeInputRequired:
			return Result{Check: CheckEndpoint, Status: Pass, Message: url + " answered the message with a follow-up question (input-required); the check does not answer it and cancels the task."}
		case connector.OutcomeHandback:
			return Result{Check: CheckEndpoint, Status: Pass, Message: url + " answered, declining the message (rejected): the platform would take such a turn back. Fine when the message is outside the agent's skills."}
		}
		return Result{Check: CheckEndpoint, Status: Warn, Message: fmt.Sprintf("%s answered, but the turn ended %s.", url, res.Outcome),
			Fix: "Complete, reject or ask back (input-required) rather than canceling the task yourself."}
	}
	msg := fmt.Sprintf("The turn to %s failed (%s): %s", url, res.Err.Code, strings.TrimSuffix(res.Err.Message, "."))
	fix := errorFixes[res.Err.Code]
	if res.Err.Code == connector.CodeAgentHTTPStatus && a.EndpointBinding == "HTTP+JSON" {
		fix = "Serve the A2A %[2]s HTTP+JSON paths under the interface URL (1.0: {url}/message:stream; 0.3: {url}/v1/message:stream): the card's interface URL must be the base they hang from, %[1]s did not answer as one."
	}
	if res.Err.Code == connector.CodeAgentUnauthorized {
		fix = "The agent refused the API key stored for it: set the right key in the console (Rotate key), or fix the agent's key check."
		if !keySet {
			fix = "Set the agent's API key in the console: the card demands one and none is set."
		}
		switch {
		case a.CredentialSetKind == connector.CredentialKindAWSSigV4:
			// The agent's own words are in the message (invoke.SigV4Refusal).
			fix = "The agent refused the SigV4 signature of the AWS key set for this agent: check the access key id and secret (and the session token, which expires), the region and the service (bedrock-agentcore unless the agent is behind another AWS service)."
		case strings.Contains(res.Err.Message, "token request to "):
			// The token endpoint refused the client: its error code is in the message.
			fix = "The token endpoint refused the OAuth 2.0 client or service account set for this agent (its answer is above): check the client id and secret, the scopes and the token URL, or replace the service account key."
		case a.Credential() != connector.CredentialKindAPIKey && a.Credential() != connector.CredentialKindNone:
			fix = "The agent refused the " + a.Credential() + " credentials stored for it, also after one new token: set the right ones in the console, or fix the agent's token check."
		}
	}
	if tlsFix := handshakeFix(res.Err.Message); tlsFix != "" {
		fix = tlsFix
	}
	if fix == "" {
		fix = "Look up this failure in the agent's logs."
	}
	return Result{Check: CheckEndpoint, Status: Fail, Message: msg + ".", Fix: fillFix(fix, url, a.ProtocolVersion)}
}

// fillFix puts the URL called and the A2A version into a fix text of errorFixes. Not
// fmt.Sprintf: most fix texts name neither, and fmt would append %!(EXTRA …) to them.
func fillFix(fix, url, version string) string {
	return strings.NewReplacer("%[1]s", url, "%[2]s", version).Replace(fix)
}

func versionCheck(a connector.Agent, t turn) Result {
	c, ok := t.answer()
	if !ok {
		return Result{Check: CheckVersion, Status: Warn, Message: "Not established: no interface answered the message.", Fix: fixEndpointFirst}
	}
	v := versionAt(a, c)
	wire := "the A2A 0.2.5/0.3 JSON-RPC wire"
	if c.v1 {
		wire = "the A2A 1.0 JSON-RPC wire"
	}
	if a.EndpointBinding != "" && v == a.ProtocolVersion {
		wire = "the A2A " + v + " " + a.EndpointBinding + " binding" // the card's own name for it
	}
	if fb := a.Fallback; fb != nil && v == fb.ProtocolVersion && v != a.ProtocolVersion {
		return Result{Check: CheckVersion, Status: Warn,
			Message: fmt.Sprintf("The card's preferred interface %s (A2A %s) refused the version; its other interface %s answered in A2A %s (%s).", a.EndpointURL, a.ProtocolVersion, fb.URL, fb.ProtocolVersion, wire),
			Fix:     "Fix the preferred interface, or remove it from the card's supportedInterfaces: every replica of the connector pays one refused call before it switches."}
	}
	return Result{Check: CheckVersion, Status: Pass, Message: fmt.Sprintf("Spoke A2A %s (%s) at %s.", orUnset(v), wire, c.url)}
}

func orUnset(v string) string {
	if v == "" {
		return "(unset, read as 0.2.5)"
	}
	return v
}

func streamingCheck(a connector.Agent, t turn) Result {
	if !a.Streaming {
		return Result{Check: CheckStreaming, Status: Warn,
			Message: "The card does not declare streaming, so each turn is one message/send: the user hears nothing until the whole reply is ready.",
			Fix:     "Declare capabilities.streaming: true and serve message/stream (SendStreamingMessage in A2A 1.0) as Server-Sent Events."}
	}
	c, ok := t.answer()
	if !ok {
		return Result{Check: CheckStreaming, Status: Warn, Message: "Not checked: no interface answered the message.", Fix: fixEndpointFirst}
	}
	if !c.sse() {
		return Result{Check: CheckStreaming, Status: Warn,
			Message: fmt.Sprintf("%s answered the streaming request with one JSON body, not an event stream: the user hears nothing until the whole reply is ready.", c.url),
			Fix:     "Answer message/stream (SendStreamingMessage in A2A 1.0) with Content-Type text/event-stream, one event per update, or stop declaring capabilities.streaming."}
	}
	switch {
	case c.binding == a2aclient.BindingGRPC:
		return Result{Check: CheckStreaming, Status: Pass, Message: fmt.Sprintf("Streams over gRPC (SendStreamingMessage, a server stream) at %s.", c.url)}
	case c.binding == a2aclient.BindingHTTPJSON:
		return Result{Check: CheckStreaming, Status: Pass, Message: fmt.Sprintf("Streams Server-Sent Events on the HTTP+JSON path %s.", c.url)}
	case c.v1:
		return Result{Check: CheckStreaming, Status: Pass, Message: fmt.Sprintf("Streams Server-Sent Events on its interface URL %s (A2A 1.0 has no /stream path).", c.url)}
	}
	for _, prev := range t.calls {
		if prev.url == c.url {
			break
		}
		if prev.url == streamURL(c.url) {
			what := fmt.Sprintf("answered HTTP %d", prev.status)
			if prev.status >= 200 && prev.status < 300 {
				what = "answered a page that is no event stream"
			}
			return Result{Check: CheckStreaming, Status: Warn,
				Message: fmt.Sprintf("%s %s; the agent streams on its url %s itself. The connector falls back to it, at the cost of one extra call per agent after each start of a replica.", prev.url, what, c.url),
				Fix:     "Serve message/stream at {url}/stream too, as the platform's integration guide says (SDK servers stream on the url only: routing {url}/stream to the same handler is enough)."}
		}
	}
	return Result{Check: CheckStreaming, Status: Pass, Message: fmt.Sprintf("Streams Server-Sent Events on %s, as the platform expects.", c.url)}
}

func firstEventCheck(a connector.Agent, t turn, limit time.Duration) Result {
	what := "First event"
	if !a.Streaming {
		what = "The answer to message/send"
	}
	if t.gotEvent {
		d := t.firstEvent.Round(time.Millisecond)
		if t.firstEvent > limit/2 {
			return Result{Check: CheckFirstEvent, Status: Warn,
				Message: fmt.Sprintf("%s after %s, more than half the limit of %s.", what, d, limit),
				Fix:     "Send a first event at once (a Task in submitted or working state) before the slow work, so that a busy day does not cross the limit."}
		}
		return Result{Check: CheckFirstEvent, Status: Pass, Message: fmt.Sprintf("%s after %s (the limit is %s).", what, d, limit)}
	}
	if t.res.Err == nil {
		return Result{Check: CheckFirstEvent, Status: Pass, Message: fmt.Sprintf("The agent answered within the limit of %s.", limit)}
	}
	if t.res.Err.Code == connector.CodeTimeout {
		return Result{Check: CheckFirstEvent, Status: Fail,
			Message: fmt.Sprintf("No event within %s: the connector gives up on such a turn.", limit),
			Fix:     "Answer at once with a first event (a Task in submitted or working state, or a working status update), then do the slow work."}
	}
	return Result{Check: CheckFirstEvent, Status: Warn, Message: "Not measured: the turn failed before the first event.", Fix: fixEndpointFirst}
}

func taskIDsCheck(t turn) Result {
	res := t.res
	if _, ok := t.answer(); !ok {
		return Result{Check: CheckTaskIDs, Status: Warn, Message: "Not checked: no interface answered the message.", Fix: fixEndpointFirst}
	}
	switch {
	case res.TaskID == "" && res.ContextID == "":
		return Result{Check: CheckTaskIDs, Status: Fail,
			Message: "The agent sent neither a task id nor a context id: the connector cannot continue the conversation or cancel the task.",
			Fix:     "Answer with a Task whose id and contextId are set (and taskId and contextId on every event)."}
	case res.TaskID == "" && res.State == "":
		return Result{Check: CheckTaskIDs, Status: Warn,
			Message: "The agent answered with a Message, not a task (context id " + res.ContextID + "): fine for one-shot answers, but without a task it cannot ask a follow-up question.",
			Fix:     "Answer with a Task (or task status and artifact events) when the agent may need to ask back: input-required needs a task."}
	case res.TaskID == "":
		return Result{Check: CheckTaskIDs, Status: Fail,
			Message: "The agent sent a task without an id: the connector cannot continue, poll or cancel it.",
			Fix:     "Set id on every Task, and taskId on every status and artifact event."}
	case res.ContextID == "":
		return Result{Check: CheckTaskIDs, Status: Fail,
			Message: "The agent sent task " + res.TaskID + " without a context id: the connector cannot keep the conversation's context.",
			Fix:     "Set contextId on the Task and its events (the one the message carried, or a new one)."}
	}
	return Result{Check: CheckTaskIDs, Status: Pass, Message: fmt.Sprintf("Task id %s and context id %s came back.", res.TaskID, res.ContextID)}
}

// fixCheckKey is the fix of an agent that answers without its key.
const fixCheckKey = "Check X-API-KEY (and every header the card names for the key) on every call and refuse a call when it is missing or wrong (HTTP 401; on gRPC, UNAUTHENTICATED); or, if the agent is meant to be public, remove apiKey from the card's security."

func apiKeyCheck(a connector.Agent, keySet bool, withKey turn, noKey *turn) Result {
	if !a.APIKeyRequired {
		return Result{Check: CheckAPIKey, Status: Pass, Message: "The card demands no API key: nothing to refuse."}
	}
	if _, ok := withKey.answer(); !ok && (withKey.res.Err == nil || withKey.res.Err.Code != connector.CodeAgentUnauthorized) {
		return Result{Check: CheckAPIKey, Status: Warn, Message: "Not checked: no interface answered the message.", Fix: fixEndpointFirst}
	}
	t := withKey
	if keySet {
		if noKey == nil {
			return Result{Check: CheckAPIKey, Status: Warn, Message: "Not checked.", Fix: fixEndpointFirst}
		}
		t = *noKey
	}
	answered := t.gotEvent || t.res.Err == nil
	switch {
	case answered && keySet:
		return Result{Check: CheckAPIKey, Status: Fail,
			Message: "Called without its API key, the agent answered: anyone who knows its endpoint can use it, although the card demands a key.",
			Fix:     fixCheckKey}
	case answered:
		return Result{Check: CheckAPIKey, Status: Fail,
			Message: "No API key is set for this agent and it answered anyway: the card demands a key the agent does not check.",
			Fix:     fixCheckKey}
	case t.res.Err.Code == connector.CodeAgentUnauthorized || t.res.Err.Code == connector.CodeAuthRequired:
		msg := "Called without its API key, the agent refused"
		if st := lastStatus(t.calls); st == http.StatusUnauthorized || st == http.StatusForbidden {
			msg += fmt.Sprintf(" with HTTP %d", st)
		}
		msg += ", as it should."
		if !keySet {
			msg = "No API key is set for this agent, and it refuses calls without one, as it should (set the key so that turns can run)."
		}
		return Result{Check: CheckAPIKey, Status: Pass, Message: msg}
	}
	return Result{Check: CheckAPIKey, Status: Warn,
		Message: fmt.Sprintf("Called without its API key, the call failed (%s), but not as a refusal of the key: %s.", t.res.Err.Code, strings.TrimSuffix(t.res.Err.Message, ".")),
		Fix:     "Refuse a missing or wrong key with HTTP 401 (or 403), so that the tenant is told the key is wrong rather than that the agent failed."}
}

// lastStatus is the HTTP status of the last call that got a response (0 when none did).
func lastStatus(calls []call) int {
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i].status != 0 {
			return calls[i].status
		}
	}
	return 0
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// handshakeFix is what to change when the TLS handshake with the agent failed, read from the
// turn's words (internal/neterr says them): our client certificate refused or missing, or
// the agent's certificate not chaining to a CA the connector trusts. "" for other failures.
func handshakeFix(msg string) string {
	switch {
	case strings.Contains(msg, "refused our client certificate"):
		return "The agent refused our client certificate: set, as credentials.mtls, a certificate for client authentication that the agent's CA signed, with its private key."
	case strings.Contains(msg, "asked for a client certificate"):
		return "The agent wants a client certificate (mutual TLS): set credentials.mtls, a certificate the agent's CA signed and its private key."
	case strings.Contains(msg, "certificate signed by unknown authority"):
		return "The agent's certificate does not chain to the CA you gave (tls.caPem) nor to a public one: set tls.caPem to the CA bundle that signed the agent's certificate."
	}
	return ""
}
