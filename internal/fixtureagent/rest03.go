package fixtureagent

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// ProtocolV03 with Options.Binding BindingHTTPJSON starts the HTTP+JSON face of A2A 0.3, the
// gRPC transcoding of the 0.3 a2a.proto as @a2a-js/sdk 0.3's restHandler serves it:
//
//	POST URL/v1/message:send           the SendMessageResponse ({"task"|"message": …}), 201
//	POST URL/v1/message:stream         SSE whose data are StreamResponses
//	GET  URL/v1/tasks/{id}             a bare Task
//	POST URL/v1/tasks/{id}:cancel      a bare Task, 202
//	GET  URL/v1/tasks/{id}:subscribe   SSE (POST too)
//
// Bodies are the 1.0 JSON with the 0.3 proto's two differences: a Message's parts are
// "content", and canceled is TASK_STATE_CANCELLED. Errors are {"code", "message"} with
// the JSON-RPC code, under the HTTP status @a2a-js gives it. No A2A-Version header is needed.
// Requests are recorded with the 0.3 JSON-RPC method name as RPCMethod.
const ProtocolV03 = "0.3"

// NewRESTV03 starts a fixture agent speaking A2A 0.3 over HTTP+JSON on loopback; it is closed
// when the test ends.
func NewRESTV03(t testing.TB) *Server {
	t.Helper()
	return NewWithOptions(t, Options{Binding: BindingHTTPJSON, Protocol: ProtocolV03})
}

// restV0Names is the 0.3 JSON-RPC method of each operation, recorded as RPCMethod.
var restV0Names = map[Op]string{OpSend: "message/send", OpStream: "message/stream", OpGet: "tasks/get", OpCancel: "tasks/cancel", OpResubscribe: "tasks/resubscribe"}

// restV0Status is the HTTP status @a2a-js/sdk 0.3 answers an error code with (mapErrorToStatus).
func restV0Status(code int) int {
	switch code {
	case codeTaskNotFound, codeMethodNotFound:
		return http.StatusNotFound
	case codeUnsupportedOperation:
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// restV0ErrorBody is @a2a-js/sdk 0.3's toHTTPError body.
func restV0ErrorBody(code int, msg string) string {
	return string(mustJSON(wireError{Code: code, Message: msg}))
}

// v03Result rewrites the JSON of a 0.x result object into the 0.3 proto's JSON: the 1.0 shape
// (v1Result), then messages' parts as content and canceled as CANCELLED.
func v03Result(v0 []byte, wrap bool) []byte {
	v1, err := v1Result(v0, wrap)
	if err != nil {
		panic(err.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(v1))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		panic("fixtureagent: v03 result: " + err.Error())
	}
	v03Fix(obj)
	return mustJSON(obj)
}

// v03Fix rewrites the messages and states below obj (a wrapper, Task, status or event).
func v03Fix(obj map[string]any) {
	for k, v := range obj {
		switch k {
		case "message":
			if m, ok := v.(map[string]any); ok {
				v03Message(m)
			}
		case "history":
			if hs, ok := v.([]any); ok {
				for _, h := range hs {
					if m, ok := h.(map[string]any); ok {
						v03Message(m)
					}
				}
			}
		case "status":
			if st, ok := v.(map[string]any); ok {
				if st["state"] == "TASK_STATE_CANCELED" {
					st["state"] = "TASK_STATE_CANCELLED"
				}
				v03Fix(st)
			}
		case "task", "statusUpdate":
			if m, ok := v.(map[string]any); ok {
				v03Fix(m)
			}
		}
	}
}

func v03Message(m map[string]any) {
	if p, ok := m["parts"]; ok {
		m["content"] = p
		delete(m, "parts")
	}
}
