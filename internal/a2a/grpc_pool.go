package a2a

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	a2apbv0 "github.com/a2aproject/a2a-go/a2apb"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/a2a-connector/a2a-connector/internal/h2grpc"
)

// GRPCOptions configure the gRPC binding of a Client. Without Dial, gRPC interfaces are refused.
type GRPCOptions struct {
	// Dial opens a connection to "host:port": the SSRF-guarded dialer (netguard), which checks
	// every address it connects to.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// CheckURL vets an interface URL before any dial (scheme: https, or http only where plain
	// HTTP is allowed; no userinfo; a literal address the guard refuses). Nil allows https only.
	CheckURL func(*url.URL) error
	// TLSConfig is the client TLS of https interfaces (nil: system roots, TLS 1.2 or later).
	TLSConfig *tls.Config
	// MaxConns bounds the pooled connections, all targets together (default 256). Past it, the
	// least recently used idle one is closed.
	MaxConns int
	// ConnsPerTarget is how many connections one target (scheme and host:port) may have
	// (default 1). A call takes the least busy one and opens another only when every one
	// already carries a call, so a quiet agent keeps one connection and a busy one can spread
	// its streams over several HTTP/2 connections instead of one connection's reader and
	// flow-control window. One is the default because four measured no better at c=10 on two
	// cores and cost more CPU per turn (each connection has its own reader and writer
	// goroutines to wake); see docs/performance.md.
	ConnsPerTarget int
	// IdleTimeout closes a pooled connection unused this long (default 5 minutes), checked
	// whenever a connection is taken.
	IdleTimeout time.Duration
	// GRPCGo makes the calls with grpc-go's own transport (a reader, a writer and a context
	// watcher goroutine per connection and call, several calls multiplexed on a connection),
	// instead of internal/h2grpc's, which runs each call on its caller's goroutine with one
	// call per connection (the default; docs/decisions.md, "Bindings (issue 23)").
	// ConnsPerTarget applies to grpc-go's only.
	GRPCGo bool
}

// grpcPool holds the client connection of each target: with h2grpc one per target (its
// transport pools the HTTP/2 connections under it), with grpc-go up to ConnsPerTarget.
type grpcPool struct {
	o      GRPCOptions
	h2     *h2grpc.Transport // nil with GRPCGo
	mu     sync.Mutex
	conns  map[string][]*grpcConn
	total  int
	closed bool
}

// clientConn is what a generated client calls through, and its Close.
type clientConn interface {
	grpc.ClientConnInterface
	Close() error
}

type grpcConn struct {
	cc       clientConn
	client   a2apb.A2AServiceClient
	clientV0 a2apbv0.A2AServiceClient // A2A 0.3's service (package a2a.v1) on the same connection
	lastUsed time.Time
	inUse    int
	// dialErr is the last error of the dialer, so that a refusal by the guard is reported as
	// such rather than as gRPC's "connection error" text.
	dialErr atomic.Pointer[error]
}

func newGRPCPool(o GRPCOptions) *grpcPool {
	if o.MaxConns <= 0 {
		o.MaxConns = 256
	}
	if o.ConnsPerTarget <= 0 {
		o.ConnsPerTarget = 1
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 5 * time.Minute
	}
	p := &grpcPool{o: o, conns: make(map[string][]*grpcConn)}
	if !o.GRPCGo && o.Dial != nil {
		p.h2 = h2grpc.New(h2grpc.Options{Dial: o.Dial, TLSConfig: o.TLSConfig, IdleTimeout: o.IdleTimeout})
	}
	return p
}

// The flow-control windows of every connection, fixed: a fixed window turns off grpc-go's BDP
// estimation, which after every burst of data sends the agent a window update and a PING (and
// reads its ack) to size the window — one more write for the agent, a read and a wake-up of the
// connection's goroutines for us, on every turn (docs/decisions.md, "Bindings (issue 23)").
// The stream window is grpc-go's initial one (what a stream the reader has not caught
// up with may buffer, as before; a message larger than it is let through whole with one window
// update). The connection window is the most BDP estimation would grow to: grpc-go acknowledges
// connection-level bytes as they arrive, so it bounds bytes in flight, not memory.
const (
	grpcStreamWindow = 64 << 10
	grpcConnWindow   = 16 << 20
)

// errGRPCNotConfigured: the Client was built without GRPCOptions.Dial.
var errGRPCNotConfigured = errors.New("the gRPC binding is not configured")

// grpcTarget is where an interface URL dials: whether it is TLS, its host:port (default port
// 443 or 80), and the pool key naming both.
type grpcTarget struct {
	secure   bool
	hostport string
	key      string
}

// targetOf vets the interface URL (CheckURL) and returns its target.
func (p *grpcPool) targetOf(raw string) (grpcTarget, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return grpcTarget{}, fmt.Errorf("gRPC interface URL %q is not an absolute URL", Clip(raw, 128, "…"))
	}
	check := p.o.CheckURL
	if check == nil {
		check = func(u *url.URL) error {
			if !strings.EqualFold(u.Scheme, "https") {
				return fmt.Errorf("url scheme %q is not allowed, https only", u.Scheme)
			}
			return nil
		}
	}
	if err := check(u); err != nil {
		return grpcTarget{}, err
	}
	t := grpcTarget{secure: strings.EqualFold(u.Scheme, "https"), hostport: u.Host}
	if u.Port() == "" {
		port := "80"
		if t.secure {
			port = "443"
		}
		t.hostport = net.JoinHostPort(u.Hostname(), port)
	}
	t.key = strings.ToLower(u.Scheme) + "://" + t.hostport
	return t, nil
}

// acquire returns a pooled connection for the interface URL, dialing lazily; release it.
func (p *grpcPool) acquire(raw string) (*grpcConn, error) {
	if p.o.Dial == nil {
		return nil, errGRPCNotConfigured
	}
	t, err := p.targetOf(raw)
	if err != nil {
		return nil, err
	}
	now := time.Now()

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("the gRPC connections are closed")
	}
	p.closeIdleLocked(now)
	conns := p.conns[t.key]
	var least *grpcConn
	for _, c := range conns {
		if least == nil || c.inUse < least.inUse {
			least = c
		}
	}
	if least != nil && (least.inUse == 0 || len(conns) >= p.o.ConnsPerTarget) {
		least.inUse++
		least.lastUsed = now
		return least, nil
	}
	if p.total >= p.o.MaxConns {
		p.evictLocked()
	}
	c, err := p.dial(t)
	if err != nil {
		return nil, err
	}
	c.lastUsed, c.inUse = now, 1
	p.conns[t.key] = append(conns, c)
	p.total++
	return c, nil
}

// h2Target is an h2grpc target whose Close closes nothing: the transport's idle connections
// of every target are closed with the pool (close).
type h2Target struct{ *h2grpc.Target }

func (h2Target) Close() error { return nil }

// dial makes the client of one connection to t; grpc-go connects on its first call, h2grpc on
// each call that finds no idle connection.
func (p *grpcPool) dial(t grpcTarget) (*grpcConn, error) {
	c := &grpcConn{}
	if p.h2 != nil {
		tg := h2Target{p.h2.Target(t.hostport, t.secure, func(err error) { c.dialErr.Store(&err) })}
		c.cc, c.client, c.clientV0 = tg, a2apb.NewA2AServiceClient(tg), a2apbv0.NewA2AServiceClient(tg)
		return c, nil
	}
	creds := insecure.NewCredentials()
	if t.secure {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if p.o.TLSConfig != nil {
			tc = p.o.TLSConfig.Clone()
		}
		creds = handshakeRecorder{credentials.NewTLS(tc), func(err error) { c.dialErr.Store(&err) }}
	}
	dial := p.o.Dial
	cc, err := grpc.NewClient("passthrough:///"+t.hostport,
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			conn, err := dial(ctx, addr)
			if err != nil {
				c.dialErr.Store(&err)
			}
			return conn, err
		}),
		// Proxies would dial on our behalf and defeat the guard.
		grpc.WithNoProxy(),
		grpc.WithStaticStreamWindowSize(grpcStreamWindow),
		grpc.WithStaticConnWindowSize(grpcConnWindow),
	)
	if err != nil {
		return nil, fmt.Errorf("gRPC client for %s: %w", t.hostport, err)
	}
	c.cc, c.client, c.clientV0 = cc, a2apb.NewA2AServiceClient(cc), a2apbv0.NewA2AServiceClient(cc)
	return c, nil
}

// closeIdleLocked closes the connections nobody used for IdleTimeout.
func (p *grpcPool) closeIdleLocked(now time.Time) {
	for k, conns := range p.conns {
		kept := conns[:0]
		for _, c := range conns {
			if c.inUse == 0 && now.Sub(c.lastUsed) > p.o.IdleTimeout {
				c.cc.Close()
				p.total--
				continue
			}
			kept = append(kept, c)
		}
		p.setLocked(k, kept)
	}
}

// evictLocked closes the least recently used idle connection, if any.
func (p *grpcPool) evictLocked() {
	var oldest *grpcConn
	oldestKey := ""
	for k, conns := range p.conns {
		for _, c := range conns {
			if c.inUse == 0 && (oldest == nil || c.lastUsed.Before(oldest.lastUsed)) {
				oldest, oldestKey = c, k
			}
		}
	}
	if oldest == nil {
		return
	}
	oldest.cc.Close()
	p.total--
	kept := p.conns[oldestKey][:0]
	for _, c := range p.conns[oldestKey] {
		if c != oldest {
			kept = append(kept, c)
		}
	}
	p.setLocked(oldestKey, kept)
}

// setLocked stores a target's connections, forgetting a target that has none left.
func (p *grpcPool) setLocked(key string, conns []*grpcConn) {
	if len(conns) == 0 {
		delete(p.conns, key)
		return
	}
	p.conns[key] = conns
}

func (p *grpcPool) release(c *grpcConn) {
	p.mu.Lock()
	c.inUse--
	c.lastUsed = time.Now()
	p.mu.Unlock()
}

// close closes every connection; later calls fail.
func (p *grpcPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.h2 != nil {
		p.h2.Close()
	}
	for k, conns := range p.conns {
		for _, c := range conns {
			c.cc.Close()
		}
		delete(p.conns, k)
	}
	p.total = 0
}
