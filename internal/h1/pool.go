package h1

import (
	"sync"
	"time"
)

// sweepEvery is how often the pool checks its idle connections while it has any: a connection
// the server closed is released (no CLOSE-WAIT socket kept for the idle timeout) within about
// this long, and one with bytes nobody asked for is dropped before a request meets it.
const sweepEvery = time.Second

// pool keeps the idle connections per key (scheme://host:port): the most recently used first,
// at most maxPerKey per key and max in all (past that the key's oldest goes), each closed once
// idle for timeout. Whatever a connection's peer did while it was idle (closed it, sent a 408
// or stray bytes) is found by looking at its socket's receive queue, without reading: when it
// is taken (get) and, for all of them, by one sweep every sweepEvery, a timer that runs only
// while the pool is not empty. No goroutine or timer per connection.
type pool struct {
	max, maxPerKey int
	timeout, every time.Duration
	// dropped is told of each connection found dead or dirty while idle (for the log), outside
	// the lock, before it is closed.
	dropped func(c *conn, v idleVerdict)

	mu      sync.Mutex
	idle    map[string][]*conn // per key, most recently used last
	n       int
	sweeper *time.Timer // runs sweep; pending or running while armed
	armed   bool
	scratch []*conn // the sweep's list, kept between sweeps
}

func newPool(max, maxPerKey int, timeout time.Duration, dropped func(*conn, idleVerdict)) *pool {
	return &pool{max: max, maxPerKey: maxPerKey, timeout: timeout, every: min(sweepEvery, timeout),
		dropped: dropped, idle: make(map[string][]*conn)}
}

// get takes the most recently used idle connection of key that is still clean; ok is false
// when there is none. Those found expired, closed or with pending bytes are closed on the way.
func (p *pool) get(key string) (c *conn, ok bool) {
	for {
		p.mu.Lock()
		cs := p.idle[key]
		if len(cs) == 0 {
			p.mu.Unlock()
			return nil, false
		}
		c = cs[len(cs)-1]
		cs[len(cs)-1] = nil
		p.idle[key] = cs[:len(cs)-1]
		p.n--
		c.pooled = false
		expired := time.Since(c.since) >= p.timeout
		p.mu.Unlock()
		if expired {
			c.close()
			continue
		}
		// The check runs on the caller's goroutine, outside the lock: the connection is the
		// caller's now.
		if v := c.idleCheck(); v != idleClean {
			p.dropped(c, v)
			c.close()
			continue
		}
		return c, true
	}
}

// put keeps c as an idle connection, or closes it when the pool is full of other keys'
// connections. A key over its bound, or the pool over max, loses its oldest.
func (p *pool) put(c *conn) {
	p.mu.Lock()
	cs := p.idle[c.key]
	if p.n >= p.max && len(cs) == 0 {
		p.mu.Unlock()
		c.close()
		return
	}
	var evicted *conn
	if len(cs) >= p.maxPerKey || p.n >= p.max {
		// Keep the most recently used: the oldest is the likeliest to be closed by the server.
		evicted = cs[0]
		evicted.pooled = false
		copy(cs, cs[1:])
		cs[len(cs)-1] = nil
		cs = cs[:len(cs)-1]
		p.n--
	}
	c.since, c.pooled = time.Now(), true
	p.idle[c.key] = append(cs, c)
	p.n++
	if !p.armed {
		p.armed = true
		if p.sweeper == nil {
			p.sweeper = time.AfterFunc(p.every, p.sweep)
		} else {
			p.sweeper.Reset(p.every)
		}
	}
	p.mu.Unlock()
	if evicted != nil {
		evicted.close()
	}
}

// sweep closes the idle connections past their timeout and those whose peer closed them or
// sent something, then runs again in p.every if any are left. It runs on the timer's goroutine,
// never two at once (the timer is re-armed only at its end).
func (p *pool) sweep() {
	now := time.Now()
	var expired []*conn
	p.mu.Lock()
	list := p.scratch[:0]
	for key, cs := range p.idle {
		keep := cs[:0]
		for _, c := range cs {
			if now.Sub(c.since) >= p.timeout {
				c.pooled = false
				p.n--
				expired = append(expired, c)
				continue
			}
			keep = append(keep, c)
			list = append(list, c)
		}
		clear(cs[len(keep):])
		if len(keep) == 0 {
			delete(p.idle, key) // hosts no longer called do not stay in the map
		} else {
			p.idle[key] = keep
		}
	}
	p.mu.Unlock()
	for _, c := range expired {
		c.close()
	}
	// One connection at a time under the lock: a check is one non-blocking system call, so
	// get and put wait for at most one of them, and a connection taken by get meanwhile (no
	// longer pooled) is skipped rather than looked at while its new owner uses it.
	for _, c := range list {
		p.mu.Lock()
		v := idleClean
		if c.pooled {
			if v = c.idleCheck(); v != idleClean {
				p.remove(c)
			}
		}
		p.mu.Unlock()
		if v != idleClean {
			p.dropped(c, v)
			c.close()
		}
	}
	p.mu.Lock()
	clear(list)
	p.scratch = list[:0]
	if p.n > 0 {
		p.sweeper.Reset(p.every)
	} else {
		p.armed = false
	}
	p.mu.Unlock()
}

// remove takes c, which is pooled, out of the pool. p.mu is held.
func (p *pool) remove(c *conn) {
	cs := p.idle[c.key]
	for i, x := range cs {
		if x == c {
			copy(cs[i:], cs[i+1:])
			cs[len(cs)-1] = nil
			p.idle[c.key] = cs[:len(cs)-1]
			p.n--
			c.pooled = false
			return
		}
	}
}

// closeIdle closes every idle connection. Connections in use are not affected.
func (p *pool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.n = make(map[string][]*conn), 0
	for _, cs := range idle {
		for _, c := range cs {
			c.pooled = false
		}
	}
	if p.armed && p.sweeper.Stop() {
		p.armed = false // else the sweep is running and disarms itself, finding nothing
	}
	p.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.close()
		}
	}
}
