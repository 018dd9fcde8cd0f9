// Package fixtureagent is a real A2A 0.2.5 JSON-RPC agent over HTTP (an httptest server on
// loopback) that misbehaves on purpose, for the tests of internal/invoke and the end-to-end tests.
//
// The behaviour of each message/send or message/stream request is chosen by the user text of the
// message ("behave:stream-cut", optionally followed by a space and more text) or, when the text
// names none, by the server's default (SetBehavior). Follow-up calls (tasks/get,
// tasks/resubscribe, tasks/cancel, and a message continuing a task) act on the task the first
// call created. Every request is recorded (Requests) and every tasks/cancel counted (Cancels), so
// tests can assert what the connector actually sent.
//
// The agent's endpoint is URL; URL+"/stream" is served too, like the platform expects of streaming
// agents. Both paths accept every method.
//
// It refuses to be a general A2A server: no push notifications, no cards, no persistence, no
// authentication. It is for tests only and must never be linked into a binary.
package fixtureagent

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
)

// Behavior names a way for the agent to answer. The constants are the values accepted after
// "behave:" in the message text.
type Behavior string

// Behaviours. Unless noted, the streaming variant answers message/stream as an event stream and
// the plain variant answers message/send with one JSON result.
const (
	// Stream: a submitted Task, a working status, Chunks artifact chunks (the first with
	// append=false, the rest append=true, the last with lastChunk), then completed with
	// final=true. message/send gets the completed Task with the whole text in one artifact.
	Stream Behavior = "stream"
	// Send: message/send answers the guide's example, a completed Task with two artifacts that
	// share one artifactId ("今天天气晴，" and "没有雨。"). message/stream gets that Task as one
	// SSE event.
	Send Behavior = "send"
	// SendWorking: message/send answers a working Task; tasks/get answers working once more, then
	// completed with the text "done after polling".
	SendWorking Behavior = "send-working"
	// HTTP500: HTTP 500 with a plain-text body.
	HTTP500 Behavior = "http-500"
	// HTTP401: HTTP 401 with a JSON body, as agents answer a wrong X-API-KEY.
	HTTP401 Behavior = "http-401"
	// TooManyOnce: the first request carrying a given messageId gets 429 with Retry-After: 0, the
	// next ones are answered like Stream.
	TooManyOnce Behavior = "429-once"
	// Unavailable: 503 with Retry-After: 120.
	Unavailable Behavior = "503-retry-after"
	// HangHeaders: never sends response headers; returns when the client goes away.
	HangHeaders Behavior = "hang-headers"
	// StreamCut: submitted, working, one chunk, then the connection ends without a final state.
	// tasks/resubscribe on that task answers an empty event stream.
	StreamCut Behavior = "stream-cut"
	// StreamCutResumable: like StreamCut, but tasks/resubscribe sends the rest and completes.
	StreamCutResumable Behavior = "stream-cut-resumable"
	// BadJSON: a submitted Task, then an event whose data is not JSON.
	BadJSON Behavior = "bad-json"
	// RPCErrorEvent: an event carrying a JSON-RPC error object (code -32603).
	RPCErrorEvent Behavior = "rpc-error-event"
	// JSONResult: message/stream answered with application/json holding a completed Task.
	JSONResult Behavior = "json-result"
	// JSONError: message/stream answered with application/json holding a JSON-RPC error (-32004).
	JSONError Behavior = "json-error"
	// WrongID: an event whose JSON-RPC id is not the request's.
	WrongID Behavior = "wrong-id"
	// HugeEvent: one artifact-update event larger than 1 MiB.
	HugeEvent Behavior = "huge-event"
	// HugeReply: 24 artifact chunks of 16 KiB each (384 KiB in all, every event well under 1 MiB).
	HugeReply Behavior = "huge-reply"
	// UnknownState: a status-update with state "unknown".
	UnknownState Behavior = "unknown-state"
	// GarbageState: a status-update with state "sleeping", which A2A does not define.
	GarbageState Behavior = "garbage-state"
	// KeepAliveSilence: a submitted Task, then only ": keep-alive" comments every 50ms until the
	// client goes away.
	KeepAliveSilence Behavior = "keepalive-silence"
	// Redirect: 302 to the redirect target (SetRedirectTarget) with the same path.
	Redirect Behavior = "redirect"
	// SlowStream: a submitted Task, then one chunk every ChunkDelay, up to 10000, until the client
	// goes away or the task is canceled.
	SlowStream Behavior = "slow-stream"
	// InputRequired: a submitted Task, then input-required with the question "Which city?" in the
	// status message, final=true, and the stream closes. A later message carrying that task's id
	// (and naming no behaviour) completes it with the text "continued: done".
	InputRequired Behavior = "input-required"
	// InputRequiredOpen: like InputRequired, but final=false and the stream stays open until the
	// client goes away.
	InputRequiredOpen Behavior = "input-required-open"
	// NoStreamPath: URL+"/stream" answers 404; URL answers like Stream.
	NoStreamPath Behavior = "no-stream-path"
	// NoStreamPath405: URL+"/stream" answers 405; URL answers like Stream.
	NoStreamPath405 Behavior = "no-stream-path-405"
	// NoStreamPathHTML: URL+"/stream" answers 200 with an HTML page (a web framework's catch-all
	// route); URL answers like Stream.
	NoStreamPathHTML Behavior = "no-stream-path-html"
	// AuthRequired: a status-update with state auth-required.
	AuthRequired Behavior = "auth-required"
	// Rejected: a status-update with state rejected and the message "not my topic".
	Rejected Behavior = "rejected"
	// Failed: a status-update with state failed and the message "backend down".
	Failed Behavior = "failed"
	// Canceled: a status-update with state canceled.
	Canceled Behavior = "canceled"
	// MessageResult: a single Message result with the text "hello from a message".
	MessageResult Behavior = "message"
	// Cumulative: artifact updates that replace the artifact with the text so far ("Hel",
	// "Hello", "Hello world"), then completed.
	Cumulative Behavior = "cumulative"
	// StatusText: completed, with the reply only in the status message ("answer in status").
	StatusText Behavior = "status-text"
)

// Texts the behaviours answer with, for assertions.
const (
	InputQuestion  = "Which city?"
	ContinuedText  = "continued: done"
	PolledText     = "done after polling"
	MessageText    = "hello from a message"
	StatusReply    = "answer in status"
	FailedText     = "backend down"
	RejectedText   = "not my topic"
	GuideText      = "今天天气晴，没有雨。"
	CumulativeText = "Hello world"
)

// ChunkText is the text of chunk i of the streaming behaviours.
func ChunkText(i int) string { return "chunk " + strconv.Itoa(i) + ". " }

// StreamText is the whole reply of Stream with n chunks.
func StreamText(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(ChunkText(i))
	}
	return b.String()
}

// Request is one HTTP request the agent received.
type Request struct {
	Path       string
	HTTPMethod string
	// RPCMethod and RPCID are from the JSON-RPC envelope ("" when the body was no JSON-RPC).
	RPCMethod string
	RPCID     string
	// MessageID, TaskID, ContextID, Text and Metadata are from params.message (message/send
	// and message/stream); TaskID is params.id for the tasks/* methods.
	MessageID string
	TaskID    string
	ContextID string
	Text      string
	Metadata  map[string]any
	// Params is the raw params member.
	Params json.RawMessage
	Header http.Header
}

// task is the agent's memory of a task it created.
type task struct {
	id, contextID string
	behavior      Behavior
	state         a2a.TaskState
	gets          int
}

// Server is a running fixture agent.
type Server struct {
	// URL is the agent's JSON-RPC endpoint, the card's url (streaming agents are called on
	// URL+"/stream").
	URL string

	srv  *httptest.Server
	stop chan struct{}

	mu         sync.Mutex
	requests   []Request
	cancels    []string
	tasks      map[string]*task
	attempts   map[string]int
	nextID     int
	behavior   Behavior
	chunks     int
	chunkDelay time.Duration
	redirect   string
}

const basePath = "/a2a"

// New starts a fixture agent on loopback; it is closed when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		stop:       make(chan struct{}),
		tasks:      make(map[string]*task),
		attempts:   make(map[string]int),
		behavior:   Stream,
		chunks:     3,
		chunkDelay: 50 * time.Millisecond,
	}
	s.srv = httptest.NewServer(s)
	s.URL = s.srv.URL + basePath
	t.Cleanup(s.Close)
	return s
}

// Close stops the agent: handlers that hold a request open return, then the server closes.
// It is idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.stop:
		s.mu.Unlock()
		return
	default:
		close(s.stop)
	}
	s.mu.Unlock()
	s.srv.Close()
}

// SetBehavior sets the behaviour of messages whose text names none (default Stream).
func (s *Server) SetBehavior(b Behavior) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.behavior = b
}

// SetChunks sets how many chunks Stream sends (default 3).
func (s *Server) SetChunks(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chunks = n
}

// SetChunkDelay sets the pause between SlowStream's chunks (default 50ms).
func (s *Server) SetChunkDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chunkDelay = d
}

// SetRedirectTarget sets the origin ("http://127.0.0.1:1234") Redirect sends clients to.
func (s *Server) SetRedirectTarget(origin string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.redirect = origin
}

// Requests returns a copy of every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// RequestsFor returns the recorded requests of one JSON-RPC method.
func (s *Server) RequestsFor(rpcMethod string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.RPCMethod == rpcMethod {
			out = append(out, r)
		}
	}
	return out
}

// Cancels returns the task ids of every tasks/cancel received, in order.
func (s *Server) Cancels() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.cancels...)
}

// RefusedURL returns an endpoint URL on loopback where nothing listens, for "connection refused"
// tests. The port was free a moment ago; another process could take it, which is unlikely enough
// for tests.
func RefusedURL(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fixtureagent: listen: %v", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatalf("fixtureagent: close listener: %v", err)
	}
	return "http://" + addr + basePath
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != basePath && r.URL.Path != basePath+"/stream" {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	rec := Request{Path: r.URL.Path, HTTPMethod: r.Method, Header: r.Header.Clone()}
	var req a2a.Request
	if json.Unmarshal(body, &req) == nil {
		rec.RPCMethod = req.Method
		rec.RPCID = string(req.ID)
		rec.Params = req.Params
	}
	var msgParams a2a.MessageSendParams
	var idParams a2a.TaskIDParams
	switch req.Method {
	case a2a.MethodMessageSend, a2a.MethodMessageStream:
		if err := json.Unmarshal(req.Params, &msgParams); err == nil {
			m := msgParams.Message
			rec.MessageID, rec.TaskID, rec.ContextID, rec.Metadata = m.MessageID, m.TaskID, m.ContextID, m.Metadata
			for _, p := range m.Parts {
				rec.Text += p.Text
			}
		}
	case a2a.MethodTasksGet, a2a.MethodTasksCancel, a2a.MethodTasksResubscribe:
		if err := json.Unmarshal(req.Params, &idParams); err == nil {
			rec.TaskID = idParams.ID
		}
	}
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.mu.Unlock()

	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	c := &call{s: s, w: w, r: r, id: req.ID, method: req.Method, rec: rec}
	switch req.Method {
	case a2a.MethodMessageSend, a2a.MethodMessageStream:
		s.message(c)
	case a2a.MethodTasksGet:
		s.getTask(c)
	case a2a.MethodTasksCancel:
		s.cancelTask(c)
	case a2a.MethodTasksResubscribe:
		s.resubscribe(c)
	default:
		c.jsonError(a2a.CodeMethodNotFound, "method not found")
	}
}

// call is one request being answered.
type call struct {
	s      *Server
	w      http.ResponseWriter
	r      *http.Request
	id     json.RawMessage
	method string
	rec    Request

	sseStarted bool
}

// behaviorOf reads "behave:NAME" at the start of the text.
func behaviorOf(text string, def Behavior) Behavior {
	rest, ok := strings.CutPrefix(text, "behave:")
	if !ok {
		return def
	}
	name, _, _ := strings.Cut(rest, " ")
	return Behavior(name)
}

func (s *Server) newTask(b Behavior, contextID string) *task {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	if contextID == "" {
		contextID = fmt.Sprintf("ctx-%d", s.nextID)
	}
	t := &task{id: fmt.Sprintf("task-%d", s.nextID), contextID: contextID, behavior: b, state: a2a.TaskStateSubmitted}
	s.tasks[t.id] = t
	return t
}

func (s *Server) task(id string) (task, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return task{}, false
	}
	return *t, true
}

func (s *Server) setState(id string, st a2a.TaskState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tasks[id]; ok {
		t.state = st
	}
}

func (s *Server) settings() (def Behavior, chunks int, delay time.Duration, redirect string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.behavior, s.chunks, s.chunkDelay, s.redirect
}

// message answers message/send and message/stream.
func (s *Server) message(c *call) {
	def, chunks, delay, redirect := s.settings()
	streaming := c.method == a2a.MethodMessageStream

	// A message continuing a task the agent holds (input-required) completes it, unless its text
	// asks for a behaviour.
	if c.rec.TaskID != "" && behaviorOf(c.rec.Text, "") == "" {
		if t, ok := s.task(c.rec.TaskID); ok && t.state.IsInterrupted() {
			s.setState(t.id, a2a.TaskStateCompleted)
			done := a2a.Task{ID: t.id, ContextID: t.contextID, Status: a2a.TaskStatus{State: a2a.TaskStateCompleted},
				Artifacts: []a2a.Artifact{{ArtifactID: "a1", Parts: a2a.Parts{a2a.TextPart(ContinuedText)}}}}
			if !streaming {
				c.result(done)
				return
			}
			c.event(a2a.TaskArtifactUpdateEvent{TaskID: t.id, ContextID: t.contextID, Artifact: done.Artifacts[0], LastChunk: true})
			c.event(status(&t, a2a.TaskStateCompleted, "", true))
			return
		}
	}

	b := behaviorOf(c.rec.Text, def)
	switch b {
	case HTTP500:
		http.Error(c.w, "internal trouble", http.StatusInternalServerError)
		return
	case HTTP401:
		c.w.Header().Set("Content-Type", "application/json")
		c.w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(c.w, `{"error":"invalid api key"}`)
		return
	case Unavailable:
		c.w.Header().Set("Retry-After", "120")
		http.Error(c.w, "busy", http.StatusServiceUnavailable)
		return
	case TooManyOnce:
		s.mu.Lock()
		s.attempts[c.rec.MessageID]++
		n := s.attempts[c.rec.MessageID]
		s.mu.Unlock()
		if n == 1 {
			c.w.Header().Set("Retry-After", "0")
			http.Error(c.w, "slow down", http.StatusTooManyRequests)
			return
		}
		b = Stream
	case HangHeaders:
		c.wait(0)
		return
	case Redirect:
		c.w.Header().Set("Location", redirect+c.r.URL.Path)
		c.w.WriteHeader(http.StatusFound)
		return
	case NoStreamPath, NoStreamPath405, NoStreamPathHTML:
		if c.r.URL.Path == basePath+"/stream" {
			if b == NoStreamPath405 {
				http.Error(c.w, "method not allowed", http.StatusMethodNotAllowed)
			} else if b == NoStreamPathHTML {
				c.w.Header().Set("Content-Type", "text/html; charset=utf-8")
				io.WriteString(c.w, "<!doctype html><title>Welcome</title><p>Our app</p>")
			} else {
				http.NotFound(c.w, c.r)
			}
			return
		}
		b = Stream
	case JSONError:
		c.jsonError(a2a.CodeUnsupportedOperation, "streaming is not supported")
		return
	}

	t := s.newTask(b, c.rec.ContextID)
	if !streaming {
		s.send(c, t, chunks)
		return
	}

	switch b {
	case Send, JSONResult:
		s.setState(t.id, a2a.TaskStateCompleted)
		if b == JSONResult {
			c.result(guideTask(t))
			return
		}
		c.event(guideTask(t))
	case MessageResult:
		c.event(a2a.Message{Role: a2a.RoleAgent, MessageID: "m-" + t.id, ContextID: t.contextID, Parts: a2a.Parts{a2a.TextPart(MessageText)}})
	case BadJSON:
		c.event(submitted(t))
		c.raw("data: {\"jsonrpc\":\"2.0\",\"id\":" + string(c.id) + ",\"result\":{\"kind\":\n\n")
	case RPCErrorEvent:
		c.event(submitted(t))
		c.raw(`data: {"jsonrpc":"2.0","id":` + string(c.id) + `,"error":{"code":-32603,"message":"internal boom"}}` + "\n\n")
	case WrongID:
		c.raw(`data: {"jsonrpc":"2.0","id":"not-yours","result":{"kind":"task","id":"` + t.id + `","contextId":"c","status":{"state":"submitted"}}}` + "\n\n")
	case HugeEvent:
		c.event(submitted(t))
		c.event(chunk(t, strings.Repeat("x", 1<<20+10), false, true))
		c.event(status(t, a2a.TaskStateCompleted, "", true))
	case HugeReply:
		c.event(submitted(t))
		for i := range 24 {
			c.event(chunk(t, strings.Repeat("y", 16<<10), i > 0, i == 23))
		}
		c.event(status(t, a2a.TaskStateCompleted, "", true))
	case UnknownState:
		c.event(submitted(t))
		c.event(status(t, a2a.TaskStateUnknown, "", true))
	case GarbageState:
		c.event(submitted(t))
		c.event(status(t, "sleeping", "", true))
	case KeepAliveSilence:
		c.event(submitted(t))
		c.keepAlives(50 * time.Millisecond)
	case SlowStream:
		c.event(submitted(t))
		for i := range 10000 {
			if !c.wait(delay) {
				return
			}
			if cur, _ := s.task(t.id); cur.state == a2a.TaskStateCanceled {
				c.event(status(t, a2a.TaskStateCanceled, "", true))
				return
			}
			c.event(chunk(t, ChunkText(i), i > 0, false))
		}
	case InputRequired, InputRequiredOpen:
		c.event(submitted(t))
		s.setState(t.id, a2a.TaskStateInputRequired)
		c.event(status(t, a2a.TaskStateInputRequired, InputQuestion, b == InputRequired))
		if b == InputRequiredOpen {
			c.wait(0)
		}
	case AuthRequired:
		c.event(submitted(t))
		s.setState(t.id, a2a.TaskStateAuthRequired)
		c.event(status(t, a2a.TaskStateAuthRequired, "please sign in", true))
	case Rejected, Failed, Canceled:
		st := map[Behavior]a2a.TaskState{Rejected: a2a.TaskStateRejected, Failed: a2a.TaskStateFailed, Canceled: a2a.TaskStateCanceled}[b]
		text := map[Behavior]string{Rejected: RejectedText, Failed: FailedText}[b]
		c.event(submitted(t))
		s.setState(t.id, st)
		c.event(status(t, st, text, true))
	case Cumulative:
		c.event(submitted(t))
		for _, text := range []string{"Hel", "Hello", CumulativeText} {
			c.event(chunk(t, text, false, false))
		}
		c.event(status(t, a2a.TaskStateCompleted, "", true))
	case StatusText:
		c.event(submitted(t))
		c.event(status(t, a2a.TaskStateCompleted, StatusReply, true))
	case StreamCut, StreamCutResumable:
		c.event(submitted(t))
		c.event(status(t, a2a.TaskStateWorking, "", false))
		s.setState(t.id, a2a.TaskStateWorking)
		c.event(chunk(t, ChunkText(0), false, false))
		// Returning ends the response: the client sees the stream end without a final state.
	default: // Stream and unknown names
		c.event(submitted(t))
		c.event(status(t, a2a.TaskStateWorking, "", false))
		for i := range chunks {
			c.event(chunk(t, ChunkText(i), i > 0, i == chunks-1))
		}
		s.setState(t.id, a2a.TaskStateCompleted)
		c.event(status(t, a2a.TaskStateCompleted, "", true))
	}
}

// send answers message/send for a task just created.
func (s *Server) send(c *call, t *task, chunks int) {
	switch t.behavior {
	case Send:
		s.setState(t.id, a2a.TaskStateCompleted)
		c.result(guideTask(t))
	case SendWorking:
		s.setState(t.id, a2a.TaskStateWorking)
		c.result(a2a.Task{ID: t.id, ContextID: t.contextID, Status: a2a.TaskStatus{State: a2a.TaskStateWorking}})
	case MessageResult:
		c.result(a2a.Message{Role: a2a.RoleAgent, MessageID: "m-" + t.id, ContextID: t.contextID, Parts: a2a.Parts{a2a.TextPart(MessageText)}})
	case InputRequired, InputRequiredOpen:
		s.setState(t.id, a2a.TaskStateInputRequired)
		c.result(a2a.Task{ID: t.id, ContextID: t.contextID, Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired,
			Message: &a2a.Message{Role: a2a.RoleAgent, MessageID: "q-" + t.id, Parts: a2a.Parts{a2a.TextPart(InputQuestion)}}}})
	case Rejected:
		s.setState(t.id, a2a.TaskStateRejected)
		c.result(a2a.Task{ID: t.id, ContextID: t.contextID, Status: a2a.TaskStatus{State: a2a.TaskStateRejected}})
	case WrongID:
		c.raw2(`{"jsonrpc":"2.0","id":"not-yours","result":{"kind":"task","id":"t","contextId":"c","status":{"state":"completed"}}}`)
	default:
		s.setState(t.id, a2a.TaskStateCompleted)
		c.result(a2a.Task{ID: t.id, ContextID: t.contextID, Status: a2a.TaskStatus{State: a2a.TaskStateCompleted},
			Artifacts: []a2a.Artifact{{ArtifactID: "a1", Parts: a2a.Parts{a2a.TextPart(StreamText(chunks))}}}})
	}
}

func (s *Server) getTask(c *call) {
	t, ok := s.task(c.rec.TaskID)
	if !ok {
		c.jsonError(a2a.CodeTaskNotFound, "task not found")
		return
	}
	s.mu.Lock()
	s.tasks[t.id].gets++
	gets := s.tasks[t.id].gets
	s.mu.Unlock()
	if t.behavior == SendWorking && t.state == a2a.TaskStateWorking && gets >= 2 {
		s.setState(t.id, a2a.TaskStateCompleted)
		c.result(a2a.Task{ID: t.id, ContextID: t.contextID, Status: a2a.TaskStatus{State: a2a.TaskStateCompleted},
			Artifacts: []a2a.Artifact{{ArtifactID: "a1", Parts: a2a.Parts{a2a.TextPart(PolledText)}}}})
		return
	}
	c.result(a2a.Task{ID: t.id, ContextID: t.contextID, Status: a2a.TaskStatus{State: t.state}})
}

func (s *Server) cancelTask(c *call) {
	s.mu.Lock()
	s.cancels = append(s.cancels, c.rec.TaskID)
	t, ok := s.tasks[c.rec.TaskID]
	if ok && !t.state.IsTerminal() {
		t.state = a2a.TaskStateCanceled
	}
	s.mu.Unlock()
	if !ok {
		c.jsonError(a2a.CodeTaskNotFound, "task not found")
		return
	}
	cur, _ := s.task(c.rec.TaskID)
	c.result(a2a.Task{ID: cur.id, ContextID: cur.contextID, Status: a2a.TaskStatus{State: cur.state}})
}

func (s *Server) resubscribe(c *call) {
	t, ok := s.task(c.rec.TaskID)
	if !ok {
		c.jsonError(a2a.CodeTaskNotFound, "task not found")
		return
	}
	switch t.behavior {
	case StreamCut:
		c.startSSE() // an empty stream: the task is lost
	case StreamCutResumable:
		c.event(chunk(&t, ChunkText(1), true, true))
		s.setState(t.id, a2a.TaskStateCompleted)
		c.event(status(&t, a2a.TaskStateCompleted, "", true))
	default:
		c.event(status(&t, t.state, "", true))
	}
}

// Event builders.

func submitted(t *task) a2a.Task {
	return a2a.Task{ID: t.id, ContextID: t.contextID, Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}
}

func status(t *task, st a2a.TaskState, text string, final bool) a2a.TaskStatusUpdateEvent {
	ev := a2a.TaskStatusUpdateEvent{TaskID: t.id, ContextID: t.contextID, Status: a2a.TaskStatus{State: st}, Final: final}
	if text != "" {
		ev.Status.Message = &a2a.Message{Role: a2a.RoleAgent, MessageID: "s-" + t.id + "-" + string(st), TaskID: t.id, ContextID: t.contextID,
			Parts: a2a.Parts{a2a.TextPart(text)}}
	}
	return ev
}

func chunk(t *task, text string, appendIt, last bool) a2a.TaskArtifactUpdateEvent {
	ev := a2a.TaskArtifactUpdateEvent{TaskID: t.id, ContextID: t.contextID, Append: appendIt, LastChunk: last,
		Artifact: a2a.Artifact{ArtifactID: "a-" + t.id, Parts: a2a.Parts{a2a.TextPart(text)}}}
	if last {
		// Where agents put device commands: the last artifact's metadata.
		ev.Artifact.Metadata = map[string]any{"command": "flash"}
	}
	return ev
}

func guideTask(t *task) a2a.Task {
	const id = "c3fee4d5-7234-48a1-8d2c-cfb715c5ce9e"
	return a2a.Task{ID: t.id, ContextID: t.contextID, Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: "2025-07-15T14:50:28.575338Z"},
		Artifacts: []a2a.Artifact{
			{ArtifactID: id, Parts: a2a.Parts{a2a.TextPart("今天天气晴，")}},
			{ArtifactID: id, Parts: a2a.Parts{a2a.TextPart("没有雨。")}, Metadata: map[string]any{"command": "none"}},
		}}
}

// Writers.

func (c *call) envelope(result any) []byte {
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{a2a.JSONRPCVersion, c.id, result})
	if err != nil {
		panic(fmt.Sprintf("fixtureagent: marshal result: %v", err))
	}
	return b
}

// result writes one JSON-RPC result as a JSON body.
func (c *call) result(result any) {
	c.raw2(string(c.envelope(result)))
}

// raw2 writes a JSON body as is.
func (c *call) raw2(body string) {
	c.w.Header().Set("Content-Type", "application/json")
	io.WriteString(c.w, body)
}

func (c *call) jsonError(code int, msg string) {
	id := c.id
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   a2a.RPCError    `json:"error"`
	}{a2a.JSONRPCVersion, id, a2a.RPCError{Code: code, Message: msg}})
	c.raw2(string(b))
}

func (c *call) startSSE() {
	if c.sseStarted {
		return
	}
	c.sseStarted = true
	c.w.Header().Set("Content-Type", "text/event-stream")
	c.w.Header().Set("Cache-Control", "no-cache")
	c.w.WriteHeader(http.StatusOK)
	c.flush()
}

// event writes one SSE event holding a JSON-RPC result.
func (c *call) event(result any) {
	c.raw("data: " + string(c.envelope(result)) + "\n\n")
}

// raw writes bytes into the event stream as is.
func (c *call) raw(s string) {
	c.startSSE()
	io.WriteString(c.w, s)
	c.flush()
}

func (c *call) flush() {
	if f, ok := c.w.(http.Flusher); ok {
		f.Flush()
	}
}

// wait pauses for d (0: until the client or the server goes away) and reports whether the
// request is still alive.
func (c *call) wait(d time.Duration) bool {
	var timeout <-chan time.Time
	if d > 0 {
		tm := time.NewTimer(d)
		defer tm.Stop()
		timeout = tm.C
	}
	select {
	case <-c.r.Context().Done():
		return false
	case <-c.s.stop:
		return false
	case <-timeout:
		return true
	}
}

func (c *call) keepAlives(every time.Duration) {
	for c.wait(every) {
		c.raw(": keep-alive\n\n")
	}
}
