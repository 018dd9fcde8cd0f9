package a2aclient

import (
	"net/http"
	"slices"
	"strings"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
)

// Wire is a generation of the A2A JSON-RPC wire. The Client speaks each one with its own dialect
// (method names, parameter and result shapes, headers) behind the same Go API and the same
// core model, so that callers never see which one an agent spoke.
type Wire uint8

const (
	// WireV0 is A2A 0.2.5 and 0.3: methods "message/send", "message/stream", "tasks/get",
	// "tasks/cancel", "tasks/resubscribe"; objects told apart by "kind"; lowercase enums.
	WireV0 Wire = iota
	// WireV1 is A2A 1.0: methods SendMessage, SendStreamingMessage, GetTask, CancelTask,
	// SubscribeToTask; results and events wrapped in {"task"|"message"|"statusUpdate"|
	// "artifactUpdate": …}; parts without "kind"; enums TASK_STATE_* and ROLE_*; no "final"
	// flag; every request carries the header A2A-Version: 1.0.
	WireV1
)

// String returns the protocol version the wire is named after in cards.
func (w Wire) String() string {
	if w == WireV1 {
		return "1.0"
	}
	return "0.3"
}

// WireFor returns the wire of a protocol version as a card states it: 1.x is WireV1, anything
// else (0.2.x, 0.3.x, unset) WireV0.
func WireFor(protocolVersion string) Wire {
	v := strings.TrimSpace(protocolVersion)
	if v == "1" || strings.HasPrefix(v, "1.") {
		return WireV1
	}
	return WireV0
}

// Op is a protocol operation, named independently of any wire.
type Op uint8

// Operations the Client performs.
const (
	OpSendMessage Op = iota
	OpStreamMessage
	OpGetTask
	OpCancelTask
	OpSubscribeToTask
	// OpGetExtendedAgentCard asks for the authenticated extended card (card.go).
	OpGetExtendedAgentCard
)

// JSON-RPC methods of A2A 1.0.
const (
	MethodSendMessage          = "SendMessage"
	MethodSendStreamingMessage = "SendStreamingMessage"
	MethodGetTask              = "GetTask"
	MethodCancelTask           = "CancelTask"
	MethodSubscribeToTask      = "SubscribeToTask"
	MethodGetExtendedAgentCard = "GetExtendedAgentCard"
)

// VersionHeader is the A2A 1.0 header naming the protocol version of a request. A 1.0 server
// treats a request without it as 0.3.
const VersionHeader = "A2A-Version"

// Extension headers: A2A 1.0 names the header A2A-Extensions; 0.x servers (and some 1.0 ones
// still) read X-A2A-Extensions.
const (
	ExtensionsHeader       = "A2A-Extensions"
	LegacyExtensionsHeader = "X-A2A-Extensions"
)

// dialect is one wire's spelling of the operations.
type dialect interface {
	// method is the JSON-RPC method of op.
	method(op Op) string
	// header adds the wire's own headers to a request.
	header(h http.Header)
	// encodeParams returns the JSON params of op; params is the request of op
	// (*SendMessageRequest, GetTaskRequest, CancelTaskRequest or SubscribeToTaskRequest) and
	// tenant the 1.0 tenant ("" none).
	encodeParams(op Op, params any, tenant string) ([]byte, error)
	// decodeResult turns the JSON-RPC result of op into an Event of the core model; errors are
	// *ProtocolError without a method.
	decodeResult(op Op, result []byte) (a2a.Event, error)
}

func dialectOf(w Wire) dialect {
	if w == WireV1 {
		return v1Dialect{}
	}
	return v0Dialect{}
}

// v1Dialect is A2A 1.0 (the spec's a2a.proto in its JSON form, as the official SDKs speak it).
// Results decode straight into the core model, whose JSON is 1.0's; requests are written from
// wire structs that carry the tenant and leave out what the spec leaves out.
type v1Dialect struct{}

func (v1Dialect) method(op Op) string {
	switch op {
	case OpSendMessage:
		return MethodSendMessage
	case OpStreamMessage:
		return MethodSendStreamingMessage
	case OpGetTask:
		return MethodGetTask
	case OpCancelTask:
		return MethodCancelTask
	case OpGetExtendedAgentCard:
		return MethodGetExtendedAgentCard
	default:
		return MethodSubscribeToTask
	}
}

func (v1Dialect) header(h http.Header) {
	h.Set(VersionHeader, "1.0")
	// Servers of either generation read one of the two names; sending both costs a header.
	if ext := h.Values(LegacyExtensionsHeader); len(ext) > 0 && h.Get(ExtensionsHeader) == "" {
		h[http.CanonicalHeaderKey(ExtensionsHeader)] = slices.Clone(ext)
	}
}

func (v1Dialect) encodeParams(_ Op, params any, tenant string) ([]byte, error) {
	if _, ok := params.(extendedCardParams); ok {
		return marshalBody(struct {
			Tenant string `json:"tenant,omitempty"`
		}{tenant})
	}
	return encodeParamsV1(params, tenant)
}

func (v1Dialect) decodeResult(op Op, result []byte) (a2a.Event, error) {
	if op == OpGetTask || op == OpCancelTask {
		return a2a.DecodeTaskV1(result)
	}
	return a2a.DecodeEventV1(result)
}
