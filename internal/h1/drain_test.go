package h1_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/h1"
)

// readEvent reads from an SSE body up to the end of the next event.
func readEvent(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var ev strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read event: %v (so far %q)", err, ev.String())
		}
		if line == "\n" {
			return ev.String()
		}
		ev.WriteString(line)
	}
}

// An SSE stream closed at its final event, as internal/invoke closes it, keeps its connection:
// Close finishes the body (the closing chunk, which over TLS comes in a record of its own) off
// the caller's path and pools the connection, also when the request's context ends just before
// Close, as a2aclient's Stream ends it (every other request here). Each request waits for the previous connection to
// reach the pool, so the count does not depend on how fast the drain runs.
func TestBody_closed_at_the_final_event_keeps_the_connection(t *testing.T) {
	t.Parallel()
	srvTLS, cliTLS := serverTLS(t)
	for _, tr := range []struct {
		name string
		tls  bool
	}{{"plain", false}, {"tls", true}} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			s := &server{Server: httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				for _, ev := range []string{"working", "final"} {
					fmt.Fprintf(w, "data: %s\n\n", ev)
					w.(http.Flusher).Flush() // each event its own chunk (and TLS record)
				}
			}))}
			s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					s.opened.Add(1)
				}
			}
			o := h1.Options{}
			if tr.tls {
				s.TLS = srvTLS
				s.StartTLS()
				o.TLSConfig = cliTLS
			} else {
				s.Start()
			}
			t.Cleanup(s.Close)
			rt := newTransport(t, o)
			for i := range 200 {
				ctx, cancel := context.WithCancel(t.Context())
				resp, err := rt.RoundTrip(post(t, ctx, s.URL, "{}"))
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				br := bufio.NewReader(resp.Body)
				for _, want := range []string{"data: working\n", "data: final\n"} {
					if got := readEvent(t, br); got != want {
						t.Fatalf("request %d: event %q, want %q", i, got, want)
					}
				}
				if i%2 == 1 {
					cancel()
				}
				resp.Body.Close()
				cancel()
				eventually(t, "the closed stream's connection is pooled", func() bool { return rt.IdleConns() == 1 })
			}
			if n := s.opened.Load(); n > 10 {
				t.Errorf("server saw %d connections for 200 streams closed at their final event, want at most 10", n)
			}
		})
	}
}

// A stream closed before its end whose rest is not a clean end within the drain's bounds — more
// than the drain reads (past what the test's reader buffers), an end that never comes, a reply past the end — never has its connection
// reused: the next request goes on a new one, and the old one is closed (its server sees the
// close, so the drain's goroutine has ended; goleak checks the rest at the end of the package).
func TestBody_closed_early_is_not_reused_unless_it_ends_cleanly(t *testing.T) {
	t.Parallel()
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
	chunk := func(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }
	final := chunk("data: final\n\n")
	for _, tr := range transports(t) {
		for _, tc := range []struct {
			name, rest string
			hold       bool // the server never ends the body (until the client closes)
			warn       bool // a warning names the bytes past the end
		}{
			{"more_than_the_drain_reads", strings.Repeat(chunk("data: "+strings.Repeat("x", 1000)+"\n\n"), 16) + "0\r\n\r\n", false, false},
			{"an_end_that_never_comes", "", true, false},
			{"more_events_and_no_end", chunk("data: late\n\n"), true, false},
			{"a_reply_past_the_end", "0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray", false, true},
			{"an_error_event_past_the_end", "0\r\n\r\nevent: error\ndata: stray\n\n", false, true},
		} {
			t.Run(tr.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				closed := make(chan struct{})
				s := startAgent(t, tr.server, func(c *agentConn) {
					for i := 0; ; i++ {
						_, body, err := readRequest(c.br)
						if err != nil {
							if c.n == 1 {
								close(closed) // the client closed the first connection
							}
							return
						}
						if c.n == 1 && i == 1 {
							t.Errorf("the request %q reached the connection of the stream closed early", body)
							return
						}
						if c.n > 1 {
							answer(c.w, "own "+body)
							continue
						}
						c.raw.batch()
						io.WriteString(c.w, head+final+tc.rest)
						if c.raw.flush() != nil {
							return
						}
						if tc.hold {
							io.Copy(io.Discard, c.br) // until the client closes
							close(closed)
							return
						}
					}
				})
				var l logs
				rt := newTransport(t, h1.Options{TLSConfig: tr.client, Logger: l.logger()})
				resp, err := rt.RoundTrip(post(t, t.Context(), s.url, "1"))
				if err != nil {
					t.Fatal(err)
				}
				if got := readEvent(t, bufio.NewReader(resp.Body)); got != "data: final\n" {
					t.Fatalf("event %q", got)
				}
				resp.Body.Close()
				select {
				case <-closed:
				case <-time.After(bound):
					t.Fatal("the connection of the stream closed early was not closed")
				}
				if _, got := do(t, rt, post(t, t.Context(), s.url, "2")); got != "own 2" {
					t.Fatalf("next request answered %q, want %q", got, "own 2")
				}
				if n := s.conns.Load(); n != 2 {
					t.Errorf("server saw %d connections, want 2", n)
				}
				if got := l.String(); tc.warn != strings.Contains(got, "bytes past the end of a response") || strings.Contains(got, "stray") {
					t.Errorf("log = %q, want a warning (without the bytes): %v", got, tc.warn)
				}
			})
		}
	}
}
