package netguard

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"syscall"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/h1"
)

// ErrTooManyRedirects is returned (wrapped in a *url.Error) when a response would be the
// redirect beyond ClientOptions.MaxRedirects.
var ErrTooManyRedirects = errors.New("too many redirects")

// ClientOptions tune one client. The zero value is a client that follows no redirects, with
// 5 s dial and TLS handshake timeouts and no response header timeout.
type ClientOptions struct {
	// MaxRedirects is how many redirects are followed. 0: none; the 3xx response is returned
	// to the caller as is. N > 0: up to N, each hop re-checked (scheme and dialed address);
	// the N+1th is an error matching ErrTooManyRedirects.
	MaxRedirects int
	// DialTimeout bounds one TCP connect (default 5 s).
	DialTimeout time.Duration
	// TLSHandshakeTimeout bounds the TLS handshake (default 5 s).
	TLSHandshakeTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for response headers after the request is written;
	// 0 means none (streaming clients rely on the context).
	ResponseHeaderTimeout time.Duration
	// RootCAs verifies servers; nil means the system roots (tests pass a test CA).
	RootCAs *x509.CertPool
	// WrapTransport, if set, wraps the guarded transport (e.g. otelhttp). It is applied
	// outermost, so the URL check still sees the request as it is finally sent.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// InlineHTTP1 sends requests with internal/h1 instead of net/http's Transport: HTTP/1.1
	// only, each round trip and body read on the caller's goroutine, no goroutines per
	// connection. For the agent calls of the turn path, where net/http's hand-overs between
	// its connection goroutines cost ~0.1 ms a call and 8 KiB of stacks per open stream
	// (docs/decisions.md#runtime: agent calls go over HTTP/1.1 on the caller's goroutine).
	InlineHTTP1 bool
	// Logger is told, with InlineHTTP1, of connections dropped because an agent sent bytes
	// past a response or on an idle connection (internal/h1). Nil discards.
	Logger *slog.Logger
}

const defaultTimeout = 5 * time.Second

// NewClient returns an *http.Client whose every dial is checked against p, on the address
// actually dialed, and whose every request, redirect hops included, is checked with
// p.CheckURL. It never sets Client.Timeout, which would cut SSE streams; deadlines come from
// the request context. It uses no proxy: a proxy would dial on the client's behalf and defeat
// the check. Share one client per purpose; it is safe for concurrent use.
func NewClient(p Policy, o ClientOptions) *http.Client {
	// The caller keeps its slice; a later change to it must not race with or alter this client.
	p.AllowedCIDRs = slices.Clone(p.AllowedCIDRs)
	dialTimeout := orDefault(o.DialTimeout)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return p.dial(ctx, dialTimeout, network, addr)
	}
	const maxResponseHeaderBytes = 64 << 10
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.RootCAs}
	build := func(tlsConfig *tls.Config) roundTripCloser {
		if !o.InlineHTTP1 {
			return newTransport(o, dial, tlsConfig, maxResponseHeaderBytes)
		}
		// The same limits as the net/http transport, and why, are said there.
		return h1.New(h1.Options{
			Dial:                   dial,
			TLSConfig:              tlsConfig,
			TLSHandshakeTimeout:    orDefault(o.TLSHandshakeTimeout),
			ResponseHeaderTimeout:  o.ResponseHeaderTimeout,
			MaxResponseHeaderBytes: maxResponseHeaderBytes,
			MaxIdleConns:           4096,
			MaxIdleConnsPerHost:    1024,
			IdleConnTimeout:        90 * time.Second,
			ReadBufferSize:         1 << 10,
			WriteBufferSize:        1 << 10,
			Logger:                 o.Logger,
		})
	}
	// A call whose context carries an agenttls.Identity (an agent's client certificate or CA
	// bundle) goes through a transport of that Identity's own, built alike.
	var rt http.RoundTripper = &guardedTransport{policy: p, next: build(tlsConfig), ids: &identityTransports{build: build}}
	if o.WrapTransport != nil {
		rt = o.WrapTransport(rt)
	}
	maxRedirects := o.MaxRedirects
	return &http.Client{
		Transport: rt,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if maxRedirects <= 0 {
				return http.ErrUseLastResponse
			}
			if len(via) > maxRedirects {
				return fmt.Errorf("stopped after %d: %w", maxRedirects, ErrTooManyRedirects)
			}
			// The transport checks again; refusing here means the hop is never attempted.
			return p.CheckURL(req.URL)
		},
	}
}

// roundTripCloser is a transport whose idle connections can be closed.
type roundTripCloser interface {
	http.RoundTripper
	CloseIdleConnections()
}

func newTransport(o ClientOptions, dial func(context.Context, string, string) (net.Conn, error), tlsConfig *tls.Config, maxResponseHeaderBytes int64) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           dial,
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   orDefault(o.TLSHandshakeTimeout),
		ResponseHeaderTimeout: o.ResponseHeaderTimeout,
		ForceAttemptHTTP2:     true,
		// An HTTP/1.1 agent takes one turn per connection, so a busy agent needs as many
		// connections as it has concurrent turns. With room for only 64 idle ones per host,
		// every dip below the peak closed the rest and the next rise dialed them again: at
		// c=100 (make loadtest) ~80 new connections a second, each a dial, a TCP handshake, two
		// goroutines and buffers on both sides. An idle connection costs ~12 KB here.
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		// A remote we do not control must not make us buffer megabytes of headers (net/http's
		// default allows 10 MiB); real agents and card hosts send a few KiB.
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		// Requests are a JSON-RPC call of a few KiB at most; the write buffer lives as long as
		// the connection, and a connector holds thousands of them open under long streams.
		WriteBufferSize: 1 << 10,
		// Likewise the read buffer (net/http's default is 4 KiB): it holds a response's headers
		// and a few SSE events at a time. A read into a larger slice (a whole JSON answer, a
		// card) bypasses it, so big bodies cost no more system calls. 10,000 open streams:
		// ~30 MB less live heap.
		ReadBufferSize: 1 << 10,
	}
}

func orDefault(d time.Duration) time.Duration {
	if d <= 0 {
		return defaultTimeout
	}
	return d
}

// Dialer returns a dial function that connects like the clients' (every address checked
// against p before connect(2)), for transports that dial on their own: the agent calls over
// gRPC. timeout bounds one connect (0: 5 s).
func (p Policy) Dialer(timeout time.Duration) func(ctx context.Context, addr string) (net.Conn, error) {
	p.AllowedCIDRs = slices.Clone(p.AllowedCIDRs)
	timeout = orDefault(timeout)
	return func(ctx context.Context, addr string) (net.Conn, error) {
		return p.dial(ctx, timeout, "tcp", addr)
	}
}

// dial connects to addr ("host:port"), refusing in the Control hook, after resolution and
// before connect(2), any address p refuses. When a name resolves to several addresses each
// is checked as it is tried.
func (p Policy) dial(ctx context.Context, timeout time.Duration, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	d := net.Dialer{
		Timeout:   timeout,
		KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				// Fail closed: an address we cannot read is an address we cannot vouch for.
				return &BlockedAddressError{Host: host, Reason: fmt.Sprintf("unparsable dial address %q", address)}
			}
			return p.checkAddr(ap.Addr(), host)
		},
	}
	return d.DialContext(ctx, network, addr)
}

// guardedTransport checks every request's URL, including each redirect hop, before the
// inner transport sees it.
type guardedTransport struct {
	policy Policy
	next   roundTripCloser
	ids    *identityTransports
}

// RoundTrip refuses a request whose URL p.CheckURL refuses, else passes it on.
func (g *guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := g.policy.CheckURL(req.URL); err != nil {
		// A RoundTripper must close the body even when it fails.
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return g.nextFor(req).RoundTrip(req)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the inner transport.
func (g *guardedTransport) CloseIdleConnections() {
	g.next.CloseIdleConnections()
	g.ids.closeIdle()
}
