package netguard_test

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

func prefixes(t *testing.T, s string) []netip.Prefix {
	t.Helper()
	p, err := netguard.ParseCIDRs(s)
	if err != nil {
		t.Fatalf("ParseCIDRs(%q): %v", s, err)
	}
	return p
}

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr    string
		allowed string // AllowedCIDRs, as ParseCIDRs reads them
		// wantReason is a substring of the refusal reason; "" means the address may be dialed.
		wantReason string
	}{
		// Public addresses, including the edges of refused ranges.
		{addr: "8.8.8.8"},
		{addr: "1.1.1.1"},
		{addr: "100.63.255.255"},
		{addr: "100.128.0.0"},
		{addr: "172.15.255.255"},
		{addr: "172.32.0.0"},
		{addr: "192.0.3.1"},
		{addr: "198.17.255.255"},
		{addr: "198.20.0.0"},
		{addr: "223.255.255.255"},
		{addr: "2606:4700:4700::1111"},
		{addr: "2a00:1450:4001:800::200e"},
		{addr: "64:ff9b::808:808"}, // NAT64 of 8.8.8.8
		{addr: "2002:808:808::1"},  // 6to4 of 8.8.8.8
		{addr: "2001:4860:4860::8888"},

		// IPv4 refusals.
		{addr: "0.0.0.0", wantReason: "unspecified"},
		{addr: "0.1.2.3", wantReason: "this network"},
		{addr: "10.0.0.1", wantReason: "private"},
		{addr: "10.255.255.255", wantReason: "private"},
		{addr: "100.64.0.1", wantReason: "CGNAT"},
		{addr: "100.127.255.255", wantReason: "CGNAT"},
		{addr: "127.0.0.1", wantReason: "loopback"},
		{addr: "127.255.255.254", wantReason: "loopback"},
		{addr: "169.254.169.254", wantReason: "metadata"},
		{addr: "169.254.0.1", wantReason: "link-local"},
		{addr: "172.16.0.1", wantReason: "private"},
		{addr: "172.31.255.255", wantReason: "private"},
		{addr: "192.0.0.8", wantReason: "IETF"},
		{addr: "192.0.2.1", wantReason: "documentation"},
		{addr: "192.88.99.1", wantReason: "6to4 relay"},
		{addr: "192.168.1.1", wantReason: "private"},
		{addr: "198.18.0.1", wantReason: "benchmarking"},
		{addr: "198.19.255.255", wantReason: "benchmarking"},
		{addr: "198.51.100.7", wantReason: "documentation"},
		{addr: "203.0.113.9", wantReason: "documentation"},
		{addr: "224.0.0.1", wantReason: "multicast"},
		{addr: "239.255.255.250", wantReason: "multicast"},
		{addr: "240.0.0.1", wantReason: "reserved"},
		{addr: "255.255.255.255", wantReason: "broadcast"},

		// IPv6 refusals.
		{addr: "::", wantReason: "unspecified"},
		{addr: "::1", wantReason: "loopback"},
		{addr: "::127.0.0.1", wantReason: "IPv4-compatible"},
		{addr: "::ffff:127.0.0.1", wantReason: "IPv4-mapped"},
		{addr: "::ffff:10.0.0.1", wantReason: "IPv4-mapped"},
		{addr: "::ffff:169.254.169.254", wantReason: "IPv4-mapped"},
		{addr: "::ffff:8.8.8.8", wantReason: "IPv4-mapped"}, // refused outright, even if public
		{addr: "64:ff9b::7f00:1", wantReason: "NAT64 address (64:ff9b::/96) embedding 127.0.0.1, which is loopback"},
		{addr: "64:ff9b::a9fe:a9fe", wantReason: "NAT64"},
		{addr: "64:ff9b::a00:1", wantReason: "NAT64"},
		{addr: "64:ff9b:1::1", wantReason: "local-use NAT64"},
		{addr: "2002:7f00:1::1", wantReason: "6to4 address (2002::/16) embedding 127.0.0.1"},
		{addr: "2002:a9fe:a9fe::", wantReason: "6to4"},
		{addr: "2001::1", wantReason: "Teredo"},
		{addr: "2001:0:4136:e378:8000:63bf:3fff:fdd2", wantReason: "Teredo"},
		{addr: "2001:2::1", wantReason: "benchmarking"},
		{addr: "2001:db8::1", wantReason: "documentation"},
		{addr: "3fff::1", wantReason: "documentation"},
		{addr: "fc00::1", wantReason: "unique local"},
		{addr: "fd12:3456:789a::1", wantReason: "unique local"},
		{addr: "fe80::1", wantReason: "link-local"},
		{addr: "fe80::1%eth0", wantReason: "link-local"},
		{addr: "febf::1", wantReason: "link-local"},
		{addr: "fec0::1", wantReason: "site-local"},
		{addr: "ff02::1", wantReason: "multicast"},
		{addr: "ff0e::1", wantReason: "multicast"},
		{addr: "100::1", wantReason: "discard"},
		{addr: "4000::1", wantReason: "reserved IPv6"},

		// AllowedCIDRs are exceptions.
		{addr: "127.0.0.1", allowed: "127.0.0.0/8"},
		{addr: "127.0.0.2", allowed: "127.0.0.1/32", wantReason: "loopback"},
		{addr: "::ffff:127.0.0.1", allowed: "127.0.0.0/8"},
		{addr: "::ffff:8.8.8.8", allowed: "8.8.8.0/24"},
		{addr: "::ffff:10.0.0.1", allowed: "127.0.0.0/8", wantReason: "IPv4-mapped"},
		{addr: "169.254.169.254", allowed: "169.254.169.254"},
		{addr: "169.254.169.253", allowed: "169.254.169.254", wantReason: "link-local"},
		{addr: "10.0.0.1", allowed: "10.0.0.0/8"},
		{addr: "::1", allowed: "127.0.0.0/8", wantReason: "loopback"},
		{addr: "::1", allowed: "::1"},
		{addr: "0.0.0.0", allowed: "127.0.0.0/8", wantReason: "unspecified"},
		{addr: "64:ff9b::a00:1", allowed: "10.0.0.0/8"}, // judged as the embedded 10.0.0.1
		{addr: "fe80::1%eth0", allowed: "fe80::/10"},    // the zone does not hide it from the prefix
		{addr: "fd00::1", allowed: "0.0.0.0/0", wantReason: "unique local"},
		{addr: "fd00::1", allowed: "::/0"},
	}
	for _, tt := range tests {
		name := tt.addr
		if tt.allowed != "" {
			name += "_allowing_" + tt.allowed
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := netguard.Policy{AllowedCIDRs: prefixes(t, tt.allowed)}
			ip := netip.MustParseAddr(tt.addr)
			err := p.CheckAddr(ip)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("CheckAddr(%s) = %v, want allowed", ip, err)
				}
				return
			}
			if !errors.Is(err, netguard.ErrBlockedAddress) {
				t.Fatalf("CheckAddr(%s) = %v, want ErrBlockedAddress", ip, err)
			}
			var be *netguard.BlockedAddressError
			if !errors.As(err, &be) {
				t.Fatalf("CheckAddr(%s) = %T, want *BlockedAddressError", ip, err)
			}
			if !strings.Contains(be.Reason, tt.wantReason) {
				t.Errorf("reason = %q, want it to contain %q", be.Reason, tt.wantReason)
			}
			if be.Addr != ip.WithZone("") {
				t.Errorf("Addr = %s, want %s", be.Addr, ip.WithZone(""))
			}
			if !strings.Contains(err.Error(), "A2AC_ALLOWED_CIDRS") {
				t.Errorf("message %q does not say how to allow the address", err)
			}
		})
	}
}

func TestCheckAddr_invalid_address_is_refused(t *testing.T) {
	t.Parallel()
	if err := (netguard.Policy{}).CheckAddr(netip.Addr{}); !errors.Is(err, netguard.ErrBlockedAddress) {
		t.Fatalf("CheckAddr(zero Addr) = %v, want ErrBlockedAddress", err)
	}
}

func TestBlockedAddressError_message(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  *netguard.BlockedAddressError
		want string
	}{
		{
			name: "with_host",
			err:  &netguard.BlockedAddressError{Addr: netip.MustParseAddr("127.0.0.1"), Host: "localhost", Reason: "loopback"},
			want: `blocked address 127.0.0.1 (host "localhost"): loopback; to allow it add 127.0.0.1/32 to A2AC_ALLOWED_CIDRS`,
		},
		{
			name: "host_is_the_address",
			err:  &netguard.BlockedAddressError{Addr: netip.MustParseAddr("::1"), Host: "::1", Reason: "loopback"},
			want: `blocked address ::1: loopback; to allow it add ::1/128 to A2AC_ALLOWED_CIDRS`,
		},
		{
			name: "mapped_suggests_the_ipv4_form",
			err:  &netguard.BlockedAddressError{Addr: netip.MustParseAddr("::ffff:10.0.0.1"), Reason: "IPv4-mapped IPv6 address (::ffff:0:0/96)"},
			want: `blocked address ::ffff:10.0.0.1: IPv4-mapped IPv6 address (::ffff:0:0/96); to allow it add 10.0.0.1/32 to A2AC_ALLOWED_CIDRS`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, tt.err.Error()); diff != "" {
				t.Errorf("Error() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseCIDRs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr bool
	}{
		{name: "empty_is_nil", in: "", want: nil},
		{name: "blank_is_nil", in: "  ", want: nil},
		{name: "list_with_spaces", in: "127.0.0.0/8, ::1/128", want: []string{"127.0.0.0/8", "::1/128"}},
		{name: "bare_ipv4_is_a_32", in: "10.1.2.3", want: []string{"10.1.2.3/32"}},
		{name: "bare_ipv6_is_a_128", in: "::1", want: []string{"::1/128"}},
		{name: "host_bits_are_masked", in: "10.1.2.3/8", want: []string{"10.0.0.0/8"}},
		{name: "mapped_prefix_becomes_ipv4", in: "::ffff:10.0.0.0/104", want: []string{"10.0.0.0/8"}},
		{name: "empty_items_are_skipped", in: "127.0.0.0/8,,", want: []string{"127.0.0.0/8"}},
		{name: "truncated_prefix_is_an_error", in: "10.0.0/8", wantErr: true},
		{name: "name_is_an_error", in: "localhost", wantErr: true},
		{name: "too_many_bits_is_an_error", in: "10.0.0.0/33", wantErr: true},
		{name: "zone_is_an_error", in: "fe80::1%eth0", wantErr: true},
		{name: "one_bad_item_fails_the_list", in: "127.0.0.0/8, nope", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := netguard.ParseCIDRs(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseCIDRs(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if err != nil {
				if got != nil {
					t.Errorf("ParseCIDRs(%q) = %v with an error, want nil", tt.in, got)
				}
				return
			}
			var gotS []string
			for _, p := range got {
				gotS = append(gotS, p.String())
			}
			if diff := cmp.Diff(tt.want, gotS); diff != "" {
				t.Errorf("ParseCIDRs(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		url     string
		policy  netguard.Policy
		wantErr error // nil: allowed; errAny: some error
	}{
		{name: "https_name_is_allowed", url: "https://agent.example/.well-known/agent-card.json"},
		{name: "uppercase_https_is_allowed", url: "HTTPS://agent.example/"},
		{name: "http_is_refused_by_default", url: "http://agent.example/", wantErr: netguard.ErrInsecureURL},
		{name: "http_is_allowed_when_insecure_allowed", url: "http://agent.example/", policy: netguard.Policy{AllowInsecureHTTP: true}},
		{name: "ftp_is_refused", url: "ftp://agent.example/card", wantErr: netguard.ErrInsecureURL},
		{name: "file_is_refused_even_when_insecure_allowed", url: "file:///etc/passwd", policy: netguard.Policy{AllowInsecureHTTP: true}, wantErr: netguard.ErrInsecureURL},
		{name: "gopher_is_refused", url: "gopher://agent.example/", wantErr: netguard.ErrInsecureURL},
		{name: "userinfo_is_refused", url: "https://user:secret@agent.example/", wantErr: netguard.ErrInsecureURL},
		{name: "userinfo_disguising_host_is_refused", url: "https://agent.example@127.0.0.1/", wantErr: netguard.ErrInsecureURL},
		{name: "no_host_is_an_error", url: "https:///card", wantErr: errAny},
		{name: "literal_loopback_is_blocked", url: "https://127.0.0.1/", wantErr: netguard.ErrBlockedAddress},
		{name: "literal_metadata_is_blocked", url: "http://169.254.169.254/latest/meta-data/", policy: netguard.Policy{AllowInsecureHTTP: true}, wantErr: netguard.ErrBlockedAddress},
		{name: "literal_v6_loopback_is_blocked", url: "https://[::1]:8443/", wantErr: netguard.ErrBlockedAddress},
		{name: "literal_mapped_is_blocked", url: "https://[::ffff:127.0.0.1]/", wantErr: netguard.ErrBlockedAddress},
		{name: "literal_zoned_link_local_is_blocked", url: "https://[fe80::1%25eth0]/", wantErr: netguard.ErrBlockedAddress},
		{name: "literal_allowed_address_passes", url: "https://10.0.0.1/", policy: netguard.Policy{AllowedCIDRs: prefixes(t, "10.0.0.0/8")}},
		{name: "literal_public_address_passes", url: "https://8.8.8.8/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			err = tt.policy.CheckURL(u)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("CheckURL(%s) = %v, want nil", tt.url, err)
			case tt.wantErr == errAny && err == nil:
				t.Fatalf("CheckURL(%s) = nil, want an error", tt.url)
			case tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("CheckURL(%s) = %v, want %v", tt.url, err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q leaks the URL password", err)
			}
		})
	}
	if err := (netguard.Policy{}).CheckURL(nil); err == nil {
		t.Errorf("CheckURL(nil) = nil, want an error")
	}
}

var errAny = errors.New("any error")
