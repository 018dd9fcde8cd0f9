// Package idlepool keeps a transport's idle connections per key (a scheme and host:port) for
// reuse: the most recently used first, at most MaxPerKey per key and Max in all (past that the
// key's oldest goes), each closed once it has been idle for Timeout. internal/h1 (HTTP/1.1)
// pools its connections with it: it runs a call on its caller's goroutine with one call per
// connection. It does not pool multiplexed connections (gRPC agents are called through
// grpc-go, which keeps its own).
//
// A connection embeds State, which holds its timer, so that putting one back allocates nothing
// after the first time.
package idlepool

import (
	"sync"
	"time"
)

// Conn is a pooled connection: it embeds State and closes itself.
type Conn interface {
	comparable
	// IdleState returns the State the connection embeds.
	IdleState() *State
	// Close closes the connection; it may be called more than once.
	Close()
}

// State is what the pool keeps in each connection.
type State struct {
	key   string
	since time.Time
	timer *time.Timer
}

// IdleState implements Conn for a connection that embeds State.
func (s *State) IdleState() *State { return s }

// Options bound a Pool.
type Options struct {
	// Max bounds the idle connections of all keys (default 100); MaxPerKey those of one key
	// (default 2). Timeout closes a connection idle that long (default 90 s).
	Max, MaxPerKey int
	Timeout        time.Duration
}

// Pool holds idle connections. It is safe for concurrent use.
type Pool[C Conn] struct {
	o      Options
	mu     sync.Mutex
	idle   map[string][]C // per key, most recently used last
	n      int
	closed bool
}

// New returns a Pool with o's limits, defaults filled in.
func New[C Conn](o Options) *Pool[C] {
	if o.Max <= 0 {
		o.Max = 100
	}
	if o.MaxPerKey <= 0 {
		o.MaxPerKey = 2
	}
	if o.Timeout <= 0 {
		o.Timeout = 90 * time.Second
	}
	return &Pool[C]{o: o, idle: make(map[string][]C)}
}

// Get takes the most recently used idle connection of key; ok is false when there is none
// (one idle past Timeout is closed on the way).
func (p *Pool[C]) Get(key string) (c C, ok bool) {
	now := time.Now()
	p.mu.Lock()
	for cs := p.idle[key]; len(cs) > 0; cs = p.idle[key] {
		c = cs[len(cs)-1]
		var zero C
		cs[len(cs)-1] = zero
		p.idle[key] = cs[:len(cs)-1]
		p.n--
		st := c.IdleState()
		if now.Sub(st.since) < p.o.Timeout {
			p.mu.Unlock()
			st.timer.Stop()
			return c, true
		}
		c.Close() // its timer is about to close it; do not wait for that
	}
	p.mu.Unlock()
	var zero C
	return zero, false
}

// Put keeps c as an idle connection of key, or closes it when the pool is full of other keys'
// connections or closed. A key over its bound, or the pool over Max, loses its oldest.
func (p *Pool[C]) Put(key string, c C) {
	p.mu.Lock()
	cs := p.idle[key]
	if p.closed || (p.n >= p.o.Max && len(cs) == 0) {
		p.mu.Unlock()
		c.Close()
		return
	}
	var evicted C
	evict := false
	if len(cs) >= p.o.MaxPerKey || p.n >= p.o.Max {
		// Keep the most recently used: the oldest is the likeliest to be closed by the server.
		evicted, evict = cs[0], true
		cs = append(cs[:0], cs[1:]...)
		p.n--
	}
	st := c.IdleState()
	st.key, st.since = key, time.Now()
	p.idle[key] = append(cs, c)
	p.n++
	if st.timer == nil {
		st.timer = time.AfterFunc(p.o.Timeout, func() { p.expire(c) })
	} else {
		st.timer.Reset(p.o.Timeout)
	}
	p.mu.Unlock()
	if evict {
		evicted.Close()
	}
}

// expire closes c if it is still idle in the pool (one taken out since is not touched).
func (p *Pool[C]) expire(c C) {
	p.mu.Lock()
	key := c.IdleState().key
	cs := p.idle[key]
	for i, x := range cs {
		if x == c {
			p.idle[key] = append(cs[:i], cs[i+1:]...)
			p.n--
			p.mu.Unlock()
			c.Close()
			return
		}
	}
	p.mu.Unlock()
}

// CloseIdle closes every idle connection. Connections in use are not affected.
func (p *Pool[C]) CloseIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.n = make(map[string][]C), 0
	p.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.Close()
		}
	}
}

// Close closes the idle connections; every later Put closes its connection.
func (p *Pool[C]) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.CloseIdle()
}

// Len is the number of idle connections.
func (p *Pool[C]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}
