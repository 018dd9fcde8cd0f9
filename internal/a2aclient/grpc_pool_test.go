package a2aclient

import (
	"context"
	"crypto/tls"
	"net"
	"net/url"
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"

	"github.com/a2a-connector/a2a-connector/internal/agenttls"
)

func testPool(o GRPCOptions) *grpcPool {
	o.Dial = func(context.Context, string) (net.Conn, error) { return nil, net.ErrClosed }
	o.CheckURL = func(*url.URL) error { return nil }
	return newGRPCPool(o)
}

// One client per target, however many calls are in flight: grpc-go multiplexes them.
func TestGRPCPool_one_client_per_target(t *testing.T) {
	t.Parallel()
	p := testPool(GRPCOptions{})
	defer p.close()
	a, _ := p.acquire(t.Context(), "http://agent:50051")
	b, _ := p.acquire(t.Context(), "http://agent:50051/")
	p.release(a)
	c, _ := p.acquire(t.Context(), "HTTP://agent:50051")
	if a != b || a != c || a.inUse != 2 {
		t.Fatalf("calls to one target got different clients (%p %p %p) or in use %d, want one in use 2", a, b, c, a.inUse)
	}
	other, _ := p.acquire(t.Context(), "http://agent:50052")
	secure, _ := p.acquire(t.Context(), "https://agent:50051")
	if other == a || secure == a || other == secure {
		t.Error("another port or scheme shares the first target's client")
	}
	if len(p.conns) != 3 {
		t.Errorf("%d clients, want 3", len(p.conns))
	}
}

// MaxTargets bounds the clients: the least recently used one without a call goes first (it is
// closed), one with a call in flight is never closed; clients unused past TargetIdleTimeout are
// closed.
func TestGRPCPool_bounds_and_unused_targets(t *testing.T) {
	t.Parallel()
	p := testPool(GRPCOptions{MaxTargets: 2, TargetIdleTimeout: time.Hour})
	defer p.close()
	a, _ := p.acquire(t.Context(), "http://a:1")
	p.release(a)
	busy, _ := p.acquire(t.Context(), "http://busy:1")
	c, _ := p.acquire(t.Context(), "http://c:1")
	if _, ok := p.conns["http://a:1"]; ok || a.cc.GetState() != connectivity.Shutdown {
		t.Errorf("a not evicted and closed: %v, state %v", p.conns, a.cc.GetState())
	}
	d, _ := p.acquire(t.Context(), "http://d:1")
	if busy.cc.GetState() == connectivity.Shutdown || c.cc.GetState() == connectivity.Shutdown || len(p.conns) != 3 {
		t.Errorf("a client with a call in flight was closed, or the bound dropped a call: %d clients", len(p.conns))
	}
	p.release(c)
	p.release(d)
	c.lastUsed = time.Now().Add(-2 * time.Hour)
	p.swept = time.Time{}
	if _, err := p.acquire(t.Context(), "http://d:1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.conns["http://c:1"]; ok || c.cc.GetState() != connectivity.Shutdown {
		t.Errorf("unused c not closed: %v", p.conns)
	}
	p.close()
	if busy.cc.GetState() != connectivity.Shutdown {
		t.Error("close left a client open")
	}
	if _, err := p.acquire(t.Context(), "http://a:1"); err == nil {
		t.Error("a call after close got a client")
	}
}

// A call carrying an agent's TLS identity (client certificate, CA bundle) never gets the
// client of another identity or of the default TLS; an agent's new identity (a PATCH of its
// certificate) replaces its old client instead of sharing or keeping it.
func TestGRPCPool_clients_are_kept_apart_by_tls_identity(t *testing.T) {
	t.Parallel()
	p := testPool(GRPCOptions{})
	defer p.close()
	idA := &agenttls.Identity{Key: "a1", Owner: "agent-a", Config: &tls.Config{MinVersion: tls.VersionTLS12}}
	idB := &agenttls.Identity{Key: "b1", Owner: "agent-b", Config: &tls.Config{MinVersion: tls.VersionTLS12}}
	const u = "https://agent:443"
	def, _ := p.acquire(t.Context(), u)
	a, _ := p.acquire(agenttls.With(t.Context(), idA), u)
	b, _ := p.acquire(agenttls.With(t.Context(), idB), u)
	a2, _ := p.acquire(agenttls.With(t.Context(), idA), u)
	if def == a || def == b || a == b {
		t.Fatal("two TLS identities (or one and the default) share a client")
	}
	if a2 != a {
		t.Error("one identity got two clients")
	}
	for _, c := range []*grpcConn{def, a, b, a2} {
		p.release(c)
	}
	idA2 := &agenttls.Identity{Key: "a2", Owner: "agent-a", Config: &tls.Config{MinVersion: tls.VersionTLS12}}
	renewed, _ := p.acquire(agenttls.With(t.Context(), idA2), u)
	defer p.release(renewed)
	if renewed == a {
		t.Fatal("the agent's new identity got the old identity's client")
	}
	if a.cc.GetState() != connectivity.Shutdown {
		t.Errorf("the old identity's client is %v, want closed once the agent's identity changed", a.cc.GetState())
	}
	if b.cc.GetState() == connectivity.Shutdown {
		t.Error("another agent's client was closed")
	}
}
