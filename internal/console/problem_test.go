package console

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
)

// TestFetchProblemSplitsByFault: the URL's mistakes are 4xx, a failing host 502. The live cases
// are in TestCardFetchFailuresSplitByFault; these are the ones a loopback server cannot stage.
func TestFetchProblemSplitsByFault(t *testing.T) {
	t.Parallel()
	const u = "https://agent.example.com/card.json"
	tried := []string{u}
	nxdomain := &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "agent.example.com", Server: "10.0.0.2:53", IsNotFound: true}}
	servfail := &net.OpError{Op: "dial", Err: &net.DNSError{Err: "server misbehaving", Name: "agent.example.com", Server: "10.0.0.2:53", IsTemporary: true}}
	for _, c := range []struct {
		name         string
		fe           *cardfetch.FetchError
		status       int
		code, reason string
	}{
		{"typed_invalid_url", &cardfetch.FetchError{Kind: cardfetch.KindInvalidURL, URL: u, Err: errors.New("x")}, 400, "invalid_url", ""},
		{"derived_invalid_url", &cardfetch.FetchError{Kind: cardfetch.KindInvalidURL, URL: u, Tried: tried, Err: errors.New("x")}, 400, "invalid_url", ""},
		{"typed_http", &cardfetch.FetchError{Kind: cardfetch.KindInsecureURL, URL: u, Err: errors.New("x")}, 400, "insecure_url", ""},
		{"redirect_to_http", &cardfetch.FetchError{Kind: cardfetch.KindInsecureURL, URL: u, Tried: tried, Err: errors.New("x")}, 502, "card_unreachable", "insecure_url"},
		{"no_such_host", &cardfetch.FetchError{Kind: cardfetch.KindDNS, URL: u, Tried: tried, Err: nxdomain}, 422, "card_url_unusable", "dns"},
		{"resolver_failed", &cardfetch.FetchError{Kind: cardfetch.KindDNS, URL: u, Tried: tried, Err: servfail}, 502, "card_unreachable", "dns"},
		{"blocked", &cardfetch.FetchError{Kind: cardfetch.KindBlockedAddress, URL: u, Tried: tried, Err: errors.New("x")}, 422, "card_url_unusable", "blocked_address"},
		{"404", &cardfetch.FetchError{Kind: cardfetch.KindHTTPStatus, URL: u, Tried: tried, StatusCode: 404, Err: errors.New("x")}, 422, "card_url_unusable", "http_status"},
		{"401", &cardfetch.FetchError{Kind: cardfetch.KindHTTPStatus, URL: u, Tried: tried, StatusCode: 401, Err: errors.New("x")}, 422, "card_url_unusable", "http_status"},
		{"408", &cardfetch.FetchError{Kind: cardfetch.KindHTTPStatus, URL: u, Tried: tried, StatusCode: 408, Err: errors.New("x")}, 502, "card_unreachable", "http_status"},
		{"503", &cardfetch.FetchError{Kind: cardfetch.KindHTTPStatus, URL: u, Tried: tried, StatusCode: 503, Err: errors.New("x")}, 502, "card_unreachable", "http_status"},
		{"timeout", &cardfetch.FetchError{Kind: cardfetch.KindTimeout, URL: u, Tried: tried, Err: errors.New("x")}, 502, "card_unreachable", "timeout"},
		{"reset", &cardfetch.FetchError{Kind: cardfetch.KindNetwork, URL: u, Tried: tried, Err: errors.New("read: connection reset by peer")}, 502, "card_unreachable", "network"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := fetchProblem(c.fe)
			if p.status != c.status || p.code != c.code || p.reason != c.reason {
				t.Errorf("fetchProblem = %d %s (%s); want %d %s (%s)", p.status, p.code, p.reason, c.status, c.code, c.reason)
			}
			if (p.status < 500) != (p.field == "cardUrl") {
				t.Errorf("field = %q at status %d; want cardUrl exactly for the 4xx", p.field, p.status)
			}
			for _, internal := range []string{"10.0.0.2", "lookup ", "connection reset"} {
				if strings.Contains(p.detail, internal) {
					t.Errorf("detail shows %q: %s", internal, p.detail)
				}
			}
		})
	}
}
