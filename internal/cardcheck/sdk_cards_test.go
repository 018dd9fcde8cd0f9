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

// TestSDKCardsJS03GRPCAddresses checks cards as @a2a-js/sdk 0.3.14 serves them with a gRPC
// interface written as a bare host:port (the SDK's README does): the address is called in the
// scheme the card came over, with a warning naming both, and never refused as an invalid URL.
func TestSDKCardsJS03GRPCAddresses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, cardURL string
		endpoint, binding   string
		fallback            *connector.Interface
		keyed               bool
		warnings            []pc
	}{
		{
			// url, preferredTransport GRPC, and the one additionalInterfaces entry: all
			// 127.0.0.1:4001. Served over https: TLS.
			name: "grpc_only_over_https", file: "js-0.3.14-grpc-only.json", cardURL: "https://127.0.0.1:4000/.well-known/agent-card.json",
			endpoint: "https://127.0.0.1:4001", binding: "GRPC", keyed: true,
			warnings: []pc{{"url", CodeRecommended}},
		},
		{
			name: "grpc_only_over_http", file: "js-0.3.14-grpc-only.json", cardURL: "http://127.0.0.1:4000/.well-known/agent-card.json",
			endpoint: "http://127.0.0.1:4001", binding: "GRPC", keyed: true,
			warnings: []pc{{"url", CodeRecommended}},
		},
		{
			// JSON-RPC at url is called; HTTP+JSON is the fallback, and the bare gRPC entry
			// after it is not refused.
			name: "readme_quickstart", file: "js-0.3.14-quickstart.json", cardURL: "http://localhost:4000/.well-known/agent-card.json",
			endpoint: "http://localhost:4000/a2a/jsonrpc", binding: "",
			fallback: &connector.Interface{URL: "http://localhost:4000/a2a/rest", ProtocolVersion: "0.3.0", Binding: "HTTP+JSON"},
		},
	}
	k := New(Options{AllowInsecureHTTP: true})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rep := k.CheckAt(jsSDKCard(t, tt.file), tt.cardURL)
			checkInvariants(t, rep)
			if !rep.Valid {
				t.Fatalf("card is invalid: %+v", rep.Problems)
			}
			wantEndpoint(t, rep, tt.endpoint, "0.3.0", tt.fallback)
			if rep.Profile.EndpointBinding != tt.binding {
				t.Errorf("EndpointBinding = %q, want %q", rep.Profile.EndpointBinding, tt.binding)
			}
			if tt.keyed {
				wantKeyRequired(t, rep, "X-API-KEY")
			}
			want := append([]pc{}, tt.warnings...)
			cardchecktest.SortPathCodes(want)
			if diff := cmp.Diff(want, cardchecktest.PathCodes(rep.Problems, connector.SeverityWarning)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}
