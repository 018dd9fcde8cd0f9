// Package a2av0 is A2A 0.2.5 and 0.3 as it is on the JSON-RPC wire: the JSON objects (told
// apart by "kind", lowercase enums, file parts with a "file" object, status updates with
// "final") and the method names. Its types are wire structs, not a model: the connector's model
// is A2A 1.0 (package a2a), and the a2a Client's 0.x dialect converts between the two. Agents
// that serve 0.x (the demo agent, the fixture agents of tests) write and read these structs.
//
// Decoding is tolerant the way agents need it to be, in one pass: unknown members are ignored,
// parts of an unknown kind are dropped instead of failing the answer, an object without "kind"
// gets the kind its shape implies.
//
// It is the counterpart of a2a-go v2's a2acompat/a2av0, which plays the same role there.
package a2av0

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// JSON-RPC methods of A2A 0.2.5 and 0.3.
const (
	MethodMessageSend      = "message/send"
	MethodMessageStream    = "message/stream"
	MethodTasksGet         = "tasks/get"
	MethodTasksCancel      = "tasks/cancel"
	MethodTasksResubscribe = "tasks/resubscribe"
	// MethodGetExtendedCard is 0.3's; 0.2.x has no extended card.
	MethodGetExtendedCard = "agent/getAuthenticatedExtendedCard"
)

// DecodeError is why DecodeEvent could not make an Event of a result.
type DecodeError struct {
	// UnknownKind is set when the result is JSON but of no kind (or shape) A2A 0.x defines;
	// otherwise the JSON itself is malformed or of the wrong types.
	UnknownKind bool
	Detail      string
	// Err is the JSON error, if any.
	Err error
}

func (e *DecodeError) Error() string { return "a2av0: " + e.Detail }

// Unwrap returns the JSON error, if any.
func (e *DecodeError) Unwrap() error { return e.Err }

// quoteShort quotes s for an error message, clipped to 64 bytes on a rune boundary.
func quoteShort(s string) string {
	const max = 64
	if len(s) <= max {
		return strconv.Quote(s)
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strconv.Quote(strings.ToValidUTF8(s[:n], "\uFFFD")) + "..."
}
