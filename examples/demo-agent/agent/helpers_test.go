package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/google/uuid"

	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
)

// fixture is a demo agent on a real loopback HTTP server with its own client, so no connection
// outlives the test (goleak).
type fixture struct {
	agent  *Agent
	srv    *httptest.Server
	client *http.Client
}

func newFixture(t *testing.T, o Options) *fixture {
	t.Helper()
	a := New(o)
	srv := httptest.NewServer(a.Handler())
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
	})
	return &fixture{agent: a, srv: srv, client: &http.Client{Transport: tr}}
}

// post sends body to path and returns the response; the caller closes its body.
func (f *fixture) post(t *testing.T, ctx context.Context, path string, body []byte, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return resp
}

// requestBody is a JSON-RPC request with string id id.
func requestBody(t *testing.T, id, method string, params any) []byte {
	t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(a2aclient.Request{JSONRPC: "2.0", ID: json.RawMessage(`"` + id + `"`), Method: method, Params: raw})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// call makes one non-streaming JSON-RPC call on RPCPath and returns the decoded response.
func (f *fixture) call(t *testing.T, method string, params any, header http.Header) a2aclient.Response {
	t.Helper()
	resp := f.post(t, t.Context(), RPCPath, requestBody(t, "req-1", method, params), header)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: HTTP %d", method, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s: Content-Type %q, want application/json", method, ct)
	}
	return decodeResponse(t, resp.Body, "req-1")
}

func decodeResponse(t *testing.T, r io.Reader, wantID string) a2aclient.Response {
	t.Helper()
	var out a2aclient.Response
	if err := json.NewDecoder(r).Decode(&out); err != nil {
		t.Fatalf("decode response: %v", err)
	}
	if out.JSONRPC != "2.0" {
		t.Errorf("jsonrpc = %q, want 2.0", out.JSONRPC)
	}
	if wantID != "" && string(out.ID) != `"`+wantID+`"` {
		t.Errorf("id = %s, want %q", out.ID, wantID)
	}
	if out.Result != nil {
		// Every result must also be readable by the official A2A Go SDK: code nobody here
		// wrote, so the agent is not only compatible with our own reading of the spec.
		if _, err := sdk.UnmarshalEventJSON(out.Result); err != nil {
			t.Errorf("the A2A Go SDK cannot decode result %s: %v", out.Result, err)
		}
	}
	return out
}

// task calls method and decodes its result as a Task, failing on a JSON-RPC error.
func (f *fixture) task(t *testing.T, method string, params any) a2av0.Task {
	t.Helper()
	resp := f.call(t, method, params, nil)
	if resp.Error != nil {
		t.Fatalf("%s: error %d %s", method, resp.Error.Code, resp.Error.Message)
	}
	ev, err := a2av0.DecodeEvent(resp.Result)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	task, ok := ev.(*a2av0.Task)
	if !ok {
		t.Fatalf("%s: result is a %s, want a task", method, ev.EventKind())
	}
	return *task
}

// send runs message/send and returns the task.
func (f *fixture) send(t *testing.T, text, taskID, contextID string) a2av0.Task {
	t.Helper()
	return f.task(t, a2av0.MethodMessageSend, userMessage(text, taskID, contextID))
}

func userMessage(text, taskID, contextID string) a2av0.MessageSendParams {
	return a2av0.MessageSendParams{Message: a2av0.Message{
		Kind: a2av0.KindMessage, Role: a2av0.RoleUser, Parts: a2av0.Parts{a2av0.TextPart(text)},
		MessageID: uuid.NewString(), TaskID: taskID, ContextID: contextID,
	}}
}

// sseStream reads a text/event-stream response one event at a time, the minimum the agent's
// framing needs: "data: " lines, events ended by a blank line.
type sseStream struct {
	t      *testing.T
	resp   *http.Response
	lines  *bufio.Scanner
	wantID string
}

// openStream posts method to path and checks that the answer is an event stream.
func (f *fixture) openStream(t *testing.T, ctx context.Context, path, method string, params any) *sseStream {
	t.Helper()
	return f.openStreamWith(t, ctx, path, method, params, nil)
}

// openStreamWith is openStream with extra request headers.
func (f *fixture) openStreamWith(t *testing.T, ctx context.Context, path, method string, params any, header http.Header) *sseStream {
	t.Helper()
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Accept", "text/event-stream")
	resp := f.post(t, ctx, path, requestBody(t, "stream-1", method, params), h)
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: HTTP %d", method, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: Content-Type %q, want text/event-stream; body %s", method, ct, body)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 2<<20)
	return &sseStream{t: t, resp: resp, lines: sc, wantID: "stream-1"}
}

// next returns the next event decoded, or nil at the end of the stream.
func (s *sseStream) next() a2av0.Event {
	s.t.Helper()
	var data []string
	for s.lines.Scan() {
		line := s.lines.Text()
		if line == "" {
			if len(data) == 0 {
				continue
			}
			break
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, d)
		} else {
			s.t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := s.lines.Err(); err != nil {
		s.t.Fatalf("read stream: %v", err)
	}
	if len(data) == 0 {
		return nil
	}
	resp := decodeResponse(s.t, strings.NewReader(strings.Join(data, "\n")), s.wantID)
	if resp.Error != nil {
		s.t.Fatalf("stream error %d %s", resp.Error.Code, resp.Error.Message)
	}
	ev, err := a2av0.DecodeEvent(resp.Result)
	if err != nil {
		s.t.Fatalf("decode event: %v", err)
	}
	return ev
}

// all reads the stream to its end.
func (s *sseStream) all() []a2av0.Event {
	s.t.Helper()
	var evs []a2av0.Event
	for ev := s.next(); ev != nil; ev = s.next() {
		evs = append(evs, ev)
	}
	return evs
}

// stream runs message/stream on StreamPath and returns all its events.
func (f *fixture) stream(t *testing.T, text, taskID, contextID string) []a2av0.Event {
	t.Helper()
	return f.openStream(t, t.Context(), StreamPath, a2av0.MethodMessageStream, userMessage(text, taskID, contextID)).all()
}

// shape describes events compactly: "task:submitted", "artifact", "artifact:last",
// "status:completed:final".
func shape(evs []a2av0.Event) []string {
	var out []string
	for _, ev := range evs {
		switch e := ev.(type) {
		case *a2av0.Task:
			out = append(out, "task:"+string(e.Status.State))
		case *a2av0.TaskArtifactUpdateEvent:
			s := "artifact"
			if e.LastChunk {
				s += ":last"
			}
			out = append(out, s)
		case *a2av0.TaskStatusUpdateEvent:
			s := "status:" + string(e.Status.State)
			if e.Final {
				s += ":final"
			}
			out = append(out, s)
		default:
			out = append(out, ev.EventKind())
		}
	}
	return out
}

// streamedText concatenates the text of the artifact chunks, checking each is an append.
func streamedText(t *testing.T, evs []a2av0.Event) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range evs {
		if e, ok := ev.(*a2av0.TaskArtifactUpdateEvent); ok {
			if !e.Append {
				t.Errorf("artifact chunk without append: true")
			}
			for _, p := range e.Artifact.Parts {
				b.WriteString(p.Text)
			}
		}
	}
	return b.String()
}

// taskText concatenates the text of a task's artifacts.
func taskText(task a2av0.Task) string {
	var b strings.Builder
	for _, art := range task.Artifacts {
		for _, p := range art.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// statusText is the text of a status message.
func statusText(s a2av0.TaskStatus) string {
	if s.Message == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range s.Message.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// finalStatus returns the last event, which must be a final status-update.
func finalStatus(t *testing.T, evs []a2av0.Event) *a2av0.TaskStatusUpdateEvent {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("empty stream")
	}
	st, ok := evs[len(evs)-1].(*a2av0.TaskStatusUpdateEvent)
	if !ok || !st.Final {
		t.Fatalf("stream ends with %v, want a final status-update", shape(evs[len(evs)-1:]))
	}
	return st
}
