package store

import (
	"net/url"
	"strings"
)

// Well-known card paths of A2A 0.3/1.0 and 0.2. Both name the card of the agent at the prefix
// they sit under.
var wellKnownCardPaths = []string{"/.well-known/agent-card.json", "/.well-known/agent.json"}

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

// CardKey is the registration key of an agent whose card was fetched from resolvedURL (after
// discovery and redirects): the canonical URL with a well-known card path, of either A2A
// generation, cut to the prefix it sits under. The bare origin, /.well-known/agent.json and
// /.well-known/agent-card.json of one agent are one key, and a tenant registers each key once
// (agents_tenant_card_key_key). A URL with a query keeps its path whole: the query may pick
// another card.
func CardKey(resolvedURL string) string {
	u, err := url.Parse(resolvedURL)
	if err != nil || u.Host == "" {
		return resolvedURL
	}
	canonicalize(u)
	if u.RawQuery == "" {
		for _, wk := range wellKnownCardPaths {
			if p, ok := strings.CutSuffix(u.Path, wk); ok {
				u.Path, u.RawPath = p, ""
				break
			}
		}
		if u.Path == "/" {
			u.Path = ""
		}
	}
	return u.String()
}
