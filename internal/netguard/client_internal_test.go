package netguard

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// The transport settings are requirements (no proxy, no client timeout) that no loopback test
// can observe: the environment proxy skips loopback anyway.
func TestNewClient_transport_settings(t *testing.T) {
	t.Parallel()
	c := NewClient(Policy{}, ClientOptions{ResponseHeaderTimeout: 7 * time.Second})
	if c.Timeout != 0 {
		t.Errorf("Client.Timeout = %v, want 0 (it would cut SSE streams)", c.Timeout)
	}
	g, ok := c.Transport.(*guardedTransport)
	if !ok {
		t.Fatalf("Transport = %T, want *guardedTransport", c.Transport)
	}
	tr, ok := g.next.(*http.Transport)
	if !ok {
		t.Fatalf("inner transport = %T, want *http.Transport", g.next)
	}
	if tr.Proxy != nil {
		t.Error("Transport.Proxy is set; a proxy would dial for us and defeat the address check")
	}
	if tr.DialContext == nil || tr.DialTLSContext != nil {
		t.Error("every dial must go through the guarded DialContext")
	}
	if tr.TLSClientConfig == nil || tr.TLSClientConfig.MinVersion != tls.VersionTLS12 {
		t.Errorf("TLS MinVersion not 1.2: %+v", tr.TLSClientConfig)
	}
	if tr.ReadBufferSize != 1<<10 || tr.WriteBufferSize != 1<<10 {
		t.Errorf("ReadBufferSize %d, WriteBufferSize %d; want 1 KiB each (per connection, thousands open)", tr.ReadBufferSize, tr.WriteBufferSize)
	}
	if tr.MaxResponseHeaderBytes != 64<<10 {
		t.Errorf("MaxResponseHeaderBytes = %d, want 64 KiB", tr.MaxResponseHeaderBytes)
	}
	if !tr.ForceAttemptHTTP2 || tr.IdleConnTimeout != 90*time.Second {
		t.Errorf("ForceAttemptHTTP2 %v, IdleConnTimeout %v; want true, 90s", tr.ForceAttemptHTTP2, tr.IdleConnTimeout)
	}
	if tr.TLSHandshakeTimeout != 5*time.Second || tr.ResponseHeaderTimeout != 7*time.Second {
		t.Errorf("TLSHandshakeTimeout %v, ResponseHeaderTimeout %v; want 5s, 7s", tr.TLSHandshakeTimeout, tr.ResponseHeaderTimeout)
	}
}

// The URL check refuses literal addresses before any dial, so the client tests only reach the
// Control hook through names. This drives the hook with literal addresses directly.
func TestDial_checks_the_dialed_address_before_connecting(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	go func() { // accept and drop, so an allowed dial completes
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	tests := []struct {
		name    string
		addr    netip.Addr
		allowed string
		wantErr bool
	}{
		{name: "loopback_refused", addr: netip.MustParseAddr("127.0.0.1"), wantErr: true},
		{name: "mapped_loopback_refused", addr: netip.MustParseAddr("::ffff:127.0.0.1"), wantErr: true},
		{name: "unspecified_refused", addr: netip.MustParseAddr("0.0.0.0"), wantErr: true},
		{name: "v6_loopback_refused", addr: netip.MustParseAddr("::1"), wantErr: true},
		{name: "private_refused_without_connect_timeout", addr: netip.MustParseAddr("10.255.255.1"), wantErr: true},
		{name: "metadata_refused", addr: netip.MustParseAddr("169.254.169.254"), wantErr: true},
		{name: "loopback_allowed", addr: netip.MustParseAddr("127.0.0.1"), allowed: "127.0.0.0/8"},
		{name: "unspecified_allowed_reaches_local_host", addr: netip.MustParseAddr("0.0.0.0"), allowed: "0.0.0.0/32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			allowed, err := ParseCIDRs(tt.allowed)
			if err != nil {
				t.Fatal(err)
			}
			p := Policy{AllowedCIDRs: allowed}
			start := time.Now()
			conn, err := p.dial(t.Context(), 5*time.Second, "tcp", netip.AddrPortFrom(tt.addr, uint16(port)).String())
			elapsed := time.Since(start)
			if conn != nil {
				conn.Close()
			}
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				return
			}
			var be *BlockedAddressError
			if !errors.As(err, &be) {
				t.Fatalf("dial: err = %v, want *BlockedAddressError", err)
			}
			if elapsed > time.Second {
				t.Errorf("refusal took %v, want no connect attempt", elapsed)
			}
		})
	}
}

var _ http.RoundTripper = (*guardedTransport)(nil)
