// Package h1 is an HTTP/1.1 client transport whose round trips run entirely on the caller's
// goroutine: the goroutine that calls RoundTrip writes the request and reads the response
// headers, and the goroutine that reads the body reads it straight from the connection.
//
// net/http's Transport keeps two goroutines per connection (a read loop and a write loop) and
// hands every request and every response across them. On the turn path that costs twice: each
// hand-over wakes another thread, which on a small VM adds ~0.1 ms to an agent call whose agent
// answers in 0.2 ms (docs/performance-history.md), and each open stream holds those two goroutines'
// stacks (8 KiB of ~20 KiB per stream with 10,000 open). Here a connection is a socket and two
// small buffers, and an idle one in the pool is nothing more.
//
// The wire format is net/http's own: requests are written with (*http.Request).Write and
// responses parsed with http.ReadResponse, so framing (Content-Length, chunked, trailers,
// keep-alive rules) is the standard library's. What this package adds is the connection pool,
// TLS, cancellation and the limits.
//
// A connection is shared by everyone who calls the same scheme, host and port (every tenant
// with an agent there), so no response may ever be read as the answer to a later request: a
// connection is pooled only when nothing is left past the response (in its read buffer or, over
// TLS, in crypto/tls's), and an idle one is reused only when its socket's receive queue is
// empty and open (recv with MSG_PEEK|MSG_DONTWAIT: a FIN, a 408 or stray bytes drop it). The
// same check, run over the whole pool once a second while it holds anything, releases the
// connections servers closed while idle.
//
// A chunked body closed before its end (an SSE stream closed at its final event, whose closing
// chunk over TLS comes in a record of its own) is finished off the caller's path: one goroutine
// reads at most drainMax more bytes for at most drainTimeout (even when the request's context has
// just ended: the drain sets deadlines of its own), and pools the connection only if the body
// ended within them with nothing past it; anything else closes it.
//
// It refuses what the agent calls do not need: HTTP/2 (TLS offers only http/1.1 in ALPN),
// proxies, protocol upgrades (101), compression (nothing asks for gzip, so nothing is undone),
// and Expect: 100-continue. Dialing is the caller's (netguard passes its SSRF-checked dialer).
package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/agenttls"
	"github.com/a2a-connector/a2a-connector/internal/reqauth"
)

// Options configure a Transport. Dial is required; zero values elsewhere mean the defaults.
type Options struct {
	// Dial connects to addr ("host:port"). Every connection is made with it.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLSConfig is used for https (cloned; ServerName defaults to the URL's host, NextProtos
	// is always http/1.1). Nil means the defaults with TLS 1.2 as the minimum.
	TLSConfig *tls.Config
	// TLSHandshakeTimeout bounds a TLS handshake (default 10 s).
	TLSHandshakeTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for the response headers after the request is
	// written; 0 means none (the request's context still applies).
	ResponseHeaderTimeout time.Duration
	// MaxResponseHeaderBytes caps the status line and headers of a response (default 64 KiB).
	MaxResponseHeaderBytes int64
	// MaxIdleConns caps idle connections over all hosts (default 100); MaxIdleConnsPerHost
	// caps them per host (default 2). A connection that does not fit is closed.
	MaxIdleConns, MaxIdleConnsPerHost int
	// IdleConnTimeout closes a connection idle that long (default 90 s).
	IdleConnTimeout time.Duration
	// ReadBufferSize and WriteBufferSize size each connection's buffers (default 4 KiB). A
	// read into a larger slice bypasses the read buffer.
	ReadBufferSize, WriteBufferSize int
	// Logger is told of connections dropped for bytes a server sent past a response or on an
	// idle connection (a warning: the agent or a proxy frames responses wrongly) and, at debug
	// level, of 408s. Nil discards. Never with any of the bytes.
	Logger *slog.Logger
}

// Transport is an http.RoundTripper for http and https URLs over HTTP/1.1 with keep-alive. It
// is safe for concurrent use. The response body must be read to its end or closed: a body read
// to its end returns the connection to the pool; a body closed early closes the connection,
// unless it is chunked and its end follows within drainMax bytes and drainTimeout (body.Close).
type Transport struct {
	o    Options
	log  *slog.Logger
	idle *pool // per scheme://host:port
}

var _ http.RoundTripper = (*Transport)(nil)

// New returns a Transport.
func New(o Options) *Transport {
	if o.Dial == nil {
		panic("h1: Options.Dial is nil")
	}
	if o.TLSHandshakeTimeout <= 0 {
		o.TLSHandshakeTimeout = 10 * time.Second
	}
	if o.MaxResponseHeaderBytes <= 0 {
		o.MaxResponseHeaderBytes = 64 << 10
	}
	if o.MaxIdleConns <= 0 {
		o.MaxIdleConns = 100
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = 2
	}
	if o.IdleConnTimeout <= 0 {
		o.IdleConnTimeout = 90 * time.Second
	}
	if o.ReadBufferSize <= 0 {
		o.ReadBufferSize = 4 << 10
	}
	if o.WriteBufferSize <= 0 {
		o.WriteBufferSize = 4 << 10
	}
	if o.TLSConfig == nil {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	o.TLSConfig = o.TLSConfig.Clone()
	o.TLSConfig.NextProtos = []string{"http/1.1"}
	t := &Transport{o: o, log: o.Logger}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	t.idle = newPool(o.MaxIdleConns, o.MaxIdleConnsPerHost, o.IdleConnTimeout, t.droppedIdle)
	return t
}

// RoundTrip sends req and returns its response once the headers are read. A request is sent
// again, on another connection, only when it never reached the server:
//   - it met a pooled connection the server had closed, nothing of a response was read, and the
//     request is idempotent (a GET, HEAD, OPTIONS or TRACE, or one with an Idempotency-Key or
//     X-Idempotency-Key header, which may be nil to mark it without sending it; net/http's
//     rule) with a body it can produce again;
//   - or it was answered 408 on a pooled connection (the server gave up waiting for a request
//     there before this one arrived; RFC 9110 lets the client repeat it) and its body can be
//     produced again: once, on a new connection.
//
// A request whose context carries a reqauth.Func (a signature) is authorized again before it is
// sent again; the first attempt is its caller's to authorize.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	key, addr, err := hostKey(req.URL)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	ctx := req.Context()
	send := req
	dial := false // the next attempt takes a new connection
	for {
		c, reused, err := t.conn(ctx, key, addr, req.URL.Hostname(), dial)
		if err != nil {
			closeBody(send)
			return nil, err
		}
		resp, err := c.roundTrip(ctx, send)
		if err == nil {
			if resp.StatusCode != http.StatusRequestTimeout || !reused || dial || ctx.Err() != nil || !rewindable(req) {
				resp.Request = req
				return resp, nil
			}
			resp.Body.Close() // a 408's connection is never pooled: this closes it
			t.log.DebugContext(ctx, "h1: 408 on a pooled connection; request sent again on a new one", "addr", addr)
			dial = true
		} else {
			c.close()
			if !reused || c.received > 0 || ctx.Err() != nil || !resendable(req) {
				return nil, err
			}
			// The server closed the pooled connection before this request reached it (servers
			// drop idle keep-alive connections after a few seconds), between the check of the
			// connection and the request: send it again.
		}
		if send, err = rewound(req); err != nil {
			return nil, err
		}
		if f, _ := reqauth.From(ctx); f != nil {
			// A signed request is signed again (a fresh X-Amz-Date), on a copy: a RoundTripper
			// does not change its caller's request.
			r := *send
			send = &r
			if err := reqauth.Apply(send); err != nil {
				closeBody(send)
				return nil, fmt.Errorf("h1: authorize request sent again: %w", err)
			}
		}
	}
}

// droppedIdle logs a pooled connection dropped for what its server did while it was idle.
func (t *Transport) droppedIdle(c *conn, v idleVerdict) {
	switch {
	case v == idleBytes && c.tls == nil:
		t.log.Warn("h1: bytes nobody asked for on an idle connection (the agent or a proxy frames responses wrongly); connection dropped",
			"addr", c.key)
	case v == idleBytes:
		// Over TLS they are records, which may be a close_notify alert as well as a stray reply.
		t.log.Debug("h1: records on an idle TLS connection; connection dropped", "addr", c.key)
	case v == idle408:
		t.log.Debug("h1: 408 on an idle connection; connection dropped", "addr", c.key)
	}
}

// CloseIdleConnections closes every pooled connection. Connections in use are not affected.
func (t *Transport) CloseIdleConnections() { t.idle.closeIdle() }

// conn returns a pooled connection to key (reused = true), unless dial, or dials a new one.
func (t *Transport) conn(ctx context.Context, key, addr, host string, dial bool) (c *conn, reused bool, err error) {
	if !dial {
		if c, ok := t.idle.get(key); ok {
			return c, true, nil
		}
	}
	c, err = t.dial(ctx, key, addr, host)
	return c, false, err
}

// dial opens a connection, with TLS for https.
func (t *Transport) dial(ctx context.Context, key, addr, host string) (*conn, error) {
	nc, err := t.o.Dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &conn{t: t, key: key}
	c.peeker.init(nc)
	if strings.HasPrefix(key, "https:") {
		cfg := t.o.TLSConfig
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		hctx, cancel := context.WithTimeout(ctx, t.o.TLSHandshakeTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
		}
		state := tc.ConnectionState()
		c.tls, c.tc = &state, tc
		nc = tc
		if state.Version == tls.VersionTLS13 && len(cfg.Certificates) > 0 {
			// A refusal of our client certificate comes after the handshake, and may be lost.
			nc = &certRefusalReader{Conn: tc}
		}
	}
	c.nc = nc
	c.br = bufio.NewReaderSize(&c.counter, t.o.ReadBufferSize)
	c.counter.r = nc
	c.bw = bufio.NewWriterSize(nc, t.o.WriteBufferSize)
	return c, nil
}

// conn is one HTTP/1.1 connection: a socket and its two buffers.
type conn struct {
	t       *Transport
	key     string
	nc      net.Conn
	tls     *tls.ConnectionState
	tc      *tls.Conn // nc, over TLS
	counter countingReader
	br      *bufio.Reader
	bw      *bufio.Writer
	peeker  peeker // the TCP socket's receive queue, looked at while idle

	// received counts response bytes read since the current request was written.
	received int64
	// interrupting is 1 while the current request's context may still run ctxInterrupt: until
	// a stop of it succeeds, or ctxInterrupt has returned. A drain waits for it.
	interrupting sync.WaitGroup

	// Kept by the pool, under its lock.
	pooled bool
	since  time.Time

	closeOnce sync.Once
}

func (c *conn) close() { c.closeOnce.Do(func() { c.nc.Close() }) }

// idleVerdict is what the peer of an idle connection did while it sat in the pool.
type idleVerdict int

const (
	idleClean  idleVerdict = iota // nothing: it may carry a request
	idleClosed                    // it closed or reset the connection
	idle408                       // it sent a 408, giving up on a request that never came
	idleBytes                     // it sent bytes nobody asked for: a response's tail, a reply too many
)

// idleCheck looks at c's socket without reading from it. Over TLS it sees records, not what
// they carry; what crypto/tls had already read was checked when the last response ended
// (leftover), and nothing reads c while it is idle.
func (c *conn) idleCheck() idleVerdict {
	pending, closed := c.peeker.peek()
	switch {
	case closed:
		return idleClosed
	case len(pending) == 0:
		return idleClean
	case c.tls == nil && is408(pending):
		return idle408
	}
	return idleBytes
}

// is408 reports whether b starts a 408 response (net/http's is408Message).
func is408(b []byte) bool {
	return len(b) >= len("HTTP/1.x 408") && string(b[:len("HTTP/1.")]) == "HTTP/1." && string(b[len("HTTP/1.x "):len("HTTP/1.x 408")]) == "408"
}

// leftover reports how many bytes the server sent past the response just read that c already
// holds: in its read buffer or, over TLS, decrypted or whole records in crypto/tls's buffers.
// -1 means the TLS layer found the connection closed (a close_notify) or broken.
func (c *conn) leftover() int {
	if n := c.br.Buffered(); n > 0 {
		return n
	}
	if c.tc == nil {
		return 0
	}
	// A read whose deadline has passed returns what crypto/tls holds and never reaches the
	// socket: the past deadline fails the socket read at once, and crypto/tls does not keep
	// that timeout as the connection's error (it keeps only errors that are not Temporary), so
	// the connection stays usable once the deadline is cleared.
	var b [1]byte
	c.tc.SetReadDeadline(aLongTimeAgo)
	n, err := c.tc.Read(b[:])
	c.tc.SetReadDeadline(time.Time{})
	var ne net.Error
	switch {
	case n > 0:
		return n
	case errors.As(err, &ne) && ne.Timeout():
		return 0
	}
	return -1
}

// interrupt makes a blocked read or write on c return at once.
func (c *conn) interrupt() { c.nc.SetDeadline(aLongTimeAgo) }

// ctxInterrupt is interrupt run by the request's context ending.
func (c *conn) ctxInterrupt() {
	c.interrupt()
	c.interrupting.Done()
}

// stopped stops the request's context from interrupting c; false when it did already (or does
// now).
func (c *conn) stopped(stop func() bool) bool {
	if stop() {
		c.interrupting.Done()
		return true
	}
	return false
}

var aLongTimeAgo = time.Unix(1, 0)

// roundTrip writes req and reads the response headers; the body is read by the caller.
func (c *conn) roundTrip(ctx context.Context, req *http.Request) (*http.Response, error) {
	c.received = 0
	c.counter.n = &c.received
	c.interrupting.Add(1)
	stop := context.AfterFunc(ctx, c.ctxInterrupt)
	fail := func(err error) (*http.Response, error) {
		c.stopped(stop)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if err := req.Write(c.bw); err != nil {
		return fail(fmt.Errorf("write request: %w", err))
	}
	if err := c.bw.Flush(); err != nil {
		return fail(fmt.Errorf("write request: %w", err))
	}
	var headerTimedOut *time.Timer
	if d := c.t.o.ResponseHeaderTimeout; d > 0 {
		headerTimedOut = time.AfterFunc(d, c.interrupt)
	}
	// The limit counts bytes taken from the socket, which may include the start of the body
	// the buffer read along with the headers: the buffer's size is allowed on top.
	c.counter.limit = c.t.o.MaxResponseHeaderBytes + int64(c.br.Size())
	resp, err := c.readHeaders(req)
	c.counter.limit = 0
	if headerTimedOut != nil && !headerTimedOut.Stop() {
		return fail(headerTimeoutError{})
	}
	if err != nil {
		return fail(err)
	}
	if c.tls != nil {
		resp.TLS = c.tls
	}
	b := &body{c: c, rc: resp.Body, stop: stop, ctx: ctx,
		// A server that answers 408 has given up on the connection (RFC 9110 asks it to
		// close it); RoundTrip may send the request again and must not meet it in the pool.
		reusable: !resp.Close && !req.Close && resp.StatusCode != http.StatusRequestTimeout,
		chunked:  len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"}
	if resp.Body == http.NoBody {
		// Nothing follows the headers (HEAD, 204, 304, Content-Length: 0): the connection is
		// free now.
		b.finish(nil)
		return resp, nil
	}
	resp.Body = b
	return resp, nil
}

// readHeaders reads the response to req, skipping informational (1xx) responses.
func (c *conn) readHeaders(req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			if errors.Is(err, errHeaderTooLarge) {
				return nil, fmt.Errorf("read response: headers exceed %d bytes", c.t.o.MaxResponseHeaderBytes)
			}
			return nil, fmt.Errorf("read response: %w", err)
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errors.New("read response: protocol switch (101) is not supported")
		case resp.StatusCode >= 100 && resp.StatusCode < 200:
			continue // 103 Early Hints and the like carry no body
		}
		return resp, nil
	}
}

// body is a response body read straight from its connection. Close may be called from another
// goroutine while a Read is blocked: it closes the connection, which ends the Read.
type body struct {
	c        *conn
	rc       io.ReadCloser // net/http's body reader over c.br (framing, chunked, trailers)
	ctx      context.Context
	stop     func() bool
	reusable bool
	chunked  bool // its end is a closing chunk, which Close may wait for (drain)

	mu      sync.Mutex
	done    bool  // the connection was released or closed
	reading bool  // a Read is on rc: Close must not drain it too
	err     error // what Read returns once done
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.done {
		err := b.err
		b.mu.Unlock()
		return 0, err
	}
	b.reading = true
	b.mu.Unlock()
	n, err := b.rc.Read(p)
	b.mu.Lock()
	b.reading = false
	b.mu.Unlock()
	if err == nil {
		return n, nil
	}
	if err != io.EOF && b.ctx.Err() != nil {
		err = b.ctx.Err()
	}
	b.finish(err)
	b.mu.Lock()
	err = b.err
	b.mu.Unlock()
	return n, err
}

// finish releases the connection once: back to the pool after a body read to its end (err is
// io.EOF or nil) when it can carry another request and nothing follows the response, else
// closed.
func (b *body) finish(err error) {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return
	}
	b.done = true
	if err == nil {
		err = io.EOF
	}
	b.err = err
	b.mu.Unlock()
	// stop reports false when the context's interrupt already ran (or runs now): the
	// connection's deadline is spoiled, so it is not reused.
	if b.c.stopped(b.stop) && err == io.EOF && b.reusable {
		b.release()
		return
	}
	b.c.close()
}

// release pools the connection of a body read to its end when nothing follows the response,
// else closes it.
func (b *body) release() {
	n := b.c.leftover()
	if n == 0 {
		b.c.t.idle.put(b.c)
		return
	}
	if n > 0 {
		// The next request's answer would start with these bytes: a reply too many, or the
		// tail of this one beyond a Content-Length too small.
		b.c.t.log.Warn("h1: bytes past the end of a response (the agent or a proxy frames responses wrongly); connection dropped",
			"addr", b.c.key, "bytes_seen", n)
	}
	b.c.close()
}

// Close releases the connection and returns at once. A body read to its end was released
// already; a chunked one that may still end cleanly is drained on a goroutine of its own
// (drain); any other is closed: a Content-Length remainder, a body Close interrupts a Read of
// (another goroutine's Read must end now).
func (b *body) Close() error {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return nil
	}
	b.done = true
	b.err = errBodyClosed
	reading := b.reading
	b.mu.Unlock()
	// A context that ended has set a past deadline, or is setting it (callers such as
	// a2aclient's Stream cancel it as they close): no Read was on the connection, so nothing
	// failed, and the drain waits for the interrupt to return and sets deadlines of its own.
	b.c.stopped(b.stop)
	if b.reusable && b.chunked && !reading {
		go b.drain()
		return nil
	}
	b.c.close()
	return nil
}

// The bounds of a drain. The closing chunk of a stream whose last event has come is written by
// the agent's server as its handler returns, so it follows that event within a round trip or
// less; 100 ms is ample for that on a loaded host yet short enough that a stream which goes on
// (or never ends) holds its socket and a goroutine's ~4 KiB only briefly. 4 KiB covers a
// closing chunk with trailers, or a short last event, and no more: a longer remainder is a
// stream the caller abandoned, cheaper to close than to read.
const (
	drainTimeout = 100 * time.Millisecond
	drainMax     = 4 << 10
)

// drain reads what is left of a closed chunked body, on its own goroutine (nothing else reads
// the connection: the body is done and no Read was on it), and releases the connection if the
// body ends within drainMax bytes (decoded, and taken from the socket) and drainTimeout, else
// closes it.
func (b *body) drain() {
	c := b.c
	c.interrupting.Wait()
	c.nc.SetDeadline(time.Time{})
	c.nc.SetReadDeadline(time.Now().Add(drainTimeout))
	c.counter.limit = c.received + drainMax
	n, err := io.CopyN(io.Discard, b.rc, drainMax+1)
	c.counter.limit = 0
	if err == io.EOF && n <= drainMax && c.nc.SetReadDeadline(time.Time{}) == nil {
		b.release()
		return
	}
	c.close()
}

var errBodyClosed = errors.New("h1: read on closed response body")

// countingReader counts the bytes read from the socket for the current request and, while
// limit is set, refuses to read more than limit of them (the response headers' cap).
type countingReader struct {
	r     io.Reader
	n     *int64
	limit int64
}

var errHeaderTooLarge = errors.New("response headers too large")

func (r *countingReader) Read(p []byte) (int, error) {
	if r.limit > 0 {
		left := r.limit - *r.n
		if left <= 0 {
			return 0, errHeaderTooLarge
		}
		if int64(len(p)) > left {
			p = p[:left]
		}
	}
	n, err := r.r.Read(p)
	*r.n += int64(n)
	return n, err
}

// hostKey returns the pool key (scheme://host:port) and the address to dial.
func hostKey(u *url.URL) (key, addr string, err error) {
	var port string
	switch u.Scheme {
	case "http":
		port = "80"
	case "https":
		port = "443"
	default:
		return "", "", fmt.Errorf("h1: unsupported protocol scheme %q", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return "", "", errors.New("h1: no host in request URL")
	}
	if p := u.Port(); p != "" {
		port = p
	}
	addr = net.JoinHostPort(host, port)
	return u.Scheme + "://" + addr, addr, nil
}

// resendable reports whether req may be sent again after its connection failed before any
// response byte: idempotent by method or by an idempotency key, with a body it can rewind.
func resendable(req *http.Request) bool {
	if !rewindable(req) {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, ok := req.Header["Idempotency-Key"]
	if !ok {
		_, ok = req.Header["X-Idempotency-Key"]
	}
	return ok
}

// rewindable reports whether req's body can be produced again (or it has none).
func rewindable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// rewound returns a shallow copy of req with a fresh body.
func rewound(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	b, err := req.GetBody()
	if err != nil {
		return nil, fmt.Errorf("h1: rewind request body: %w", err)
	}
	r := *req
	r.Body = b
	return &r, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// headerTimeoutError is net/http's "timeout awaiting response headers", and like it a net.Error
// whose Timeout is true: callers (internal/neterr) classify both transports' timeouts alike.
type headerTimeoutError struct{}

func (headerTimeoutError) Error() string   { return "timeout awaiting response headers" }
func (headerTimeoutError) Timeout() bool   { return true }
func (headerTimeoutError) Temporary() bool { return true }

// certRefusalReader marks a close or reset before the agent's first byte, on a TLS 1.3
// connection that sent a client certificate, as agenttls.ErrClosedAfterClientCert: the server's
// alert refusing the certificate is lost when our request crossed its close.
type certRefusalReader struct {
	net.Conn
	readAny bool
}

func (r *certRefusalReader) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	if n > 0 {
		r.readAny = true
	}
	return n, agenttls.ClosedAfterClientCert(err, true, r.readAny)
}

// Write marks a reset on writing the request alike: it is the same crossing, seen earlier.
func (r *certRefusalReader) Write(p []byte) (int, error) {
	n, err := r.Conn.Write(p)
	return n, agenttls.ClosedAfterClientCert(err, true, r.readAny)
}
