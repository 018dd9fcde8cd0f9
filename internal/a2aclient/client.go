package a2aclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/reqauth"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/google/uuid"
)

// Defaults of ClientOptions.
const (
	DefaultMaxRetries    = 2
	DefaultMaxEventBytes = 1 << 20
	DefaultMaxBodyBytes  = 4 << 20
	DefaultRetryWaitMin  = 200 * time.Millisecond
	DefaultRetryWaitMax  = 2 * time.Second
)

// statusBodyLimit bounds what is read from a non-2xx body (to find a JSON-RPC error in it).
const statusBodyLimit = 64 << 10

// ClientOptions tune a Client. The zero value means every default.
type ClientOptions struct {
	// MaxRetries is the most retries one call may make after its first attempt (default 2;
	// negative: none), each only when RetryBudget allows it.
	MaxRetries int
	// RetryBudget bounds the retries per endpoint (Endpoint.BudgetKey) across calls; nil: only
	// MaxRetries bounds them.
	RetryBudget *RetryBudget
	// MaxEventBytes caps one SSE event's data (default 1 MiB).
	MaxEventBytes int
	// MaxBodyBytes caps a JSON (non-stream) answer (default 4 MiB).
	MaxBodyBytes int64
	// RetryWaitMin and RetryWaitMax bound the backoff between attempts (defaults 200ms and 2s).
	// Without a ctx deadline, RetryWaitMax also caps the Retry-After the client is willing to
	// wait for.
	RetryWaitMin, RetryWaitMax time.Duration
	// NewRequestID returns the JSON-RPC id of a new request (default: a random UUID).
	NewRequestID func() string
	// Now is the clock used to read Retry-After dates and deadlines (default time.Now).
	Now func() time.Time
	// GRPC configures the gRPC binding (the guarded dialer above all); without it gRPC
	// interfaces are refused.
	GRPC GRPCOptions
	// Observe, when set, is told how the agent answered each call, on every binding (see
	// Exchange). It runs on the calling goroutine and must be quick.
	Observe func(Exchange)
}

// Endpoint is where and how to call an agent.
type Endpoint struct {
	// URL is the interface URL (JSON-RPC: the card's url, or url + "/stream", the caller
	// decides; HTTP+JSON: the base the binding's paths are appended to).
	URL string
	// Wire is the wire generation the agent speaks there (default WireV0).
	Wire Wire
	// Binding is how the interface carries the calls (default JSON-RPC); HTTP+JSON and gRPC
	// are spoken in each Wire's own form.
	Binding Binding
	// Tenant is the A2A 1.0 tenant of the interface, sent in the params of every WireV1
	// JSON-RPC call and as the path segment after URL on HTTP+JSON; "" sends none. WireV0 has
	// no tenant.
	Tenant string
	// BudgetKey names the endpoint in the RetryBudget (the agent's interface URL, so that its
	// `{url}/stream` and task calls share one budget); "" means URL.
	BudgetKey string
	// Header is sent on every request of the call (X-API-KEY, X-A2A-Extensions, ...). It is
	// never logged and never put in errors. Content-Type and Accept are set by the Client.
	Header http.Header
	// Authorize, when set, authorizes each attempt of each request after every other header is
	// set (a signature over method, URL, headers and body: AWS SigV4). It is called again for a
	// retried attempt, so that nothing stale is sent again; over gRPC it signs the call's
	// HTTP/2 request (grpc_auth.go).
	Authorize reqauth.Func
}

// StreamOptions bound the waits of a Stream. Zero disables a limit; ctx still applies.
type StreamOptions struct {
	// FirstEventTimeout bounds the time from the call until the first event starts to arrive,
	// including connecting, retry waits and response headers. When zero, IdleTimeout applies to
	// the first event too.
	FirstEventTimeout time.Duration
	// IdleTimeout bounds how long the agent may send nothing of an event: every line of an
	// event (and every 4 KiB of a long line) resets it. SSE comments and blank lines do not.
	IdleTimeout time.Duration
}

// Client calls A2A agents over JSON-RPC and HTTP+JSON (Endpoint.Binding). It is the
// Transport of every binding it speaks. It is safe for concurrent use.
type Client struct {
	hc   *http.Client
	opts ClientOptions
	grpc *grpcPool
	// restLegacy holds the 0.3 HTTP+JSON interface URLs found to speak a2a-go's compat form
	// (rest03legacy.go); it grows by one entry per such interface.
	restLegacy sync.Map
}

// NewClient returns a Client that sends requests with hc (normally the SSRF-guarded client,
// wrapped for tracing). hc.Timeout must be zero: it would cut long streams; bound calls with ctx
// and StreamOptions instead. The Client uses its own shallow copy of hc that never follows
// redirects and whose retries cannot close hc's idle connections; hc itself is not modified.
func NewClient(hc *http.Client, o ClientOptions) *Client {
	if hc == nil {
		hc = &http.Client{}
	}
	inner := *hc
	inner.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	if o.MaxRetries == 0 {
		o.MaxRetries = DefaultMaxRetries
	} else if o.MaxRetries < 0 {
		o.MaxRetries = 0
	}
	if o.MaxEventBytes <= 0 {
		o.MaxEventBytes = DefaultMaxEventBytes
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.RetryWaitMin <= 0 {
		o.RetryWaitMin = DefaultRetryWaitMin
	}
	if o.RetryWaitMax <= 0 {
		o.RetryWaitMax = DefaultRetryWaitMax
	}
	if o.RetryWaitMax < o.RetryWaitMin {
		o.RetryWaitMax = o.RetryWaitMin
	}
	if o.NewRequestID == nil {
		o.NewRequestID = uuid.NewString
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Client{hc: &inner, opts: o, grpc: newGRPCPool(o.GRPC)}
}

// Close closes the pooled gRPC connections (HTTP connections belong to the http.Client). Calls
// after Close fail on gRPC interfaces. It is idempotent.
func (c *Client) Close() { c.grpc.close() }

// SendMessage calls SendMessage (0.x: message/send) and returns the result: a *Task or a
// *Message.
func (c *Client) SendMessage(ctx context.Context, ep Endpoint, r *a2a.SendMessageRequest) (a2a.Event, error) {
	return c.unary(ctx, ep, OpSendMessage, r)
}

// GetTask calls GetTask (0.x: tasks/get).
func (c *Client) GetTask(ctx context.Context, ep Endpoint, r a2a.GetTaskRequest) (*a2a.Task, error) {
	return c.taskCall(ctx, ep, OpGetTask, r)
}

// CancelTask calls CancelTask (0.x: tasks/cancel) and returns the task as the agent reports it
// after the request.
func (c *Client) CancelTask(ctx context.Context, ep Endpoint, r a2a.CancelTaskRequest) (*a2a.Task, error) {
	return c.taskCall(ctx, ep, OpCancelTask, r)
}

// SendStreamingMessage calls SendStreamingMessage (0.x: message/stream). See the package doc
// for what a Stream yields and how it ends.
func (c *Client) SendStreamingMessage(ctx context.Context, ep Endpoint, r *a2a.SendMessageRequest, so StreamOptions) (*Stream, error) {
	return c.stream(ctx, ep, OpStreamMessage, r, so)
}

// SubscribeToTask calls SubscribeToTask (0.x: tasks/resubscribe) to reattach to a running
// task's event stream.
func (c *Client) SubscribeToTask(ctx context.Context, ep Endpoint, r a2a.SubscribeToTaskRequest, so StreamOptions) (*Stream, error) {
	return c.stream(ctx, ep, OpSubscribeToTask, r, so)
}

// GetExtendedAgentCard calls GetExtendedAgentCard (0.3: agent/getAuthenticatedExtendedCard,
// GET /v1/card, gRPC GetAgentCard) with the endpoint's credentials and returns the agent's
// authenticated extended card as JSON of its generation (1.0 or 0.3), as its card URL would
// serve it, at most maxBytes of answer (<= 0: MaxBodyBytes). See card.go.
func (c *Client) GetExtendedAgentCard(ctx context.Context, ep Endpoint, maxBytes int64) (json.RawMessage, error) {
	return c.extendedCard(ctx, ep, maxBytes)
}

// Method returns the JSON-RPC method of op on wire w ("message/stream",
// "SendStreamingMessage", ...), for logs and traces.
func Method(w Wire, op Op) string { return dialectOf(w).method(op) }

// call is one call: an operation spelled in one wire's dialect, its JSON-RPC request id, and
// whether it goes over HTTP+JSON (rest) instead of JSON-RPC.
type call struct {
	d      dialect
	op     Op
	method string
	id     string
	rest   bool
	// grpcV0: A2A 0.3 over gRPC (its own proto; see package pbconv).
	grpcV0 bool
	// restV0: A2A 0.3 over HTTP+JSON (rest is set too; see rest03.go); restLegacy: in a2a-go's
	// compat form of it (rest03legacy.go).
	restV0, restLegacy bool
}

func (c *Client) newCall(ep Endpoint, op Op) (call, error) {
	d := dialectOf(ep.Wire)
	cl := call{d: d, op: op, method: d.method(op), rest: ep.Binding == BindingHTTPJSON}
	if !ep.Binding.Spoken(ep.Wire) {
		return cl, fmt.Errorf("a2a %s: the %s binding of A2A %s is not supported", cl.method, ep.Binding, ep.Wire)
	}
	if ep.Binding == BindingJSONRPC {
		cl.id = c.opts.NewRequestID()
	}
	if ep.Binding == BindingGRPC {
		// The messages are protos (package pbconv); the 1.0 dialect gives a 1.0 call its headers.
		cl.d, cl.grpcV0 = v1Dialect{}, ep.Wire == WireV0
	}
	if cl.rest && ep.Wire == WireV0 {
		// 0.3's HTTP+JSON carries the 0.3 proto, built and read as 0.3 gRPC does.
		cl.d, cl.restV0 = v1Dialect{}, true
	}
	return cl, nil
}

// decode decodes one JSON-RPC response of the call: its result as an Event, or the agent's
// *RPCError, or a *ProtocolError.
func (cl call) decode(data []byte) (a2a.Event, error) {
	if cl.rest {
		return cl.decodeREST(data)
	}
	if result := plainResult(data, cl.id); result != nil {
		// One pass instead of the envelope's and then the result's. An error may be the
		// envelope's (an "error" member after the result, say): decodeEnvelope reports it.
		if ev, err := cl.d.decodeResult(cl.op, result); err == nil {
			return ev, nil
		}
	}
	return cl.decodeTwoPass(data)
}

// decodeTwoPass is decode in two passes: the envelope, then its result.
func (cl call) decodeTwoPass(data []byte) (a2a.Event, error) {
	result, err := decodeEnvelope(cl.method, data, cl.id)
	if err != nil {
		return nil, err
	}
	ev, err := cl.d.decodeResult(cl.op, result)
	if err != nil {
		return nil, withMethod(cl.method, err)
	}
	return ev, nil
}

func (c *Client) taskCall(ctx context.Context, ep Endpoint, op Op, params any) (*a2a.Task, error) {
	ev, err := c.unary(ctx, ep, op, params)
	if err != nil {
		return nil, err
	}
	t, ok := ev.(*a2a.Task)
	if !ok {
		return nil, &a2a.ProtocolError{Method: Method(ep.Wire, op), Kind: a2a.ProtocolInvalidResponse, Detail: "result is a " + eventName(ev) + ", want a task"}
	}
	return t, nil
}

// unary makes a non-streaming call and decodes its single JSON answer.
func (c *Client) unary(ctx context.Context, ep Endpoint, op Op, params any) (a2a.Event, error) {
	cl, err := c.newCall(ep, op)
	if err != nil {
		return nil, err
	}
	if ep.Binding == BindingGRPC {
		return c.grpcUnary(ctx, ep, cl, params)
	}
	resp, err := c.doREST(ctx, ep, &cl, params, "application/json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if ct := mediaType(resp.Header); !isJSONType(ct) {
		return nil, unexpectedType(cl.method, ct)
	}
	body, err := c.readBody(ctx, cl.method, resp.Body)
	if err != nil {
		return nil, err
	}
	return cl.decode(body)
}

// readBody reads a whole JSON answer, at most MaxBodyBytes.
func (c *Client) readBody(ctx context.Context, method string, r io.Reader) ([]byte, error) {
	return c.readBodyMax(ctx, method, r, c.opts.MaxBodyBytes)
}

// readBodyMax reads a whole JSON answer, at most limit bytes.
func (c *Client) readBodyMax(ctx context.Context, method string, r io.Reader, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return nil, fmt.Errorf("a2a %s: read response: %w", method, cause)
		}
		return nil, fmt.Errorf("a2a %s: read response: %w", method, err)
	}
	if int64(len(body)) > limit {
		return nil, &a2a.ProtocolError{Method: method, Kind: a2a.ProtocolBodyTooLarge, Detail: fmt.Sprintf("response body exceeds %d bytes", limit)}
	}
	return body, nil
}

// do sends one JSON-RPC request with retries and returns a 2xx response (whose body the caller
// closes), or an error. Non-2xx answers become *HTTPStatusError.
func (c *Client) do(ctx context.Context, ep Endpoint, cl call, params any, accept string) (*http.Response, error) {
	method := cl.method
	var req *http.Request
	var err error
	if cl.restLegacy {
		req, err = restLegacyRequest(ctx, ep, cl, params, accept)
	} else if cl.restV0 {
		req, err = restV0Request(ctx, ep, cl, params, accept)
	} else if cl.rest {
		req, err = restRequest(ctx, ep, cl, params, accept)
	} else {
		req, err = newRequest(ctx, ep, cl, params, accept)
	}
	if err != nil {
		return nil, err
	}
	if ep.Authorize != nil {
		if req, err = withAuthorize(req, ep.Authorize); err != nil {
			return nil, fmt.Errorf("a2a %s: %w", method, err)
		}
	}
	pol := &retryPolicy{opts: &c.opts, budgetKey: ep.BudgetKey}
	if pol.budgetKey == "" {
		pol.budgetKey = ep.URL
	}
	if b := c.opts.RetryBudget; b != nil {
		b.call(pol.budgetKey)
	}
	resp, err := c.send(ctx, req, pol)
	c.observe(ep, cl.op, req.URL.String(), resp)
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		if cause := context.Cause(ctx); cause != nil {
			// ctx ended (the caller, its deadline, or a Stream's own timer): say why, not how
			// the transport noticed.
			return nil, fmt.Errorf("a2a %s: %w", method, cause)
		}
		if pol.attempts > 1 {
			return nil, fmt.Errorf("a2a %s: after %d attempts: %w", method, pol.attempts, err)
		}
		return nil, fmt.Errorf("a2a %s: %w", method, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, c.statusError(cl, resp)
}

// newRequest builds the JSON-RPC POST of one call: the body in the call's dialect, the
// endpoint's headers, and the dialect's version header.
func newRequest(ctx context.Context, ep Endpoint, cl call, params any, accept string) (*http.Request, error) {
	method, id := cl.method, cl.id
	rawParams, err := cl.d.encodeParams(cl.op, params, ep.Tenant)
	if err != nil {
		return nil, fmt.Errorf("a2a %s: encode params: %w", method, err)
	}
	// The envelope is written by hand around the params, which are compact JSON already:
	// marshalling a Request would scan and compact them again. Same bytes (appendString quotes
	// as encoding/json does).
	body := make([]byte, 0, len(`{"jsonrpc":"2.0","id":"","method":"","params":}`)+len(id)+len(method)+16+len(rawParams))
	body = append(body, `{"jsonrpc":"`+JSONRPCVersion+`","id":`...)
	body = appendString(body, id)
	body = append(body, `,"method":`...)
	body = appendString(body, method)
	body = append(body, `,"params":`...)
	body = append(body, rawParams...)
	body = append(body, '}')
	req, err := newHTTPRequest(ctx, http.MethodPost, ep.URL, body)
	if err != nil {
		return nil, fmt.Errorf("a2a %s: build request: %w", method, err)
	}
	for k, vs := range ep.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	cl.d.header(req.Header)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	// Our requests are idempotent (a retried turn carries the same messageId). Saying so lets
	// net/http resend a POST whose reused keep-alive connection the agent had just closed
	// (Node and Python servers drop idle connections after 5 s) instead of failing the turn.
	// A nil value marks the request without sending the header.
	req.Header["Idempotency-Key"] = nil
	return req, nil
}

// statusError turns a non-2xx answer into *HTTPStatusError, reading a bounded part of the body:
// a JSON-RPC error in it (rest false) or a google.rpc.Status (rest true, mapped to the JSON-RPC
// code of the same error) becomes its RPC.
func (c *Client) statusError(cl call, resp *http.Response) error {
	method, rest := cl.method, cl.rest
	e := &HTTPStatusError{
		Method:     method,
		StatusCode: resp.StatusCode,
		RetryAfter: retryAfter(resp.Header, c.opts.Now()),
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		e.Location = resp.Header.Get("Location")
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, statusBodyLimit))
	e.Body = Clip(string(body), 512, "")
	if rest {
		e.Binding = BindingHTTPJSON
		if len(body) > 0 && isJSONType(mediaType(resp.Header)) {
			if rpc, ok := cl.restError(body, resp.StatusCode); ok {
				e.RPC = rpc
			}
		}
		return e
	}
	if isJSONType(mediaType(resp.Header)) && len(body) > 0 {
		var r Response
		if jsonv1.Unmarshal(body, &r) == nil && r.Error != nil {
			r.Error.Method = method
			e.RPC = r.Error
		}
	}
	return e
}

// retryAfter parses the Retry-After header for HTTPStatusError; 0 when absent or unreadable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	d, _ := parseRetryAfter(h.Get("Retry-After"), now)
	return d
}

// parseRetryAfter reads delay-seconds or an HTTP date. A date in the past is a zero wait.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(24*time.Hour/time.Second) {
			secs = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// mediaType returns the lower-case media type of the Content-Type header, "" when absent.
func mediaType(h http.Header) string {
	ct := h.Get("Content-Type")
	if ct == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt, _, _ = strings.Cut(ct, ";")
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

// isJSONType accepts JSON media types, and also text/plain and no type at all: Go servers that
// do not set Content-Type (the official A2A Go SDK among them) get text/plain from content
// sniffing. Such a body must still parse as JSON-RPC.
func isJSONType(mt string) bool {
	switch {
	case mt == "", mt == "application/json", mt == "text/json", mt == "text/plain":
		return true
	case strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"):
		return true
	}
	return false
}

func unexpectedType(method, mt string) error {
	return &a2a.ProtocolError{Method: method, Kind: a2a.ProtocolUnexpectedContentType, Detail: "content type " + quoteShort(mt)}
}

// Clip shortens text an agent sent for a message that quotes it: at most n bytes, cut at a rune
// boundary, with more appended when it had to cut, and valid UTF-8 (a gRPC string must be).
func Clip(s string, n int, more string) string {
	cut := len(s) > n
	if cut {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if cut {
		s += more
	}
	return s
}

// trimmedEmpty reports whether b is empty or only whitespace.
func trimmedEmpty(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

// eventName names the type of ev for error messages.
func eventName(ev a2a.Event) string {
	switch ev.(type) {
	case *a2a.Task:
		return "task"
	case *a2a.Message:
		return "message"
	case *a2a.TaskStatusUpdateEvent:
		return "status update"
	case *a2a.TaskArtifactUpdateEvent:
		return "artifact update"
	}
	return "nothing"
}
