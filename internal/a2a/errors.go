package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// ErrFirstEventTimeout matches (errors.Is) the error of a Stream that saw no event within
// StreamOptions.FirstEventTimeout of the call.
var ErrFirstEventTimeout = errors.New("first event timeout")

// ErrIdleTimeout matches (errors.Is) the error of a Stream that saw no event within
// StreamOptions.IdleTimeout of the previous one.
var ErrIdleTimeout = errors.New("idle timeout")

// errStreamClosed ends Next after Close.
var errStreamClosed = errors.New("stream closed")

// Kinds of ProtocolError.
const (
	// ProtocolBadJSON: a body, an event's data or a result is not the JSON it should be.
	ProtocolBadJSON = "bad_json"
	// ProtocolBadVersion: "jsonrpc" is missing or not "2.0".
	ProtocolBadVersion = "bad_version"
	// ProtocolWrongID: the response's id is not the request's.
	ProtocolWrongID = "wrong_id"
	// ProtocolEventTooLarge: one SSE event exceeded ClientOptions.MaxEventBytes.
	ProtocolEventTooLarge = "event_too_large"
	// ProtocolBodyTooLarge: a JSON body exceeded ClientOptions.MaxBodyBytes.
	ProtocolBodyTooLarge = "body_too_large"
	// ProtocolUnexpectedContentType: a 2xx answer that is neither JSON nor (for streams) an event
	// stream.
	ProtocolUnexpectedContentType = "unexpected_content_type"
	// ProtocolUnknownKind: a result of unknown kind or shape.
	ProtocolUnknownKind = "unknown_kind"
	// ProtocolInvalidResponse: well-formed JSON that is not a valid JSON-RPC response (neither
	// result nor error), or a result of the wrong kind for the method (tasks/get answering a
	// message).
	ProtocolInvalidResponse = "invalid_response"
	// ProtocolErrorEvent: an SSE "event: error" whose data is not a JSON-RPC error.
	ProtocolErrorEvent = "error_event"
)

// ProtocolError says the agent's answer broke the A2A/JSON-RPC/SSE protocol.
type ProtocolError struct {
	// Method is the JSON-RPC method of the call ("message/stream", ...).
	Method string
	// Kind is one of the Protocol* constants, stable for metrics and outcome reasons.
	Kind string
	// Detail is a short human explanation; it never contains request headers and quotes at most
	// a short prefix of the agent's data.
	Detail string
	// Err is the underlying cause (a json error, ...), if any.
	Err error
}

func (e *ProtocolError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("a2a %s: protocol error %s", e.Method, e.Kind)
	}
	return fmt.Sprintf("a2a %s: protocol error %s: %s", e.Method, e.Kind, e.Detail)
}

// Unwrap returns the cause.
func (e *ProtocolError) Unwrap() error { return e.Err }

// HTTPStatusError is a non-2xx answer. 3xx answers land here too: agent calls never follow
// redirects (custom headers such as X-API-KEY would go to the new host).
type HTTPStatusError struct {
	Method     string
	StatusCode int
	// RetryAfter is the parsed Retry-After header (seconds or HTTP date), 0 when absent.
	RetryAfter time.Duration
	// Location is the Location header of a 3xx answer.
	Location string
	// Body is the start of the response body (at most 512 bytes, valid UTF-8), for diagnostics.
	Body string
	// RPC is the JSON-RPC error the body held, if it was one; Unwrap returns it so that
	// errors.As(err, **RPCError) also works. On HTTP+JSON it is the google.rpc.Status of the
	// body, under the JSON-RPC code of the same A2A error.
	RPC *RPCError
	// Binding is the binding of the call. On HTTP+JSON every A2A error comes as an HTTP status,
	// so there RPC (when set) is what the agent meant, as a JSON-RPC error object is on JSON-RPC.
	Binding Binding
}

func (e *HTTPStatusError) Error() string {
	msg := fmt.Sprintf("a2a %s: HTTP %d %s", e.Method, e.StatusCode, http.StatusText(e.StatusCode))
	if e.StatusCode >= 300 && e.StatusCode < 400 {
		if e.Location != "" {
			msg += fmt.Sprintf(": redirect to %s not followed", quoteShort(e.Location))
		} else {
			msg += ": redirect not followed"
		}
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	if e.RPC != nil {
		msg += fmt.Sprintf(": agent error %d: %s", e.RPC.Code, e.RPC.Message)
	}
	return msg
}

// Unwrap returns the JSON-RPC error of the body, if any.
func (e *HTTPStatusError) Unwrap() error {
	if e.RPC == nil {
		return nil
	}
	return e.RPC
}

// JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// A2A error codes.
const (
	CodeTaskNotFound                 = -32001
	CodeTaskNotCancelable            = -32002
	CodePushNotificationNotSupported = -32003
	CodeUnsupportedOperation         = -32004
	CodeContentTypeNotSupported      = -32005
	CodeInvalidAgentResponse         = -32006
	// CodeAuthenticatedExtendedCardNotConfigured is A2A 0.3.
	CodeAuthenticatedExtendedCardNotConfigured = -32007
	// CodeExtensionSupportRequired is A2A 1.0: the agent requires an extension the client did
	// not activate.
	CodeExtensionSupportRequired = -32008
	// CodeVersionNotSupported is A2A 1.0: the request's A2A-Version (none means 0.3) is not one
	// the agent speaks.
	CodeVersionNotSupported = -32009
	// CodeUnauthenticated and CodeUnauthorized are A2A 1.0 SDK codes for a missing or refused
	// credential.
	CodeUnauthenticated = -31401
	CodeUnauthorized    = -31403
)

// RPCError is a JSON-RPC error object, both on the wire and as the Go error of a call that the
// agent answered with one.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	// Data is the optional "data" member, raw.
	Data json.RawMessage `json:"data,omitempty"`
	// Method is the call's method; not on the wire.
	Method string `json:"-"`
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("a2a %s: agent error %d: %s", e.Method, e.Code, e.Message)
}

// quoteShort quotes s, cut to 64 bytes, so agent data in error messages stays short.
func quoteShort(s string) string {
	const max = 64
	if len(s) <= max {
		return strconv.Quote(s)
	}
	return strconv.Quote(Clip(s, max, "")) + "..."
}
