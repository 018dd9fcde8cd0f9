package a2aclient

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
)

func sendParams(text string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{
		Message: a2a.Message{Role: a2a.RoleUser, MessageID: "msg-1", ContextID: "ctx-1", Parts: a2a.Parts{a2a.TextPart(text)},
			Metadata: map[string]any{"chatId": "chat-9"}},
		Configuration: &a2a.SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}},
	}
}

func TestSendMessage_round_trip(t *testing.T) {
	t.Parallel()
	want := &a2a.Task{ID: "task-1", ContextID: "ctx-1", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: "2025-07-15T14:50:28.575338Z"},
		Artifacts: []a2a.Artifact{{ArtifactID: "a1", Parts: a2a.Parts{a2a.TextPart("今天天气晴，")}}, {ArtifactID: "a1", Parts: a2a.Parts{a2a.TextPart("没有雨。")}}}}
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			t.Errorf("method = %s, want POST", r.Method)
		}
		for h, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json", "X-Api-Key": "secret", "X-A2a-Extensions": "urn:a, urn:b"} {
			if got := r.Header.Get(h); got != v {
				t.Errorf("header %s = %q, want %q", h, got, v)
			}
		}
		req, _ := readRequest(t, r)
		if req.JSONRPC != "2.0" || req.Method != a2av0.MethodMessageSend || string(req.ID) != `"req-1"` {
			t.Errorf("envelope = %s %s %s", req.JSONRPC, req.Method, req.ID)
		}
		var params map[string]any
		if err := json.Unmarshal(req.Params, &params); err != nil {
			t.Errorf("params: %v", err)
		}
		wantParams := map[string]any{
			"message": map[string]any{"kind": "message", "role": "user", "messageId": "msg-1", "contextId": "ctx-1",
				"parts": []any{map[string]any{"kind": "text", "text": "今天会下雨吗？"}}, "metadata": map[string]any{"chatId": "chat-9"}},
			"configuration": map[string]any{"acceptedOutputModes": []any{"text/plain"}, "blocking": true},
		}
		if diff := cmp.Diff(wantParams, params); diff != "" {
			t.Errorf("params (-want +got):\n%s", diff)
		}
		writeJSON(t, w, req.ID, want)
	})
	c := testClient(t, ClientOptions{})
	ep := Endpoint{URL: srv.URL, Header: http.Header{"X-API-KEY": {"secret"}, "X-A2A-Extensions": {"urn:a, urn:b"}}}
	got, err := c.SendMessage(t.Context(), ep, sendParams("今天会下雨吗？"))
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	if diff := cmp.Diff(a2a.Event(want), got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

func TestSendMessage_message_result_from_sniffed_content_type(t *testing.T) {
	t.Parallel()
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		readRequest(t, r)
		// No Content-Type: net/http sniffs "text/plain; charset=utf-8", as with the official SDK.
		w.Write([]byte(`{"jsonrpc":"2.0","id":"req-1","result":{"kind":"message","role":"agent","messageId":"m","parts":[{"kind":"text","text":"hi"}]}}`))
	})
	got, err := testClient(t, ClientOptions{}).SendMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("hi"))
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	want := &a2a.Message{Role: a2a.RoleAgent, MessageID: "m", Parts: a2a.Parts{a2a.TextPart("hi")}}
	if diff := cmp.Diff(a2a.Event(want), got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

func TestGetTask_and_CancelTask(t *testing.T) {
	t.Parallel()
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		req, _ := readRequest(t, r)
		var p struct {
			ID            string `json:"id"`
			HistoryLength *int   `json:"historyLength"`
		}
		json.Unmarshal(req.Params, &p)
		switch req.Method {
		case a2av0.MethodTasksGet:
			if p.HistoryLength == nil || *p.HistoryLength != 0 {
				t.Errorf("historyLength = %v, want 0", p.HistoryLength)
			}
			writeJSON(t, w, req.ID, a2a.Task{ID: p.ID, ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}})
		case a2av0.MethodTasksCancel:
			writeJSON(t, w, req.ID, a2a.Task{ID: p.ID, ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateCanceled}})
		default:
			t.Errorf("method %s", req.Method)
		}
	})
	c := testClient(t, ClientOptions{})
	got, err := c.GetTask(t.Context(), Endpoint{URL: srv.URL}, a2a.GetTaskRequest{ID: "t1", HistoryLength: new(0)})
	if err != nil || got.ID != "t1" || got.Status.State != a2a.TaskStateWorking {
		t.Errorf("GetTask = %+v, %v", got, err)
	}
	got, err = c.CancelTask(t.Context(), Endpoint{URL: srv.URL}, a2a.CancelTaskRequest{ID: "t2"})
	if err != nil || got.ID != "t2" || got.Status.State != a2a.TaskStateCanceled {
		t.Errorf("CancelTask = %+v, %v", got, err)
	}
}

func TestGetTask_answered_with_a_message_is_a_protocol_error(t *testing.T) {
	t.Parallel()
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		req, _ := readRequest(t, r)
		writeJSON(t, w, req.ID, a2a.Message{Role: a2a.RoleAgent, MessageID: "m"})
	})
	_, err := testClient(t, ClientOptions{}).GetTask(t.Context(), Endpoint{URL: srv.URL}, a2a.GetTaskRequest{ID: "t"})
	var pe *a2a.ProtocolError
	if !errors.As(err, &pe) || pe.Kind != a2a.ProtocolInvalidResponse {
		t.Fatalf("err = %v, want invalid_response", err)
	}
}

func TestSendMessage_answers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		contentType string
		status      int
		body        string
		opts        ClientOptions
		check       func(t *testing.T, err error)
	}{
		{
			name: "rpc_error", contentType: "application/json", status: 200,
			body: `{"jsonrpc":"2.0","id":"req-1","error":{"code":-32005,"message":"Incompatible content types"}}`,
			check: func(t *testing.T, err error) {
				var rpc *a2a.RPCError
				if !errors.As(err, &rpc) || rpc.Code != a2a.CodeContentTypeNotSupported {
					t.Fatalf("err = %v, want RPCError -32005", err)
				}
				if want := "a2a message/send: agent error -32005: Incompatible content types"; err.Error() != want {
					t.Errorf("message = %q, want %q", err.Error(), want)
				}
			},
		},
		{
			name: "wrong_id", contentType: "application/json", status: 200,
			body:  `{"jsonrpc":"2.0","id":"someone-else","result":{"kind":"task","id":"t","contextId":"c","status":{"state":"completed"}}}`,
			check: wantProtocol(a2a.ProtocolWrongID),
		},
		{
			name: "bad_version", contentType: "application/json", status: 200,
			body:  `{"jsonrpc":"1.0","id":"req-1","result":{"kind":"task","id":"t","contextId":"c","status":{"state":"completed"}}}`,
			check: wantProtocol(a2a.ProtocolBadVersion),
		},
		{
			name: "html_is_unexpected_content_type", contentType: "text/html; charset=utf-8", status: 200,
			body:  `<html>hello</html>`,
			check: wantProtocol(a2a.ProtocolUnexpectedContentType),
		},
		{
			name: "body_over_limit", contentType: "application/json", status: 200,
			body:  `{"jsonrpc":"2.0","id":"req-1","result":{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"` + strings.Repeat("x", 2000) + `"}]}}`,
			opts:  ClientOptions{MaxBodyBytes: 1024},
			check: wantProtocol(a2a.ProtocolBodyTooLarge),
		},
		{
			name: "not_found", contentType: "text/plain", status: 404, body: "404 page not found",
			check: func(t *testing.T, err error) {
				var se *HTTPStatusError
				if !errors.As(err, &se) || se.StatusCode != 404 || se.Body != "404 page not found" {
					t.Fatalf("err = %#v, want HTTPStatusError 404", err)
				}
				if want := "a2a message/send: HTTP 404 Not Found"; err.Error() != want {
					t.Errorf("message = %q, want %q", err.Error(), want)
				}
			},
		},
		{
			name: "server_error_with_rpc_error_body", contentType: "application/json", status: 500,
			body: `{"jsonrpc":"2.0","id":"req-1","error":{"code":-32603,"message":"Internal error"}}`,
			check: func(t *testing.T, err error) {
				var se *HTTPStatusError
				var rpc *a2a.RPCError
				if !errors.As(err, &se) || se.StatusCode != 500 || !errors.As(err, &rpc) || rpc.Code != a2a.CodeInternalError {
					t.Fatalf("err = %v, want HTTPStatusError 500 wrapping RPCError -32603", err)
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
				w.Write([]byte(tt.body))
			})
			_, err := testClient(t, tt.opts).SendMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("x"))
			tt.check(t, err)
		})
	}
}

func wantProtocol(kind string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var pe *a2a.ProtocolError
		if !errors.As(err, &pe) || pe.Kind != kind {
			t.Fatalf("err = %v, want ProtocolError %s", err, kind)
		}
		if !strings.HasPrefix(err.Error(), "a2a ") {
			t.Errorf("message %q does not start with the method", err.Error())
		}
	}
}

func TestRedirect_is_not_followed(t *testing.T) {
	t.Parallel()
	var targetHits atomic.Int32
	target := agent(t, func(w http.ResponseWriter, r *http.Request) {
		targetHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":"req-1","result":{"kind":"task","id":"t","contextId":"c","status":{"state":"completed"}}}`))
	})
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusFound)
	})
	// Even a caller client that would follow redirects must not: Go forwards X-API-KEY.
	following := &http.Client{Transport: testHTTPClient(t).Transport}
	c := NewClient(following, ClientOptions{NewRequestID: func() string { return "req-1" }})
	_, err := c.SendMessage(t.Context(), Endpoint{URL: srv.URL, Header: http.Header{"X-API-KEY": {"secret"}}}, sendParams("x"))
	var se *HTTPStatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusFound || se.Location != target.URL+"/elsewhere" {
		t.Fatalf("err = %#v, want HTTPStatusError 302 with Location", err)
	}
	if n := targetHits.Load(); n != 0 {
		t.Errorf("redirect target got %d requests, want 0", n)
	}
	if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "not followed") {
		t.Errorf("message = %q", err.Error())
	}
}

func TestRetry_429_then_success_sends_the_same_body(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []string
	var messageIDs []string
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		req, body := readRequest(t, r)
		var p a2av0.MessageSendParams
		json.Unmarshal(req.Params, &p)
		mu.Lock()
		bodies = append(bodies, string(body))
		messageIDs = append(messageIDs, p.Message.MessageID)
		n := len(bodies)
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		writeJSON(t, w, req.ID, a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}})
	})
	c := testClient(t, ClientOptions{NewRequestID: func() string { return "req-1" }})
	if _, err := c.SendMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("x")); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"msg-1", "msg-1"}, messageIDs); diff != "" {
		t.Errorf("messageIds seen (-want +got):\n%s", diff)
	}
	if len(bodies) != 2 || bodies[0] != bodies[1] {
		t.Errorf("request bodies differ: %q", bodies)
	}
}

func TestRetry_gives_up_after_MaxRetries_with_the_last_status(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	})
	_, err := testClient(t, ClientOptions{}).SendMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("x"))
	var se *HTTPStatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusBadGateway {
		t.Fatalf("err = %v, want HTTPStatusError 502", err)
	}
	if n := hits.Load(); n != 1+DefaultMaxRetries {
		t.Errorf("server saw %d requests, want %d", n, 1+DefaultMaxRetries)
	}
}

func TestRetry_not_on_other_statuses(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401, 404, 405, 500, 501} {
		var hits atomic.Int32
		srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			w.WriteHeader(status)
		})
		_, err := testClient(t, ClientOptions{}).SendMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("x"))
		var se *HTTPStatusError
		if !errors.As(err, &se) || se.StatusCode != status {
			t.Errorf("status %d: err = %v", status, err)
		}
		if n := hits.Load(); n != 1 {
			t.Errorf("status %d: server saw %d requests, want 1", status, n)
		}
	}
}

func TestRetry_503_with_Retry_After_beyond_the_deadline_ends_at_once(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	// Retry-After equals the deadline: waiting it out could never succeed in time.
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	start := time.Now()
	_, err := testClient(t, ClientOptions{}).SendMessage(ctx, Endpoint{URL: srv.URL}, sendParams("x"))
	elapsed := time.Since(start)
	var se *HTTPStatusError
	if !errors.As(err, &se) || se.StatusCode != 503 || se.RetryAfter != 60*time.Second {
		t.Fatalf("err = %#v, want HTTPStatusError 503 with RetryAfter 60s", err)
	}
	if elapsed >= 30*time.Second {
		t.Errorf("took %s, want an answer at once, not after the 60s Retry-After", elapsed)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

func TestRetry_Retry_After_within_the_deadline_is_honoured(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var hits int
	var first time.Time
	var gap time.Duration
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		req, _ := readRequest(t, r)
		mu.Lock()
		defer mu.Unlock()
		if hits++; hits == 1 {
			first = time.Now()
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		gap = time.Since(first)
		writeJSON(t, w, req.ID, a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}})
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := testClient(t, ClientOptions{}).SendMessage(ctx, Endpoint{URL: srv.URL}, sendParams("x")); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	// A lower bound only: the client must have waited what the agent asked.
	if gap < time.Second {
		t.Errorf("retried after %s, want at least the 1s Retry-After", gap)
	}
}

// countingClient dials through a real net.Dialer and counts dial attempts.
func countingClient(t *testing.T, control func(network, address string, c syscall.RawConn) error) (*http.Client, *atomic.Int32) {
	t.Helper()
	var dials atomic.Int32
	d := &net.Dialer{Control: control}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}, &dials
}

func TestRetry_connection_refused_is_retried_then_reported(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	hc, dials := countingClient(t, nil)
	c := NewClient(hc, ClientOptions{RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond})
	_, err = c.SendMessage(t.Context(), Endpoint{URL: "http://" + addr}, sendParams("x"))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("err = %v, want connection refused", err)
	}
	if n := dials.Load(); n != 1+DefaultMaxRetries {
		t.Errorf("dialled %d times, want %d", n, 1+DefaultMaxRetries)
	}
	if !strings.HasPrefix(err.Error(), "a2a message/send: after 3 attempts: ") {
		t.Errorf("message = %q", err.Error())
	}
}

func TestRetry_not_when_the_dialer_refuses_the_address(t *testing.T) {
	t.Parallel()
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) { t.Error("request reached the server") })
	blocked := errors.New("netguard: address 127.0.0.1 is not allowed")
	hc, dials := countingClient(t, func(string, string, syscall.RawConn) error { return blocked })
	c := NewClient(hc, ClientOptions{RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond})
	_, err := c.SendMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("x"))
	if !errors.Is(err, blocked) {
		t.Fatalf("err = %v, want the dialer's refusal", err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("dialled %d times, want 1", n)
	}
}

func TestRetry_not_after_ctx_is_done(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	ctx, cancel := context.WithCancel(t.Context())
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		cancel()
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	_, err := testClient(t, ClientOptions{}).SendMessage(ctx, Endpoint{URL: srv.URL}, sendParams("x"))
	if err == nil {
		t.Fatal("SendMessage succeeded")
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		value  string
		want   time.Duration
		wantOK bool
	}{
		{name: "seconds", value: "60", want: time.Minute, wantOK: true},
		{name: "zero", value: "0", want: 0, wantOK: true},
		{name: "spaces", value: " 5 ", want: 5 * time.Second, wantOK: true},
		{name: "http_date", value: now.Add(90 * time.Second).Format(http.TimeFormat), want: 90 * time.Second, wantOK: true},
		{name: "date_in_the_past", value: now.Add(-time.Hour).Format(http.TimeFormat), want: 0, wantOK: true},
		{name: "huge_is_capped", value: "99999999999", want: 24 * time.Hour, wantOK: true},
		{name: "absent", value: ""},
		{name: "negative", value: "-1"},
		{name: "junk", value: "soon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := parseRetryAfter(tt.value, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("parseRetryAfter(%q) = %s, %v; want %s, %v", tt.value, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestRetry_not_on_certificate_errors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("request reached the server")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake failure is expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	hc, dials := countingClient(t, nil) // does not trust the test server's certificate
	c := NewClient(hc, ClientOptions{RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond})
	_, err := c.SendMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("x"))
	var unknownCA x509.UnknownAuthorityError
	if !errors.As(err, &unknownCA) {
		t.Fatalf("err = %v, want a certificate error", err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("dialled %d times, want 1", n)
	}
}
