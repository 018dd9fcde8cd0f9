package a2aclient

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"
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
	a, _ := p.acquire("http://agent:50051")
	b, _ := p.acquire("http://agent:50051/")
	p.release(a)
	c, _ := p.acquire("HTTP://agent:50051")
	if a != b || a != c || a.inUse != 2 {
		t.Fatalf("calls to one target got different clients (%p %p %p) or in use %d, want one in use 2", a, b, c, a.inUse)
	}
	other, _ := p.acquire("http://agent:50052")
	secure, _ := p.acquire("https://agent:50051")
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
	a, _ := p.acquire("http://a:1")
	p.release(a)
	busy, _ := p.acquire("http://busy:1")
	c, _ := p.acquire("http://c:1")
	if _, ok := p.conns["http://a:1"]; ok || a.cc.GetState() != connectivity.Shutdown {
		t.Errorf("a not evicted and closed: %v, state %v", p.conns, a.cc.GetState())
	}
	d, _ := p.acquire("http://d:1")
	if busy.cc.GetState() == connectivity.Shutdown || c.cc.GetState() == connectivity.Shutdown || len(p.conns) != 3 {
		t.Errorf("a client with a call in flight was closed, or the bound dropped a call: %d clients", len(p.conns))
	}
	p.release(c)
	p.release(d)
	c.lastUsed = time.Now().Add(-2 * time.Hour)
	p.swept = time.Time{}
	if _, err := p.acquire("http://d:1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.conns["http://c:1"]; ok || c.cc.GetState() != connectivity.Shutdown {
		t.Errorf("unused c not closed: %v", p.conns)
	}
	p.close()
	if busy.cc.GetState() != connectivity.Shutdown {
		t.Error("close left a client open")
	}
	if _, err := p.acquire("http://a:1"); err == nil {
		t.Error("a call after close got a client")
	}
}
