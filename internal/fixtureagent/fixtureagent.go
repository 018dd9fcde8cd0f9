// Package fixtureagent is a real A2A agent (an httptest server on loopback) that misbehaves on
// purpose, for the tests of internal/invoke and the end-to-end tests. It speaks either wire
// generation, A2A 0.2.5/0.3 (New, the default) or A2A 1.0 (NewV1), and every binding: JSON-RPC
// (New, NewV1), HTTP+JSON (NewREST in 1.0's form, NewRESTV03 in 0.3's; rest.go) and gRPC 1.0
// (NewGRPC, a grpc-go server in front of the HTTP+JSON face; grpc.go), so that every
// misbehaviour can be run against each of the connector's codecs.
//
// The behaviour of each send or stream request is chosen by the user text of the message
// ("behave:stream-cut", optionally followed by a space and more text) or, when the text names
// none, by the server's default (SetBehavior). Follow-up calls (get, resubscribe, cancel, and a
// message continuing a task) act on the task the first call created. Every request is recorded
// (Requests) and every cancel counted (Cancels), so tests can assert what the connector actually
// sent; the ends of new tasks' streams and the cancels are kept in the order they happened
// (Marks).
//
// # The two wires (on JSON-RPC)
//
// 0.x mode (New): methods message/send, message/stream, tasks/get, tasks/cancel and
// tasks/resubscribe; objects carry "kind"; status updates carry "final". The agent's endpoint is
// URL; URL+"/stream" is served too, like the platform expects of streaming agents, and both paths
// accept every method. The A2A-Version header is ignored, as 0.x servers do.
//
// 1.0 mode (NewV1): methods SendMessage, SendStreamingMessage, GetTask, CancelTask and
// SubscribeToTask on URL only; URL+"/stream" answers 404 (the suffix is a 0.2.5-platform
// convention that 1.0 servers do not have), so the NoStreamPath behaviours are plain Stream
// there. Like the 1.0-only servers of the SDKs, a request whose A2A-Version header is missing or
// not 1.x is answered with JSON-RPC error -32009 (version not supported), and a 0.x method name
// with -32601 (method not found), both as HTTP 200 JSON bodies. Results and events are the 0.x
// objects rewritten into the 1.0 shape (see v1.go): wrappers {"task"|"message"|"statusUpdate"|
// "artifactUpdate": …}, no "kind", parts {"text": …}, TASK_STATE_* and ROLE_* enums, no "final";
// GetTask and CancelTask answer a bare Task. The encoding is written here, independently of
// internal/a2a, so that a bug in the connector's codec is not mirrored by the agent.
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
	"sync/atomic"
	"testing"
	"time"
)

// Behavior names a way for the agent to answer. The constants are the values accepted after
// "behave:" in the message text.
type Behavior string

// Behaviours. Unless noted, the streaming variant answers a stream request (message/stream,
// SendStreamingMessage) as an event stream and the plain variant answers a send request
// (message/send, SendMessage) with one JSON result, and each exists in both modes. Events are
// listed in their 0.x form; in 1.0 mode the same events are sent in the 1.0 shape (no "final":
// "final=true" below means the stream ends after that event there).
const (
	// Stream: a submitted Task, a working status, Chunks artifact chunks (the first with
	// append=false, the rest append=true, the last with lastChunk), then completed with
	// final=true. A send gets the completed Task with the whole text in one artifact.
	Stream Behavior = "stream"
	// Send: a send answers the guide's example, a completed Task with two artifacts that share
	// one artifactId ("今天天气晴，" and "没有雨。"). A stream gets that Task as one SSE event.
	Send Behavior = "send"
	// SendWorking: a send answers a working Task; a get answers working once more, then
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
	// HTTP503: 503 without Retry-After, every time (an agent whose backend is down: the
	// client's retry rules would retry it).
	HTTP503 Behavior = "http-503"
	// HeadersSilence: a stream request gets 200 text/event-stream headers, then nothing at all
	// (not even keep-alives) until the client goes away. A send request is answered like
	// HangHeaders.
	HeadersSilence Behavior = "headers-silence"
	// Garbage: a stream request gets 200 text/event-stream whose first event's data is not JSON;
	// a send request gets 200 application/json whose body is not JSON.
	Garbage Behavior = "garbage"
	// WrongContentType: 200 text/html with an HTML page, for a send and a stream alike (a proxy
	// or web framework in front of the agent).
	WrongContentType Behavior = "wrong-content-type"
	// HTTPErrorDetails: HTTP 400 with the A2A error "extension support required" in the body:
	// on JSON-RPC a JSON-RPC error object, on HTTP+JSON a google.rpc.Status whose ErrorInfo
	// names the reason (EXTENSION_SUPPORT_REQUIRED), as the SDKs' REST handlers answer.
	HTTPErrorDetails Behavior = "http-error-details"
	// StreamCut: submitted, working, one chunk, then the response ends cleanly (the chunked body
	// is terminated) without a final state. A resubscribe on that task answers an empty event
	// stream; a get answers it still working.
	StreamCut Behavior = "stream-cut"
	// StreamCutResumable: like StreamCut, but a resubscribe sends the rest and completes.
	StreamCutResumable Behavior = "stream-cut-resumable"
	// StreamDrop: submitted, working, one chunk (ChunkText(0)), then the socket is destroyed in
	// the middle of the chunked body (hijacked and closed, no terminating chunk: the client reads
	// an unexpected EOF), as a restarting pod does. A resubscribe answers like the SDKs do: the
	// Task snapshot first (working, its artifact already holding ChunkText(0)), then ChunkText(1)
	// appended as the last chunk, then completed. The whole reply is StreamText(2), and a client
	// that speaks ChunkText(0) twice got the snapshot wrong. A get answers the task as it stands.
	StreamDrop Behavior = "stream-drop"
	// StreamReset: like StreamDrop, but the connection ends with a TCP reset (SO_LINGER 0, then
	// close), as a crashed process or an idle-cutting load balancer does. The events sent before
	// are acknowledged by the client's kernel before the reset (on Linux the agent waits for it).
	StreamReset Behavior = "stream-reset"
	// StreamDropGet: like StreamDrop, but a resubscribe is refused (JSON-RPC error -32004,
	// unsupported operation, as a JSON body) and a get answers the completed Task whose one
	// artifact holds StreamText(2).
	StreamDropGet Behavior = "stream-drop-get"
	// StreamDropGetErrorEvent: like StreamDropGet, but the resubscribe is answered as the a2a-go
	// v2 SDK answers one for a task it no longer streams: an event stream whose one event is a
	// JSON-RPC error (-32001). A get answers the completed Task.
	StreamDropGetErrorEvent Behavior = "stream-drop-get-error-event"
	// StreamDropRefused: like StreamDrop, but the agent has forgotten the task (a restarted
	// process): a resubscribe and a get both answer JSON-RPC error -32001 (task not found).
	StreamDropRefused Behavior = "stream-drop-refused"
	// BadJSON: a submitted Task, then an event whose data is not JSON.
	BadJSON Behavior = "bad-json"
	// RPCErrorEvent: an event carrying a JSON-RPC error object (code -32603).
	RPCErrorEvent Behavior = "rpc-error-event"
	// JSONResult: a stream request answered with application/json holding a completed Task.
	JSONResult Behavior = "json-result"
	// JSONError: a stream request answered with application/json holding a JSON-RPC error
	// (-32004).
	JSONError Behavior = "json-error"
	// WrongID: an event whose JSON-RPC id is not the request's.
	WrongID Behavior = "wrong-id"
	// HugeEvent: one artifact-update event larger than 1 MiB.
	HugeEvent Behavior = "huge-event"
	// HugeReply: 24 artifact chunks of 16 KiB each (384 KiB in all, every event well under 1 MiB).
	HugeReply Behavior = "huge-reply"
	// UnknownState: a status-update with state "unknown" (1.0: TASK_STATE_UNSPECIFIED).
	UnknownState Behavior = "unknown-state"
	// GarbageState: a status-update with state "sleeping", which A2A does not define (1.0:
	// TASK_STATE_SLEEPING).
	GarbageState Behavior = "garbage-state"
	// KeepAliveSilence: a submitted Task, then only ": keep-alive" comments every 50ms until the
	// client goes away.
	KeepAliveSilence Behavior = "keepalive-silence"
	// Redirect: 302 to the redirect target (SetRedirectTarget) with the same path.
	Redirect Behavior = "redirect"
	// SlowStream: a submitted Task, then one chunk every ChunkDelay, up to 10000, until the client
	// goes away or the task is canceled.
	SlowStream Behavior = "slow-stream"
	// PacedStream: like Stream (Chunks chunks, then completed), but each chunk comes ChunkDelay
	// after the last, as a model generating its reply does. When the client goes away the task
	// stays working (nothing finishes it but a cancel), like an agent whose caller was killed.
	PacedStream Behavior = "paced-stream"
	// InputRequired: a submitted Task, then input-required with the question "Which city?" in the
	// status message, final=true, and the stream closes. A later message carrying that task's id
	// (and naming no behaviour) completes it with the text "continued: done": streaming, as the
	// artifact (lastChunk) then completed.
	InputRequired Behavior = "input-required"
	// InputRequiredOpen: like InputRequired, but final=false and the stream stays open until the
	// client goes away.
	InputRequiredOpen Behavior = "input-required-open"
	// InputRequiredSnapshot: like InputRequired, but the streamed answer to the later message is
	// the one @a2a-js/sdk 1.x servers send (their executors must publish a Task first, also on a
	// follow-up): its FIRST event is the stored Task snapshot, still input-required with the old
	// question in its status message, then working, then the artifact "continued: done", then
	// completed. A continuation must not end at that snapshot, nor speak the old question. A
	// send continuation gets the completed Task.
	InputRequiredSnapshot Behavior = "input-required-snapshot"
	// NoStreamPath: URL+"/stream" answers 404; URL answers like Stream. (1.0 mode: /stream
	// always answers 404, and this is Stream.)
	NoStreamPath Behavior = "no-stream-path"
	// NoStreamPath405: URL+"/stream" answers 405; URL answers like Stream. (1.0 mode: Stream.)
	NoStreamPath405 Behavior = "no-stream-path-405"
	// NoStreamPathHTML: URL+"/stream" answers 200 with an HTML page (a web framework's catch-all
	// route); URL answers like Stream. (1.0 mode: Stream.)
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
	// NoTaskID: like Stream (a send: the completed Task), but the Task and every event carry an
	// empty task id; the context id is set.
	NoTaskID Behavior = "no-task-id"
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
	// Op is the operation RPCMethod names in either wire generation ("" for other methods),
	// also when this agent refused the method because it speaks the other generation.
	Op Op
	// MessageID, TaskID, ContextID, Text and Metadata are from params.message (send and stream);
	// TaskID is params.id for get, cancel and resubscribe. Text joins the text parts of either
	// generation.
	MessageID string
	TaskID    string
	ContextID string
	Text      string
	Metadata  map[string]any
	// Tenant is params.tenant (A2A 1.0), "" when absent.
	Tenant string
	// Params is the raw params member.
	Params json.RawMessage
	Header http.Header
}

// task is the agent's memory of a task it created.
type task struct {
	id, contextID string
	behavior      Behavior
	state         state
	gets          int
}

// Options configure an agent.
type Options struct {
	// Protocol is the wire generation the agent speaks: ProtocolV1 ("1.0") for A2A 1.0, anything
	// else for A2A 0.2.5/0.3.
	Protocol string
	// Binding is BindingHTTPJSON for an agent that serves A2A over HTTP+JSON (rest.go): 1.0's
	// form when Protocol is empty or 1.0, 0.3's (rest03.go) when Protocol is ProtocolV03; ""
	// for JSON-RPC.
	Binding string
}

// Server is a running fixture agent.
type Server struct {
	// URL is the agent's endpoint, the card's url: its JSON-RPC endpoint (0.x streaming agents
	// are called on URL+"/stream"), its HTTP+JSON base URL, or its gRPC address.
	URL string

	v1      bool
	rest    bool
	restV0  bool   // rest in A2A 0.3's form (rest03.go)
	grpcURL string // set by NewGRPC: the agent is called over gRPC there
	srv     *httptest.Server
	stop    chan struct{}

	mu         sync.Mutex
	requests   []Request
	cancels    []string
	marks      []Mark
	tasks      map[string]*task
	attempts   map[string]int
	nextID     int
	behavior   Behavior
	chunks     int
	chunkDelay time.Duration
	redirect   string

	// open counts the messages being answered now (send and stream, on the HTTP bindings),
	// maxOpen the most at once since the last ResetMaxOpen.
	open, maxOpen atomic.Int64
}

const basePath = "/a2a"

// New starts a fixture agent speaking A2A 0.2.5/0.3 on loopback; it is closed when the test
// ends.
func New(t testing.TB) *Server {
	t.Helper()
	return NewWithOptions(t, Options{})
}

// NewV1 starts a fixture agent speaking A2A 1.0 on loopback; it is closed when the test ends.
func NewV1(t testing.TB) *Server {
	t.Helper()
	return NewWithOptions(t, Options{Protocol: ProtocolV1})
}

// NewWithOptions starts a fixture agent configured by o on loopback; it is closed when the test
// ends.
func NewWithOptions(t testing.TB, o Options) *Server {
	t.Helper()
	s := &Server{
		v1:         o.Protocol == ProtocolV1 || (o.Binding == BindingHTTPJSON && o.Protocol != ProtocolV03),
		rest:       o.Binding == BindingHTTPJSON,
		restV0:     o.Binding == BindingHTTPJSON && o.Protocol == ProtocolV03,
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

// NewREST starts a fixture agent speaking A2A 1.0 over HTTP+JSON on loopback; it is closed
// when the test ends.
func NewREST(t testing.TB) *Server {
	t.Helper()
	return NewWithOptions(t, Options{Binding: BindingHTTPJSON})
}

// Binding is the protocol binding the agent serves, as a profile keeps it: BindingGRPC,
// BindingHTTPJSON, or "" for JSON-RPC.
func (s *Server) Binding() string {
	switch {
	case s.grpcURL != "":
		return BindingGRPC
	case s.rest:
		return BindingHTTPJSON
	}
	return ""
}

// ProtocolVersion is the A2A version the agent speaks, as a card would state it: "1.0" or
// "0.2.5". Tests put it in connector.CardProfile.ProtocolVersion.
func (s *Server) ProtocolVersion() string {
	if s.v1 {
		return ProtocolV1
	}
	if s.restV0 {
		return "0.3.0" // 0.2.5 had no HTTP+JSON binding
	}
	return "0.2.5"
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

// SetChunkDelay sets the pause between SlowStream's and PacedStream's chunks (default 50ms).
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

// RequestsForOp returns the recorded requests of one operation, whichever generation's method
// name they used.
func (s *Server) RequestsForOp(op Op) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Op == op {
			out = append(out, r)
		}
	}
	return out
}

// Cancels returns the task ids of every cancel received, in order.
func (s *Server) Cancels() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.cancels...)
}

// Mark is a moment of a task that tests order against others: its stream ended, or a
// tasks/cancel for it arrived.
type Mark struct {
	Kind   MarkKind
	TaskID string
}

// MarkKind names what happened at a Mark.
type MarkKind string

const (
	// MarkStreamEnded: the agent stopped streaming a new task's reply (the reply was done, or
	// the client went away: its request's context ended).
	MarkStreamEnded MarkKind = "stream-ended"
	// MarkCancel: a tasks/cancel for the task arrived.
	MarkCancel MarkKind = "cancel"
)

// Marks returns the moments of tasks' streams and cancels, in the order they happened.
func (s *Server) Marks() []Mark {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mark(nil), s.marks...)
}

func (s *Server) mark(kind MarkKind, taskID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marks = append(s.marks, Mark{Kind: kind, TaskID: taskID})
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
	if s.rest {
		s.serveREST(w, r)
		return
	}
	streamPath := r.URL.Path == basePath+"/stream"
	if r.URL.Path != basePath && !streamPath {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	rec := Request{Path: r.URL.Path, HTTPMethod: r.Method, Header: r.Header.Clone()}
	var req rpcRequest
	if json.Unmarshal(body, &req) == nil {
		rec.RPCMethod = req.Method
		rec.RPCID = string(req.ID)
		rec.Params = req.Params
	}
	own, other := methodsV0, methodsV1
	if s.v1 {
		own, other = methodsV1, methodsV0
	}
	op, known := own[req.Method]
	if !known {
		rec.Op = other[req.Method]
	} else {
		rec.Op = op
	}
	decodeParams(&rec)
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.mu.Unlock()

	if s.v1 && streamPath {
		// The /stream suffix is a 0.2.5-platform convention; a 1.0 server has no such route.
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	c := &call{s: s, w: w, r: r, id: req.ID, op: op, rec: rec, v1: s.v1}
	if v := r.Header.Get(versionHeader); s.v1 && !speaksV1(v) {
		// What 1.0-only SDK servers answer: a missing header means 0.3.
		c.jsonError(codeVersionNotSupported, fmt.Sprintf("A2A version %q is not supported; supported: 1.0", v))
		return
	}
	if !known {
		c.jsonError(codeMethodNotFound, "method not found")
		return
	}
	switch op {
	case OpSend, OpStream:
		s.message(c)
	case OpGet:
		s.getTask(c)
	case OpCancel:
		s.cancelTask(c)
	case OpResubscribe:
		s.resubscribe(c)
	}
}

// call is one request being answered.
type call struct {
	s   *Server
	w   http.ResponseWriter
	r   *http.Request
	id  json.RawMessage
	op  Op
	rec Request
	v1  bool
	// rest: HTTP+JSON framing (no JSON-RPC envelope; errors as google.rpc.Status).
	rest bool
	// restV0: rest in A2A 0.3's form (rest03.go): the 0.3 proto's JSON, @a2a-js's error bodies.
	restV0 bool

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
	t := &task{id: fmt.Sprintf("task-%d", s.nextID), contextID: contextID, behavior: b, state: stateSubmitted}
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

func (s *Server) setState(id string, st state) {
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

// Open is how many messages (send and stream, on the HTTP bindings) the agent is answering now:
// the turns running at the agent.
func (s *Server) Open() int { return int(s.open.Load()) }

// MaxOpen is the most messages the agent answered at once since it started or since the last
// ResetMaxOpen.
func (s *Server) MaxOpen() int { return int(s.maxOpen.Load()) }

// ResetMaxOpen starts MaxOpen again from the messages open now.
func (s *Server) ResetMaxOpen() { s.maxOpen.Store(s.open.Load()) }

// message answers send and stream requests.
func (s *Server) message(c *call) {
	n := s.open.Add(1)
	defer s.open.Add(-1)
	for {
		m := s.maxOpen.Load()
		if n <= m || s.maxOpen.CompareAndSwap(m, n) {
			break
		}
	}
	def, chunks, delay, redirect := s.settings()
	streaming := c.op == OpStream

	// A message continuing a task the agent holds (input-required) completes it, unless its text
	// asks for a behaviour.
	if c.rec.TaskID != "" && behaviorOf(c.rec.Text, "") == "" {
		if t, ok := s.task(c.rec.TaskID); ok && t.state.interrupted() {
			s.continueTask(c, &t, streaming)
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
	case HTTP503:
		http.Error(c.w, "backend down", http.StatusServiceUnavailable)
		return
	case HeadersSilence:
		if streaming {
			c.startSSE()
			c.flush()
		}
		c.wait(0)
		return
	case Garbage:
		if streaming {
			c.sse("data: <html>oops</html>\n\n")
			return
		}
		c.w.Header().Set("Content-Type", "application/json")
		io.WriteString(c.w, "<html>oops</html>")
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
		c.jsonError(codeUnsupportedOperation, "streaming is not supported")
		return
	case WrongContentType:
		c.w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(c.w, "<!doctype html><title>Welcome</title><p>Our app</p>")
		return
	case HTTPErrorDetails:
		c.w.Header().Set("Content-Type", "application/json")
		c.w.WriteHeader(http.StatusBadRequest)
		io.WriteString(c.w, c.errorEnvelope(codeExtensionSupportRequired, "extension required: https://example.com/ext/v1"))
		return
	}

	t := s.newTask(b, c.rec.ContextID)
	if !streaming {
		s.send(c, t, chunks)
		return
	}
	defer s.mark(MarkStreamEnded, t.id)

	switch b {
	case Send, JSONResult:
		s.setState(t.id, stateCompleted)
		if b == JSONResult {
			c.result(guideTask(t))
			return
		}
		c.event(guideTask(t))
	case MessageResult:
		c.event(agentMessage("m-"+t.id, "", t.contextID, MessageText))
	case BadJSON:
		c.event(submitted(t))
		member := "kind"
		if c.v1 {
			member = "task"
		}
		c.sse("data: {\"jsonrpc\":\"2.0\",\"id\":" + string(idOrNull(c.id)) + ",\"result\":{\"" + member + "\":\n\n")
	case RPCErrorEvent:
		c.event(submitted(t))
		c.sse("data: " + c.errorEnvelope(codeInternalError, "internal boom") + "\n\n")
	case WrongID:
		c.sse("data: " + c.envelope(json.RawMessage(`"not-yours"`), wireTask{ID: t.id, ContextID: "c", Kind: kindTask, Status: wireStatus{State: stateSubmitted}}, true) + "\n\n")
	case HugeEvent:
		c.event(submitted(t))
		c.event(chunk(t, strings.Repeat("x", 1<<20+10), false, true))
		c.event(status(t, stateCompleted, "", true))
	case HugeReply:
		c.event(submitted(t))
		for i := range 24 {
			c.event(chunk(t, strings.Repeat("y", 16<<10), i > 0, i == 23))
		}
		c.event(status(t, stateCompleted, "", true))
	case UnknownState:
		c.event(submitted(t))
		c.event(status(t, stateUnknown, "", true))
	case GarbageState:
		c.event(submitted(t))
		c.event(status(t, "sleeping", "", true))
	case KeepAliveSilence:
		c.event(submitted(t))
		c.keepAlives(50 * time.Millisecond)
	case PacedStream:
		c.event(submitted(t))
		c.event(status(t, stateWorking, "", false))
		s.setState(t.id, stateWorking)
		for i := range chunks {
			if !c.wait(delay) {
				return
			}
			c.event(chunk(t, ChunkText(i), i > 0, i == chunks-1))
		}
		s.setState(t.id, stateCompleted)
		c.event(status(t, stateCompleted, "", true))
	case SlowStream:
		c.event(submitted(t))
		for i := range 10000 {
			if !c.wait(delay) {
				return
			}
			if cur, _ := s.task(t.id); cur.state == stateCanceled {
				c.event(status(t, stateCanceled, "", true))
				return
			}
			c.event(chunk(t, ChunkText(i), i > 0, false))
		}
	case InputRequired, InputRequiredOpen, InputRequiredSnapshot:
		c.event(submitted(t))
		s.setState(t.id, stateInputRequired)
		c.event(status(t, stateInputRequired, InputQuestion, b != InputRequiredOpen))
		if b == InputRequiredOpen {
			c.wait(0)
		}
	case AuthRequired:
		c.event(submitted(t))
		s.setState(t.id, stateAuthRequired)
		c.event(status(t, stateAuthRequired, "please sign in", true))
	case Rejected, Failed, Canceled:
		st := map[Behavior]state{Rejected: stateRejected, Failed: stateFailed, Canceled: stateCanceled}[b]
		text := map[Behavior]string{Rejected: RejectedText, Failed: FailedText}[b]
		c.event(submitted(t))
		s.setState(t.id, st)
		c.event(status(t, st, text, true))
	case Cumulative:
		c.event(submitted(t))
		for _, text := range []string{"Hel", "Hello", CumulativeText} {
			c.event(chunk(t, text, false, false))
		}
		c.event(status(t, stateCompleted, "", true))
	case StatusText:
		c.event(submitted(t))
		c.event(status(t, stateCompleted, StatusReply, true))
	case NoTaskID:
		anon := &task{contextID: t.contextID}
		c.event(submitted(anon))
		c.event(chunk(anon, ChunkText(0), false, true))
		c.event(status(anon, stateCompleted, "", true))
	case StreamCut, StreamCutResumable, StreamDrop, StreamReset, StreamDropGet, StreamDropGetErrorEvent, StreamDropRefused:
		c.event(submitted(t))
		c.event(status(t, stateWorking, "", false))
		s.setState(t.id, stateWorking)
		c.event(chunk(t, ChunkText(0), false, false))
		switch b {
		case StreamCut, StreamCutResumable:
			// Returning ends the response: the client sees the stream end without a final state.
		case StreamReset:
			c.drop(true)
		default:
			c.drop(false)
		}
	default: // Stream and unknown names
		c.event(submitted(t))
		c.event(status(t, stateWorking, "", false))
		for i := range chunks {
			c.event(chunk(t, ChunkText(i), i > 0, i == chunks-1))
		}
		s.setState(t.id, stateCompleted)
		c.event(status(t, stateCompleted, "", true))
	}
}

// continueTask answers a message that continues an interrupted task: it completes.
func (s *Server) continueTask(c *call, t *task, streaming bool) {
	s.setState(t.id, stateCompleted)
	answer := wireArtifact{ArtifactID: "a1", Parts: textParts(ContinuedText)}
	if !streaming {
		done := taskOf(t, stateCompleted)
		done.Artifacts = []wireArtifact{answer}
		c.result(done)
		return
	}
	if t.behavior == InputRequiredSnapshot {
		snapshot := taskOf(t, t.state)
		snapshot.Status.Message = statusMessage(t, t.state, InputQuestion)
		c.event(snapshot)
		c.event(status(t, stateWorking, "", false))
	}
	c.event(wireArtifactUpdate{Kind: kindArtifactUpdate, TaskID: t.id, ContextID: t.contextID, Artifact: answer, LastChunk: true})
	c.event(status(t, stateCompleted, "", true))
}

// send answers a send request for a task just created.
func (s *Server) send(c *call, t *task, chunks int) {
	switch t.behavior {
	case Send:
		s.setState(t.id, stateCompleted)
		c.result(guideTask(t))
	case SendWorking:
		s.setState(t.id, stateWorking)
		c.result(taskOf(t, stateWorking))
	case MessageResult:
		c.result(agentMessage("m-"+t.id, "", t.contextID, MessageText))
	case NoTaskID:
		res := taskOf(&task{contextID: t.contextID}, stateCompleted)
		res.Artifacts = []wireArtifact{{ArtifactID: "a1", Parts: textParts(ChunkText(0))}}
		c.result(res)
	case InputRequired, InputRequiredOpen, InputRequiredSnapshot:
		s.setState(t.id, stateInputRequired)
		res := taskOf(t, stateInputRequired)
		res.Status.Message = agentMessage("q-"+t.id, "", "", InputQuestion)
		c.result(res)
	case Rejected:
		s.setState(t.id, stateRejected)
		c.result(taskOf(t, stateRejected))
	case WrongID:
		c.jsonBody(c.envelope(json.RawMessage(`"not-yours"`), wireTask{ID: "t", ContextID: "c", Kind: kindTask, Status: wireStatus{State: stateCompleted}}, true))
	default:
		s.setState(t.id, stateCompleted)
		res := taskOf(t, stateCompleted)
		res.Artifacts = []wireArtifact{{ArtifactID: "a1", Parts: textParts(StreamText(chunks))}}
		c.result(res)
	}
}

func (s *Server) getTask(c *call) {
	t, ok := s.task(c.rec.TaskID)
	if !ok || t.behavior == StreamDropRefused {
		c.jsonError(codeTaskNotFound, "task not found")
		return
	}
	s.mu.Lock()
	s.tasks[t.id].gets++
	gets := s.tasks[t.id].gets
	s.mu.Unlock()
	switch {
	case t.behavior == SendWorking && t.state == stateWorking && gets >= 2:
		s.setState(t.id, stateCompleted)
		res := taskOf(&t, stateCompleted)
		res.Artifacts = []wireArtifact{{ArtifactID: "a1", Parts: textParts(PolledText)}}
		c.result(res)
	case t.behavior == StreamDropGet, t.behavior == StreamDropGetErrorEvent:
		// The task went on while the connection was down; the whole artifact is there.
		s.setState(t.id, stateCompleted)
		res := taskOf(&t, stateCompleted)
		res.Artifacts = []wireArtifact{{ArtifactID: "a-" + t.id, Parts: textParts(StreamText(2)), Metadata: map[string]any{"command": "flash"}}}
		c.result(res)
	default:
		c.result(taskOf(&t, t.state))
	}
}

func (s *Server) cancelTask(c *call) {
	s.mu.Lock()
	s.cancels = append(s.cancels, c.rec.TaskID)
	s.marks = append(s.marks, Mark{Kind: MarkCancel, TaskID: c.rec.TaskID})
	t, ok := s.tasks[c.rec.TaskID]
	if ok && !t.state.terminal() {
		t.state = stateCanceled
	}
	s.mu.Unlock()
	if !ok {
		c.jsonError(codeTaskNotFound, "task not found")
		return
	}
	cur, _ := s.task(c.rec.TaskID)
	c.result(taskOf(&cur, cur.state))
}

func (s *Server) resubscribe(c *call) {
	t, ok := s.task(c.rec.TaskID)
	if !ok {
		c.jsonError(codeTaskNotFound, "task not found")
		return
	}
	switch t.behavior {
	case StreamCut:
		c.startSSE() // an empty stream: the task is lost
	case StreamCutResumable:
		c.event(chunk(&t, ChunkText(1), true, true))
		s.setState(t.id, stateCompleted)
		c.event(status(&t, stateCompleted, "", true))
	case StreamDrop, StreamReset:
		// The SDKs answer a subscription with the task as it stands, then what follows.
		snapshot := taskOf(&t, t.state)
		snapshot.Artifacts = []wireArtifact{{ArtifactID: "a-" + t.id, Parts: textParts(ChunkText(0))}}
		c.event(snapshot)
		c.event(chunk(&t, ChunkText(1), true, true))
		s.setState(t.id, stateCompleted)
		c.event(status(&t, stateCompleted, "", true))
	case StreamDropGet:
		c.jsonError(codeUnsupportedOperation, "resubscription is not supported")
	case StreamDropGetErrorEvent:
		c.sse("data: " + c.errorEnvelope(codeTaskNotFound, "task not found") + "\n\n")
	case StreamDropRefused:
		c.jsonError(codeTaskNotFound, "task not found")
	default:
		c.event(status(&t, t.state, "", true))
	}
}

// Writers.

// encode returns the JSON of a 0.x result object as this agent's wire spells it; wrap applies
// to 1.0 only (see v1Result).
func (c *call) encode(obj any, wrap bool) []byte {
	b := mustJSON(obj)
	if c.restV0 {
		return v03Result(b, wrap)
	}
	if !c.v1 {
		return b
	}
	out, err := v1Result(b, wrap)
	if err != nil {
		panic(err.Error())
	}
	return out
}

// envelope returns a JSON-RPC response holding obj.
func (c *call) envelope(id json.RawMessage, obj any, wrap bool) string {
	if c.rest {
		return string(c.encode(obj, wrap))
	}
	return `{"jsonrpc":"2.0","id":` + string(idOrNull(id)) + `,"result":` + string(c.encode(obj, wrap)) + `}`
}

// errorEnvelope returns a JSON-RPC response holding an error (1.0: with ErrorInfo data).
func (c *call) errorEnvelope(code int, msg string) string {
	if c.restV0 {
		return restV0ErrorBody(code, msg)
	}
	if c.rest {
		return restErrorBody(code, msg)
	}
	e := wireError{Code: code, Message: msg}
	if c.v1 {
		e.Data = v1ErrorData(code)
	}
	return `{"jsonrpc":"2.0","id":` + string(idOrNull(c.id)) + `,"error":` + string(mustJSON(e)) + `}`
}

// result writes one JSON-RPC result as a JSON body. On the 1.0 wire, get and cancel answer a
// bare Task, everything else a wrapper.
func (c *call) result(obj any) {
	body := c.envelope(c.id, obj, c.op != OpGet && c.op != OpCancel)
	if c.restV0 && (c.op == OpSend || c.op == OpCancel) {
		// @a2a-js/sdk 0.3's restHandler: 201 Created for a send, 202 Accepted for a cancel.
		c.w.Header().Set("Content-Type", "application/json")
		c.w.WriteHeader(map[Op]int{OpSend: http.StatusCreated, OpCancel: http.StatusAccepted}[c.op])
		io.WriteString(c.w, body)
		return
	}
	c.jsonBody(body)
}

// jsonBody writes a JSON body as is.
func (c *call) jsonBody(body string) {
	c.w.Header().Set("Content-Type", "application/json")
	io.WriteString(c.w, body)
}

func (c *call) jsonError(code int, msg string) {
	if c.rest {
		httpStatus, _ := restStatus(code)
		if c.restV0 {
			httpStatus = restV0Status(code)
		}
		c.w.Header().Set("Content-Type", "application/json")
		c.w.WriteHeader(httpStatus)
		io.WriteString(c.w, c.errorEnvelope(code, msg))
		return
	}
	c.jsonBody(c.errorEnvelope(code, msg))
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
func (c *call) event(obj any) {
	c.sse("data: " + c.envelope(c.id, obj, true) + "\n\n")
}

// sse writes bytes into the event stream as is.
func (c *call) sse(s string) {
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
		c.sse(": keep-alive\n\n")
	}
}
