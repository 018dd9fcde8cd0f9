// Package netguard builds the one HTTP client used for every outbound call the connector makes
// (agent card fetches and agent calls), so that a tenant-supplied URL cannot be used to reach the
// connector's own network (server-side request forgery).
//
// The check is made on the IP address actually dialed, in the dialer's Control hook, after DNS
// resolution and for every redirect hop, so DNS rebinding and redirects cannot slip past it. It
// refuses loopback, private (RFC 1918), link-local (including the cloud metadata address
// 169.254.169.254), CGNAT, unique-local, multicast, unspecified, broadcast, documentation,
// benchmarking and reserved addresses, IPv4-mapped IPv6 addresses, and IPv6 transition forms
// (NAT64, 6to4) that embed a refused IPv4 address, unless the address is inside
// Policy.AllowedCIDRs. It refuses http:// unless Policy.AllowInsecureHTTP, any other scheme, and
// URLs carrying credentials.
//
// It does not read configuration, use a proxy, or set Client.Timeout (that would cut long SSE
// streams): deadlines come from the request context.
package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// ErrBlockedAddress is matched (errors.Is) by every refusal of a destination address. The
// concrete error is a *BlockedAddressError.
var ErrBlockedAddress = errors.New("blocked address")

// ErrInsecureURL is matched by every refusal of a URL's form: scheme http without
// Policy.AllowInsecureHTTP, a scheme other than http or https, or a URL with userinfo.
var ErrInsecureURL = errors.New("insecure URL")

// BlockedAddressError is a refused destination address.
type BlockedAddressError struct {
	Addr netip.Addr // the address refused
	Host string     // the host name being reached, if known ("" or the address itself otherwise)
	// Reason names the kind of address, e.g. "loopback" or "private network (RFC 1918)".
	Reason string
}

// Error names the address, why it is refused and how to allow it.
func (e *BlockedAddressError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "blocked address %s", e.Addr)
	if e.Host != "" && e.Host != e.Addr.String() {
		fmt.Fprintf(&b, " (host %q)", e.Host)
	}
	reason := e.Reason
	if reason == "" {
		reason = "not a public address"
	}
	allow := e.Addr.WithZone("")
	if allow.Is4In6() {
		allow = allow.Unmap()
	}
	if allow.IsValid() {
		fmt.Fprintf(&b, ": %s; to allow it add %s to A2AC_ALLOWED_CIDRS",
			reason, netip.PrefixFrom(allow, allow.BitLen()))
	} else {
		fmt.Fprintf(&b, ": %s", reason)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrBlockedAddress) true.
func (e *BlockedAddressError) Is(target error) bool { return target == ErrBlockedAddress }

// Policy says which destinations are allowed. The zero Policy allows https to public addresses
// only.
type Policy struct {
	// AllowedCIDRs are exceptions to the blocklist (tests and local dev set 127.0.0.0/8).
	AllowedCIDRs []netip.Prefix
	// AllowInsecureHTTP permits http:// (by default only https is allowed).
	AllowInsecureHTTP bool
}

// ParseCIDRs parses a comma-separated list of prefixes or bare addresses, such as
// "127.0.0.0/8, ::1/128" (the form of A2AC_ALLOWED_CIDRS). An empty string yields nil; empty
// items are skipped. A bare address becomes a /32 or /128, and an IPv4-mapped prefix
// (::ffff:10.0.0.0/104) becomes its IPv4 form, since that is what the dialer sees.
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		p, err := parseCIDR(item)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func parseCIDR(s string) (netip.Prefix, error) {
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR prefix or IP address", s)
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR prefix or IP address", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// CheckURL refuses a URL before any dial: a scheme other than http or https, http unless
// AllowInsecureHTTP, a URL with userinfo (credentials belong in headers, and userinfo is a
// classic way to disguise the real host), a URL without a host, and a literal IP host that
// CheckAddr refuses. Host names pass here; their addresses are checked when dialed.
func (p Policy) CheckURL(u *url.URL) error {
	if u == nil {
		return fmt.Errorf("no URL: %w", ErrInsecureURL)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !p.AllowInsecureHTTP {
			return fmt.Errorf("url %q: scheme http is not allowed, https only (A2AC_ALLOW_INSECURE_HTTP permits it): %w",
				u.Redacted(), ErrInsecureURL)
		}
	default:
		return fmt.Errorf("url %q: scheme %q is not allowed, only https or http: %w",
			u.Redacted(), u.Scheme, ErrInsecureURL)
	}
	if u.User != nil {
		return fmt.Errorf("url %q: userinfo is not allowed in URLs: %w", u.Redacted(), ErrInsecureURL)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("url %q: no host", u.Redacted())
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return p.checkAddr(ip, host)
	}
	return nil
}

// CheckAddr reports whether ip may be dialed: nil if it is a public address or inside
// AllowedCIDRs, a *BlockedAddressError otherwise.
func (p Policy) CheckAddr(ip netip.Addr) error {
	return p.checkAddr(ip, "")
}

func (p Policy) checkAddr(ip netip.Addr, host string) error {
	if !ip.IsValid() {
		return &BlockedAddressError{Addr: ip, Host: host, Reason: "invalid address"}
	}
	// A zoned address never matches a prefix (netip), so the zone must go before any check.
	ip = ip.WithZone("")
	if p.allowed(ip) {
		return nil
	}
	if reason := p.blockReason(ip); reason != "" {
		return &BlockedAddressError{Addr: ip, Host: host, Reason: reason}
	}
	return nil
}

func (p Policy) allowed(ip netip.Addr) bool {
	for _, pr := range p.AllowedCIDRs {
		if pr.Contains(ip) || (ip.Is4In6() && pr.Contains(ip.Unmap())) {
			return true
		}
	}
	return false
}

// blockReason says why ip (zone already stripped, not in AllowedCIDRs) is refused, or "" if
// it may be dialed.
func (p Policy) blockReason(ip netip.Addr) string {
	if ip.Is4In6() {
		// Refused even when the IPv4 form is public: no legitimate URL spells an address this
		// way, and filters that compare only IPv4 forms are bypassed by it.
		return "IPv4-mapped IPv6 address (::ffff:0:0/96)"
	}
	if v4, kind, ok := embeddedIPv4(ip); ok {
		var be *BlockedAddressError
		if errors.As(p.CheckAddr(v4), &be) {
			return fmt.Sprintf("%s embedding %s, which is %s", kind, v4, be.Reason)
		}
		return ""
	}
	for _, b := range blocked {
		if b.prefix.Contains(ip) {
			return b.reason
		}
	}
	if ip.Is6() && !globalUnicast6.Contains(ip) {
		return "reserved IPv6 address (outside 2000::/3)"
	}
	return ""
}

// embeddedIPv4 returns the IPv4 address carried by a NAT64 (64:ff9b::/96) or 6to4 (2002::/16)
// address: dialing it reaches that IPv4 address through a translator or relay, so it is
// judged as that address.
func embeddedIPv4(ip netip.Addr) (v4 netip.Addr, kind string, ok bool) {
	b := ip.As16()
	switch {
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), "NAT64 address (64:ff9b::/96)", true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), "6to4 address (2002::/16)", true
	}
	return netip.Addr{}, "", false
}

var (
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
)

// blocked lists refused ranges, most specific first where they overlap; never modified.
// Sources: IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890 and successors).
var blocked = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/32"), "unspecified address"},
	{netip.MustParsePrefix("0.0.0.0/8"), "\"this network\" address (0.0.0.0/8)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private network (RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared CGNAT address (100.64.0.0/10)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.169.254/32"), "link-local cloud metadata address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private network (RFC 1918)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation address (192.0.2.0/24)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast (192.88.99.0/24)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private network (RFC 1918)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking address (198.18.0.0/15)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation address (198.51.100.0/24)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation address (203.0.113.0/24)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (240.0.0.0/4)"},

	{netip.MustParsePrefix("::/128"), "unspecified address"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible IPv6 address (deprecated, ::/96)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64 address (64:ff9b:1::/48)"},
	{netip.MustParsePrefix("100::/64"), "discard-only address (100::/64)"},
	{netip.MustParsePrefix("2001::/32"), "Teredo tunnel address (2001::/32)"},
	{netip.MustParsePrefix("2001:2::/48"), "benchmarking address (2001:2::/48)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation address (2001:db8::/32)"},
	{netip.MustParsePrefix("3fff::/20"), "documentation address (3fff::/20)"},
	{netip.MustParsePrefix("fc00::/7"), "unique local address (fc00::/7)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (deprecated, fec0::/10)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}
