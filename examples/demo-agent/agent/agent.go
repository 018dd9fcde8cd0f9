// Package agent is the demo A2A 0.2.5 agent of a2a-connector: the "超级AI助理" sample card of the
// platform guide, with its five skills (repeat, add, count, flash, coach) served over JSON-RPC
// and Server-Sent Events. `make run` registers it for the demo tenant, and end-to-end tests of
// the connector mount Handler on httptest servers to talk to a real agent over real HTTP.
//
// With Options.VoiceExtension it also implements the platform's voice extension (voice.go):
// three more skills (a PIN collected by DTMF, terms that must not be interrupted, hand-off to a
// human), reprompts on silence and replies that know where the caller cut the previous one. It
// reads and writes the extension's metadata only on turns whose request activates it.
//
// It keeps tasks and conversation contexts in memory only (bounded, oldest evicted first) and
// refuses to be anything more than a demo: no persistence, no push notifications, no
// authenticated extended card, no non-blocking message/send (every send answers when the task is
// final or input-required), no file or data parts (-32005).
//
// Task continuation: a message whose taskId names a task in input-required continues that task.
// A taskId of an unknown (or evicted) task is -32001 TaskNotFound; one of a task that is final or
// still working is -32602 InvalidParams, as in the reference Python SDK: A2A tasks never restart
// after a terminal state, and -32002 is reserved for tasks/cancel.
//
// A client that disconnects from a running stream (or whose message/send request is cancelled)
// abandons its task: the work stops at once and the task ends canceled.
package agent

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
)

// Paths the agent serves.
const (
	// RPCPath is the JSON-RPC endpoint, the card's url.
	RPCPath = "/a2a/demo/v1"
	// StreamPath is where the platform sends message/stream: the card's url + "/stream".
	StreamPath = RPCPath + "/stream"
	// CardPath is the A2A 0.2 well-known card path.
	CardPath = "/.well-known/agent.json"
	// CardPathV03 is the A2A 0.3 well-known card path; it serves the same card.
	CardPathV03 = "/.well-known/agent-card.json"
)

// MaxBodyBytes caps a JSON-RPC request body; a larger one is answered 413.
const MaxBodyBytes = 1 << 20

// Defaults of Options.
const (
	DefaultMaxTasks    = 10_000
	DefaultMaxContexts = 10_000
	// maxRecorded bounds Requests: the oldest calls are dropped first.
	maxRecorded = 1000
)

// Options configure an Agent. The zero value is a working agent without an API key.
type Options struct {
	// PublicURL is the base URL written into the card (its url is PublicURL + RPCPath), e.g.
	// "https://agent.example.com". Empty: derived from each card request's Host (https when the
	// request came over TLS), which suits httptest servers and agents behind a plain proxy.
	PublicURL string
	// APIKey, when set, is required in the X-API-KEY header of every JSON-RPC request (else 401)
	// and the card declares `security: ["apiKey"]`. The card itself stays public: the console
	// fetches it before any key is configured.
	APIKey string
	// ChunkDelay is the pause between the coach skill's chunks; 0 streams them without pause.
	ChunkDelay time.Duration
	// MaxTasks and MaxContexts bound the in-memory stores; beyond them the least recently used
	// entry is forgotten. 0 means DefaultMaxTasks / DefaultMaxContexts.
	MaxTasks    int
	MaxContexts int
	// Logger gets one line per JSON-RPC call (method, task, state; never the user's text).
	// Nil discards.
	Logger *slog.Logger
	// Now is the clock for status timestamps; nil means time.Now.
	Now func() time.Time
	// VoiceExtension, when set, is the URI of the platform's voice extension
	// (VoiceExtensionURI by default in the demo-agent command): the card declares it and adds
	// the balance, terms and hand-off skills, and turns that activate it (the URI in
	// A2A-Extensions or X-A2A-Extensions) read and write the voice metadata keys, URI + "/input"
	// and so on. Empty, the zero value, is the platform guide's agent exactly: end-to-end tests
	// of the connector that predate the extension see the card they expect.
	VoiceExtension string
}

// Agent is the demo agent. It is safe for concurrent use; all its state lives in memory.
type Agent struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time

	// mu guards everything below, and every *task reachable from tasks.
	mu       sync.Mutex
	tasks    *lru[*task]
	contexts *lru[*conversation]
	// said is the reply to each activated turn, by the turn's messageId, so that an
	// interruption naming that messageId finds what was cut.
	said     *lru[*spokenReply]
	cancels  int
	requests []Request
	newID    func() string
}

// Request is one HTTP call to the JSON-RPC endpoints as the agent saw it, recorded so that tests
// can check what the connector sent.
type Request struct {
	// Path is the URL path called (RPCPath or StreamPath).
	Path string
	// Method is the JSON-RPC method; empty when the call was refused before its body was read
	// (Unauthorized) or the body was not a JSON-RPC request.
	Method string
	// Header is a copy of the request headers. The values of X-API-KEY, Authorization and
	// Cookie are replaced by "set", so tests see presence, never secrets.
	Header http.Header
	// Unauthorized is true when the call was refused for a missing or wrong X-API-KEY.
	Unauthorized bool
	// The message of message/send and message/stream (empty for other methods). Metadata is
	// shared: treat it as read-only.
	MessageID string
	TaskID    string
	ContextID string
	Text      string
	Metadata  map[string]any
}

// New returns an agent configured by o.
func New(o Options) *Agent {
	o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	if o.MaxTasks <= 0 {
		o.MaxTasks = DefaultMaxTasks
	}
	if o.MaxContexts <= 0 {
		o.MaxContexts = DefaultMaxContexts
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &Agent{
		opts:     o,
		log:      log,
		now:      now,
		tasks:    newLRU[*task](o.MaxTasks),
		contexts: newLRU[*conversation](o.MaxContexts),
		said:     newLRU[*spokenReply](o.MaxTasks),
		newID:    uuid.NewString,
	}
}

// Handler returns the agent's HTTP handler: the card at CardPath and CardPathV03, JSON-RPC at
// RPCPath and StreamPath (both accept every method; streaming methods answer with SSE), and
// GET /healthz.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+CardPath, a.serveCard)
	mux.HandleFunc("GET "+CardPathV03, a.serveCard)
	mux.HandleFunc("POST "+RPCPath, a.serveRPC)
	mux.HandleFunc("POST "+StreamPath, a.serveRPC)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

// Requests returns the JSON-RPC calls received so far, oldest first (at most the last 1000).
func (a *Agent) Requests() []Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Request, len(a.requests))
	for i, r := range a.requests {
		r.Header = r.Header.Clone()
		out[i] = r
	}
	return out
}

// CancelCount returns how many tasks/cancel calls canceled a task.
func (a *Agent) CancelCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cancels
}

// Canceled reports whether taskID was canceled by a tasks/cancel call (not by its client going
// away). It is false for tasks the agent does not know or has forgotten.
func (a *Agent) Canceled(taskID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.tasks.peek(taskID)
	return ok && t.canceledByRequest
}

// Task returns a snapshot of the task (with its full history), as tasks/get would.
func (a *Agent) Task(taskID string) (a2av0.Task, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.tasks.peek(taskID)
	if !ok {
		return a2av0.Task{}, false
	}
	return t.snapshot(-1), true
}

// record appends r to the request log; the caller holds no lock.
func (a *Agent) record(r Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.requests) >= maxRecorded {
		a.requests = append(a.requests[:0], a.requests[len(a.requests)-maxRecorded+1:]...)
	}
	a.requests = append(a.requests, r)
}

// redactedHeader copies h with secret values replaced by "set".
func redactedHeader(h http.Header) http.Header {
	c := h.Clone()
	for _, k := range []string{"X-Api-Key", "Authorization", "Cookie"} {
		if vs, ok := c[k]; ok {
			for i := range vs {
				vs[i] = "set"
			}
		}
	}
	return c
}
