package cardfetch

import (
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"go.uber.org/goleak"

	"github.com/a2a-connector/a2a-connector/internal/cardcheck"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck/cardchecktest"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// tlsServer starts a real HTTPS server on loopback and returns it with a netguard client that
// trusts it and may reach 127.0.0.0/8, as the console's client would be configured in dev.
func tlsServer(t *testing.T, h http.Handler) (*httptest.Server, *http.Client) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return srv, guardedClient(t, srv, netguard.Policy{AllowedCIDRs: loopback})
}

func guardedClient(t *testing.T, srv *httptest.Server, p netguard.Policy) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if srv != nil && srv.Certificate() != nil {
		pool.AddCert(srv.Certificate())
	}
	c := netguard.NewClient(p, netguard.ClientOptions{MaxRedirects: DefaultMaxRedirects, RootCAs: pool})
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// pc is a problem as expected.json names it: path and code.
type pc = cardchecktest.PathCode

func checkInvariants(t testing.TB, r cardcheck.Report) {
	t.Helper()
	cardchecktest.CheckProblems(t, r.Valid, r.Problems)
}
