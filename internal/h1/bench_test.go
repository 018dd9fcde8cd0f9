package h1_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/h1"
)

// BenchmarkRoundTrip is one agent call as the turn path makes it — a JSON-RPC POST answered
// with three SSE events, the body read to its end — back to back over one kept-alive loopback
// connection, through this transport and through net/http's. ns/op is the call's latency with
// the server's share; the gap between the two is the transport's (docs/performance.md).
func BenchmarkRoundTrip(b *testing.B) {
	events := strings.Repeat(`data: {"jsonrpc":"2.0","id":"1","result":{"kind":"artifact-update","artifact":{"parts":[{"kind":"text","text":"hello"}]}}}`+"\n\n", 3)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, events)
	}))
	defer s.Close()
	body := `{"jsonrpc":"2.0","id":"1","method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":"m","parts":[{"kind":"text","text":"hi"}]}}}`
	var d net.Dialer
	for _, c := range []struct {
		name string
		rt   interface {
			http.RoundTripper
			CloseIdleConnections()
		}
	}{
		{"h1", h1.New(h1.Options{Dial: d.DialContext})},
		{"net_http", &http.Transport{DialContext: d.DialContext}},
	} {
		b.Run(c.name, func(b *testing.B) {
			defer c.rt.CloseIdleConnections()
			for b.Loop() {
				req, err := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				resp, err := c.rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				if n, err := io.Copy(io.Discard, resp.Body); err != nil || n != int64(len(events)) {
					b.Fatalf("body: %d bytes, %v", n, err)
				}
				resp.Body.Close()
			}
		})
	}
}
