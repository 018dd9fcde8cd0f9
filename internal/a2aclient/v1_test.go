package a2aclient

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
)

// 1.0 answers as the official SDKs write them (a2a-go v2 a2a/core.go, @a2a-js/sdk 1.x).
const (
	v1Task         = `{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED","timestamp":"2026-11-23T10:00:00Z"}}}}`
	v1Working      = `{"jsonrpc":"2.0","id":"req-1","result":{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}}`
	v1Chunk1       = `{"jsonrpc":"2.0","id":"req-1","result":{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"text":"Hello"}]}}}}`
	v1Chunk2       = `{"jsonrpc":"2.0","id":"req-1","result":{"artifactUpdate":{"taskId":"t1","contextId":"c1","append":true,"lastChunk":true,"artifact":{"artifactId":"a1","parts":[{"text":" world"},{"url":"https://x.example/a.png","mediaType":"image/png"}],"metadata":{"command":"flash"}}}}}`
	v1AskQuestion  = `{"jsonrpc":"2.0","id":"req-1","result":{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_INPUT_REQUIRED","message":{"messageId":"m2","role":"ROLE_AGENT","parts":[{"text":"Which city?"}]}}}}}`
	v1MessageReply = `{"jsonrpc":"2.0","id":"req-1","result":{"message":{"messageId":"m9","contextId":"c1","role":"ROLE_AGENT","parts":[{"text":"hi"},{"data":{"k":1}},{"raw":"AAEC","filename":"b.bin"}]}}}`
)

func TestDecodeEventV1(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want a2a.Event
	}{
		{name: "task", data: v1Task, want: &a2a.Task{ID: "t1", ContextID: "c1",
			Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: "2026-11-23T10:00:00Z"}}},
		{name: "status_update_with_question", data: v1AskQuestion, want: &a2a.TaskStatusUpdateEvent{TaskID: "t1", ContextID: "c1",
			Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: &a2a.Message{MessageID: "m2", Role: a2a.RoleAgent,
				Parts: a2a.Parts{a2a.TextPart("Which city?")}}}}},
		{name: "artifact_update_with_a_url_part", data: v1Chunk2, want: &a2a.TaskArtifactUpdateEvent{TaskID: "t1", ContextID: "c1",
			Append: true, LastChunk: true, Artifact: a2a.Artifact{ArtifactID: "a1", Metadata: map[string]any{"command": "flash"},
				Parts: a2a.Parts{a2a.TextPart(" world"), {Kind: a2a.PartURL, URL: "https://x.example/a.png", MediaType: "image/png"}}}}},
		{name: "message_with_data_and_raw_parts", data: v1MessageReply, want: &a2a.Message{MessageID: "m9", ContextID: "c1", Role: a2a.RoleAgent,
			Parts: a2a.Parts{a2a.TextPart("hi"), {Kind: a2a.PartData, Data: json.RawMessage(`{"k":1}`)},
				{Kind: a2a.PartRaw, Raw: []byte{0, 1, 2}, Filename: "b.bin"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cl := call{d: v1Dialect{}, op: OpStreamMessage, method: MethodSendStreamingMessage, id: "req-1"}
			got, err := cl.decode([]byte(tt.data))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("event (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeEventV1_refuses_what_is_not_an_event(t *testing.T) {
	t.Parallel()
	for _, data := range []string{`{}`, `{"kind":"task","id":"t","status":{"state":"working"}}`, `[1]`, `"x"`} {
		_, err := a2a.DecodeEventV1([]byte(data))
		var pe *a2a.ProtocolError
		if !errors.As(err, &pe) || (pe.Kind != a2a.ProtocolUnknownKind && pe.Kind != a2a.ProtocolBadJSON) {
			t.Errorf("DecodeEventV1(%s) = %v, want unknown_kind or bad_json", data, err)
		}
	}
}

func TestTaskState(t *testing.T) {
	t.Parallel()
	tests := []struct {
		state                a2a.TaskState
		terminal, interrupts bool
	}{
		{state: a2a.TaskStateSubmitted},
		{state: a2a.TaskStateWorking},
		{state: a2a.TaskStateInputRequired, interrupts: true},
		{state: a2a.TaskStateAuthRequired, interrupts: true},
		{state: a2a.TaskStateCompleted, terminal: true},
		{state: a2a.TaskStateFailed, terminal: true},
		{state: a2a.TaskStateCanceled, terminal: true},
		{state: a2a.TaskStateRejected, terminal: true},
		{state: a2a.TaskStateUnspecified},
		{state: "TASK_STATE_SOMETHING_NEW"},
	}
	for _, tt := range tests {
		if got := tt.state.IsTerminal(); got != tt.terminal {
			t.Errorf("%s.IsTerminal() = %v, want %v", tt.state, got, tt.terminal)
		}
		if got := tt.state.IsInterrupted(); got != tt.interrupts {
			t.Errorf("%s.IsInterrupted() = %v, want %v", tt.state, got, tt.interrupts)
		}
	}
}

// A Part's JSON is 1.0's: one content member, and the 0.x forms some agents mix in are read.
func TestPartJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		part a2a.Part
		json string
	}{
		{a2a.TextPart("hi"), `{"text":"hi"}`},
		{a2a.Part{Kind: a2a.PartRaw, Raw: []byte{0, 1, 2}, Filename: "b.bin", MediaType: "application/octet-stream"}, `{"raw":"AAEC","filename":"b.bin","mediaType":"application/octet-stream"}`},
		{a2a.Part{Kind: a2a.PartURL, URL: "https://x/a.png", Metadata: map[string]any{"k": "v"}}, `{"url":"https://x/a.png","metadata":{"k":"v"}}`},
		{a2a.Part{Kind: a2a.PartData, Data: json.RawMessage(`[1]`)}, `{"data":[1]}`},
	} {
		b, err := json.Marshal(tc.part)
		if err != nil || string(b) != tc.json {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tc.part, b, err, tc.json)
		}
		var back a2a.Part
		if err := json.Unmarshal(b, &back); err != nil || !cmp.Equal(back, tc.part) {
			t.Errorf("Unmarshal(%s) = %+v, %v", b, back, err)
		}
	}
	var ps a2a.Parts
	data := `[{"kind":"text","text":"a"},{"kind":"file","file":{"name":"f","uri":"u"}},{"kind":"file","file":{"bytes":"aGk="}},{"kind":"data","data":{}},
		{"kind":"video"},{"metadata":{}},{"raw":"not base64!"}]`
	if err := json.Unmarshal([]byte(data), &ps); err != nil {
		t.Fatal(err)
	}
	want := a2a.Parts{a2a.TextPart("a"), {Kind: a2a.PartURL, URL: "u", Filename: "f"}, {Kind: a2a.PartRaw, Raw: []byte("hi")}, {Kind: a2a.PartData, Data: json.RawMessage(`{}`)},
		{Kind: a2a.PartRaw, Raw: []byte("not base64!")}}
	if diff := cmp.Diff(want, ps); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
}

func TestWireFor(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Wire{"1.0": WireV1, "1": WireV1, "1.1": WireV1, " 1.0 ": WireV1,
		"0.3.0": WireV0, "0.2.5": WireV0, "": WireV0, "10.0": WireV0} {
		if got := WireFor(in); got != want {
			t.Errorf("WireFor(%q) = %s, want %s", in, got, want)
		}
	}
}

// v1Request is what a 1.0 server sees of one call.
type v1Request struct {
	method, version, ext, legacyExt string
	params                          map[string]any
}

func v1Agent(t *testing.T, got chan<- v1Request, answer func(w http.ResponseWriter, req Request)) string {
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		req, _ := readRequest(t, r)
		var params map[string]any
		if err := json.Unmarshal(req.Params, &params); err != nil {
			t.Errorf("params %s: %v", req.Params, err)
		}
		got <- v1Request{method: req.Method, version: r.Header.Get(VersionHeader), ext: r.Header.Get(ExtensionsHeader),
			legacyExt: r.Header.Get(LegacyExtensionsHeader), params: params}
		answer(w, req)
	})
	return srv.URL
}

func TestV1_stream_speaks_the_1_0_wire(t *testing.T) {
	t.Parallel()
	got := make(chan v1Request, 1)
	url := v1Agent(t, got, func(w http.ResponseWriter, _ Request) {
		sw := startSSE(w)
		for _, ev := range []string{v1Task, v1Working, v1Chunk1, v1Chunk2} {
			sw.raw("data: " + ev + "\n\n")
		}
	})
	hdr := http.Header{}
	hdr.Set(LegacyExtensionsHeader, "https://ext.example/a")
	params := a2a.SendMessageRequest{Message: a2a.Message{Role: a2a.RoleUser, MessageID: "m1", ContextID: "c0", TaskID: "t0",
		Parts: a2a.Parts{a2a.TextPart("hi")}, Metadata: map[string]any{"device": "d1"}}}
	s, err := testClient(t, ClientOptions{}).SendStreamingMessage(boundedCtx(t), Endpoint{URL: url, Wire: WireV1, Tenant: "acme", Header: hdr}, &params, StreamOptions{})
	if err != nil {
		t.Fatalf("StreamMessage: %v", err)
	}
	defer s.Close()
	events, err := collect(s)
	if err != io.EOF || len(events) != 4 {
		t.Fatalf("%d events, end %v; want 4 then io.EOF", len(events), err)
	}
	if st := events[1].(*a2a.TaskStatusUpdateEvent).Status.State; st != a2a.TaskStateWorking {
		t.Errorf("state = %q, want working", st)
	}

	req := <-got
	want := v1Request{method: "SendStreamingMessage", version: "1.0", ext: "https://ext.example/a", legacyExt: "https://ext.example/a",
		params: map[string]any{
			"tenant": "acme",
			"message": map[string]any{"messageId": "m1", "contextId": "c0", "taskId": "t0", "role": "ROLE_USER",
				"parts": []any{map[string]any{"text": "hi"}}, "metadata": map[string]any{"device": "d1"}},
		}}
	if diff := cmp.Diff(want, req, cmp.AllowUnexported(v1Request{})); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

func TestV1_unary_calls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		call       func(c *Client, ep Endpoint) (a2a.Event, error)
		answer     string
		wantMethod string
		wantParams map[string]any
		wantState  a2a.TaskState
	}{
		{
			name: "send_is_blocking_by_default_and_returns_a_wrapped_task",
			call: func(c *Client, ep Endpoint) (a2a.Event, error) {
				return c.SendMessage(t.Context(), ep, &a2a.SendMessageRequest{Message: a2a.Message{Role: a2a.RoleUser, MessageID: "m1", Parts: a2a.Parts{a2a.TextPart("x")}},
					Configuration: &a2a.SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}}})
			},
			answer:     `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`,
			wantMethod: "SendMessage",
			wantParams: map[string]any{"message": map[string]any{"messageId": "m1", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "x"}}},
				"configuration": map[string]any{"acceptedOutputModes": []any{"text/plain"}}},
			wantState: a2a.TaskStateCompleted,
		},
		{
			name: "get_task_answers_a_bare_task",
			call: func(c *Client, ep Endpoint) (a2a.Event, error) {
				return c.GetTask(t.Context(), ep, a2a.GetTaskRequest{ID: "t1"})
			},
			answer:     `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}`,
			wantMethod: "GetTask",
			wantParams: map[string]any{"id": "t1"},
			wantState:  a2a.TaskStateWorking,
		},
		{
			name: "cancel_task",
			call: func(c *Client, ep Endpoint) (a2a.Event, error) {
				return c.CancelTask(t.Context(), ep, a2a.CancelTaskRequest{ID: "t1"})
			},
			answer:     `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_CANCELED"}}`,
			wantMethod: "CancelTask",
			wantParams: map[string]any{"id": "t1"},
			wantState:  a2a.TaskStateCanceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := make(chan v1Request, 1)
			url := v1Agent(t, got, func(w http.ResponseWriter, req Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+tt.answer+`}`)
			})
			ev, err := tt.call(testClient(t, ClientOptions{}), Endpoint{URL: url, Wire: WireV1})
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if task, ok := ev.(*a2a.Task); !ok || task.Status.State != tt.wantState {
				t.Errorf("result = %#v, want a task in %s", ev, tt.wantState)
			}
			req := <-got
			if req.method != tt.wantMethod || req.version != "1.0" {
				t.Errorf("method %q version %q, want %q 1.0", req.method, req.version, tt.wantMethod)
			}
			if diff := cmp.Diff(tt.wantParams, req.params); diff != "" {
				t.Errorf("params (-want +got):\n%s", diff)
			}
		})
	}
}

// A 1.0-only server answers a request without A2A-Version (a 0.3 call) with -32009; the error
// comes back typed, so that the caller can switch wires.
func TestV1_version_not_supported_is_an_rpc_error(t *testing.T) {
	t.Parallel()
	got := make(chan v1Request, 1)
	url := v1Agent(t, got, func(w http.ResponseWriter, req Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":-32009,"message":"version not supported","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"VERSION_NOT_SUPPORTED"}]}}`)
	})
	_, err := testClient(t, ClientOptions{}).SendMessage(t.Context(), Endpoint{URL: url}, &a2a.SendMessageRequest{Message: a2a.Message{MessageID: "m"}})
	var rpc *a2a.RPCError
	if !errors.As(err, &rpc) || rpc.Code != a2a.CodeVersionNotSupported || rpc.Method != a2av0.MethodMessageSend {
		t.Fatalf("err = %v, want RPCError -32009 of message/send", err)
	}
	if req := <-got; req.version != "" {
		t.Errorf("a 0.x call sent %s: %q", VersionHeader, req.version)
	}
}
