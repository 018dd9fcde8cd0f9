package cardfetch

import (
	"errors"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// urlProblem is why a card URL cannot be fetched at all. Its text is safe to show a tenant: it
// never quotes the URL (which may carry a password) nor a parser's wording.
type urlProblem string

func (p urlProblem) Error() string { return string(p) }

// Why CheckURL refuses a URL.
const (
	urlUnparsable  urlProblem = "it is not a valid URL"
	urlControl     urlProblem = "it contains control characters or bytes that are not UTF-8"
	urlNotAbsolute urlProblem = "it is not an absolute URL; paste the full https:// address of the agent card"
	urlScheme      urlProblem = "only https:// URLs are fetched"
	urlUserinfo    urlProblem = "it carries a user name or password (user:password@host); credentials do not belong in a card URL: register them with the agent instead"
	urlEscape      urlProblem = "it holds an invalid %-escape"
	urlHost        urlProblem = "its host name is not valid"
	urlPort        urlProblem = "its port is not a number from 1 to 65535"
)

// CheckURL parses a card URL as a tenant typed it (surrounding spaces already trimmed) and
// refuses what can never be fetched, before any network call: text that is not UTF-8 or holds
// control characters, anything url.Parse refuses, a relative URL, a scheme other than http(s),
// userinfo (user:password@) of any kind, an invalid host name or port. Whether plain http is
// allowed is the Fetcher's call, not CheckURL's.
//
// Its error's text is a clause safe to show the tenant ("it carries a user name or password
// ..."): it never quotes the URL nor the parser's message.
func CheckURL(s string) (*url.URL, error) {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
		return nil, urlControl
	}
	u, err := url.Parse(s)
	if err != nil {
		var (
			esc  url.EscapeError
			host url.InvalidHostError
		)
		switch {
		case errors.As(err, &esc):
			return nil, urlEscape
		case errors.As(err, &host):
			return nil, urlHost
		}
		return nil, urlUnparsable
	}
	if u.User != nil {
		// Refused, not stripped: the tenant meant something by it, and a password typed into
		// a URL must not be stored, fetched with, or shown again.
		return nil, urlUserinfo
	}
	if !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return nil, urlNotAbsolute
	}
	switch strings.ToLower(u.Scheme) {
	case "https", "http":
	default:
		return nil, urlScheme
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, urlPort
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return nil, urlPort
	}
	if !validHost(u.Hostname()) {
		return nil, urlHost
	}
	return u, nil
}

// validHost accepts an IP address or a host name a resolver could look up: dot-separated labels
// of letters, digits, hyphens and underscores (some private DNS uses them), at most 63 bytes
// each and 253 in all, and internationalized names that IDNA spells that way.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	needIDNA := strings.Contains(strings.ToLower(h), "xn--")
	for _, r := range h {
		needIDNA = needIDNA || r >= utf8.RuneSelf
	}
	if needIDNA {
		ascii, err := idna.Lookup.ToASCII(h)
		if err != nil {
			return false
		}
		h = ascii
	}
	name := strings.TrimSuffix(h, ".")
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range []byte(label) {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// RedactURL returns raw with its userinfo (user:password@) replaced by "xxxxx@", found by text
// so that it works on URLs url.Parse refuses too. Every URL a FetchError shows goes through it.
func RedactURL(raw string) string {
	i := strings.Index(raw, "//")
	if i < 0 {
		return raw
	}
	rest := raw[i+2:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return raw
	}
	return raw[:i+2] + "xxxxx" + rest[at:]
}

func redactAll(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = RedactURL(u)
	}
	return out
}
