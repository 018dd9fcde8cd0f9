package a2a

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"
)

func testPool(o GRPCOptions) *grpcPool {
	o.Dial = func(context.Context, string) (net.Conn, error) { return nil, net.ErrClosed }
	o.CheckURL = func(*url.URL) error { return nil }
	return newGRPCPool(o)
}

// A quiet target keeps one connection; calls at the same time spread over up to ConnsPerTarget,
// then share the least busy one.
func TestGRPCPool_spreads_busy_targets_over_several_connections(t *testing.T) {
	p := testPool(GRPCOptions{ConnsPerTarget: 3})
	defer p.close()
	a, _ := p.acquire("http://agent:50051")
	p.release(a)
	b, _ := p.acquire("http://agent:50051")
	if a != b {
		t.Fatal("an idle connection was not reused")
	}
	c, _ := p.acquire("http://agent:50051")
	d, _ := p.acquire("http://agent:50051")
	if c == b || d == b || c == d {
		t.Fatal("concurrent calls share a connection while the target has fewer than 3")
	}
	e, _ := p.acquire("http://agent:50051")
	if e.inUse != 2 {
		t.Errorf("a fourth call went to a connection with %d calls, want the least busy (2)", e.inUse)
	}
	if n := len(p.conns["http://agent:50051"]); n != 3 || p.total != 3 {
		t.Errorf("%d connections (total %d), want 3", n, p.total)
	}
	other, _ := p.acquire("http://other:50051")
	if other == a || other == c || other == d {
		t.Error("another target got a connection of the first")
	}
}

// MaxConns counts every target's connections; the least recently used idle one goes first, and
// idle ones past IdleTimeout are closed.
func TestGRPCPool_bounds_and_idle(t *testing.T) {
	p := testPool(GRPCOptions{MaxConns: 2, IdleTimeout: time.Hour})
	defer p.close()
	a, _ := p.acquire("http://a:1")
	p.release(a)
	b, _ := p.acquire("http://b:1")
	p.release(b)
	c, _ := p.acquire("http://c:1")
	if _, ok := p.conns["http://a:1"]; ok || p.total != 2 {
		t.Errorf("a not evicted: %v, total %d", p.conns, p.total)
	}
	p.release(c)
	b.lastUsed = time.Now().Add(-2 * time.Hour)
	if _, err := p.acquire("http://c:1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.conns["http://b:1"]; ok || p.total != 1 {
		t.Errorf("idle b not closed: total %d", p.total)
	}
}
