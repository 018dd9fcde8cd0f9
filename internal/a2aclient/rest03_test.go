package a2aclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	"github.com/google/go-cmp/cmp"
)

// The 0.3 HTTP+JSON binding against loopback servers that answer as @a2a-js/sdk 0.3's
// restHandler and a2a-python 0.3's REST adapter do (the SDK itself is driven in
// internal/invoke's js_bindings_test.go).

func restV0Endpoint(url string) Endpoint {
	return Endpoint{URL: url + "/agent", Wire: WireV0, Binding: BindingHTTPJSON, Header: http.Header{"X-Api-Key": {"k"}}}
}

func restV0Params() *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{
		Message:       a2a.Message{MessageID: "m-1", ContextID: "c-1", Role: a2a.RoleUser, Parts: []a2a.Part{{Kind: a2a.PartText, Text: "hello"}}},
		Configuration: &a2a.SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}},
	}
}

const restV0Task = `{"task":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"a","role":"ROLE_AGENT","content":[{"text":"done"}]}},` +
	`"artifacts":[{"artifactId":"x","parts":[{"text":"The answer"}]}]}}`

func TestRESTV0SendMessage(t *testing.T) {
	t.Parallel()
	var got struct {
		method, path, version, key, ct string
		body                           map[string]any
	}
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		got.method, got.path, got.version, got.key, got.ct = r.Method, r.URL.Path, r.Header.Get(VersionHeader), r.Header.Get("X-Api-Key"), r.Header.Get("Content-Type")
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got.body)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusCreated) // @a2a-js answers message:send 201
		io.WriteString(w, restV0Task)
	})
	ev, err := testClient(t, ClientOptions{}).SendMessage(t.Context(), restV0Endpoint(srv.URL), restV0Params())
	if err != nil {
		t.Fatal(err)
	}
	task, ok := ev.(*a2a.Task)
	if !ok || task.ID != "t-1" || task.Status.State != a2a.TaskStateCompleted || task.Status.Message == nil || task.Status.Message.Role != a2a.RoleAgent ||
		len(task.Status.Message.Parts) != 1 || task.Status.Message.Parts[0].Text != "done" || len(task.Artifacts) != 1 || task.Artifacts[0].Parts[0].Text != "The answer" {
		t.Fatalf("event = %#v", ev)
	}
	if got.method != http.MethodPost || got.path != "/agent/v1/message:send" || got.version != "" || got.key != "k" || got.ct != "application/json" {
		t.Errorf("request %s %s, A2A-Version %q, key %q, Content-Type %q", got.method, got.path, got.version, got.key, got.ct)
	}
	// The spec's 0.3 proto JSON: the request as "message", its parts as "content", the role and
	// blocking as the proto has them.
	want := map[string]any{
		"message":       map[string]any{"messageId": "m-1", "contextId": "c-1", "role": "ROLE_USER", "content": []any{map[string]any{"text": "hello"}}},
		"configuration": map[string]any{"acceptedOutputModes": []any{"text/plain"}, "blocking": true},
	}
	if diff := cmp.Diff(want, got.body); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

func TestRESTV0TaskCalls(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, ":cancel") {
			w.WriteHeader(http.StatusAccepted) // @a2a-js answers a cancel 202
			io.WriteString(w, `{"id":"t 1","contextId":"c","status":{"state":"TASK_STATE_CANCELLED"}}`)
			return
		}
		io.WriteString(w, `{"id":"t 1","contextId":"c","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}`)
	})
	c := testClient(t, ClientOptions{})
	ep := restV0Endpoint(srv.URL)
	two := 2
	task, err := c.GetTask(t.Context(), ep, a2a.GetTaskRequest{ID: "t 1", HistoryLength: &two})
	if err != nil || task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("GetTask = %+v, %v", task, err)
	}
	task, err = c.CancelTask(t.Context(), ep, a2a.CancelTaskRequest{ID: "t 1"})
	if err != nil || task.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask = %+v, %v", task, err)
	}
	want := []string{"GET /agent/v1/tasks/t%201?historyLength=2", "POST /agent/v1/tasks/t%201:cancel"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestRESTV0Stream(t *testing.T) {
	t.Parallel()
	events := []string{
		`{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_SUBMITTED"}}}`,
		`{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`,
		`{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"chunk"}]},"append":true}}`,
		`{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},"final":true}}`,
	}
	var path, accept, method string
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		path, accept, method = r.URL.Path, r.Header.Get("Accept"), r.Method
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
		}
	})
	c := testClient(t, ClientOptions{})
	for _, op := range []Op{OpStreamMessage, OpSubscribeToTask} {
		var s *Stream
		var err error
		if op == OpStreamMessage {
			s, err = c.SendStreamingMessage(t.Context(), restV0Endpoint(srv.URL), restV0Params(), StreamOptions{})
		} else {
			s, err = c.SubscribeToTask(t.Context(), restV0Endpoint(srv.URL), a2a.SubscribeToTaskRequest{ID: "t"}, StreamOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for {
			ev, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, eventName(ev))
			if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok && (a.Artifact.Parts[0].Text != "chunk" || !a.Append) {
				t.Errorf("artifact = %+v", a)
			}
		}
		s.Close()
		if diff := cmp.Diff([]string{"task", "status update", "artifact update", "status update"}, kinds); diff != "" {
			t.Errorf("%s kinds (-want +got):\n%s", Method(WireV0, op), diff)
		}
		wantPath, wantMethod := "/agent/v1/message:stream", http.MethodPost
		if op == OpSubscribeToTask {
			wantPath, wantMethod = "/agent/v1/tasks/t:subscribe", http.MethodGet
		}
		if path != wantPath || method != wantMethod || accept != "text/event-stream" {
			t.Errorf("%s: %s %s Accept %q", Method(WireV0, op), method, path, accept)
		}
	}
}

func TestRESTV0Errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		status   int
		ct, body string
		stream   bool
		wantCode int // 0: no *RPCError
		wantHTTP int
		wantKind string
	}{
		{name: "a2a_js_error_object", status: 404, ct: "application/json", body: `{"code":-32001,"message":"Task not found"}`, wantCode: a2a.CodeTaskNotFound, wantHTTP: 404},
		{name: "a2a_python_message_only", status: 409, ct: "application/json", body: `{"message":"Task cannot be canceled"}`, wantCode: a2a.CodeTaskNotCancelable, wantHTTP: 409},
		{name: "google_status", status: 400, ct: "application/json", body: `{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"bad"}}`, wantCode: a2a.CodeInvalidParams, wantHTTP: 400},
		{name: "html_error_page", status: 502, ct: "text/html", body: `<h1>Bad gateway</h1>`, wantHTTP: 502},
		{name: "error_event_mid_stream", status: 200, ct: "text/event-stream", stream: true,
			body: "data: {\"task\":{\"id\":\"t\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}\n\nevent: error\ndata: {\"code\":-32603,\"message\":\"boom\"}\n\n", wantCode: a2a.CodeInternalError},
		{name: "oversized_event", status: 200, ct: "text/event-stream", stream: true,
			body: "data: {\"task\":{\"id\":\"" + strings.Repeat("x", 2048) + "\"}}\n\n", wantKind: a2a.ProtocolEventTooLarge},
		{name: "wrong_content_type", status: 200, ct: "image/png", body: "PNG", stream: true, wantKind: a2a.ProtocolUnexpectedContentType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ct)
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			c := testClient(t, ClientOptions{MaxRetries: -1, MaxEventBytes: 1024})
			var err error
			if tt.stream {
				var s *Stream
				if s, err = c.SendStreamingMessage(t.Context(), restV0Endpoint(srv.URL), restV0Params(), StreamOptions{}); err == nil {
					for err == nil {
						_, err = s.Next()
					}
					s.Close()
				}
			} else {
				_, err = c.SendMessage(t.Context(), restV0Endpoint(srv.URL), restV0Params())
			}
			if err == nil || err == io.EOF {
				t.Fatalf("err = %v, want an error", err)
			}
			var rpc *a2a.RPCError
			if gotRPC := errors.As(err, &rpc); gotRPC != (tt.wantCode != 0) || (gotRPC && rpc.Code != tt.wantCode) {
				t.Errorf("err = %v, want RPC code %d", err, tt.wantCode)
			}
			var hse *HTTPStatusError
			if gotHTTP := errors.As(err, &hse); gotHTTP != (tt.wantHTTP != 0) || (gotHTTP && (hse.StatusCode != tt.wantHTTP || hse.Binding != BindingHTTPJSON)) {
				t.Errorf("err = %v, want HTTP %d on HTTP+JSON", err, tt.wantHTTP)
			}
			var pe *a2a.ProtocolError
			if gotPE := errors.As(err, &pe); gotPE != (tt.wantKind != "") || (gotPE && pe.Kind != tt.wantKind) {
				t.Errorf("err = %v, want protocol error %q", err, tt.wantKind)
			}
		})
	}
}

// A retried send carries the same body, so the same messageId.
func TestRESTV0RetrySameMessage(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []string
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		n := len(bodies)
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, restV0Task)
	})
	if _, err := testClient(t, ClientOptions{}).SendMessage(t.Context(), restV0Endpoint(srv.URL), restV0Params()); err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 2 || bodies[0] != bodies[1] || !strings.Contains(bodies[0], `"messageId":"m-1"`) {
		t.Errorf("bodies = %q, want the same message twice", bodies)
	}
}

// a2a-go v2's compat form (no /v1, snake_case 0.3 objects): reached after one 404 on /v1,
// remembered for the interface; an interface that serves neither reports the /v1 answer.
func TestRESTV0LegacyForm(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		if strings.Contains(r.URL.Path, "/v1/") || strings.Contains(r.URL.Path, "/none/") {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), `"kind":"message"`) || !strings.Contains(string(b), `"messageId":"m-1"`) {
			t.Errorf("legacy body = %s, want the 0.3 JSON-RPC params", b)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"task","id":"t-1","context_id":"c-1","status":{"state":"completed","message":{"kind":"message","message_id":"a","role":"agent","parts":[{"kind":"text","text":"done"}]}}}`)
	})
	c := testClient(t, ClientOptions{})
	for range 2 {
		ev, err := c.SendMessage(t.Context(), restV0Endpoint(srv.URL), restV0Params())
		if err != nil {
			t.Fatal(err)
		}
		if task, ok := ev.(*a2a.Task); !ok || task.ContextID != "c-1" || task.Status.State != a2a.TaskStateCompleted || task.Status.Message.Parts[0].Text != "done" {
			t.Fatalf("event = %#v", ev)
		}
	}
	want := []string{"POST /agent/v1/message:send", "POST /agent/message:send", "POST /agent/message:send"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}

	ep := restV0Endpoint(srv.URL)
	ep.URL = srv.URL + "/none"
	_, err := c.SendMessage(t.Context(), ep, restV0Params())
	var hse *HTTPStatusError
	if !errors.As(err, &hse) || hse.StatusCode != http.StatusNotFound {
		t.Fatalf("err = %v, want the 404", err)
	}
}
