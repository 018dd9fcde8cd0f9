package neterr_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/a2a-connector/a2a-connector/internal/neterr"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

// loopback is the netguard policy of the tests: loopback allowed, plain http too.
var loopback = netguard.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AllowInsecureHTTP: true}

// The errors are real: each case makes a real call through the netguard client — over both of
// its transports, net/http's and internal/h1's — to a real server on loopback that fails in one
// way, and classifies what the client returned.
func TestClassifyRealCallErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		url           func(t *testing.T) string
		policy        netguard.Policy
		opts          netguard.ClientOptions
		want          neterr.Kind
		beforeConnect bool
		reason        string
	}{
		{
			name: "a_refused_dial_is_refused", url: refusingAddr, policy: loopback,
			want: neterr.Refused, beforeConnect: true, reason: "the connection was refused",
		},
		{
			name: "a_loopback_address_without_an_exception_is_blocked", url: plainServer,
			policy: netguard.Policy{AllowInsecureHTTP: true},
			want:   neterr.Blocked, beforeConnect: true, reason: "its address is one the connector may not call",
		},
		{
			name: "an_unknown_certificate_authority_is_tls", url: tlsServer(nil), policy: loopback,
			want: neterr.TLS, reason: "its TLS certificate was not accepted: certificate signed by unknown authority (it does not chain to a CA the connector trusts: give the agent's CA bundle in tls.caPem, or check that the one given is the CA that signed it)",
		},
		{
			name: "a_certificate_for_another_host_is_tls", url: tlsServerOn("127.0.0.2", nil), policy: loopback,
			opts: netguard.ClientOptions{RootCAs: testCA()},
			want: neterr.TLS, reason: "its TLS certificate was not accepted: it is not valid for the host name called",
		},
		{
			name: "plain_http_on_an_https_url_is_tls", url: httpsURLOf(plainServer), policy: loopback,
			want: neterr.TLS, reason: "it does not speak TLS on that port",
		},
		{
			// A TLS 1.2 server that wants a client certificate: the server's alert ends the
			// handshake ("remote error: tls: …").
			name: "an_alert_from_the_server_is_tls", policy: loopback, opts: netguard.ClientOptions{RootCAs: testCA()},
			url:  tlsServer(&tls.Config{ClientAuth: tls.RequireAnyClientCert, MaxVersion: tls.VersionTLS12}),
			want: neterr.TLS, reason: "the TLS handshake failed",
		},
		{
			// The same in TLS 1.3: the client's handshake completes, the alert comes with the
			// first read.
			name: "an_alert_after_a_tls13_handshake_is_tls", policy: loopback, opts: netguard.ClientOptions{RootCAs: testCA()},
			url:  tlsServer(&tls.Config{ClientAuth: tls.RequireAnyClientCert, MinVersion: tls.VersionTLS13}),
			want: neterr.TLS, reason: "the agent asked for a client certificate and none was sent (its card's mutual TLS needs credentials.mtls)",
		},
		{
			name: "a_reset_connection_is_reset", url: rawServer(resetAfterRequest), policy: loopback,
			want: neterr.Reset, reason: "the connection was reset",
		},
		{
			name: "a_connection_closed_before_the_response_is_closed", url: rawServer(closeAfterRequest), policy: loopback,
			want: neterr.Closed, reason: "it closed the connection",
		},
		{
			name: "no_response_headers_in_time_is_a_timeout", url: rawServer(silent), policy: loopback,
			opts: netguard.ClientOptions{ResponseHeaderTimeout: 100 * time.Millisecond},
			want: neterr.Timeout, reason: "the connection timed out",
		},
		{
			name: "no_tls_handshake_in_time_is_a_timeout", url: httpsURLOf(rawServer(silent)), policy: loopback,
			opts: netguard.ClientOptions{TLSHandshakeTimeout: 100 * time.Millisecond},
			want: neterr.Timeout, reason: "the connection timed out",
		},
	} {
		for _, inline := range []bool{false, true} {
			name := c.name + map[bool]string{false: "/net_http", true: "/h1"}[inline]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				opts := c.opts
				opts.InlineHTTP1 = inline
				err := call(t, netguard.NewClient(c.policy, opts), c.url(t))
				if got := neterr.Classify(err); got != c.want {
					t.Errorf("Classify(%v) = %s, want %s", err, got, c.want)
				}
				if got := neterr.BeforeConnect(err); got != c.beforeConnect {
					t.Errorf("BeforeConnect(%v) = %v, want %v", err, got, c.beforeConnect)
				}
				if got := neterr.Reason(err); got != c.reason {
					t.Errorf("Reason(%v) = %q, want %q", err, got, c.reason)
				}
			})
		}
	}
}

// A resolver on loopback answers each way a name can fail to resolve; the Go resolver asks it.
func TestClassifyRealResolverErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		rcode  dnsmessage.RCode
		silent bool
		want   neterr.Kind
		reason string
	}{
		{name: "nxdomain_is_no_such_host", rcode: dnsmessage.RCodeNameError, want: neterr.NoSuchHost, reason: "its host name does not resolve"},
		{name: "servfail_is_dns", rcode: dnsmessage.RCodeServerFailure, want: neterr.DNS, reason: "its host name could not be resolved"},
		{name: "a_resolver_that_does_not_answer_is_dns", silent: true, want: neterr.DNS, reason: "its host name could not be resolved"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			addr := dnsServer(t, c.rcode, c.silent)
			r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "udp", addr)
			}}
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			// The dialer's error, as netguard's dial returns it: a *net.OpError around the *net.DNSError.
			_, err := (&net.Dialer{Resolver: r}).DialContext(ctx, "tcp", "agent.example.:443")
			if err == nil {
				t.Fatal("the name resolved")
			}
			if got := neterr.Classify(err); got != c.want {
				t.Errorf("Classify(%v) = %s, want %s", err, got, c.want)
			}
			if !neterr.BeforeConnect(err) {
				t.Errorf("BeforeConnect(%v) = false", err)
			}
			if got := neterr.Reason(err); got != c.reason {
				t.Errorf("Reason(%v) = %q, want %q", err, got, c.reason)
			}
		})
	}
}

// The kinds no loopback call can produce, as the kernel reports them.
func TestClassifyErrnos(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		err  error
		want neterr.Kind
	}{
		{name: "no_route_to_host", err: dialErr(syscall.EHOSTUNREACH), want: neterr.Unreachable},
		{name: "network_unreachable", err: dialErr(syscall.ENETUNREACH), want: neterr.Unreachable},
		{name: "connect_timed_out", err: dialErr(syscall.ETIMEDOUT), want: neterr.Timeout},
		{name: "broken_pipe", err: &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, want: neterr.Reset},
		{name: "nil", err: nil, want: neterr.Other},
		{name: "an_unrelated_error", err: errors.New("boom"), want: neterr.Other},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := neterr.Classify(c.err); got != c.want {
				t.Errorf("Classify(%v) = %s, want %s", c.err, got, c.want)
			}
		})
	}
}

func dialErr(errno syscall.Errno) error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno)}
}

const requestBody = `{"jsonrpc":"2.0"}`

// call POSTs to url and returns the client's error; a response is a test failure.
func call(t *testing.T, c *http.Client, url string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(requestBody))
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Do(req)
	if err == nil {
		_, err = io.ReadAll(res.Body)
		res.Body.Close()
		if err == nil {
			t.Fatalf("%s answered %s", url, res.Status)
		}
	}
	t.Cleanup(c.CloseIdleConnections)
	return err
}

// refusingAddr is the URL of a loopback port nothing listens on.
func refusingAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/"
}

func plainServer(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// httpsURLOf is the https:// URL of the server url makes.
func httpsURLOf(url func(*testing.T) string) func(*testing.T) string {
	return func(t *testing.T) string { return strings.Replace(url(t), "http://", "https://", 1) }
}

// testCA is the pool that trusts httptest's certificate (for 127.0.0.1, ::1 and example.com).
func testCA() *x509.CertPool {
	srv := httptest.NewTLSServer(nil) // every httptest TLS server has the same certificate
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return pool
}

func tlsServer(cfg *tls.Config) func(*testing.T) string { return tlsServerOn("127.0.0.1", cfg) }

// tlsServerOn is an httptest TLS server listening on host, with cfg's settings.
func tlsServerOn(host string, cfg *tls.Config) func(*testing.T) string {
	return func(t *testing.T) string {
		ln, err := net.Listen("tcp", host+":0")
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		srv.Listener.Close()
		srv.Listener = ln
		srv.Config.ErrorLog = discardLog()
		if cfg != nil {
			srv.TLS = cfg.Clone()
		}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv.URL + "/"
	}
}

// rawServer answers every connection with handle, on loopback.
func rawServer(handle func(net.Conn)) func(*testing.T) string {
	return func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					handle(c)
				}()
			}
		}()
		t.Cleanup(func() { ln.Close(); <-done })
		return "http://" + ln.Addr().String() + "/"
	}
}

// readRequest reads the whole request call sends, headers and body, so that closing the
// connection afterwards sends a FIN (unread data would make the kernel send a reset).
func readRequest(c net.Conn) {
	buf := make([]byte, 4096)
	var got []byte
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	for !strings.Contains(string(got), "\r\n\r\n"+requestBody) {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			return
		}
	}
}

func resetAfterRequest(c net.Conn) {
	readRequest(c)
	_ = c.(*net.TCPConn).SetLinger(0) // close with RST
}

func closeAfterRequest(c net.Conn) { readRequest(c) }

// silent reads what comes and says nothing until the client gives up.
func silent(c net.Conn) { _, _ = io.Copy(io.Discard, c) }

// dnsServer is a DNS server on loopback UDP that answers every query with rcode, or never.
func dnsServer(t *testing.T, rcode dnsmessage.RCode, never bool) string {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if never {
				continue
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			qs, err := p.AllQuestions()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, RecursionDesired: h.RecursionDesired,
				RecursionAvailable: true, RCode: rcode})
			_ = b.StartQuestions()
			for _, q := range qs {
				_ = b.Question(q)
			}
			msg, err := b.Finish()
			if err == nil {
				_, _ = pc.WriteTo(msg, from)
			}
		}
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return pc.LocalAddr().String()
}

// discardLog keeps the TLS servers' handshake complaints out of the test output.
func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }
