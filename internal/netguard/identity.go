package netguard

import (
	"crypto/tls"
	"net/http"
	"sync"

	"github.com/a2a-connector/a2a-connector/internal/agenttls"
)

// maxIdentityTransports bounds the transports kept for agents with TLS of their own (a client
// certificate or a CA bundle); past it, the least recently used one is closed.
const maxIdentityTransports = 1024

// identityTransports keeps one transport per agenttls.Identity, so that a connection made with
// one agent's client certificate or CA is never used for another's call, nor for a call with
// the default TLS. Each is built like the default one (the same guarded dial and limits) with
// the Identity's TLS configuration.
type identityTransports struct {
	build func(*tls.Config) roundTripCloser
	mu    sync.Mutex
	byKey map[string]*identityTransport
	owner map[string]string // agent id → the Key of its current Identity
	tick  uint64
}

type identityTransport struct {
	rt   roundTripCloser
	used uint64
}

// get returns id's transport, made on first use. When id's owner had another Identity (its
// certificate or CA changed), that one's transport is closed: none of its connections, made
// with the old certificate, is used again.
func (t *identityTransports) get(id *agenttls.Identity) roundTripCloser {
	t.mu.Lock()
	t.tick++
	if e := t.byKey[id.Key]; e != nil {
		e.used = t.tick
		t.mu.Unlock()
		return e.rt
	}
	if t.byKey == nil {
		t.byKey, t.owner = map[string]*identityTransport{}, map[string]string{}
	}
	var stale []roundTripCloser
	if old, ok := t.owner[id.Owner]; ok && id.Owner != "" && old != id.Key {
		if e := t.byKey[old]; e != nil {
			stale = append(stale, e.rt)
			delete(t.byKey, old)
		}
	}
	if len(t.byKey) >= maxIdentityTransports {
		var lruKey string
		var lru *identityTransport
		for k, e := range t.byKey {
			if lru == nil || e.used < lru.used {
				lruKey, lru = k, e
			}
		}
		stale = append(stale, lru.rt)
		delete(t.byKey, lruKey)
	}
	e := &identityTransport{rt: t.build(id.Config), used: t.tick}
	t.byKey[id.Key] = e
	if id.Owner != "" {
		t.owner[id.Owner] = id.Key
	}
	t.mu.Unlock()
	for _, rt := range stale {
		// Connections in use finish their call; idle ones close now.
		rt.CloseIdleConnections()
	}
	return e.rt
}

// closeIdle closes the idle connections of every Identity's transport.
func (t *identityTransports) closeIdle() {
	t.mu.Lock()
	rts := make([]roundTripCloser, 0, len(t.byKey))
	for _, e := range t.byKey {
		rts = append(rts, e.rt)
	}
	t.mu.Unlock()
	for _, rt := range rts {
		rt.CloseIdleConnections()
	}
}

// next is the transport of req: its Identity's, or the default.
func (g *guardedTransport) nextFor(req *http.Request) roundTripCloser {
	if id := agenttls.From(req.Context()); id != nil && id.Config != nil {
		return g.ids.get(id)
	}
	return g.next
}
