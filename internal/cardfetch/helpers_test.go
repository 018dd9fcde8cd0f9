package cardfetch

import (
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fixturesDir finds the shared agent-card fixtures: $A2AC_FIXTURES_DIR when set, else the copy
// in testdata (so a clean clone works on its own), else the shared folder beside the repo.
func fixturesDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("A2AC_FIXTURES_DIR"); d != "" {
		return d
	}
	for _, d := range []string{
		filepath.Join("testdata", "fixtures"),
		filepath.Join("..", "..", "..", "shared", "fixtures", "cards"),
	} {
		if _, err := os.Stat(filepath.Join(d, "expected.json")); err == nil {
			return d
		}
	}
	t.Fatal("agent-card fixtures not found: set A2AC_FIXTURES_DIR or restore testdata/fixtures")
	return ""
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
type pc struct {
	Path string `json:"path"`
	Code string `json:"code"`
}

func pcs(problems []connector.Problem, sev connector.Severity) []pc {
	out := []pc{}
	for _, p := range problems {
		if p.Severity == sev {
			out = append(out, pc{p.Path, p.Code})
		}
	}
	sortPCs(out)
	return out
}

func sortPCs(s []pc) {
	slices.SortFunc(s, func(a, b pc) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Code, b.Code)
	})
}

// baseCard is a valid card the table tests change one thing in.
func baseCard() map[string]any {
	return map[string]any{
		"name":               "Test agent",
		"description":        "Answers test questions.",
		"url":                "https://agent.example.com/a2a",
		"version":            "1.0.0",
		"protocolVersion":    "0.2.5",
		"capabilities":       map[string]any{"streaming": true},
		"defaultInputModes":  []any{"text/plain"},
		"defaultOutputModes": []any{"text/plain"},
		"skills": []any{
			map[string]any{"id": "s1", "name": "Skill one", "description": "Does one thing.", "tags": []any{"demo"}},
		},
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// card is baseCard changed by mutate, as JSON.
func card(mutate func(c map[string]any)) []byte {
	c := baseCard()
	if mutate != nil {
		mutate(c)
	}
	return mustJSON(c)
}

func checkInvariants(t testing.TB, r cardcheck.Report) {
	t.Helper()
	if r.Valid != !connector.HasErrors(r.Problems) {
		t.Errorf("Valid = %v but HasErrors = %v", r.Valid, connector.HasErrors(r.Problems))
	}
	seenWarning := false
	for _, p := range r.Problems {
		if p.Code == "" || p.Message == "" {
			t.Errorf("problem without code or message: %+v", p)
		}
		switch p.Severity {
		case connector.SeverityError:
			if seenWarning {
				t.Errorf("error %+v comes after a warning", p)
			}
		case connector.SeverityWarning:
			seenWarning = true
		default:
			t.Errorf("problem with severity %q: %+v", p.Severity, p)
		}
	}
}
