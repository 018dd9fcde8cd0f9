package netguard_test

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// noHang is the bound on a refusal: it must come before any connect, never after a timeout.
const noHang = time.Second

// server is a real HTTP server on a loopback address that counts the requests it served.
type server struct {
	*httptest.Server
	hits atomic.Int64
}

// startServer serves h on listenAddr ("127.0.0.1:0", "127.0.0.2:0", "[::1]:0"); tls picks https.
func startServer(t *testing.T, listenAddr string, tls bool, h http.Handler) *server {
	t.Helper()
	l, err := net.Listen("tcp", listenAddr)
	if err != nil {
		// Only IPv6 may be missing on a host (some CI sandboxes disable it); loopback IPv4,
		// 127.0.0.0/8 included, always exists on Linux, so failing to listen there is a failure.
		if strings.HasPrefix(listenAddr, "[") {
			t.Skipf("cannot listen on %s here (no IPv6): %v", listenAddr, err)
		}
		t.Fatalf("listen %s: %v", listenAddr, err)
	}
	s := &server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	s.Listener.Close()
	s.Listener = l
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted-CA case makes TLS noise
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
}

func port(t *testing.T, s *server) string {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

func newClient(t *testing.T, p netguard.Policy, o netguard.ClientOptions) *http.Client {
	t.Helper()
	c := netguard.NewClient(p, o)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// get does a GET and returns the body of a 2xx response, or the error, and how long it took.
func get(t *testing.T, c *http.Client, u string) (string, time.Duration, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := c.Do(req)
	elapsed := time.Since(start)
	if err != nil {
		return "", elapsed, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", elapsed, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", elapsed, fmt.Errorf("status %d", resp.StatusCode)
	}
	return string(b), elapsed, nil
}

func wantBlocked(t *testing.T, err error, elapsed time.Duration) *netguard.BlockedAddressError {
	t.Helper()
	if elapsed > noHang {
		t.Errorf("refusal took %v, want under %v (no connect, no hang)", elapsed, noHang)
	}
	if !errors.Is(err, netguard.ErrBlockedAddress) {
		t.Fatalf("err = %v, want ErrBlockedAddress", err)
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Errorf("err = %T, want it to come wrapped in *url.Error as from any client.Do", err)
	}
	var be *netguard.BlockedAddressError
	if !errors.As(err, &be) {
		t.Fatalf("err = %v, want a *BlockedAddressError in the chain", err)
	}
	return be
}

// targets are the destinations every client must refuse unless allowed. For each, listen is
// where a real server can stand behind that address on Linux ("" if none can), and allow is
// what AllowedCIDRs needs to let the client reach it.
var targets = []struct {
	name   string
	host   string // URL host, without port
	listen string
	allow  string
}{
	{name: "loopback_127.0.0.1", host: "127.0.0.1", listen: "127.0.0.1:0", allow: "127.0.0.1/32"},
	{name: "loopback_127.0.0.2", host: "127.0.0.2", listen: "127.0.0.2:0", allow: "127.0.0.2"},
	{name: "loopback_v6", host: "[::1]", listen: "[::1]:0", allow: "::1/128"},
	{name: "ipv4_mapped_loopback", host: "[::ffff:127.0.0.1]", listen: "127.0.0.1:0", allow: "127.0.0.0/8"},
	// On Linux a connect to 0.0.0.0 reaches the local host: that is why it is refused.
	{name: "unspecified_0.0.0.0", host: "0.0.0.0", listen: "127.0.0.1:0", allow: "0.0.0.0/32"},
	// A name: only the dial hook, after resolution, can catch it.
	{name: "name_resolving_to_loopback", host: "localhost", listen: "127.0.0.1:0", allow: "127.0.0.0/8, ::1"},
	// No server can stand behind these here; the CheckAddr table covers allowing them.
	{name: "cloud_metadata", host: "169.254.169.254"},
	{name: "private_10.0.0.1", host: "10.0.0.1"},
}

// transports are the two inner transports a client can have: the address checks, the limits
// and the pool must hold for both.
var transports = []struct {
	name   string
	inline bool
}{{"net_http", false}, {"inline_http1", true}}

func TestClient_refuses_blocked_destinations_at_once(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		for _, tt := range targets {
			t.Run(tr.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				listen := tt.listen
				if listen == "" {
					listen = "127.0.0.1:0" // a real server anyway, so a leak would be seen as a hit
				}
				s := startServer(t, listen, false, okHandler())
				c := newClient(t, netguard.Policy{AllowInsecureHTTP: true}, netguard.ClientOptions{InlineHTTP1: tr.inline})

				_, elapsed, err := get(t, c, "http://"+tt.host+":"+port(t, s)+"/")
				be := wantBlocked(t, err, elapsed)
				if be.Reason == "" {
					t.Errorf("refusal %v gives no reason", be)
				}
				if n := s.hits.Load(); n != 0 {
					t.Errorf("server served %d requests, want 0", n)
				}
			})
		}
	}
}

func TestClient_refusal_of_a_name_names_the_host_and_dialed_address(t *testing.T) {
	t.Parallel()
	s := startServer(t, "127.0.0.1:0", false, okHandler())
	c := newClient(t, netguard.Policy{AllowInsecureHTTP: true}, netguard.ClientOptions{})

	_, elapsed, err := get(t, c, "http://localhost:"+port(t, s)+"/")
	be := wantBlocked(t, err, elapsed)
	if be.Host != "localhost" || !be.Addr.IsLoopback() {
		t.Errorf("refusal = {Host: %q, Addr: %s}, want host localhost and a loopback address", be.Host, be.Addr)
	}
	if !strings.Contains(err.Error(), "A2AC_ALLOWED_CIDRS") {
		t.Errorf("message %q does not say how to allow it", err)
	}
}

func TestClient_reaches_blocked_destinations_inside_AllowedCIDRs(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		for _, tt := range targets {
			if tt.listen == "" {
				continue
			}
			t.Run(tr.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				s := startServer(t, tt.listen, false, okHandler())
				p := netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: prefixes(t, tt.allow)}
				c := newClient(t, p, netguard.ClientOptions{InlineHTTP1: tr.inline})

				body, _, err := get(t, c, "http://"+tt.host+":"+port(t, s)+"/")
				if err != nil {
					t.Fatalf("GET with %s allowed: %v", tt.allow, err)
				}
				if body != "ok" || s.hits.Load() != 1 {
					t.Errorf("body %q, hits %d; want \"ok\", 1", body, s.hits.Load())
				}
			})
		}
	}
}

func TestClient_refuses_redirect_from_allowed_to_blocked_host(t *testing.T) {
	t.Parallel()
	blockedTarget := startServer(t, "127.0.0.2:0", false, okHandler())
	tests := []struct {
		name     string
		location string
	}{
		{name: "to_other_loopback_address", location: blockedTarget.URL + "/"},
		{name: "to_cloud_metadata", location: "http://169.254.169.254/latest/meta-data/"},
		{name: "to_private_address", location: "http://10.0.0.1/"},
		{name: "to_v6_loopback", location: "http://[::1]:" + port(t, blockedTarget) + "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			allowed := startServer(t, "127.0.0.1:0", false, http.RedirectHandler(tt.location, http.StatusFound))
			p := netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: prefixes(t, "127.0.0.1/32")}
			c := newClient(t, p, netguard.ClientOptions{MaxRedirects: 5})

			_, elapsed, err := get(t, c, allowed.URL+"/")
			wantBlocked(t, err, elapsed)
			if n := allowed.hits.Load(); n != 1 {
				t.Errorf("allowed server hits = %d, want 1 (the request that redirected)", n)
			}
		})
	}
	// The parallel subtests run after this function returns; cleanup runs after them.
	t.Cleanup(func() {
		if n := blockedTarget.hits.Load(); n != 0 {
			t.Errorf("blocked server served %d redirected requests, want 0", n)
		}
	})
}

// chain serves /r/N: a 302 to /r/N-1, and /r/0: 200 "ok".
func chain(t *testing.T) *server {
	return startServer(t, "127.0.0.1:0", false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r/"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		if n == 0 {
			io.WriteString(w, "ok")
			return
		}
		http.Redirect(w, r, "/r/"+strconv.Itoa(n-1), http.StatusFound)
	}))
}

func TestClient_MaxRedirects_zero_returns_the_redirect_unfollowed(t *testing.T) {
	t.Parallel()
	s := chain(t)
	c := newClient(t, netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: prefixes(t, "127.0.0.0/8")}, netguard.ClientOptions{})

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+"/r/1", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/r/0" {
		t.Errorf("got %d Location %q, want 302 Location /r/0", resp.StatusCode, resp.Header.Get("Location"))
	}
	if n := s.hits.Load(); n != 1 {
		t.Errorf("server hits = %d, want 1 (redirect not followed)", n)
	}
}

func TestClient_MaxRedirects_follows_up_to_N_and_refuses_the_next(t *testing.T) {
	t.Parallel()
	p := netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: prefixes(t, "127.0.0.0/8")}
	opts := netguard.ClientOptions{MaxRedirects: 3}

	t.Run("three_redirects_are_followed", func(t *testing.T) {
		t.Parallel()
		s := chain(t)
		body, _, err := get(t, newClient(t, p, opts), s.URL+"/r/3")
		if err != nil || body != "ok" {
			t.Fatalf("GET /r/3 = %q, %v; want \"ok\"", body, err)
		}
		if n := s.hits.Load(); n != 4 {
			t.Errorf("server hits = %d, want 4", n)
		}
	})
	t.Run("fourth_redirect_is_refused", func(t *testing.T) {
		t.Parallel()
		s := chain(t)
		_, _, err := get(t, newClient(t, p, opts), s.URL+"/r/4")
		if !errors.Is(err, netguard.ErrTooManyRedirects) {
			t.Fatalf("GET /r/4: err = %v, want ErrTooManyRedirects", err)
		}
		if n := s.hits.Load(); n != 4 {
			t.Errorf("server hits = %d, want 4 (/r/0 never requested)", n)
		}
	})
}

func certPool(s *server) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	return pool
}

func TestClient_https(t *testing.T) {
	t.Parallel()
	p := netguard.Policy{AllowedCIDRs: prefixes(t, "127.0.0.0/8")} // https only

	for _, tr := range transports {
		t.Run(tr.name+"/trusted_by_RootCAs", func(t *testing.T) {
			t.Parallel()
			s := startServer(t, "127.0.0.1:0", true, okHandler())
			body, _, err := get(t, newClient(t, p, netguard.ClientOptions{RootCAs: certPool(s), InlineHTTP1: tr.inline}), s.URL+"/")
			if err != nil || body != "ok" {
				t.Fatalf("GET = %q, %v; want \"ok\"", body, err)
			}
		})
		t.Run(tr.name+"/untrusted_without_RootCAs", func(t *testing.T) {
			t.Parallel()
			s := startServer(t, "127.0.0.1:0", true, okHandler())
			_, _, err := get(t, newClient(t, p, netguard.ClientOptions{InlineHTTP1: tr.inline}), s.URL+"/")
			var uae x509.UnknownAuthorityError
			if !errors.As(err, &uae) {
				t.Fatalf("GET with system roots: err = %v, want x509.UnknownAuthorityError", err)
			}
		})
	}
	t.Run("plain_http_is_refused", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, "127.0.0.1:0", false, okHandler())
		_, elapsed, err := get(t, newClient(t, p, netguard.ClientOptions{}), s.URL+"/")
		if !errors.Is(err, netguard.ErrInsecureURL) {
			t.Fatalf("GET http: err = %v, want ErrInsecureURL", err)
		}
		if elapsed > noHang || s.hits.Load() != 0 {
			t.Errorf("took %v, hits %d; want immediate, 0", elapsed, s.hits.Load())
		}
	})
	t.Run("redirect_to_http_is_refused", func(t *testing.T) {
		t.Parallel()
		plain := startServer(t, "127.0.0.1:0", false, okHandler())
		secure := startServer(t, "127.0.0.1:0", true, http.RedirectHandler(plain.URL+"/", http.StatusFound))
		c := newClient(t, p, netguard.ClientOptions{MaxRedirects: 3, RootCAs: certPool(secure)})

		_, _, err := get(t, c, secure.URL+"/")
		if !errors.Is(err, netguard.ErrInsecureURL) {
			t.Fatalf("GET https redirecting to http: err = %v, want ErrInsecureURL", err)
		}
		if secure.hits.Load() != 1 || plain.hits.Load() != 0 {
			t.Errorf("hits https %d, http %d; want 1, 0", secure.hits.Load(), plain.hits.Load())
		}
	})
}

func TestClient_WrapTransport_is_outermost_and_cannot_skip_the_check(t *testing.T) {
	t.Parallel()
	s := startServer(t, "127.0.0.1:0", false, okHandler())
	var seen atomic.Int64
	wrap := func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			seen.Add(1)
			return next.RoundTrip(r)
		})
	}
	refusing := newClient(t, netguard.Policy{AllowInsecureHTTP: true}, netguard.ClientOptions{WrapTransport: wrap})
	_, elapsed, err := get(t, refusing, s.URL+"/")
	wantBlocked(t, err, elapsed)

	allowing := newClient(t, netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: prefixes(t, "127.0.0.0/8")},
		netguard.ClientOptions{WrapTransport: wrap})
	if body, _, err := get(t, allowing, s.URL+"/"); err != nil || body != "ok" {
		t.Fatalf("GET through wrapper = %q, %v; want \"ok\"", body, err)
	}
	if seen.Load() != 2 || s.hits.Load() != 1 {
		t.Errorf("wrapper saw %d, server hits %d; want 2, 1", seen.Load(), s.hits.Load())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestClient_policy_is_copied(t *testing.T) {
	t.Parallel()
	s := startServer(t, "127.0.0.1:0", false, okHandler())
	allowed := prefixes(t, "127.0.0.0/8")
	c := newClient(t, netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: allowed}, netguard.ClientOptions{})
	allowed[0] = prefixes(t, "10.0.0.0/8")[0] // the caller's later change must not reach the client

	if _, _, err := get(t, c, s.URL+"/"); err != nil {
		t.Fatalf("GET: %v", err)
	}
}

// The client keeps small per-connection buffers (thousands of agent streams stay open at once);
// headers and bodies far larger than them still arrive whole, including a body the server
// writes in pieces that straddle the buffer's size.
func TestClient_large_headers_and_bodies_pass_its_small_buffers(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			testLargeHeadersAndBodies(t, tr.inline)
		})
	}
}

func testLargeHeadersAndBodies(t *testing.T, inline bool) {
	header := strings.Repeat("h", 20<<10)
	body := strings.Repeat("0123456789abcdef", 12<<10) // 192 KiB
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Large", header)
		w.Header().Set("X-Got", strconv.Itoa(len(in)))
		for rest := body; rest != ""; {
			n := min(len(rest), 1500) // chunks of 1,500 bytes, flushed one by one
			io.WriteString(w, rest[:n])
			w.(http.Flusher).Flush()
			rest = rest[n:]
		}
	}))
	t.Cleanup(s.Close)
	c := newClient(t, netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: prefixes(t, "127.0.0.0/8")}, netguard.ClientOptions{InlineHTTP1: inline})
	reqBody := strings.Repeat("r", 70<<10)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL, strings.NewReader(reqBody))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	if string(got) != body {
		t.Errorf("body: got %d bytes, want %d", len(got), len(body))
	}
	if resp.Header.Get("X-Large") != header {
		t.Errorf("X-Large header: got %d bytes, want %d", len(resp.Header.Get("X-Large")), len(header))
	}
	if resp.Header.Get("X-Got") != strconv.Itoa(len(reqBody)) {
		t.Errorf("server read %s bytes of the request body, want %d", resp.Header.Get("X-Got"), len(reqBody))
	}
}

// A busy agent on HTTP/1.1 needs one connection per concurrent turn. After a wave of 200
// concurrent requests to one host, a second wave must find every connection idle in the pool:
// a small per-host idle limit (it was 64) closed the rest, and each later rise dialed them
// again (a handshake, two goroutines and buffers per turn on both sides).
func TestClient_keeps_a_busy_hosts_connections_for_the_next_wave(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			testBusyHostsConnections(t, tr.inline)
		})
	}
}

func testBusyHostsConnections(t *testing.T, inline bool) {
	const wave = 200
	var (
		arrived = make(chan struct{}, wave)
		release = make(chan struct{}, wave)
		conns   atomic.Int64
	)
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		arrived <- struct{}{}
		<-release // every request of a wave is in flight at once, so each has its own connection
		io.WriteString(w, "ok")
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	c := netguard.NewClient(netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: prefixes(t, "127.0.0.1/32")}, netguard.ClientOptions{InlineHTTP1: inline})
	t.Cleanup(c.CloseIdleConnections)
	for round := 1; round <= 2; round++ {
		var wg sync.WaitGroup
		errs := make(chan error, wave)
		for range wave {
			wg.Go(func() {
				resp, err := c.Get(s.URL)
				if err != nil {
					errs <- err
					return
				}
				defer resp.Body.Close()
				if _, err := io.Copy(io.Discard, resp.Body); err != nil { // to EOF: back to the pool
					errs <- err
				}
			})
		}
		for range wave {
			<-arrived
		}
		for range wave { // all answer at once: they return to the pool in a burst
			release <- struct{}{}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		if got := conns.Load(); got != wave {
			t.Fatalf("after round %d the server saw %d connections; want %d (one per concurrent request, kept for the next wave)", round, got, wave)
		}
	}
}
