package a2aclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
)

// collect reads a stream to its end and returns the events and the final error.
func collect(s *Stream) ([]a2a.Event, error) {
	var evs []a2a.Event
	for {
		ev, err := s.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

// guideSSE is the SSE answer of the platform guide, with the id: lines the official SDK adds.
const guideSSE = `id: 1
data: {"id":"req-1","jsonrpc":"2.0","result":{"id":"task-1","contextId":"context-1","kind":"task","status":{"state":"submitted","timestamp":"2025-07-15T14:52:28.277547Z"}}}

id: 2
data: {"id":"req-1","jsonrpc":"2.0","result":{"taskId":"task-1","contextId":"context-1","kind":"artifact-update","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"今天天气晴，"}]},"append":true,"lastChunk":false}}

id: 3
data: {"id":"req-1","jsonrpc":"2.0","result":{"taskId":"task-1","contextId":"context-1","kind":"artifact-update","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"没有雨。"}]},"append":true,"lastChunk":true}}

id: 4
data: {"id":"req-1","jsonrpc":"2.0","result":{"taskId":"task-1","contextId":"context-1","kind":"status-update","status":{"state":"completed","timestamp":"2025-07-15T14:52:28.277643Z"},"final":true}}

`

func guideEvents() []a2a.Event {
	return []a2a.Event{
		&a2a.Task{ID: "task-1", ContextID: "context-1", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: "2025-07-15T14:52:28.277547Z"}},
		&a2a.TaskArtifactUpdateEvent{TaskID: "task-1", ContextID: "context-1", Append: true,
			Artifact: a2a.Artifact{ArtifactID: "a", Parts: a2a.Parts{a2a.TextPart("今天天气晴，")}}},
		&a2a.TaskArtifactUpdateEvent{TaskID: "task-1", ContextID: "context-1", Append: true, LastChunk: true,
			Artifact: a2a.Artifact{ArtifactID: "a", Parts: a2a.Parts{a2a.TextPart("没有雨。")}}},
		&a2a.TaskStatusUpdateEvent{TaskID: "task-1", ContextID: "context-1", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: "2025-07-15T14:52:28.277643Z"}},
	}
}

func TestStreamMessage_several_events(t *testing.T) {
	t.Parallel()
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Accept"); got != "text/event-stream" {
			t.Errorf("Accept = %q", got)
		}
		if got := r.Header.Get("X-Api-Key"); got != "k" {
			t.Errorf("X-API-KEY = %q", got)
		}
		req, _ := readRequest(t, r)
		if req.Method != a2av0.MethodMessageStream {
			t.Errorf("method = %s", req.Method)
		}
		startSSE(w).raw(guideSSE)
	})
	c := testClient(t, ClientOptions{})
	s, err := c.SendStreamingMessage(t.Context(), Endpoint{URL: srv.URL, Header: http.Header{"X-API-KEY": {"k"}}}, sendParams("x"), StreamOptions{})
	if err != nil {
		t.Fatalf("StreamMessage: %v", err)
	}
	defer s.Close()
	got, err := collect(s)
	if err != io.EOF {
		t.Errorf("end = %v, want io.EOF", err)
	}
	if diff := cmp.Diff(guideEvents(), got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if n := s.EventsRead(); n != 4 {
		t.Errorf("EventsRead = %d, want 4", n)
	}
	if _, err := s.Next(); err != io.EOF {
		t.Errorf("Next after the end = %v, want io.EOF again", err)
	}
}

func TestResubscribe(t *testing.T) {
	t.Parallel()
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		req, _ := readRequest(t, r)
		var p a2av0.TaskIDParams
		json.Unmarshal(req.Params, &p)
		if req.Method != a2av0.MethodTasksResubscribe || p.ID != "task-1" {
			t.Errorf("request = %s %+v", req.Method, p)
		}
		startSSE(w).raw(guideSSE)
	})
	s, err := testClient(t, ClientOptions{}).SubscribeToTask(t.Context(), Endpoint{URL: srv.URL}, a2a.SubscribeToTaskRequest{ID: "task-1"}, StreamOptions{})
	if err != nil {
		t.Fatalf("Resubscribe: %v", err)
	}
	defer s.Close()
	got, err := collect(s)
	if err != io.EOF || len(got) != 4 {
		t.Errorf("got %d events, end %v", len(got), err)
	}
}

const (
	rTask      = `{"jsonrpc":"2.0","id":"req-1","result":{"kind":"task","id":"t","contextId":"c","status":{"state":"working"}}}`
	rCompleted = `{"jsonrpc":"2.0","id":"req-1","result":{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"completed"},"final":true}}`
)

func taskEvent() a2a.Event {
	return &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
}

func completedEvent() a2a.Event {
	return &a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}
}

func TestStreamMessage_framing_of_real_servers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		opts   ClientOptions
		want   []a2a.Event
		checkE func(t *testing.T, err error) // nil: io.EOF
	}{
		{
			name: "keep_alives_ids_and_retry",
			body: "retry: 1000\n: keep-alive\n\nid: a\ndata: " + rTask + "\n\n: keep-alive\n\nid: b\ndata: " + rCompleted + "\n\n",
			want: []a2a.Event{taskEvent(), completedEvent()},
		},
		{
			name: "data_without_space_and_crlf",
			body: "data:" + rTask + "\r\n\r\ndata:" + rCompleted + "\r\n\r\n",
			want: []a2a.Event{taskEvent(), completedEvent()},
		},
		{
			name: "multi_line_data",
			body: "data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":\"req-1\",\ndata: \"result\":{\"kind\":\"task\",\"id\":\"t\",\"contextId\":\"c\",\"status\":{\"state\":\"working\"}}}\n\n",
			want: []a2a.Event{taskEvent()},
		},
		{
			name: "ping_with_non_json_data_and_blank_data_are_skipped",
			body: "event: ping\ndata: 2026-01-01T00:00:00Z\n\ndata:   \n\ndata: " + rTask + "\n\nevent: ping\ndata: {}\n\n",
			want: []a2a.Event{taskEvent()},
		},
		{
			name: "named_event_carrying_a_response_is_used",
			body: "event: status-update\ndata: " + rCompleted + "\n\n",
			want: []a2a.Event{completedEvent()},
		},
		{
			name: "last_event_without_blank_line",
			body: "data: " + rTask + "\n\ndata: " + rCompleted,
			want: []a2a.Event{taskEvent(), completedEvent()},
		},
		{
			name: "error_event_with_json_rpc_error",
			body: "data: " + rTask + "\n\nevent: error\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"req-1\",\"error\":{\"code\":-32603,\"message\":\"agent crashed\"}}\n\n",
			want: []a2a.Event{taskEvent()},
			checkE: func(t *testing.T, err error) {
				var rpc *a2a.RPCError
				if !errors.As(err, &rpc) || rpc.Code != a2a.CodeInternalError || rpc.Message != "agent crashed" || rpc.Method != a2av0.MethodMessageStream {
					t.Errorf("err = %v, want RPCError -32603", err)
				}
			},
		},
		{
			name: "error_event_with_bare_error_object",
			body: "event: error\ndata: {\"code\":-32001,\"message\":\"Task not found\"}\n\n",
			checkE: func(t *testing.T, err error) {
				var rpc *a2a.RPCError
				if !errors.As(err, &rpc) || rpc.Code != a2a.CodeTaskNotFound {
					t.Errorf("err = %v, want RPCError -32001", err)
				}
			},
		},
		{
			name:   "error_event_with_junk",
			body:   "event: error\ndata: upstream timed out\n\n",
			checkE: wantProtocol(a2a.ProtocolErrorEvent),
		},
		{
			name: "json_rpc_error_as_plain_event",
			body: "data: {\"jsonrpc\":\"2.0\",\"id\":\"req-1\",\"error\":{\"code\":-32004,\"message\":\"streaming not supported\"}}\n\n",
			checkE: func(t *testing.T, err error) {
				var rpc *a2a.RPCError
				if !errors.As(err, &rpc) || rpc.Code != a2a.CodeUnsupportedOperation {
					t.Errorf("err = %v, want RPCError -32004", err)
				}
			},
		},
		{
			name:   "wrong_id_after_a_good_event",
			body:   "data: " + rTask + "\n\ndata: " + strings.Replace(rCompleted, "req-1", "req-2", 1) + "\n\n",
			want:   []a2a.Event{taskEvent()},
			checkE: wantProtocol(a2a.ProtocolWrongID),
		},
		{
			name:   "bad_version",
			body:   "data: " + strings.Replace(rTask, `"2.0"`, `"2"`, 1) + "\n\n",
			checkE: wantProtocol(a2a.ProtocolBadVersion),
		},
		{
			name:   "bad_json",
			body:   "data: {\"jsonrpc\":\"2.0\",\n\n",
			checkE: wantProtocol(a2a.ProtocolBadJSON),
		},
		{
			name:   "unknown_kind",
			body:   "data: {\"jsonrpc\":\"2.0\",\"id\":\"req-1\",\"result\":{\"kind\":\"progress\"}}\n\n",
			checkE: wantProtocol(a2a.ProtocolUnknownKind),
		},
		{
			name:   "event_over_limit",
			body:   "data: " + rTask + "\n\ndata: {\"pad\":\"" + strings.Repeat("x", 1000) + "\"}\n\ndata: " + rCompleted + "\n\n",
			opts:   ClientOptions{MaxEventBytes: 512},
			want:   []a2a.Event{taskEvent()},
			checkE: wantProtocol(a2a.ProtocolEventTooLarge),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
				readRequest(t, r)
				startSSE(w).raw(tt.body)
			})
			s, err := testClient(t, tt.opts).SendStreamingMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("x"), StreamOptions{})
			if err != nil {
				t.Fatalf("StreamMessage: %v", err)
			}
			defer s.Close()
			got, err := collect(s)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if tt.checkE == nil {
				if err != io.EOF {
					t.Errorf("end = %v, want io.EOF", err)
				}
				return
			}
			tt.checkE(t, err)
			if _, again := s.Next(); again != err {
				t.Errorf("error not sticky: %v then %v", err, again)
			}
		})
	}
}

func TestStreamMessage_non_stream_answers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		want        []a2a.Event // events of the returned stream
		checkE      func(t *testing.T, err error)
	}{
		{
			name: "json_result_is_a_one_event_stream", status: 200, contentType: "application/json",
			body: rTask, want: []a2a.Event{taskEvent()},
		},
		{
			name: "json_error_fails_the_call", status: 200, contentType: "application/json; charset=utf-8",
			body: `{"jsonrpc":"2.0","id":"req-1","error":{"code":-32601,"message":"Method not found"}}`,
			checkE: func(t *testing.T, err error) {
				var rpc *a2a.RPCError
				if !errors.As(err, &rpc) || rpc.Code != a2a.CodeMethodNotFound || rpc.Method != a2av0.MethodMessageStream {
					t.Errorf("err = %v, want RPCError -32601", err)
				}
			},
		},
		{
			name: "json_with_wrong_id", status: 200, contentType: "application/json",
			body: strings.Replace(rTask, "req-1", "x", 1), checkE: wantProtocol(a2a.ProtocolWrongID),
		},
		{
			name: "html", status: 200, contentType: "text/html",
			body: "<html></html>", checkE: wantProtocol(a2a.ProtocolUnexpectedContentType),
		},
		{
			name: "not_found_for_the_stream_suffix", status: 404, contentType: "text/plain",
			body: "not found",
			checkE: func(t *testing.T, err error) {
				var se *HTTPStatusError
				if !errors.As(err, &se) || se.StatusCode != 404 || se.Method != a2av0.MethodMessageStream {
					t.Errorf("err = %v, want HTTPStatusError 404", err)
				}
			},
		},
		{
			name: "method_not_allowed", status: 405, contentType: "text/plain",
			checkE: func(t *testing.T, err error) {
				var se *HTTPStatusError
				if !errors.As(err, &se) || se.StatusCode != 405 {
					t.Errorf("err = %v, want HTTPStatusError 405", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
				readRequest(t, r)
				w.Header().Set("Content-Type", tt.contentType)
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			s, err := testClient(t, ClientOptions{}).SendStreamingMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("x"), StreamOptions{})
			if tt.checkE != nil {
				if s != nil {
					t.Errorf("got a stream with the error %v", err)
				}
				tt.checkE(t, err)
				return
			}
			if err != nil {
				t.Fatalf("StreamMessage: %v", err)
			}
			defer s.Close()
			got, err := collect(s)
			if err != io.EOF {
				t.Errorf("end = %v, want io.EOF", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStreamMessage_503_before_the_stream_is_retried(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		readRequest(t, r)
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		startSSE(w).raw("data: " + rTask + "\n\n")
	})
	s, err := testClient(t, ClientOptions{}).SendStreamingMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("x"), StreamOptions{})
	if err != nil {
		t.Fatalf("StreamMessage: %v", err)
	}
	defer s.Close()
	if got, err := collect(s); len(got) != 1 || err != io.EOF {
		t.Errorf("got %d events, end %v", len(got), err)
	}
	if n := hits.Load(); n != 2 {
		t.Errorf("server saw %d requests, want 2", n)
	}
}

func TestStreamMessage_broken_stream_is_not_retried(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		readRequest(t, r)
		hits.Add(1)
		startSSE(w).raw("data: " + rTask + "\n\n")
		// Drop the connection mid-stream without ending the chunked body.
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		conn.Close()
	})
	s, err := testClient(t, ClientOptions{}).SendStreamingMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("x"), StreamOptions{})
	if err != nil {
		t.Fatalf("StreamMessage: %v", err)
	}
	defer s.Close()
	got, err := collect(s)
	if len(got) != 1 || err == nil || err == io.EOF {
		t.Errorf("got %d events, end %v; want 1 event then a read error", len(got), err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

// keepAlives writes one event (unless first is ""), then keep-alive comments every few
// milliseconds until the client goes away.
func keepAlives(t *testing.T, first string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		readRequest(t, r)
		sw := startSSE(w)
		if first != "" {
			sw.raw("data: " + first + "\n\n")
		}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				sw.raw(": keep-alive\n\n")
			}
		}
	}
}

func TestStream_idle_timeout_after_keep_alives(t *testing.T) {
	t.Parallel()
	srv := agent(t, keepAlives(t, rTask))
	s, err := testClient(t, ClientOptions{}).SendStreamingMessage(boundedCtx(t), Endpoint{URL: srv.URL}, sendParams("x"),
		StreamOptions{FirstEventTimeout: 5 * time.Second, IdleTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("StreamMessage: %v", err)
	}
	defer s.Close()
	if _, err := s.Next(); err != nil {
		t.Fatalf("first Next: %v", err)
	}
	_, err = s.Next()
	if !errors.Is(err, ErrIdleTimeout) || errors.Is(err, ErrFirstEventTimeout) {
		t.Fatalf("err = %v, want ErrIdleTimeout", err)
	}
	if !strings.HasPrefix(err.Error(), "a2a message/stream: ") {
		t.Errorf("message = %q", err.Error())
	}
}

func TestStream_first_event_timeout_with_only_keep_alives(t *testing.T) {
	t.Parallel()
	srv := agent(t, keepAlives(t, ""))
	s, err := testClient(t, ClientOptions{}).SendStreamingMessage(boundedCtx(t), Endpoint{URL: srv.URL}, sendParams("x"),
		StreamOptions{FirstEventTimeout: 100 * time.Millisecond, IdleTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("StreamMessage: %v", err)
	}
	defer s.Close()
	if _, err := s.Next(); !errors.Is(err, ErrFirstEventTimeout) {
		t.Fatalf("err = %v, want ErrFirstEventTimeout", err)
	}
}

func TestStream_idle_limit_applies_to_the_first_event_when_no_first_limit(t *testing.T) {
	t.Parallel()
	srv := agent(t, keepAlives(t, ""))
	s, err := testClient(t, ClientOptions{}).SendStreamingMessage(boundedCtx(t), Endpoint{URL: srv.URL}, sendParams("x"),
		StreamOptions{IdleTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("StreamMessage: %v", err)
	}
	defer s.Close()
	if _, err := s.Next(); !errors.Is(err, ErrFirstEventTimeout) {
		t.Fatalf("err = %v, want ErrFirstEventTimeout", err)
	}
}

func TestStream_first_event_timeout_before_response_headers(t *testing.T) {
	t.Parallel()
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		readRequest(t, r)
		<-r.Context().Done()
	})
	s, err := testClient(t, ClientOptions{}).SendStreamingMessage(boundedCtx(t), Endpoint{URL: srv.URL}, sendParams("x"),
		StreamOptions{FirstEventTimeout: 100 * time.Millisecond})
	if s != nil {
		s.Close()
	}
	if !errors.Is(err, ErrFirstEventTimeout) {
		t.Fatalf("err = %v, want ErrFirstEventTimeout", err)
	}
}

func TestStream_ctx_cancel_mid_stream(t *testing.T) {
	t.Parallel()
	serverSawClose := make(chan struct{})
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		readRequest(t, r)
		startSSE(w).raw("data: " + rTask + "\n\n")
		<-r.Context().Done()
		close(serverSawClose)
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s, err := testClient(t, ClientOptions{}).SendStreamingMessage(ctx, Endpoint{URL: srv.URL}, sendParams("x"), StreamOptions{})
	if err != nil {
		t.Fatalf("StreamMessage: %v", err)
	}
	defer s.Close()
	if _, err := s.Next(); err != nil {
		t.Fatalf("first Next: %v", err)
	}
	go func() {
		// Cancel while Next is (most likely) blocked; either order must end Next.
		cancel()
	}()
	if _, err := s.Next(); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	<-serverSawClose
}

func TestStream_Close_from_another_goroutine_unblocks_Next(t *testing.T) {
	t.Parallel()
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		readRequest(t, r)
		startSSE(w).raw("data: " + rTask + "\n\n")
		<-r.Context().Done()
	})
	s, err := testClient(t, ClientOptions{}).SendStreamingMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("x"), StreamOptions{})
	if err != nil {
		t.Fatalf("StreamMessage: %v", err)
	}
	if _, err := s.Next(); err != nil {
		t.Fatalf("first Next: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Next()
		done <- err
	}()
	s.Close()
	err = <-done
	if err == nil || err == io.EOF {
		t.Fatalf("Next after Close = %v, want an error", err)
	}
	for range 2 {
		if err := s.Close(); err != nil {
			t.Errorf("Close again: %v", err)
		}
	}
	if _, err := s.Next(); err == nil || err == io.EOF {
		t.Errorf("Next after Close = %v, want an error", err)
	}
}

func TestStream_Close_before_reading_releases_the_connection(t *testing.T) {
	t.Parallel()
	serverSawClose := make(chan struct{})
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		readRequest(t, r)
		startSSE(w).raw("data: " + rTask + "\n\n")
		<-r.Context().Done()
		close(serverSawClose)
	})
	s, err := testClient(t, ClientOptions{}).SendStreamingMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("x"),
		StreamOptions{FirstEventTimeout: time.Minute, IdleTimeout: time.Minute})
	if err != nil {
		t.Fatalf("StreamMessage: %v", err)
	}
	s.Close()
	<-serverSawClose
	if _, err := s.Next(); err == nil {
		t.Error("Next after Close returned an event")
	}
}

// boundedCtx keeps a broken timeout from hanging the test run: it ends long after any limit a
// test sets, so a test that sees its deadline instead of the limit fails clearly.
func boundedCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// An event that takes longer than the idle limit to arrive, but keeps arriving, is progress: the
// idle limit counts silence, not the time between whole events. The writer pauses 20 times less
// than the idle limit between pieces, so only a machine stalled for a whole second could fail
// this; the whole event takes twice the idle limit.
func TestStream_a_large_event_trickling_in_is_not_idle(t *testing.T) {
	t.Parallel()
	const (
		idle   = time.Second
		pieces = 40
		pause  = idle / 20
	)
	text := strings.Repeat("x", pieces*5000)
	event := `{"jsonrpc":"2.0","id":"req-1","result":{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"` + text + `"}]}}}`
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		readRequest(t, r)
		sw := startSSE(w)
		sw.raw("data: " + rTask + "\n\n")
		line := "data: " + event + "\n\n"
		step := len(line)/pieces + 1
		for off := 0; off < len(line); off += step {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(pause):
			}
			sw.raw(line[off:min(off+step, len(line))])
		}
	})
	s, err := testClient(t, ClientOptions{}).SendStreamingMessage(boundedCtx(t), Endpoint{URL: srv.URL}, sendParams("x"),
		StreamOptions{FirstEventTimeout: 5 * time.Second, IdleTimeout: idle})
	if err != nil {
		t.Fatalf("StreamMessage: %v", err)
	}
	defer s.Close()
	got, err := collect(s)
	if err != io.EOF {
		t.Fatalf("stream ended with %v after %d events, want io.EOF", err, len(got))
	}
	if len(got) != 2 {
		t.Fatalf("%d events, want 2", len(got))
	}
	au, ok := got[1].(*a2a.TaskArtifactUpdateEvent)
	if !ok || len(au.Artifact.Parts) != 1 || au.Artifact.Parts[0].Text != text {
		t.Errorf("second event = %T, want the whole %d-byte artifact", got[1], len(text))
	}
}

// Keep-alive comments are not progress: an agent that only sends them after its first event
// hits the idle limit although bytes keep arriving.
func TestStream_keep_alives_are_not_progress(t *testing.T) {
	t.Parallel()
	srv := agent(t, keepAlives(t, rTask))
	s, err := testClient(t, ClientOptions{}).SendStreamingMessage(boundedCtx(t), Endpoint{URL: srv.URL}, sendParams("x"),
		StreamOptions{IdleTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("StreamMessage: %v", err)
	}
	defer s.Close()
	if _, err := s.Next(); err != nil {
		t.Fatalf("first Next: %v", err)
	}
	if _, err := s.Next(); !errors.Is(err, ErrIdleTimeout) {
		t.Fatalf("err = %v, want ErrIdleTimeout", err)
	}
}
