package a2aclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	jsonv1 "github.com/go-json-experiment/json/v1"
)

// JSONRPCVersion is the only "jsonrpc" value accepted and sent.
const JSONRPCVersion = "2.0"

// Request is a JSON-RPC 2.0 request. ID and Params are raw so that the type serves both the
// client (which marshals them) and test agents (which decode them).
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// Response is a JSON-RPC 2.0 response: exactly one of Result and Error is set.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *a2a.RPCError   `json:"error,omitempty"`
}

// decodeResponse decodes one JSON-RPC response of a call with request id wantID and returns its
// result as an Event, or the agent's *RPCError, or a *ProtocolError. See the package doc for the
// rules on ids.
// The result is read in the 0.x shape; Client calls decode through their wire's dialect.
func decodeResponse(method string, data []byte, wantID string) (a2a.Event, error) {
	return call{d: v0Dialect{}, method: method, id: wantID}.decode(data)
}

// decodeEnvelope checks the JSON-RPC envelope and returns the raw result, a slice of data (not a
// copy): callers decode it before data is reused.
func decodeEnvelope(method string, data []byte, wantID string) ([]byte, error) {
	var resp struct {
		JSONRPC string        `json:"jsonrpc"`
		ID      rawRef        `json:"id"`
		Result  rawRef        `json:"result"`
		Error   *a2a.RPCError `json:"error"`
	}
	if err := jsonv1.Unmarshal(data, &resp); err != nil {
		return nil, &a2a.ProtocolError{Method: method, Kind: a2a.ProtocolBadJSON, Detail: "response: " + err.Error(), Err: err}
	}
	if resp.JSONRPC != JSONRPCVersion {
		return nil, &a2a.ProtocolError{Method: method, Kind: a2a.ProtocolBadVersion, Detail: fmt.Sprintf("jsonrpc is %s, want \"2.0\"", quoteShort(resp.JSONRPC))}
	}
	if resp.Error != nil {
		if present(json.RawMessage(resp.ID)) && !idMatches(json.RawMessage(resp.ID), wantID) {
			return nil, wrongID(method, json.RawMessage(resp.ID), wantID)
		}
		resp.Error.Method = method
		return nil, resp.Error
	}
	if !idMatches(json.RawMessage(resp.ID), wantID) {
		return nil, wrongID(method, json.RawMessage(resp.ID), wantID)
	}
	if !present(json.RawMessage(resp.Result)) {
		return nil, &a2a.ProtocolError{Method: method, Kind: a2a.ProtocolInvalidResponse, Detail: "response has neither result nor error"}
	}
	return resp.Result, nil
}

// plainResult returns the result of a response written the way agents write a success, compact,
// members in the order of the JSON-RPC spec or of the Python SDK: {"jsonrpc":"2.0","id":"<wantID>",
// "result":{…}} or {"id":"<wantID>","jsonrpc":"2.0","result":{…}}. For other data, and for an id
// that JSON would escape, it returns nil. The slice between the prefix and the closing brace is
// returned unchecked: when it decodes as a result, it is one JSON value, the response has no other
// member, and decodeEnvelope would have returned that value too.
func plainResult(data []byte, wantID string) []byte {
	if !plainID(wantID) {
		return nil
	}
	rest, ok := cutString(data, `{"jsonrpc":"2.0","id":"`, wantID, `","result":`)
	if !ok {
		rest, ok = cutString(data, `{"id":"`, wantID, `","jsonrpc":"2.0","result":`)
	}
	if !ok {
		return nil
	}
	rest = bytes.TrimRight(rest, " \t\r\n")
	if len(rest) < 2 || rest[0] != '{' || rest[len(rest)-1] != '}' {
		return nil
	}
	return rest[:len(rest)-1]
}

// plainID reports whether the JSON string of id is id in quotes (no escapes), so that ids can be
// compared as bytes.
func plainID(id string) bool {
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// cutString returns what follows a+b+c at the start of data.
func cutString(data []byte, a, b, c string) ([]byte, bool) {
	if len(data) < len(a)+len(b)+len(c) || string(data[:len(a)]) != a {
		return nil, false
	}
	data = data[len(a):]
	if string(data[:len(b)]) != b {
		return nil, false
	}
	data = data[len(b):]
	if string(data[:len(c)]) != c {
		return nil, false
	}
	return data[len(c):], true
}

// rawRef is a JSON value kept as the slice of the input it was read from: unlike
// json.RawMessage it copies nothing, so it is valid only as long as the input is.
type rawRef []byte

// UnmarshalJSON implements json.Unmarshaler.
func (r *rawRef) UnmarshalJSON(data []byte) error {
	*r = data
	return nil
}

func idMatches(raw json.RawMessage, want string) bool {
	if plainID(want) && len(raw) == len(want)+2 && raw[0] == '"' && string(raw[1:len(raw)-1]) == want && raw[len(raw)-1] == '"' {
		return true // the id as sent, which needs no decoding
	}
	var got string
	return jsonv1.Unmarshal(raw, &got) == nil && got == want
}

func wrongID(method string, raw json.RawMessage, want string) error {
	got := "absent"
	if len(raw) > 0 {
		got = Clip(string(raw), 64, "...")
	}
	return &a2a.ProtocolError{Method: method, Kind: a2a.ProtocolWrongID, Detail: fmt.Sprintf("response id %s, want %s", got, strconv.Quote(want))}
}

// withMethod sets the method on a *ProtocolError from DecodeEvent.
func withMethod(method string, err error) error {
	if pe, ok := err.(*a2a.ProtocolError); ok {
		c := *pe
		c.Method = method
		return &c
	}
	return fmt.Errorf("a2a %s: %w", method, err)
}

// present reports whether a JSON member is there and not null.
func present(r json.RawMessage) bool { return len(r) > 0 && !bytes.Equal(r, []byte("null")) }
