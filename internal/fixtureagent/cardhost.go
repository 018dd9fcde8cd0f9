package fixtureagent

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// CardHost is a real server on loopback (HTTPS or plain HTTP) serving agent cards that a test
// sets and changes by path; any other path is 404. It counts every request it gets, answered
// or not, so a test can tell whether something fetched a card at all.
type CardHost struct {
	*httptest.Server
	mu    sync.Mutex
	cards map[string]string
	hits  atomic.Int32
}

// NewCardHost starts a card host, over TLS when tls is set (its certificate is httptest's, so
// clients need Server.Client's roots); the test's cleanup closes it.
func NewCardHost(t testing.TB, tls bool) *CardHost {
	h := &CardHost{cards: map[string]string{}}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.hits.Add(1)
		h.mu.Lock()
		body, ok := h.cards[r.URL.Path]
		h.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	})
	if tls {
		h.Server = httptest.NewTLSServer(handler)
	} else {
		h.Server = httptest.NewServer(handler)
	}
	t.Cleanup(h.Close)
	return h
}

// Set serves card at path (replacing what was there) and returns its URL.
func (h *CardHost) Set(path, card string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cards[path] = card
	return h.URL + path
}

// Hits is the number of requests the host got so far.
func (h *CardHost) Hits() int32 { return h.hits.Load() }
