package h1_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/a2a-connector/a2a-connector/internal/h1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// bound is how long a wait that should end at once may take before the test fails: far above
// any scheduling delay, so no verdict depends on this machine's speed.
const bound = 10 * time.Second

func dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext
}

func newTransport(t *testing.T, o h1.Options) *h1.Transport {
	t.Helper()
	if o.Dial == nil {
		o.Dial = dialer()
	}
	tr := h1.New(o)
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// server is a real HTTP server on loopback that counts the connections it saw open and close.
type server struct {
	*httptest.Server
	opened, closed atomic.Int64
}

func startServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{Server: httptest.NewUnstartedServer(h)}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.closed.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// eventually waits, up to bound, for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", bound, what)
		}
		time.Sleep(time.Millisecond)
	}
}

func do(t *testing.T, tr http.RoundTripper, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, string(b)
}

func post(t *testing.T, ctx context.Context, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestRoundTrip_reuses_a_connection_whose_body_was_read_to_its_end(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/empty" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, in)
	})
	tr := newTransport(t, h1.Options{})
	for i := range 3 {
		resp, got := do(t, tr, post(t, t.Context(), s.URL+"/echo", fmt.Sprint(i)))
		if want := fmt.Sprintf("POST /echo %d", i); got != want || resp.StatusCode != 200 || resp.Proto != "HTTP/1.1" {
			t.Fatalf("response %d %s %q, want 200 HTTP/1.1 %q", resp.StatusCode, resp.Proto, got, want)
		}
		// A response without a body frees its connection at once.
		if resp, _ := do(t, tr, post(t, t.Context(), s.URL+"/empty", "")); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("status %d, want 204", resp.StatusCode)
		}
	}
	if n := s.opened.Load(); n != 1 {
		t.Errorf("server saw %d connections for 6 sequential requests, want 1", n)
	}
}

func TestRoundTrip_a_chunked_request_body_of_unknown_length_arrives_whole(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%v %d", r.TransferEncoding, len(in))
	})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL, io.MultiReader(strings.NewReader(strings.Repeat("x", 100<<10))))
	if err != nil {
		t.Fatal(err)
	}
	if _, got := do(t, newTransport(t, h1.Options{WriteBufferSize: 1 << 10}), req); got != "[chunked] 102400" {
		t.Errorf("server read %q, want [chunked] 102400", got)
	}
}

// Each piece of a streamed body is readable the moment it arrives: the server writes the
// second piece only after the client has read the first.
func TestBody_streams_each_piece_as_it_arrives(t *testing.T) {
	t.Parallel()
	gotFirst := make(chan struct{})
	s := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-gotFirst:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "data: two\n\n")
	})
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	resp, err := newTransport(t, h1.Options{}).RoundTrip(post(t, ctx, s.URL, "{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i, want := range []string{"data: one\n", "\n", "data: two\n", "\n"} {
		line, err := br.ReadString('\n')
		if err != nil || line != want {
			t.Fatalf("line %d = %q, %v; want %q", i, line, err, want)
		}
		if i == 1 {
			close(gotFirst)
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the last piece: %v, want EOF", err)
	}
}

// An SSE stream the caller stops reading (the turn ended, or the engine hung up) is not
// drained: its connection is closed, the server sees the request end, and the next request
// dials a new connection.
func TestBody_closed_early_closes_the_connection(t *testing.T) {
	t.Parallel()
	ended := make(chan struct{})
	s := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			io.WriteString(w, "ok")
			return
		}
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(ended)
	})
	tr := newTransport(t, h1.Options{})
	resp, err := tr.RoundTrip(post(t, t.Context(), s.URL+"/stream", "{}"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case <-ended:
	case <-time.After(bound):
		t.Fatal("the server's request did not end after the body was closed")
	}
	if _, err := resp.Body.Read(make([]byte, 1)); err == nil {
		t.Error("Read after Close succeeded")
	}
	if _, got := do(t, tr, post(t, t.Context(), s.URL+"/ok", "")); got != "ok" {
		t.Fatalf("next request: %q", got)
	}
	if n := s.opened.Load(); n != 2 {
		t.Errorf("server saw %d connections, want 2 (the closed stream's is not reused)", n)
	}
}

func TestRoundTrip_ends_when_the_context_ends(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	s := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // only then does net/http watch the connection and end r's context
		if r.URL.Path == "/body" {
			io.WriteString(w, "data: first\n\n")
			w.(http.Flusher).Flush()
		}
		arrived <- struct{}{}
		<-r.Context().Done()
	})
	tr := newTransport(t, h1.Options{})

	t.Run("waiting_for_the_headers", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		go func() { <-arrived; cancel() }()
		_, err := tr.RoundTrip(post(t, ctx, s.URL+"/headers", "{}"))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("reading_the_body", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		resp, err := tr.RoundTrip(post(t, ctx, s.URL+"/body", "{}"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		<-arrived
		go cancel()
		_, err = io.ReadAll(resp.Body)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("read err = %v, want context.Canceled", err)
		}
	})
	t.Run("closing_the_body_from_another_goroutine", func(t *testing.T) {
		resp, err := tr.RoundTrip(post(t, t.Context(), s.URL+"/body", "{}"))
		if err != nil {
			t.Fatal(err)
		}
		<-arrived
		go resp.Body.Close()
		if _, err := io.ReadAll(resp.Body); err == nil {
			t.Fatal("a Read blocked while the body was closed returned no error")
		}
	})
}

// rawServer accepts connections and runs serve on each, in its own goroutine, until the test
// ends. It is for answers a net/http server will not give.
func rawServer(t *testing.T, serve func(n int, c net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for n := 1; ; n++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				stop := context.AfterFunc(t.Context(), func() { c.Close() })
				defer stop()
				serve(n, c)
			})
		}
	})
	return "http://" + l.Addr().String()
}

// answering returns a rawServer that reads one request per connection and writes answer.
func answering(t *testing.T, answer string) string {
	t.Helper()
	return rawServer(t, func(_ int, c net.Conn) {
		if _, _, err := readRequest(bufio.NewReader(c)); err == nil {
			io.WriteString(c, answer)
		}
	})
}

// readRequest reads one request and its body from c.
func readRequest(br *bufio.Reader) (*http.Request, string, error) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(req.Body)
	return req, string(b), err
}

// A request that crosses the server's close of a pooled connection (written as the server
// closed it, so that no answer comes) may or may not have been processed: it is sent again on a
// new connection when idempotent, and fails otherwise. The server here reads each connection's
// second request and closes without answering.
func TestRoundTrip_resends_only_an_idempotent_request_whose_pooled_connection_closed_unanswered(t *testing.T) {
	t.Parallel()
	url := rawServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		for i := 0; ; i++ {
			_, body, err := readRequest(br)
			if err != nil || i == 1 {
				return
			}
			answer(c, fmt.Sprintf("conn %d: %s", n, body))
		}
	})
	tr := newTransport(t, h1.Options{})
	if _, got := do(t, tr, post(t, t.Context(), url, "a")); got != "conn 1: a" {
		t.Fatalf("first request: %q", got)
	}
	req := post(t, t.Context(), url, "b")
	req.Header["Idempotency-Key"] = nil // marks it idempotent without sending the header
	if _, got := do(t, tr, req); got != "conn 2: b" {
		t.Fatalf("idempotent request: %q, want it answered on a new connection", got)
	}
	_, err := tr.RoundTrip(post(t, t.Context(), url, "c"))
	if err == nil {
		t.Fatal("a non-idempotent request on a connection closed by the server succeeded; it must fail, not be sent twice")
	}
}

func TestRoundTrip_refuses_response_headers_over_the_limit(t *testing.T) {
	t.Parallel()
	// 100 KB of headers: the client must give up at its limit, not read them all.
	url := answering(t, "HTTP/1.1 200 OK\r\n"+strings.Repeat("X-Pad: "+strings.Repeat("p", 90)+"\r\n", 1000)+"Content-Length: 0\r\n\r\n")
	_, err := newTransport(t, h1.Options{MaxResponseHeaderBytes: 8 << 10}).RoundTrip(post(t, t.Context(), url, ""))
	if err == nil || !strings.Contains(err.Error(), "headers exceed 8192 bytes") {
		t.Fatalf("err = %v, want headers exceed 8192 bytes", err)
	}
}

func TestRoundTrip_skips_informational_responses(t *testing.T) {
	t.Parallel()
	url := answering(t, "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	resp, got := do(t, newTransport(t, h1.Options{}), post(t, t.Context(), url, ""))
	if resp.StatusCode != 200 || got != "ok" {
		t.Fatalf("response %d %q, want 200 ok", resp.StatusCode, got)
	}
}

func TestRoundTrip_refuses_a_protocol_switch(t *testing.T) {
	t.Parallel()
	url := answering(t, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	_, err := newTransport(t, h1.Options{}).RoundTrip(post(t, t.Context(), url, ""))
	if err == nil || !strings.Contains(err.Error(), "101") {
		t.Fatalf("err = %v, want a refusal of the 101", err)
	}
}

func TestRoundTrip_does_not_reuse_a_connection_the_server_said_it_closes(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	})
	tr := newTransport(t, h1.Options{})
	for range 2 {
		if _, got := do(t, tr, post(t, t.Context(), s.URL, "")); got != "bye" {
			t.Fatalf("got %q", got)
		}
	}
	if n := s.opened.Load(); n != 2 {
		t.Errorf("server saw %d connections, want 2", n)
	}
}

func TestRoundTrip_response_header_timeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	s := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	_, err := newTransport(t, h1.Options{ResponseHeaderTimeout: 20 * time.Millisecond}).RoundTrip(post(t, t.Context(), s.URL, ""))
	if err == nil || !strings.Contains(err.Error(), "timeout awaiting response headers") {
		t.Fatalf("err = %v, want a response header timeout", err)
	}
}

func TestTransport_speaks_HTTP1_over_TLS_even_to_an_HTTP2_server(t *testing.T) {
	t.Parallel()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Proto)
	}))
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	roots := x509.NewCertPool()
	roots.AddCert(s.Certificate())
	tr := newTransport(t, h1.Options{TLSConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}})
	for range 2 {
		resp, got := do(t, tr, post(t, t.Context(), s.URL, ""))
		if got != "HTTP/1.1" || resp.TLS == nil || resp.TLS.NegotiatedProtocol == "h2" {
			t.Fatalf("server saw %q, TLS %+v; want HTTP/1.1 over TLS", got, resp.TLS)
		}
	}

	untrusting := newTransport(t, h1.Options{})
	var uae x509.UnknownAuthorityError
	if _, err := untrusting.RoundTrip(post(t, t.Context(), s.URL, "")); !errors.As(err, &uae) {
		t.Fatalf("without the test CA: err = %v, want x509.UnknownAuthorityError", err)
	}
}

func TestPool_closes_connections_idle_longer_than_IdleConnTimeout(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	tr := newTransport(t, h1.Options{IdleConnTimeout: 10 * time.Millisecond})
	do(t, tr, post(t, t.Context(), s.URL, ""))
	eventually(t, "the idle connection is closed", func() bool { return s.closed.Load() == 1 })
}

func TestPool_keeps_at_most_MaxIdleConnsPerHost(t *testing.T) {
	t.Parallel()
	const concurrent = 3
	var arrived sync.WaitGroup
	arrived.Add(concurrent)
	release := make(chan struct{})
	s := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wave" {
			arrived.Done()
			<-release
		}
		io.WriteString(w, "ok")
	})
	tr := newTransport(t, h1.Options{MaxIdleConnsPerHost: 1})
	var wg sync.WaitGroup
	for range concurrent {
		wg.Go(func() { do(t, tr, post(t, t.Context(), s.URL+"/wave", "")) })
	}
	arrived.Wait()
	close(release)
	wg.Wait()
	eventually(t, "two of three connections are closed", func() bool { return s.closed.Load() == concurrent-1 })
	do(t, tr, post(t, t.Context(), s.URL+"/next", ""))
	if n := s.opened.Load(); n != concurrent {
		t.Errorf("server saw %d connections, want %d (the kept one serves the next request)", n, concurrent)
	}

	tr.CloseIdleConnections()
	eventually(t, "CloseIdleConnections closes the kept one", func() bool { return s.closed.Load() == concurrent })
}

func TestRoundTrip_refuses_what_it_cannot_send(t *testing.T) {
	t.Parallel()
	tr := newTransport(t, h1.Options{})
	for _, url := range []string{"ftp://example.com/x", "http:///nohost"} {
		body := &closeRecorder{Reader: strings.NewReader("x")}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, body)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.RoundTrip(req); err == nil {
			t.Errorf("%s: no error", url)
		}
		if !body.closed {
			t.Errorf("%s: request body not closed (a RoundTripper must close it)", url)
		}
	}
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// Many goroutines share one transport: run with -race.
func TestTransport_concurrent_use(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		for range 3 {
			fmt.Fprintf(w, "data: %s\n\n", in)
			w.(http.Flusher).Flush()
		}
	})
	tr := newTransport(t, h1.Options{MaxIdleConnsPerHost: 4})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 20 {
				msg := fmt.Sprintf("%d-%d", g, i)
				_, got := do(t, tr, post(t, t.Context(), s.URL, msg))
				if want := strings.Repeat("data: "+msg+"\n\n", 3); got != want {
					t.Errorf("got %q, want %q", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
