// Package h2grpc makes gRPC calls (unary and server-streaming) over HTTP/2 on the caller's
// goroutine: the goroutine that starts a call writes its frames, and the goroutine that receives
// a message reads the frames from the socket itself. It is what internal/h1 is for HTTP/1.1.
//
// grpc-go's transport keeps a reader and a writer goroutine per connection and a goroutine per
// server-streaming call that watches its context, and hands every frame across them. On the
// connector's turn path that is about five more thread wake-ups per turn than a JSON-RPC turn
// makes, each waiting to run on a busy two-core box (docs/decisions.md, "Bindings (issue 23)",
// counts them). No library offers a gRPC client without those goroutines, hence
// this one, built on golang.org/x/net/http2's Framer and hpack (framing and header compression
// are theirs) and grpc's status, metadata and codes (so callers read errors as grpc-go's).
//
// The price of running a call on its caller's goroutine is that a connection carries one call at
// a time (there is nobody else to read frames of other streams): concurrent calls to one agent
// use as many connections, pooled like HTTP/1.1 keep-alive connections. It implements what the
// A2A service needs and nothing more: unary and server-streaming calls with one request message,
// no compression (none is offered, so servers send none), no client-side keepalive pings; a
// server PING, SETTINGS or WINDOW_UPDATE is answered when the next frame is read. Dialing is the
// caller's (the SSRF-guarded dialer); TLS offers only "h2" in ALPN; plaintext is HTTP/2 with
// prior knowledge, as gRPC's.
package h2grpc

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/a2a-connector/a2a-connector/internal/idlepool"
)

// Options configure a Transport.
type Options struct {
	// Dial opens a TCP connection to "host:port" (the SSRF guard's dialer).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// TLSConfig is the client TLS of secure targets (nil: system roots, TLS 1.2 or later).
	TLSConfig *tls.Config
	// MaxIdlePerTarget bounds the idle connections kept per target (default 16); MaxIdle all
	// of them (default 256).
	MaxIdlePerTarget, MaxIdle int
	// IdleTimeout closes a connection idle this long (default 90 s).
	IdleTimeout time.Duration
	// StreamWindow is the flow-control window each call grants the server (default 1 MiB):
	// what an agent may send ahead of the caller's reads. The connection's window is the same.
	StreamWindow uint32
	// UserAgent is sent with every call (default "a2a-connector-h2grpc").
	UserAgent string
}

// Transport pools HTTP/2 connections per target. It is safe for concurrent use.
type Transport struct {
	o      Options
	idle   *idlepool.Pool[*conn] // per scheme://host:port
	closed atomic.Bool
}

// New returns a Transport with o's settings, defaults filled in.
func New(o Options) *Transport {
	if o.MaxIdlePerTarget <= 0 {
		o.MaxIdlePerTarget = 16
	}
	if o.MaxIdle <= 0 {
		o.MaxIdle = 256
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 90 * time.Second
	}
	if o.StreamWindow < 65535 {
		o.StreamWindow = 1 << 20
	}
	if o.UserAgent == "" {
		o.UserAgent = "a2a-connector-h2grpc"
	}
	if o.TLSConfig == nil {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	o.TLSConfig = o.TLSConfig.Clone()
	o.TLSConfig.NextProtos = []string{"h2"}
	return &Transport{o: o, idle: idlepool.New[*conn](idlepool.Options{Max: o.MaxIdle, MaxPerKey: o.MaxIdlePerTarget, Timeout: o.IdleTimeout})}
}

// Target is the grpc.ClientConnInterface of one server: a generated client
// (NewXServiceClient(target)) makes its calls through it.
type Target struct {
	t         *Transport
	addr      string // host:port to dial
	authority string // :authority
	secure    bool
	key       string
	dialErr   func(error)
}

// Target returns the client connection of the server at addr (host:port), over TLS when
// secure. dialErr, when set, is told of every error of Options.Dial for it (the call itself
// fails with UNAVAILABLE, as grpc-go's).
func (t *Transport) Target(addr string, secure bool, dialErr func(error)) *Target {
	scheme := "http"
	if secure {
		scheme = "https"
	}
	return &Target{t: t, addr: addr, authority: addr, secure: secure, key: scheme + "://" + addr, dialErr: dialErr}
}

// CloseIdleConnections closes every pooled connection (of every target). Calls in progress are
// not affected; their connections are closed when they end.
func (t *Transport) CloseIdleConnections() { t.idle.CloseIdle() }

// Close closes the idle connections and refuses new calls; a call that ends later closes its
// connection.
func (t *Transport) Close() {
	t.closed.Store(true)
	t.idle.Close()
}

var errClosed = errors.New("h2grpc: transport closed")

// get returns an idle connection to tg (reused) or dials one.
func (t *Transport) get(ctx context.Context, tg *Target) (c *conn, reused bool, err error) {
	if t.closed.Load() {
		return nil, false, errClosed
	}
	if c, ok := t.idle.Get(tg.key); ok {
		return c, true, nil
	}
	c, err = t.dial(ctx, tg)
	return c, false, err
}

// put returns c to the pool, or closes it when the pool is full or closed.
func (t *Transport) put(c *conn) { t.idle.Put(c.key, c) }

// dial connects, negotiates TLS (ALPN h2) for secure targets, and writes the client preface:
// the magic, our SETTINGS and the connection window. The server's SETTINGS are read with the
// first call's frames.
func (t *Transport) dial(ctx context.Context, tg *Target) (*conn, error) {
	nc, err := t.o.Dial(ctx, tg.addr)
	if err != nil {
		if tg.dialErr != nil {
			tg.dialErr(err)
		}
		return nil, err
	}
	if tg.secure {
		host, _, err := net.SplitHostPort(tg.addr)
		if err != nil {
			host = tg.addr
		}
		cfg := t.o.TLSConfig
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("tls handshake with %s: %w", tg.addr, err)
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			tc.Close()
			return nil, fmt.Errorf("tls handshake with %s: the server does not speak HTTP/2 (ALPN %q)", tg.addr, p)
		}
		nc = tc
	}
	c := &conn{t: t, key: tg.key, nc: nc, peerWindow: 65535, sendWindow: 65535, maxFrame: 16384}
	c.br = bufio.NewReaderSize(nc, 4<<10)
	c.bw = bufio.NewWriterSize(nc, 2<<10)
	c.fr = http2.NewFramer(c.bw, c.br)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.MaxHeaderListSize = 64 << 10
	c.fr.SetMaxReadFrameSize(1 << 20)
	c.henc = hpack.NewEncoder(&c.hbuf)
	c.recvWindow = int64(t.o.StreamWindow)
	_, err = c.bw.WriteString(http2.ClientPreface)
	if err == nil {
		err = c.fr.WriteSettings(
			http2.Setting{ID: http2.SettingEnablePush, Val: 0},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: t.o.StreamWindow},
			http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: 64 << 10},
		)
	}
	if err == nil && t.o.StreamWindow > 65535 {
		err = c.fr.WriteWindowUpdate(0, t.o.StreamWindow-65535)
	}
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("http2 preface to %s: %w", tg.addr, err)
	}
	return c, nil
}

// conn is one HTTP/2 connection, carrying one call at a time.
type conn struct {
	t   *Transport
	key string
	nc  net.Conn
	br  *bufio.Reader
	bw  *bufio.Writer
	fr  *http2.Framer

	henc *hpack.Encoder
	hbuf headerBuffer

	nextID uint32 // the last stream id used (odd; 0 before the first)
	// peerWindow is the server's initial stream window (its SETTINGS); sendWindow the
	// connection's send window; maxFrame the largest DATA frame it takes.
	peerWindow int64
	sendWindow int64
	maxFrame   uint32
	// recvWindow is the window granted to the server; recvUnacked the connection's bytes
	// received and not yet given back.
	recvWindow  int64
	recvUnacked int64
	// goAway: the server is going away; no new call on this connection.
	goAway bool
	// lastGoodID is the GOAWAY's last stream id.
	lastGoodID uint32

	idlepool.State
	closeOnce sync.Once
}

func (c *conn) close() { c.closeOnce.Do(func() { c.nc.Close() }) }

// Close implements idlepool.Conn.
func (c *conn) Close() { c.close() }

// headerBuffer is the hpack encoder's output, reset per header block.
type headerBuffer struct{ b []byte }

func (h *headerBuffer) Write(p []byte) (int, error) {
	h.b = append(h.b, p...)
	return len(p), nil
}
