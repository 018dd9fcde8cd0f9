// Package a2aclient is the A2A protocol's client for a2a-connector: one Client (the Transport
// interface) that calls an agent over any of A2A's three bindings (JSON-RPC 2.0 over HTTP with
// Server-Sent Events for streams, HTTP+JSON, gRPC) in either protocol generation (Wire: A2A
// 0.2.5/0.3 and A2A 1.0), and hands every answer to its callers in one core model.
//
// # How each wire converts
//
// The core model is package a2a (A2A 1.0's objects, their JSON and the errors an answer can
// be). The 1.0 JSON dialect (JSON-RPC and HTTP+JSON) decodes answers with a2a's decoders; it
// writes requests from small wire structs that carry the tenant (v1request.go). The 0.x JSON
// dialect (v0.go) reads and writes package a2av0's wire structs (the 0.x JSON objects, "kind"
// and all) and converts them from and to the model; the params of a turn are written by hand
// from them (encode.go). The gRPC binding converts the protos of both generations straight to
// and from the model with package pbconv; 0.3's HTTP+JSON reads the 0.3 proto's JSON into those
// protos and converts them the same way (rest03.go). Which fields each writer covers is checked
// by reflection (encode_parity_test.go). This is the layout of a2a-go v2 (a2a core types,
// a2aclient with one transport per binding, a2apb/pbconv, a2acompat/a2av0), with our own
// client; docs/decisions.md, "Bindings", says why.
//
// It refuses to know anything about the platform: no session holds, no outcomes, no storage, no
// choice of endpoint (`{url}/stream` or `url`), no text assembly, no polling, no logging. Those
// belong to internal/invoke, which calls this package once per HTTP exchange.
//
// # Bindings
//
// Endpoint.Binding says how the calls travel: JSON-RPC (above), HTTP+JSON (rest.go: 1.0's paths
// and JSON; rest03.go: 0.3's /v1 paths and the 0.3 proto's JSON, and a2a-go's compat form of it,
// rest03legacy.go) or gRPC (grpc.go: both generations' protos). Every binding answers with the
// same Events and the same error types, under the same limits, retries and http.Client (gRPC
// dials through GRPCOptions.Dial, the same guard). ClientOptions.Observe sees how the agent
// answered each call on any of them (observe.go).
//
// # Contract for callers
//
// One Client is shared by all turns; it is safe for concurrent use. Every method takes the
// endpoint to call and the headers to put on the request (Endpoint.Header: X-API-KEY,
// X-A2A-Extensions, ...). This package never logs, traces or puts header values in errors. The
// *http.Client given to NewClient is expected to be the SSRF-guarded client (internal/netguard),
// already wrapped for OpenTelemetry by the caller (otelhttp propagates traceparent); this package
// adds no tracing of its own. The Client never follows redirects even if that client would.
//
// Methods and what they return:
//
//   - SendMessage (0.x message/send): the result decoded as an Event (*Task or *Message).
//   - SendStreamingMessage (message/stream) and SubscribeToTask (tasks/resubscribe): a *Stream whose Next
//     yields Events until io.EOF. A JSON body instead of an event stream is accepted: a JSON-RPC
//     error becomes *RPCError from the call itself, a result becomes a Stream of that one event.
//   - GetTask (tasks/get) and CancelTask (tasks/cancel): the *Task.
//   - GetExtendedAgentCard (0.3 agent/getAuthenticatedExtendedCard, GET /v1/card, gRPC
//     GetAgentCard): the authenticated extended card as JSON of its generation, capped by the
//     caller (card.go). A "not found" without an A2A reason is the not-configured error there.
//
// Errors, all prefixed "a2a <method>: ", are one of:
//
//   - *HTTPStatusError: a non-2xx answer, including 3xx (Location is set, the redirect is not
//     followed) and 404/405 (the caller's cue to fall back from `{url}/stream` to `url`). If the
//     body held a JSON-RPC error it is available through errors.As as *RPCError too.
//   - *RPCError: the agent answered with a JSON-RPC error object (Code, Message, Data).
//   - *ProtocolError: the answer broke the protocol (Kind says how: bad JSON, wrong jsonrpc
//     version, wrong id, oversized event or body, unexpected content type, unknown result kind).
//   - ErrFirstEventTimeout / ErrIdleTimeout (errors.Is) from a Stream whose StreamOptions limits
//     ran out.
//   - context.Canceled / context.DeadlineExceeded (errors.Is) when ctx ended.
//   - anything else: a transport error (dial, TLS, reset), wrapped with the number of attempts.
//
// # Retries
//
// A request is retried (at most ClientOptions.MaxRetries times, same body, so the same JSON-RPC id
// and the same messageId) only when no response was received because the connection could not be
// made (refused, reset or timed out while dialling, temporary DNS failure), or when the answer was
// 429, 502, 503 or 504. A refusal by the dialer itself (the SSRF guard), TLS and certificate
// errors, and ctx errors are never retried. The wait is Retry-After when the answer carries one
// (seconds or HTTP date), else a jittered exponential backoff between RetryWaitMin and
// RetryWaitMax. A wait that would end after ctx's deadline (or, without a deadline, a Retry-After
// longer than RetryWaitMax) is not taken: the last answer is returned at once as
// *HTTPStatusError with RetryAfter set. Nothing is retried once a 2xx response has been received,
// so a stream that has yielded events is never replayed.
//
// The loop is the package's own (retry.go): a refused answer is drained (up to 4 KiB) and closed
// before the wait, the wait ends early with ctx (the call then returns ctx's error), and a failed
// call never closes the http.Client's idle connections, which other agents' calls share.
//
// # Streams
//
// A Stream owns the HTTP response. Next is called from one goroutine; Close may be called from any
// goroutine at any time (barge-in) and is idempotent. Reaching io.EOF or an error releases the
// connection, but callers still Close (it is cheap). Cancelling ctx ends the stream promptly: a
// blocked Next returns an error matching ctx's error.
//
// StreamOptions.FirstEventTimeout bounds the time from the call until the first event starts to
// arrive (it covers connecting, retry waits and response headers); IdleTimeout bounds how long
// the agent may send nothing of an event. Bytes of event lines reset the idle clock as they
// arrive (every line, and every 4 KiB within a long one), so a large event trickling in over a
// slow link is progress, not silence. SSE comments (": keep-alive") and blank lines do not, so an
// agent that sends nothing but keep-alives still hits the idle limit. Both limits are implemented
// with one time.AfterFunc timer per stream that cancels the request, not with a goroutine per
// read; progress only records a monotonic time, and the timer re-arms itself for what is left
// when it fires early.
//
// # SSE framing
//
// The reader (package sse) follows the WHATWG event-stream rules and tolerates what agents send: a leading
// BOM; LF, CRLF and lone CR line endings; `data:` with or without the space; multi-line data
// joined with "\n"; `id:`, `retry:` and unknown fields (ignored); comments; a last event without the
// blank line before EOF (dispatched, unlike the standard, because agents close streams that way).
// Every event's data must be one JSON-RPC response. Data that is empty or only whitespace is
// skipped. `event: error` carries a JSON-RPC error (→ *RPCError) or junk (→ *ProtocolError
// "error_event"). Other named events (`event: ping`, ...) are skipped unless their data is a
// JSON-RPC response, in which case they are treated like unnamed ones. An event larger than
// ClientOptions.MaxEventBytes ends the stream with *ProtocolError "event_too_large"; memory per
// stream stays within about twice that limit.
//
// # JSON-RPC ids
//
// Requests carry a string id (ClientOptions.NewRequestID, default a random UUID). A result whose
// id is not that string is *ProtocolError "wrong_id". An error object whose id is null or absent
// is accepted as the answer to our request: JSON-RPC 2.0 mandates id null when the server could
// not read the request's id (parse error, invalid request), and the error says more than
// "wrong_id" would. An error object carrying a different non-null id is "wrong_id".
//
// # gRPC
//
// gRPC calls go through the same Client methods, retry rules, budget and Stream (its timer is
// reset per message: frames are not seen byte by byte). They are made with grpc-go, one client
// connection per target (scheme and host:port) that multiplexes every call to it on one HTTP/2
// connection, reconnects after a GOAWAY and closes the connection after
// GRPCOptions.ConnIdleTimeout without calls. Connections are dialed through GRPCOptions.Dial
// (the SSRF guard), never through a proxy. Headers travel as metadata, with A2A-Version on 1.0
// and the W3C trace context (traceparent, tracestate); statuses and their ErrorInfo become the
// same *RPCError codes as JSON-RPC's, UNAVAILABLE before an answer a transport error, and a
// 2xx that is not gRPC a *ProtocolError, as on the other bindings.
package a2aclient
