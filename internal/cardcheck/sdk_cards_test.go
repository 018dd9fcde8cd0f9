package cardcheck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck/cardchecktest"
)

// Cards as @a2a-js/sdk 1.3.0 serves them, captured from its handler (testdata/sdkcards/README.md).
// internal/cardfetch serves a2a-go v2 cards through the real fetch path.

// jsSDKCard reads a card captured from @a2a-js/sdk 1.3.0.
func jsSDKCard(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sdkcards", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSDKCardsJS checks the captured cards judge as the SDK meant them.
func TestSDKCardsJS(t *testing.T) {
	t.Parallel()
	const js = "https://js-agent.example.com"
	tests := []struct {
		file     string
		endpoint string
		fallback *connector.Interface
		keyed    bool
		warnings []pc
	}{
		{
			file: "js-1.3.0-quickstart.json", endpoint: js + "/",
			warnings: []pc{{"defaultOutputModes", "unsupported_mode"}, {"skills[0].outputModes", "unsupported_mode"}},
		},
		{
			file: "js-1.3.0-apikey.json", endpoint: js + "/a2a/jsonrpc", keyed: true,
			fallback: &connector.Interface{URL: js + "/a2a/rest", ProtocolVersion: "1.0", Binding: "HTTP+JSON"},
		},
		{
			file: "js-1.3.0-dual.json", endpoint: js + "/a2a/jsonrpc", keyed: true,
			fallback: &connector.Interface{URL: js + "/a2a/jsonrpc", ProtocolVersion: "0.3"},
		},
		{
			file: "js-1.3.0-dual-no-version-header.json", endpoint: js + "/a2a/jsonrpc", keyed: true,
			fallback: &connector.Interface{URL: js + "/a2a/jsonrpc", ProtocolVersion: "0.3"},
		},
	}
	k := New(Options{})
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			rep := k.Check(jsSDKCard(t, tt.file))
			checkInvariants(t, rep)
			if !rep.Valid {
				t.Fatalf("card is invalid: %+v", rep.Problems)
			}
			wantEndpoint(t, rep, tt.endpoint, "1.0", tt.fallback)
			if rep.Profile.EndpointTenant != "" {
				t.Errorf("EndpointTenant = %q, want none for the SDK's \"\"", rep.Profile.EndpointTenant)
			}
			if tt.keyed {
				wantKeyRequired(t, rep, "X-API-KEY")
			} else if rep.Profile.APIKeyRequired || rep.Profile.APIKeyHeaders != nil {
				t.Errorf("APIKeyRequired = %v, APIKeyHeaders = %v, want no key", rep.Profile.APIKeyRequired, rep.Profile.APIKeyHeaders)
			}
			want := append([]pc{}, tt.warnings...)
			cardchecktest.SortPathCodes(want)
			if diff := cmp.Diff(want, cardchecktest.PathCodes(rep.Problems, connector.SeverityWarning)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}
