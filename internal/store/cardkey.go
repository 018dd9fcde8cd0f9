package store

import (
	"net/url"
	"strings"

	connector "github.com/a2a-connector/a2a-connector"
)

// Well-known card paths of A2A 0.3/1.0 and 0.2. Both name the card of the agent at the prefix
// they sit under.
var wellKnownCardPaths = []string{"/.well-known/agent-card.json", "/.well-known/agent.json"}

// CardKey is the registration key of an agent whose card was fetched from resolvedURL (after
// discovery and redirects): the canonical URL with a well-known card path, of either A2A
// generation, cut to the prefix it sits under. The bare origin, /.well-known/agent.json and
// /.well-known/agent-card.json of one agent are one key, and a tenant registers each key once
// (agents_tenant_card_key_key). A URL with a query keeps its path whole: the query may pick
// another card.
func CardKey(resolvedURL string) string {
	u, err := url.Parse(connector.CanonicalCardURL(resolvedURL))
	if err != nil || u.Host == "" {
		return resolvedURL
	}
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
