package connector

import (
	"net/url"
	"strings"
)

// CanonicalCardURL spells one card URL one way, so that "HTTPS://Agent.example.com:443/" and
// "https://agent.example.com" are the same registration, not two agents: scheme and host
// lower-cased, default port and fragment dropped, a bare "/" path removed. Anything unparsable
// is returned as it is.
func CanonicalCardURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	canonicalize(u)
	return u.String()
}

func canonicalize(u *url.URL) {
	u.Scheme = strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "/" && u.RawQuery == "" {
		u.Path, u.RawPath = "", ""
	}
}
