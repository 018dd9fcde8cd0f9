package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	jsonv1 "github.com/go-json-experiment/json/v1"
)

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

// UnmarshalJSON accepts a code written as a float with no fraction (-32001.0) or as a numeric
// string, which some servers send, so that the agent's message is not lost to a formality. A code
// that is no number at all decodes as 0.
func (e *RPCError) UnmarshalJSON(data []byte) error {
	var w struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := jsonv1.Unmarshal(data, &w); err != nil {
		return err
	}
	*e = RPCError{Message: w.Message}
	if present(w.Data) {
		e.Data = w.Data
	}
	code := bytes.Trim(w.Code, `"`)
	if f, err := strconv.ParseFloat(string(code), 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<31 {
		e.Code = int(f)
	}
	return nil
}
