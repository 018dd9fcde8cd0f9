package probe

import (
	"net/url"
	"strings"
	"sync"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
)

// call is one exchange of a probe turn with the agent, as the wire client reported it
// (a2aclient.Exchange, on every binding): where it went, in which wire, and how the agent answered. It
// holds no header values and no body.
type call struct {
	url string
	// v1 is true when the call spoke A2A 1.0.
	v1 bool
	// binding is the binding the call went over.
	binding a2aclient.Binding
	// status is the HTTP status (gRPC: see a2aclient.Exchange), 0 when no response came.
	status int
	// mediaType is the response's media type ("text/event-stream", "application/json", …).
	mediaType string
}

// ok reports whether the agent answered the call with an A2A body: a 2xx event stream or JSON.
func (c call) ok() bool {
	return c.status >= 200 && c.status < 300 && (c.sse() || c.mediaType == "application/json")
}

func (c call) sse() bool { return c.mediaType == "text/event-stream" }

// recorder records every exchange of one probe turn (invoke.Options.Observe). The turn's own
// goroutine and invoke's background cancels report to it, hence the lock.
type recorder struct {
	mu    sync.Mutex
	calls []call
}

// observe implements invoke.Options.Observe.
func (r *recorder) observe(ex a2aclient.Exchange) {
	c := call{url: ex.URL, v1: ex.Wire == a2aclient.WireV1, binding: ex.Binding, status: ex.Status, mediaType: ex.MediaType}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

func (r *recorder) list() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

// spoke are the turn failures that come after the agent answered the message in A2A: the agent
// spoke the protocol, the turn failed for what it said.
var spoke = map[string]bool{
	connector.CodeTaskFailed:   true,
	connector.CodeAuthRequired: true,
	connector.CodeUnknownState: true,
	connector.CodeTooLarge:     true,
	connector.CodeStreamEnded:  true,
}

// answer is the call that carried the message and that the agent answered in A2A, when the turn
// got such an answer. A JSON-RPC error is a 2xx JSON body too, so the call is told apart by the
// turn's outcome and by its wire: every call after a switch to the card's other interface (a
// refused version) is in the final wire, so the answer is the first 2xx A2A body in the wire of
// the turn's last call (later calls in that wire are polls, resubscriptions and cancels).
func (t turn) answer() (call, bool) {
	if len(t.calls) == 0 || (t.res.Err != nil && !spoke[t.res.Err.Code] && !t.gotEvent) {
		return call{}, false
	}
	final := t.calls[len(t.calls)-1].v1
	for _, c := range t.calls {
		if c.ok() && c.v1 == final {
			return c, true
		}
	}
	return call{}, false
}

// versionAt is the protocol version, as the card states it, of the interface c went to: the
// fallback's when c went there, else the preferred interface's.
func versionAt(a connector.Agent, c call) string {
	if fb := a.Fallback; fb != nil && fb.URL != "" && (c.url == fb.URL || c.url == streamURL(fb.URL)) && c.v1 == (a2aclient.WireFor(fb.ProtocolVersion) == a2aclient.WireV1) {
		return fb.ProtocolVersion
	}
	return a.ProtocolVersion
}

// streamURL is the platform's streaming endpoint of a 0.x agent: the url's path with "/stream"
// appended, as invoke builds it.
func streamURL(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimSuffix(base, "/") + "/stream"
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/stream"
	if u.RawPath != "" {
		u.RawPath = strings.TrimSuffix(u.RawPath, "/") + "/stream"
	}
	return u.String()
}
