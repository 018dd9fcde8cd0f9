package idlepool_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/idlepool"
)

type conn struct {
	idlepool.State
	name   string
	closed atomic.Int32
}

func (c *conn) Close() { c.closed.Add(1) }

func TestPool_reuse_bounds_and_expiry(t *testing.T) {
	p := idlepool.New[*conn](idlepool.Options{Max: 3, MaxPerKey: 2, Timeout: time.Hour})
	a, b, c := &conn{name: "a"}, &conn{name: "b"}, &conn{name: "c"}
	p.Put("k", a)
	p.Put("k", b)
	p.Put("k", c) // over the key's bound: the oldest (a) goes
	if a.closed.Load() != 1 || p.Len() != 2 {
		t.Fatalf("a closed %d, %d idle; want a evicted and 2 idle", a.closed.Load(), p.Len())
	}
	if got, ok := p.Get("k"); !ok || got != c {
		t.Fatalf("Get = %v, %v; want the most recently used, c", got, ok)
	}
	if _, ok := p.Get("other"); ok {
		t.Fatal("Get of another key found one")
	}
	d, e := &conn{name: "d"}, &conn{name: "e"}
	p.Put("x", d)
	p.Put("y", e)
	p.Put("y", c) // Max reached (b, d, e): a key's oldest goes to keep the total
	if p.Len() != 3 || e.closed.Load() != 1 {
		t.Errorf("%d idle, e closed %d; want 3 and e evicted", p.Len(), e.closed.Load())
	}
	f := &conn{name: "f"}
	p.Put("z", f) // full of other keys' connections: f is closed instead
	if f.closed.Load() != 1 {
		t.Error("a connection for a new key in a full pool was kept")
	}
	p.Close()
	if p.Len() != 0 || b.closed.Load() != 1 || d.closed.Load() != 1 || c.closed.Load() != 1 {
		t.Errorf("after Close: %d idle, closed b %d d %d c %d", p.Len(), b.closed.Load(), d.closed.Load(), c.closed.Load())
	}
	g := &conn{}
	p.Put("k", g)
	if g.closed.Load() != 1 {
		t.Error("Put after Close kept the connection")
	}
}

func TestPool_idle_connection_expires(t *testing.T) {
	p := idlepool.New[*conn](idlepool.Options{Timeout: 10 * time.Millisecond})
	c := &conn{}
	p.Put("k", c)
	deadline := time.Now().Add(10 * time.Second)
	for c.closed.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the idle connection was not closed after its timeout")
		}
		time.Sleep(time.Millisecond)
	}
	if _, ok := p.Get("k"); ok || p.Len() != 0 {
		t.Error("an expired connection is still pooled")
	}
}
