package fixtureagent_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
)

// These tests read the agent's answers as bytes, with plain net/http: the exact JSON of both
// wires, the refusals of the 1.0 mode, and the dropped connections.

// rawClient is an HTTP client whose idle connections are closed at the end of the test.
func rawClient(t *testing.T) *http.Client {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

// post sends one JSON-RPC request (id "r1") to url; version is the A2A-Version header ("" for
// none). The caller closes the body.
func post(t *testing.T, hc *http.Client, url, version, method, params string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":"r1","method":"` + method + `","params":` + params + `}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("POST %s %s: %v", url, method, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// sseData returns the data of each event of an event stream, and the error that ended the read
// (nil at a clean end).
func sseData(body io.Reader) ([]string, error) {
	var out []string
	r := bufio.NewReader(body)
	for {
		line, err := r.ReadString('\n')
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok {
			out = append(out, data)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// jsonValue decodes s for comparisons that ignore key order and spacing.
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return v
}

func jsonValues(t *testing.T, ss []string) []any {
	t.Helper()
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = jsonValue(t, s)
	}
	return out
}

func msgParams(text string) string {
	return `{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"` + text + `"}]}}`
}

func msgParamsV1(text string) string {
	return `{"message":{"role":"ROLE_USER","messageId":"m1","parts":[{"text":"` + text + `"}]}}`
}

// The exact JSON of each wire: the 0.x mode is what the agent always sent, the 1.0 mode its
// rewriting.
func TestWireShapes(t *testing.T) {
	t.Parallel()
	const envelope = `{"jsonrpc":"2.0","id":"r1","result":%s}`
	wrap := func(s string) string { return strings.Replace(envelope, "%s", s, 1) }
	tests := []struct {
		name    string
		v1      bool
		method  string
		params  string
		prepare string // a stream request run first (its task is task-1)
		want    []string
	}{
		{name: "v0_input_required", method: "message/stream", params: msgParams("behave:input-required"), want: []string{
			wrap(`{"kind":"task","id":"task-1","contextId":"ctx-1","status":{"state":"submitted"}}`),
			wrap(`{"kind":"status-update","taskId":"task-1","contextId":"ctx-1","final":true,"status":{"state":"input-required",
				"message":{"kind":"message","role":"agent","messageId":"s-task-1-input-required","taskId":"task-1","contextId":"ctx-1","parts":[{"kind":"text","text":"Which city?"}]}}}`),
		}},
		{name: "v1_input_required", v1: true, method: "SendStreamingMessage", params: msgParamsV1("behave:input-required"), want: []string{
			wrap(`{"task":{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_SUBMITTED"}}}`),
			wrap(`{"statusUpdate":{"taskId":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_INPUT_REQUIRED",
				"message":{"role":"ROLE_AGENT","messageId":"s-task-1-input-required","taskId":"task-1","contextId":"ctx-1","parts":[{"text":"Which city?"}]}}}}`),
		}},
		{name: "v0_chunks", method: "message/stream", params: msgParams("behave:stream"), want: []string{
			wrap(`{"kind":"task","id":"task-1","contextId":"ctx-1","status":{"state":"submitted"}}`),
			wrap(`{"kind":"status-update","taskId":"task-1","contextId":"ctx-1","final":false,"status":{"state":"working"}}`),
			wrap(`{"kind":"artifact-update","taskId":"task-1","contextId":"ctx-1","artifact":{"artifactId":"a-task-1","parts":[{"kind":"text","text":"chunk 0. "}]}}`),
			wrap(`{"kind":"artifact-update","taskId":"task-1","contextId":"ctx-1","append":true,"artifact":{"artifactId":"a-task-1","parts":[{"kind":"text","text":"chunk 1. "}]}}`),
			wrap(`{"kind":"artifact-update","taskId":"task-1","contextId":"ctx-1","append":true,"lastChunk":true,
				"artifact":{"artifactId":"a-task-1","parts":[{"kind":"text","text":"chunk 2. "}],"metadata":{"command":"flash"}}}`),
			wrap(`{"kind":"status-update","taskId":"task-1","contextId":"ctx-1","final":true,"status":{"state":"completed"}}`),
		}},
		{name: "v1_chunks", v1: true, method: "SendStreamingMessage", params: msgParamsV1("behave:stream"), want: []string{
			wrap(`{"task":{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_SUBMITTED"}}}`),
			wrap(`{"statusUpdate":{"taskId":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_WORKING"}}}`),
			wrap(`{"artifactUpdate":{"taskId":"task-1","contextId":"ctx-1","artifact":{"artifactId":"a-task-1","parts":[{"text":"chunk 0. "}]}}}`),
			wrap(`{"artifactUpdate":{"taskId":"task-1","contextId":"ctx-1","append":true,"artifact":{"artifactId":"a-task-1","parts":[{"text":"chunk 1. "}]}}}`),
			wrap(`{"artifactUpdate":{"taskId":"task-1","contextId":"ctx-1","append":true,"lastChunk":true,
				"artifact":{"artifactId":"a-task-1","parts":[{"text":"chunk 2. "}],"metadata":{"command":"flash"}}}}`),
			wrap(`{"statusUpdate":{"taskId":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_COMPLETED"}}}`),
		}},
		{name: "v0_get_is_a_task", method: "tasks/get", params: `{"id":"task-1"}`, prepare: "behave:input-required", want: []string{
			wrap(`{"kind":"task","id":"task-1","contextId":"ctx-1","status":{"state":"input-required"}}`),
		}},
		{name: "v1_get_is_a_bare_task", v1: true, method: "GetTask", params: `{"id":"task-1"}`, prepare: "behave:input-required", want: []string{
			wrap(`{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}`),
		}},
		{name: "v1_cancel_is_a_bare_task", v1: true, method: "CancelTask", params: `{"id":"task-1"}`, prepare: "behave:input-required", want: []string{
			wrap(`{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_CANCELED"}}`),
		}},
		{name: "v1_send_is_a_wrapper", v1: true, method: "SendMessage", params: msgParamsV1("behave:message"), want: []string{
			wrap(`{"message":{"role":"ROLE_AGENT","messageId":"m-task-1","contextId":"ctx-1","parts":[{"text":"hello from a message"}]}}`),
		}},
		{name: "v1_garbage_state_keeps_its_name", v1: true, method: "SendStreamingMessage", params: msgParamsV1("behave:garbage-state"), want: []string{
			wrap(`{"task":{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_SUBMITTED"}}}`),
			wrap(`{"statusUpdate":{"taskId":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_SLEEPING"}}}`),
		}},
		{name: "v1_error_event_has_error_info", v1: true, method: "SendStreamingMessage", params: msgParamsV1("behave:rpc-error-event"), want: []string{
			wrap(`{"task":{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_SUBMITTED"}}}`),
			`{"jsonrpc":"2.0","id":"r1","error":{"code":-32603,"message":"internal boom",
				"data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INTERNAL_ERROR","domain":"a2a-protocol.org"}]}}`,
		}},
		{name: "v1_wrong_id", v1: true, method: "SendStreamingMessage", params: msgParamsV1("behave:wrong-id"), want: []string{
			`{"jsonrpc":"2.0","id":"not-yours","result":{"task":{"id":"task-1","contextId":"c","status":{"state":"TASK_STATE_SUBMITTED"}}}}`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, version, stream := fixtureagent.New(t), "", "message/stream"
			if tt.v1 {
				srv, version, stream = fixtureagent.NewV1(t), "1.0", "SendStreamingMessage"
			}
			hc := rawClient(t)
			if tt.prepare != "" {
				p := msgParams(tt.prepare)
				if tt.v1 {
					p = msgParamsV1(tt.prepare)
				}
				if _, err := sseData(post(t, hc, srv.URL, version, stream, p).Body); err != nil {
					t.Fatal(err)
				}
			}
			resp := post(t, hc, srv.URL, version, tt.method, tt.params)
			var got []string
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				var err error
				if got, err = sseData(resp.Body); err != nil {
					t.Fatal(err)
				}
			} else {
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				got = []string{string(b)}
			}
			if diff := cmp.Diff(jsonValues(t, tt.want), jsonValues(t, got)); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}

// The 1.0 mode refuses what a 1.0-only SDK server refuses; the 0.x mode ignores A2A-Version and
// does not know the 1.0 method names.
func TestRefusals(t *testing.T) {
	t.Parallel()
	errorOf := func(code int, reason string) string {
		e := map[string]any{"code": code}
		if reason != "" {
			e["data"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "a2a-protocol.org"}}
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "r1", "error": e})
		return string(b)
	}
	tests := []struct {
		name     string
		v1       bool
		path     string
		version  string
		method   string
		params   string
		wantCode int    // HTTP status
		want     string // JSON-RPC answer without "message" (which says it in words)
		wantOp   fixtureagent.Op
	}{
		{name: "v1_without_a2a_version", v1: true, method: "SendMessage", params: msgParamsV1("hi"), wantCode: 200,
			want: errorOf(-32009, "VERSION_NOT_SUPPORTED"), wantOp: fixtureagent.OpSend},
		{name: "v1_with_a2a_version_0.3", v1: true, version: "0.3", method: "SendStreamingMessage", params: msgParamsV1("hi"), wantCode: 200,
			want: errorOf(-32009, "VERSION_NOT_SUPPORTED"), wantOp: fixtureagent.OpStream},
		{name: "v1_0x_call_without_header_is_a_version_error", v1: true, method: "message/send", params: msgParams("hi"), wantCode: 200,
			want: errorOf(-32009, "VERSION_NOT_SUPPORTED"), wantOp: fixtureagent.OpSend},
		{name: "v1_0x_method_name", v1: true, version: "1.0", method: "message/stream", params: msgParams("hi"), wantCode: 200,
			want: errorOf(-32601, "METHOD_NOT_FOUND"), wantOp: fixtureagent.OpStream},
		{name: "v1_has_no_stream_path", v1: true, path: "/stream", version: "1.0", method: "SendStreamingMessage", params: msgParamsV1("hi"),
			wantCode: 404, wantOp: fixtureagent.OpStream},
		{name: "v1_unknown_task", v1: true, version: "1.0", method: "GetTask", params: `{"id":"nope"}`, wantCode: 200,
			want: errorOf(-32001, "TASK_NOT_FOUND"), wantOp: fixtureagent.OpGet},
		{name: "v0_1.0_method_name", method: "SendMessage", version: "1.0", params: msgParamsV1("hi"), wantCode: 200,
			want: errorOf(-32601, ""), wantOp: fixtureagent.OpSend},
		{name: "v0_ignores_a2a_version", path: "/stream", version: "0.3", method: "tasks/get", params: `{"id":"nope"}`, wantCode: 200,
			want: errorOf(-32001, ""), wantOp: fixtureagent.OpGet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := fixtureagent.New(t)
			if tt.v1 {
				srv = fixtureagent.NewV1(t)
			}
			resp := post(t, rawClient(t), srv.URL+tt.path, tt.version, tt.method, tt.params)
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantCode, body)
			}
			if tt.want != "" {
				got, ok := jsonValue(t, string(body)).(map[string]any)
				if !ok {
					t.Fatalf("answer %s", body)
				}
				if e, ok := got["error"].(map[string]any); ok {
					if msg, _ := e["message"].(string); msg == "" {
						t.Errorf("error without a message: %s", body)
					}
					delete(e, "message")
				}
				if diff := cmp.Diff(jsonValue(t, tt.want), any(got)); diff != "" {
					t.Errorf("answer (-want +got):\n%s", diff)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
			}
			// Refused calls are recorded too, with the operation they named.
			if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Op != tt.wantOp || reqs[0].RPCMethod != tt.method {
				t.Errorf("recorded %+v, want one %s (%s)", reqs, tt.method, tt.wantOp)
			}
		})
	}
}

// describeRaw renders one event's data of either wire alike: "task working [chunk 0. ]",
// "artifact append last chunk 1. ", "status completed", "error -32001".
func describeRaw(t *testing.T, data string) string {
	t.Helper()
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(data), &env); err != nil {
		t.Fatalf("event %s: %v", data, err)
	}
	if env.Error != nil {
		return "error " + strconv.Itoa(env.Error.Code)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(env.Result, &members); err != nil {
		t.Fatalf("event %s: %v", data, err)
	}
	kind, inner := "", env.Result
	switch k, hasKind := members["kind"]; {
	case hasKind: // 0.x
		_ = json.Unmarshal(k, &kind)
		kind = strings.TrimSuffix(kind, "-update")
	case len(members) == 1: // 1.0 wrapper
		for k, v := range members {
			kind, inner = strings.TrimSuffix(k, "Update"), v
		}
	default: // 1.0 bare Task (GetTask, CancelTask)
		kind = "task"
	}
	var o struct {
		Status struct {
			State string `json:"state"`
		} `json:"status"`
		Artifacts []struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"artifacts"`
		Artifact struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"artifact"`
		Append    bool `json:"append"`
		LastChunk bool `json:"lastChunk"`
	}
	if err := json.Unmarshal(inner, &o); err != nil {
		t.Fatalf("event %s: %v", data, err)
	}
	state := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(o.Status.State, "TASK_STATE_"), "_", "-"))
	switch kind {
	case "artifact":
		s := "artifact"
		if o.Append {
			s += " append"
		}
		if o.LastChunk {
			s += " last"
		}
		for _, p := range o.Artifact.Parts {
			s += " " + p.Text
		}
		return s
	case "task":
		s := "task " + state
		for _, a := range o.Artifacts {
			s += " ["
			for _, p := range a.Parts {
				s += p.Text
			}
			s += "]"
		}
		return s
	default:
		return kind + " " + state
	}
}

func describeAllRaw(t *testing.T, data []string) []string {
	t.Helper()
	out := make([]string, len(data))
	for i, d := range data {
		out[i] = describeRaw(t, d)
	}
	return out
}

// A stream that breaks after one chunk, each way a stream can break (a clean end without a
// final state, a destroyed socket, a TCP reset, …), on both wires; then what the
// agent answers to a resubscribe and to a get for that task.
func TestDroppedConnections(t *testing.T) {
	t.Parallel()
	before := []string{"task submitted", "status working", "artifact " + fixtureagent.ChunkText(0)}
	resumed := []string{"task working [" + fixtureagent.ChunkText(0) + "]", "artifact append last " + fixtureagent.ChunkText(1), "status completed"}
	tests := []struct {
		name     string
		behavior fixtureagent.Behavior
		// breakErr says how the stream read must end: nil for a clean end.
		breakErr      func(error) bool
		wantResub     []string
		wantGetBefore string // a get right after the break, before the resubscribe
		wantGet       string // a get after the resubscribe
	}{
		{name: "clean_end_without_final_state", behavior: fixtureagent.StreamCut,
			breakErr: func(err error) bool { return err == nil }, wantResub: []string{}, wantGetBefore: "task working", wantGet: "task working"},
		{name: "socket_destroyed_mid_body", behavior: fixtureagent.StreamDrop,
			breakErr: func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }, wantResub: resumed, wantGetBefore: "task working", wantGet: "task completed"},
		{name: "tcp_reset", behavior: fixtureagent.StreamReset,
			breakErr: func(err error) bool { return errors.Is(err, syscall.ECONNRESET) }, wantResub: resumed, wantGetBefore: "task working", wantGet: "task completed"},
		{name: "resubscribe_refused_get_completed", behavior: fixtureagent.StreamDropGet,
			breakErr:      func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) },
			wantResub:     []string{"error -32004"},
			wantGetBefore: "task completed [" + fixtureagent.StreamText(2) + "]", wantGet: "task completed [" + fixtureagent.StreamText(2) + "]"},
		{name: "everything_refused", behavior: fixtureagent.StreamDropRefused,
			breakErr: func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }, wantResub: []string{"error -32001"}, wantGetBefore: "error -32001", wantGet: "error -32001"},
	}
	for _, tt := range tests {
		for _, v1 := range []bool{false, true} {
			name := tt.name + map[bool]string{false: "/v0", true: "/v1"}[v1]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				srv, version, stream, resub, get, params := fixtureagent.New(t), "", "message/stream", "tasks/resubscribe", "tasks/get", msgParams
				if v1 {
					srv, version, stream, resub, get, params = fixtureagent.NewV1(t), "1.0", "SendStreamingMessage", "SubscribeToTask", "GetTask", msgParamsV1
				}
				hc := rawClient(t)
				data, err := sseData(post(t, hc, srv.URL, version, stream, params("behave:"+string(tt.behavior))).Body)
				if !tt.breakErr(err) {
					t.Errorf("the stream read ended with %v", err)
				}
				if diff := cmp.Diff(before, describeAllRaw(t, data)); diff != "" {
					t.Errorf("events before the break (-want +got):\n%s", diff)
				}
				answer := func(method string) []string {
					resp := post(t, hc, srv.URL, version, method, `{"id":"task-1"}`)
					if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
						data, err := sseData(resp.Body)
						if err != nil {
							t.Fatalf("%s: %v", method, err)
						}
						return describeAllRaw(t, data)
					}
					b, err := io.ReadAll(resp.Body)
					if err != nil {
						t.Fatal(err)
					}
					return []string{describeRaw(t, string(bytes.TrimSpace(b)))}
				}
				if got := answer(get); len(got) != 1 || got[0] != tt.wantGetBefore {
					t.Errorf("get after the break = %q, want %q", got, tt.wantGetBefore)
				}
				if diff := cmp.Diff(tt.wantResub, answer(resub)); diff != "" {
					t.Errorf("resubscribe (-want +got):\n%s", diff)
				}
				if got := answer(get); len(got) != 1 || got[0] != tt.wantGet {
					t.Errorf("get after the resubscribe = %q, want %q", got, tt.wantGet)
				}
			})
		}
	}
}
