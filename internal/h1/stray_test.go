package h1_test

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/h1"
)

// answer writes a 200 with body, kept alive.
func answer(w io.Writer, body string) {
	fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

const answer408 = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"

// logs collects what a Transport logs, at every level.
type logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logs) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// serverTLS returns a server config with a fresh self-signed certificate for 127.0.0.1 and a
// client config that trusts it.
func serverTLS(t testing.TB) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agent"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}}},
		&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
}

// batchConn holds back what is written to it while batching, and sends it in one write on
// flush: two TLS records written back to back then arrive in one segment, as they do from a
// server that writes a response and a stray one together.
type batchConn struct {
	net.Conn
	mu       sync.Mutex
	batching bool
	buf      bytes.Buffer
}

func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.batching {
		return b.buf.Write(p)
	}
	return b.Conn.Write(p)
}

func (b *batchConn) batch() { b.mu.Lock(); b.batching = true; b.mu.Unlock() }

func (b *batchConn) flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.batching = false
	_, err := b.Conn.Write(b.buf.Bytes())
	b.buf.Reset()
	return err
}

// needsSocketCheck skips a test that needs the pool to look at idle sockets, which it does on
// linux, darwin and freebsd (peek_socket.go).
func needsSocketCheck(t testing.TB) {
	switch runtime.GOOS {
	case "linux", "darwin", "freebsd":
	default:
		t.Skip("idle connections are not checked on " + runtime.GOOS)
	}
}

// agentServer is a raw HTTP/1.1 server, with TLS when tlsConfig is set, whose serve sees each
// connection (numbered from 1) as a reader and a writer whose writes, between batch and flush,
// go out in one TCP write.
type agentServer struct {
	url   string
	conns atomic.Int64
}

type agentConn struct {
	n     int
	br    *bufio.Reader
	w     io.Writer
	raw   *batchConn
	close func() error
	// closeWrite sends the server's FIN and leaves its side open for reading.
	closeWrite func() error
}

func startAgent(t *testing.T, tlsConfig *tls.Config, serve func(c *agentConn)) *agentServer {
	t.Helper()
	s := &agentServer{}
	s.url = rawServer(t, func(n int, nc net.Conn) {
		s.conns.Add(1)
		raw := &batchConn{Conn: nc}
		ac := &agentConn{n: n, raw: raw, close: nc.Close, closeWrite: nc.(*net.TCPConn).CloseWrite}
		var rw io.ReadWriter = raw
		if tlsConfig != nil {
			tc := tls.Server(raw, tlsConfig)
			if err := tc.HandshakeContext(t.Context()); err != nil {
				return
			}
			rw, ac.close = tc, tc.Close
			ac.closeWrite = func() error { return tc.CloseWrite() }
		}
		ac.br, ac.w = bufio.NewReader(rw), rw
		serve(ac)
	})
	if tlsConfig != nil {
		s.url = "https" + strings.TrimPrefix(s.url, "http")
	}
	return s
}

// transports returns, per name, the TLS configs of a server and a client: plain and TLS.
func transports(t *testing.T) []struct {
	name           string
	server, client *tls.Config
} {
	srv, cli := serverTLS(t)
	return []struct {
		name           string
		server, client *tls.Config
	}{{"plain", nil, nil}, {"tls", srv, cli}}
}

// A server that writes something past a response (a reply too many, a Content-Length too
// small) must not have those bytes read as the answer to the next request, which may be
// another tenant's: the connection is dropped with a warning, and the next request is answered
// on a new one. Each case's bytes arrive with the response, in one TCP write (over TLS: the
// response and the stray bytes in two records, so that crypto/tls, not the read buffer, holds
// the second).
func TestRoundTrip_never_reads_bytes_past_a_response_as_the_next_answer(t *testing.T) {
	t.Parallel()
	for _, tr := range transports(t) {
		for _, tc := range []struct{ name, response, stray string }{
			{"a_reply_too_many", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"},
			{"content_length_short", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst", `", "stray": true}`},
			{"chunked_then_a_reply", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n0\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"},
			{"no_body_then_a_reply", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"},
			{"sse_then_an_error_event", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 7\r\n\r\ndata: 1", "\n\nevent: error\ndata: stray\n\n"},
		} {
			t.Run(tr.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				s := startAgent(t, tr.server, func(c *agentConn) {
					for i := 0; ; i++ {
						_, body, err := readRequest(c.br)
						if err != nil {
							return
						}
						if c.n == 1 && i == 0 {
							c.raw.batch()
							io.WriteString(c.w, tc.response)
							io.WriteString(c.w, tc.stray)
							if c.raw.flush() != nil {
								return
							}
							continue
						}
						answer(c.w, "own "+body)
					}
				})
				var l logs
				rt := newTransport(t, h1.Options{TLSConfig: tr.client, Logger: l.logger()})
				do(t, rt, post(t, t.Context(), s.url, "1"))
				for _, body := range []string{"2", "3"} {
					if _, got := do(t, rt, post(t, t.Context(), s.url, body)); got != "own "+body {
						t.Fatalf("request %s was answered %q, want %q", body, got, "own "+body)
					}
				}
				if n := s.conns.Load(); n != 2 {
					t.Errorf("server saw %d connections, want 2 (the first dropped, the second kept)", n)
				}
				addr := strings.TrimPrefix(strings.TrimPrefix(s.url, "https://"), "http://")
				if got := l.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "bytes past the end of a response") || !strings.Contains(got, addr) {
					t.Errorf("log = %q, want one warning naming %s", got, addr)
				} else if strings.Count(got, "level=WARN") != 1 || strings.Contains(got, "stray") {
					t.Errorf("log = %q, want one warning without the bytes", got)
				}
			})
		}
	}
}

// A server that gives up on an idle connection writes a 408 (and usually closes it). The pool
// finds the 408 while the connection is idle and drops it, with a line at debug level: the next
// request is answered on a new connection, the 408 never being its answer. This server leaves
// the connection open after its 408, so only the bytes can tell.
func TestPool_drops_an_idle_connection_that_received_a_408(t *testing.T) {
	t.Parallel()
	needsSocketCheck(t)
	idle, dropped := make(chan struct{}), make(chan struct{})
	s := startAgent(t, nil, func(c *agentConn) {
		for i := 0; ; i++ {
			_, body, err := readRequest(c.br)
			if err != nil {
				if c.n == 1 {
					close(dropped) // the client closed the connection: it found the 408
				}
				return
			}
			if c.n == 1 && i == 1 {
				t.Errorf("the request %q reached the connection that had sent a 408", body)
				return
			}
			answer(c.w, fmt.Sprintf("conn %d: %s", c.n, body))
			if c.n == 1 {
				<-idle // the client has read the answer: the connection is in its pool
				io.WriteString(c.w, answer408)
			}
		}
	})
	var l logs
	rt := newTransport(t, h1.Options{Logger: l.logger()})
	do(t, rt, post(t, t.Context(), s.url, "a"))
	close(idle)
	select {
	case <-dropped:
	case <-time.After(bound):
		t.Fatal("the idle connection with a 408 was not dropped")
	}
	if _, got := do(t, rt, post(t, t.Context(), s.url, "b")); got != "conn 2: b" {
		t.Fatalf("next request: %q, want conn 2: b", got)
	}
	if got := l.String(); strings.Contains(got, "level=WARN") || !strings.Contains(got, "408 on an idle connection") {
		t.Errorf("log = %q, want a debug line and no warning for a 408", got)
	}
}

// A 408 that answers a request sent on a pooled connection says the server gave up on that
// connection before the request arrived: the request is sent again, once, on a new connection,
// when its body can be produced again — whether or not it is idempotent, since it was never
// processed. A 408 on a new connection, or after the one re-send, is the answer.
func TestRoundTrip_resends_once_a_request_answered_408_on_a_pooled_connection(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	s := startAgent(t, nil, func(c *agentConn) {
		for i := 0; ; i++ {
			req, body, err := readRequest(c.br)
			if err != nil {
				return
			}
			requests.Add(1)
			if i == 1 || req.URL.Path == "/always408" {
				io.WriteString(c.w, answer408)
				return
			}
			answer(c.w, fmt.Sprintf("conn %d: %s", c.n, body))
		}
	})
	for _, tc := range []struct {
		name     string
		path     string
		body     func() io.Reader
		status   int
		got      string
		requests int64
	}{
		{"sent_again_on_a_new_connection", "/", func() io.Reader { return strings.NewReader("b") }, 200, "conn 2: b", 2},
		{"not_when_the_body_cannot_be_rewound", "/", func() io.Reader { return io.MultiReader(strings.NewReader("b")) }, 408, "", 1},
		{"only_once", "/always408", func() io.Reader { return strings.NewReader("b") }, 408, "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newTransport(t, h1.Options{})
			do(t, rt, post(t, t.Context(), s.url, "a")) // a connection in the pool
			requests.Store(0)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+tc.path, tc.body())
			if err != nil {
				t.Fatal(err)
			}
			resp, got := do(t, rt, req)
			if resp.StatusCode != tc.status || !strings.HasSuffix(got, tc.got) || requests.Load() != tc.requests {
				t.Errorf("answer %d %q after %d requests; want %d %q after %d", resp.StatusCode, got, requests.Load(), tc.status, tc.got, tc.requests)
			}
		})
	}
	t.Run("a_408_on_a_new_connection_is_the_answer", func(t *testing.T) {
		requests.Store(0)
		resp, _ := do(t, newTransport(t, h1.Options{}), post(t, t.Context(), s.url+"/always408", "b"))
		if resp.StatusCode != 408 || requests.Load() != 1 {
			t.Errorf("answer %d after %d requests; want 408 after 1", resp.StatusCode, requests.Load())
		}
	})
}

// A request sent just as the server writes a 408 on the idle connection meets the 408 either in
// the pool's check or as its answer; either way it is answered on a new connection.
func TestRoundTrip_a_408_on_an_idle_connection_costs_no_request(t *testing.T) {
	t.Parallel()
	send408 := make(chan struct{})
	sent := make(chan struct{})
	s := startAgent(t, nil, func(c *agentConn) {
		for i := 0; ; i++ {
			_, body, err := readRequest(c.br)
			if err != nil {
				return
			}
			if c.n == 1 && i == 1 {
				io.WriteString(c.w, answer408)
				return
			}
			answer(c.w, fmt.Sprintf("conn %d: %s", c.n, body))
			if c.n == 1 {
				<-send408
				io.WriteString(c.w, answer408)
				close(sent)
			}
		}
	})
	rt := newTransport(t, h1.Options{})
	do(t, rt, post(t, t.Context(), s.url, "a"))
	close(send408)
	<-sent
	if resp, got := do(t, rt, post(t, t.Context(), s.url, "b")); resp.StatusCode != 200 || got != "conn 2: b" {
		t.Fatalf("next request: %d %q, want 200 conn 2: b", resp.StatusCode, got)
	}
}

// A server that closes an idle connection leaves the client's socket half-closed (CLOSE-WAIT)
// until the client closes it too. The pool's sweep does that within about a second, not after
// the idle timeout (90 s): this server closes its writing side and waits for the client's FIN.
func TestPool_releases_an_idle_connection_the_server_closed(t *testing.T) {
	t.Parallel()
	needsSocketCheck(t)
	for _, tr := range transports(t) {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			released := make(chan struct{})
			s := startAgent(t, tr.server, func(c *agentConn) {
				if _, body, err := readRequest(c.br); err == nil {
					answer(c.w, body)
					c.closeWrite()
					io.Copy(io.Discard, c.br) // ends with the client's FIN
					close(released)
				}
			})
			rt := newTransport(t, h1.Options{TLSConfig: tr.client})
			do(t, rt, post(t, t.Context(), s.url, "a"))
			select {
			case <-released:
			case <-time.After(bound):
				t.Fatalf("the client did not close within %v a connection the server closed while it was idle", bound)
			}
		})
	}
}

// A connection the server closed while it sat in the pool is not used, so that even a request
// that may not be sent twice is answered. The test waits until the client's kernel has the
// server's FIN (its socket leaves ESTABLISHED), as it would after any idle time.
func TestRoundTrip_a_connection_the_server_closed_while_idle_is_not_used(t *testing.T) {
	t.Parallel()
	needsSocketCheck(t)
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI runs on linux, which has /proc/net/tcp: %v", err)
		}
		t.Skip("needs /proc/net/tcp to see when the FIN arrived")
	}
	for _, tr := range transports(t) {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			clients := make(chan net.Addr, 2)
			s := startAgent(t, tr.server, func(c *agentConn) {
				if _, body, err := readRequest(c.br); err == nil {
					clients <- c.raw.RemoteAddr()
					answer(c.w, fmt.Sprintf("conn %d: %s", c.n, body))
					c.close() // over TLS: a close_notify alert, then the FIN
				}
			})
			rt := newTransport(t, h1.Options{TLSConfig: tr.client})
			do(t, rt, post(t, t.Context(), s.url, "a"))
			client := netip.MustParseAddrPort((<-clients).String())
			eventually(t, "the client's socket has the server's FIN", func() bool { return !established(t, client.Port()) })
			if _, got := do(t, rt, post(t, t.Context(), s.url, "b")); got != "conn 2: b" {
				t.Fatalf("non-idempotent request after the server's close: %q, want conn 2: b", got)
			}
		})
	}
}

// established reports whether the TCP socket whose local port is port is ESTABLISHED (state 01
// in /proc/net/tcp).
func established(t *testing.T, port uint16) bool {
	t.Helper()
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 4 {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && uint16(p) == port && fields[3] == "01" {
				return true
			}
		}
	}
	return false
}
