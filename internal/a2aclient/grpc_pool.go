package a2aclient

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
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/stats"

	"github.com/a2a-connector/a2a-connector/internal/agenttls"
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
	// StatsHandler, if set, sees every call on every connection: the caller's OpenTelemetry
	// instrumentation (a client span per agent call, the rpc.client.* metrics, and the W3C trace
	// context naming that span), as otelhttp wraps the HTTP bindings' transport.
	StatsHandler stats.Handler
	// ConnIdleTimeout closes an agent's connection after this long without a call in flight
	// (default 30 s); the next call connects again. It is well below the idle timeouts of what
	// commonly stands in front of an agent (nginx's keepalive_timeout 75 s and its
	// grpc_read_timeout 60 s, cloud load balancers' 60 s), so that we close a quiet connection
	// before a proxy does: a proxy that closes it first races our next call, which then finds
	// a connection being torn down. Reconnecting after 30 s of quiet costs one handshake.
	ConnIdleTimeout time.Duration
	// MaxTargets bounds the agent endpoints (scheme and host:port) that have a client, all
	// together (default 256). Past it, the least recently used one without a call in flight is
	// closed.
	MaxTargets int
	// TargetIdleTimeout closes the client of an endpoint unused this long (default 5 minutes),
	// checked when calls are made: its connection went with ConnIdleTimeout already, this
	// frees what grpc-go keeps per client (its channel, resolver and balancer state) for
	// agents no one calls any more.
	TargetIdleTimeout time.Duration
}

// grpcPool holds one grpc-go client connection (a channel: it dials, multiplexes every call to
// the endpoint on one HTTP/2 connection within the agent's MaxConcurrentStreams, reconnects
// after a GOAWAY or a broken connection) per endpoint target.
type grpcPool struct {
	o      GRPCOptions
	mu     sync.Mutex
	conns  map[string]*grpcConn
	swept  time.Time // when closeUnusedLocked last looked
	closed bool
}

type grpcConn struct {
	key      string
	owner    string // the agent whose agenttls.Identity the connection has; "" for the default
	cc       *grpc.ClientConn
	client   a2apb.A2AServiceClient
	clientV0 a2apbv0.A2AServiceClient // A2A 0.3's service (package a2a.v1) on the same connection
	lastUsed time.Time
	inUse    int
	// dialErr is the error of the dialer's last attempt (nil once one succeeded), so that a
	// refusal by the guard is reported as such rather than as gRPC's "connection error" text.
	dialErr atomic.Pointer[error]
	// tlsErr is the TLS refusal the agent's side sent after a handshake (alertRecorder), kept
	// until a connection gets a byte from the agent: a reconnect in between must not erase it.
	tlsErr atomic.Pointer[error]
}

func newGRPCPool(o GRPCOptions) *grpcPool {
	if o.ConnIdleTimeout <= 0 {
		o.ConnIdleTimeout = 30 * time.Second
	}
	if o.MaxTargets <= 0 {
		o.MaxTargets = 256
	}
	if o.TargetIdleTimeout <= 0 {
		o.TargetIdleTimeout = 5 * time.Minute
	}
	return &grpcPool{o: o, conns: make(map[string]*grpcConn)}
}

// The flow-control windows of every connection, fixed: a fixed window turns off grpc-go's BDP
// estimation, which after every burst of data sends the agent a window update and a PING (and
// reads its ack) to size the window — one more write for the agent, a read and a wake-up of the
// connection's goroutines for us, on every turn (docs/decisions.md, "Bindings"). The stream
// window is grpc-go's initial one (what a stream the reader has not caught up with may buffer;
// a message larger than it is let through whole with one window update). The connection window
// is the most BDP estimation would grow to: grpc-go acknowledges connection-level bytes as they
// arrive, so it bounds bytes in flight, not memory.
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

// acquire returns the client of the interface URL's target, made on first use (grpc-go
// connects on the first call); release it when the call ends. A call whose ctx carries an
// agenttls.Identity (a client certificate or CA bundle of the agent's own) gets a client of
// that Identity's own: a connection is never shared between two TLS configurations.
func (p *grpcPool) acquire(ctx context.Context, raw string) (*grpcConn, error) {
	if p.o.Dial == nil {
		return nil, errGRPCNotConfigured
	}
	t, err := p.targetOf(raw)
	if err != nil {
		return nil, err
	}
	id := agenttls.From(ctx)
	if id != nil && t.secure {
		t.key += "#" + id.Key
	} else {
		id = nil // plain-http interfaces (where the policy allows them) have no TLS to vary
	}
	now := time.Now()

	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("the gRPC connections are closed")
	}
	stale := p.closeUnusedLocked(now)
	c := p.conns[t.key]
	if c == nil {
		if len(p.conns) >= p.o.MaxTargets {
			stale = append(stale, p.evictLocked()...)
		}
		if id != nil {
			stale = append(stale, p.replacedLocked(id)...)
		}
		if c, err = p.dial(t, id); err != nil {
			p.mu.Unlock()
			closeAll(stale)
			return nil, err
		}
		p.conns[t.key] = c
	}
	c.inUse++
	c.lastUsed = now
	p.mu.Unlock()
	closeAll(stale)
	return c, nil
}

func (p *grpcPool) release(c *grpcConn) {
	p.mu.Lock()
	c.inUse--
	c.lastUsed = time.Now()
	p.mu.Unlock()
}

// replacedLocked forgets the clients of id's agent made with another Identity (its certificate
// or CA changed since) and without a call in flight, and returns them for closing outside the
// lock: the old certificate's connections are not kept for the idle timeouts to close.
func (p *grpcPool) replacedLocked(id *agenttls.Identity) []*grpcConn {
	if id.Owner == "" {
		return nil
	}
	var out []*grpcConn
	for k, c := range p.conns {
		if c.owner == id.Owner && c.inUse == 0 && !strings.HasSuffix(k, "#"+id.Key) {
			delete(p.conns, k)
			out = append(out, c)
		}
	}
	return out
}

// dial makes the client of t, with id's TLS when id is not nil. It does not connect: grpc-go
// does on the first call.
func (p *grpcPool) dial(t grpcTarget, id *agenttls.Identity) (*grpcConn, error) {
	c := &grpcConn{key: t.key}
	creds := insecure.NewCredentials()
	if t.secure {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		switch {
		case id != nil:
			tc, c.owner = id.Config.Clone(), id.Owner
		case p.o.TLSConfig != nil:
			tc = p.o.TLSConfig.Clone()
		}
		creds = handshakeRecorder{TransportCredentials: credentials.NewTLS(tc), record: func(err error) { c.dialErr.Store(&err) },
			after: func(err error) { c.tlsErr.Store(&err) }, clientCert: len(tc.Certificates) > 0}
	}
	dial := p.o.Dial
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithPerRPCCredentials(grpcAuth{}),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			conn, err := dial(ctx, addr)
			if err != nil {
				c.dialErr.Store(&err)
			} else {
				c.dialErr.Store(nil)
			}
			return conn, err
		}),
		// Proxies would dial on our behalf and defeat the guard.
		grpc.WithNoProxy(),
		grpc.WithStaticStreamWindowSize(grpcStreamWindow),
		grpc.WithStaticConnWindowSize(grpcConnWindow),
		// No client keepalive pings: a server's default enforcement (grpc-go's MinTime of five
		// minutes) answers more frequent pings with GOAWAY "too_many_pings", and the idle
		// timeout below already keeps connections younger than any proxy's idle limit.
		grpc.WithIdleTimeout(p.o.ConnIdleTimeout),
		// grpc-go's default reconnect backoff grows to 120 s: an agent that was down for a few
		// minutes would stay unreachable that long after it is back, every call in between
		// failing at once, and the breaker's probe after its cool-down would not reach it.
		// grpc-go's shape (1.6×, 20 % jitter) from a shorter start, capped at the breaker's
		// scale; a dead agent still costs at most a dial every few seconds.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 250 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second},
			MinConnectTimeout: 5 * time.Second,
		}),
	}
	if p.o.StatsHandler != nil {
		opts = append(opts, grpc.WithStatsHandler(p.o.StatsHandler))
	}
	cc, err := grpc.NewClient("passthrough:///"+t.hostport, opts...)
	if err != nil {
		return nil, fmt.Errorf("gRPC client for %s: %w", t.hostport, err)
	}
	c.cc, c.client, c.clientV0 = cc, a2apb.NewA2AServiceClient(cc), a2apbv0.NewA2AServiceClient(cc)
	return c, nil
}

// closeUnusedLocked forgets the clients nobody used for TargetIdleTimeout and returns them for
// closing outside the lock. It looks at most four times per TargetIdleTimeout, so that a call
// does not walk every target.
func (p *grpcPool) closeUnusedLocked(now time.Time) []*grpcConn {
	if now.Sub(p.swept) < p.o.TargetIdleTimeout/4 {
		return nil
	}
	p.swept = now
	var out []*grpcConn
	for k, c := range p.conns {
		if c.inUse == 0 && now.Sub(c.lastUsed) > p.o.TargetIdleTimeout {
			delete(p.conns, k)
			out = append(out, c)
		}
	}
	return out
}

// evictLocked forgets the least recently used client without a call in flight, if any, and
// returns it for closing outside the lock.
func (p *grpcPool) evictLocked() []*grpcConn {
	var oldest *grpcConn
	for _, c := range p.conns {
		if c.inUse == 0 && (oldest == nil || c.lastUsed.Before(oldest.lastUsed)) {
			oldest = c
		}
	}
	if oldest == nil {
		return nil
	}
	delete(p.conns, oldest.key)
	return []*grpcConn{oldest}
}

func closeAll(cs []*grpcConn) {
	for _, c := range cs {
		c.cc.Close()
	}
}

// close closes every client (calls in flight end with CANCELED); later calls fail.
func (p *grpcPool) close() {
	p.mu.Lock()
	p.closed = true
	all := make([]*grpcConn, 0, len(p.conns))
	for k, c := range p.conns {
		all = append(all, c)
		delete(p.conns, k)
	}
	p.mu.Unlock()
	closeAll(all)
}
