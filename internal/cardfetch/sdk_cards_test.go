package cardfetch

import (
	"context"
	"iter"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	sdkv03 "github.com/a2aproject/a2a-go/a2a"
	sdksrvv03 "github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck/cardchecktest"
)

// Cards as today's SDKs serve them, through the real fetch path: a2a-go v2.3.1 cards served by the
// SDK's own handlers on loopback, and @a2a-js/sdk 1.3.0 cards captured from its handler
// (testdata/sdkcards/README.md).

// helloExecutor is the smallest a2a-go v2 agent: it greets. The tests only read its card; the
// JSON-RPC handler is mounted so the agent is what a quickstart serves.
type helloExecutor struct{}

func (helloExecutor) Execute(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("Hello, world!")), nil)
	}
}

func (helloExecutor) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

// sdkCard is what a tenant writes with a2a-go v2 for the platform: JSON-RPC 1.0, text/plain, an
// API key in X-API-KEY. interfaces are relative paths on the test server.
func sdkCard(base string, interfaces ...*a2a.AgentInterface) *a2a.AgentCard {
	for _, in := range interfaces {
		in.URL = base + in.URL
	}
	return &a2a.AgentCard{
		Name:                "Go weather agent",
		Description:         "Answers questions about the weather.",
		Version:             "2.3.1",
		SupportedInterfaces: interfaces,
		DefaultInputModes:   []string{"text/plain"},
		DefaultOutputModes:  []string{"text/plain"},
		Capabilities:        a2a.AgentCapabilities{Streaming: true},
		SecuritySchemes: a2a.NamedSecuritySchemes{
			"apiKey": a2a.APIKeySecurityScheme{Location: a2a.APIKeySecuritySchemeLocationHeader, Name: "X-API-KEY"},
		},
		SecurityRequirements: a2a.SecurityRequirementsOptions{{"apiKey": a2a.SecuritySchemeScopes{}}},
		Skills: []a2a.AgentSkill{{
			ID: "forecast", Name: "Forecast", Description: "Tells the forecast for a city.",
			Tags: []string{"weather"}, Examples: []string{"Will it rain tomorrow?"},
		}},
	}
}

// serveSDK starts an HTTPS server whose mux the caller fills.
func serveSDK(t *testing.T, routes func(mux *http.ServeMux, base string)) (string, *Fetcher) {
	t.Helper()
	mux := http.NewServeMux()
	srv, client := tlsServer(t, mux)
	routes(mux, srv.URL)
	return srv.URL, New(Options{Client: client})
}

type sdkWant struct {
	resolved string // path the card must come from
	endpoint string // path of the chosen interface
	version  string
	fallback *connector.Interface // URL relative to the server
	keyed    bool
	errors   []pc // exact set
	warnings []pc // exact set
}

func checkSDKCard(t *testing.T, f *Fetcher, base, pasted string, want sdkWant) {
	t.Helper()
	got, rep, err := f.FetchAndValidate(t.Context(), base+pasted)
	if err != nil {
		t.Fatalf("FetchAndValidate: %v", err)
	}
	checkInvariants(t, rep)
	wantErrs := append([]pc{}, want.errors...)
	cardchecktest.SortPathCodes(wantErrs)
	if diff := cmp.Diff(wantErrs, cardchecktest.PathCodes(rep.Problems, connector.SeverityError)); diff != "" {
		t.Fatalf("errors (-want +got):\n%s\ncard: %s", diff, got.Raw)
	}
	if got.ResolvedURL != base+want.resolved {
		t.Errorf("ResolvedURL = %q, want %q", got.ResolvedURL, base+want.resolved)
	}
	if fb := want.fallback; fb != nil {
		fb.URL = base + fb.URL
	}
	// The interface chosen and the key asked for; the headers matter only when a key is.
	type calling struct {
		URL, Version string
		Fallback     *connector.Interface
		KeyRequired  bool
		KeyHeaders   []string
	}
	wantCall := calling{base + want.endpoint, want.version, want.fallback, want.keyed, nil}
	gotCall := calling{rep.Profile.EndpointURL, rep.Profile.ProtocolVersion, rep.Profile.Fallback, rep.Profile.APIKeyRequired, nil}
	if want.keyed {
		wantCall.KeyHeaders, gotCall.KeyHeaders = []string{"X-API-KEY"}, rep.Profile.APIKeyHeaders
	}
	if diff := cmp.Diff(wantCall, gotCall); diff != "" {
		t.Errorf("interface and key (-want +got):\n%s", diff)
	}
	wantWarn := append([]pc{}, want.warnings...)
	cardchecktest.SortPathCodes(wantWarn)
	if diff := cmp.Diff(wantWarn, cardchecktest.PathCodes(rep.Problems, connector.SeverityWarning)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestSDKCardsA2AGo(t *testing.T) {
	t.Parallel()
	jsonrpc1 := func(path string) *a2a.AgentInterface {
		return a2a.NewAgentInterface(path, a2a.TransportProtocolJSONRPC)
	}
	jsonrpc03 := func(path string) *a2a.AgentInterface {
		return &a2a.AgentInterface{URL: path, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version}
	}
	handler := a2asrv.NewHandler(helloExecutor{})

	t.Run("1_0_only_card_from_the_origin", func(t *testing.T) {
		t.Parallel()
		base, f := serveSDK(t, func(mux *http.ServeMux, base string) {
			mux.Handle("/invoke", a2asrv.NewJSONRPCHandler(handler))
			mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(sdkCard(base,
				&a2a.AgentInterface{URL: "/grpc", ProtocolBinding: a2a.TransportProtocolGRPC, ProtocolVersion: a2a.Version},
				jsonrpc1("/invoke"))))
		})
		// gRPC is listed first and spoken: it is chosen, JSON-RPC is the one move on a refusal.
		checkSDKCard(t, f, base, "", sdkWant{
			resolved: "/.well-known/agent-card.json", endpoint: "/grpc", version: "1.0", keyed: true,
			fallback: &connector.Interface{URL: "/invoke", ProtocolVersion: "1.0"},
		})
	})

	t.Run("helloworld_quickstart_card", func(t *testing.T) {
		t.Parallel()
		// The card of a2a-go's examples/helloworld/server/jsonrpc, with an https URL: modes
		// "text", no security, nil skill lists, and no version, which the SDK serves as "" and
		// the platform requires (the console shows it).
		base, f := serveSDK(t, func(mux *http.ServeMux, base string) {
			mux.Handle("/invoke", a2asrv.NewJSONRPCHandler(handler))
			mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(&a2a.AgentCard{
				Name:                "Hello World Agent",
				Description:         "Just a hello world agent",
				SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(base+"/invoke", a2a.TransportProtocolJSONRPC)},
				DefaultInputModes:   []string{"text"},
				DefaultOutputModes:  []string{"text"},
				Capabilities:        a2a.AgentCapabilities{Streaming: true},
				Skills: []a2a.AgentSkill{{
					ID: "hello_world", Name: "Hello, world!", Description: "Returns a 'Hello, world!'",
					Tags: []string{"hello world"}, Examples: []string{"hi", "hello"},
				}},
			}))
		})
		checkSDKCard(t, f, base, "", sdkWant{
			resolved: "/.well-known/agent-card.json", endpoint: "/invoke", version: "1.0",
			errors: []pc{{"version", "required"}},
		})
	})

	t.Run("dual_card_1_0_face", func(t *testing.T) {
		t.Parallel()
		base, f := serveSDK(t, func(mux *http.ServeMux, base string) {
			mux.Handle("/invoke", a2asrv.NewJSONRPCHandler(handler))
			mux.Handle("/v03", a2av0.NewJSONRPCHandler(handler))
			mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(sdkCard(base, jsonrpc03("/v03"), jsonrpc1("/invoke"))))
		})
		// The card lists 0.3 first: the spec's rule (the first entry the client supports, in
		// the card's order) calls it there, with 1.0 as the one move on a refusal.
		checkSDKCard(t, f, base, "", sdkWant{
			resolved: "/.well-known/agent-card.json", endpoint: "/v03", version: "0.3", keyed: true,
			fallback: &connector.Interface{URL: "/invoke", ProtocolVersion: "1.0"},
		})
	})

	t.Run("dual_card_0_3_compat_face", func(t *testing.T) {
		t.Parallel()
		// a2av0's card producer serves the 0.3 shape (top-level url, protocolVersion "0.3", 0.x
		// security with the 1.0 scheme nested inside) and keeps supportedInterfaces.
		base, f := serveSDK(t, func(mux *http.ServeMux, base string) {
			mux.Handle("/invoke", a2asrv.NewJSONRPCHandler(handler))
			mux.Handle("/v03", a2av0.NewJSONRPCHandler(handler))
			mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(
				a2av0.NewStaticAgentCardProducer(sdkCard(base, jsonrpc1("/invoke"), jsonrpc03("/v03")))))
		})
		checkSDKCard(t, f, base, "", sdkWant{
			resolved: "/.well-known/agent-card.json", endpoint: "/invoke", version: "1.0", keyed: true,
			fallback: &connector.Interface{URL: "/v03", ProtocolVersion: "0.3"},
		})
	})

	t.Run("0_3_only_compat_card", func(t *testing.T) {
		t.Parallel()
		base, f := serveSDK(t, func(mux *http.ServeMux, base string) {
			mux.Handle("/v03", a2av0.NewJSONRPCHandler(handler))
			mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(
				a2av0.NewStaticAgentCardProducer(sdkCard(base, jsonrpc03("/v03")))))
		})
		checkSDKCard(t, f, base, "", sdkWant{
			resolved: "/.well-known/agent-card.json", endpoint: "/v03", version: "0.3", keyed: true,
		})
	})

	t.Run("agent_mounted_under_a_prefix_pasted_as_its_endpoint", func(t *testing.T) {
		t.Parallel()
		// The tenant pastes the JSON-RPC endpoint; a GET there is the SDK's JSON-RPC error, and
		// the card is at the well-known path under it.
		base, f := serveSDK(t, func(mux *http.ServeMux, base string) {
			mux.Handle("/agents/weather", a2asrv.NewJSONRPCHandler(handler))
			mux.Handle("/agents/weather"+a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(sdkCard(base, jsonrpc1("/agents/weather"))))
		})
		checkSDKCard(t, f, base, "/agents/weather", sdkWant{
			resolved: "/agents/weather/.well-known/agent-card.json", endpoint: "/agents/weather", version: "1.0", keyed: true,
		})
	})
}

// jsSDKCard reads a card captured from @a2a-js/sdk 1.3.0 (kept beside internal/cardcheck's tests).
func jsSDKCard(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "cardcheck", "testdata", "sdkcards", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSDKCardsJSDualServerShowsItsOneZeroFace replays the dual-version JS server: its card
// handler answers the 1.0 card to A2A-Version: 1.0 and the 0.3 card otherwise (Vary:
// A2A-Version). The fetch must get the 1.0 card.
func TestSDKCardsJSDualServerShowsItsOneZeroFace(t *testing.T) {
	t.Parallel()
	v1, v03 := jsSDKCard(t, "js-1.3.0-dual.json"), jsSDKCard(t, "js-1.3.0-dual-no-version-header.json")
	srv, client := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "A2A-Version")
		body := v03
		if r.Header.Get("A2A-Version") == "1.0" {
			body = v1
		}
		serveJSON("application/json; charset=utf-8", body)(w, r)
	}))
	got, err := New(Options{Client: client}).Fetch(t.Context(), srv.URL)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if !slices.Equal(got.Raw, v1) {
		t.Errorf("fetched the 0.3 face:\n%s", got.Raw)
	}
}

// TestSDKCardsA2AGoV03GRPCSample serves the card of a2a-go v0.3.15's hello-world gRPC server
// (examples/helloworld/server/grpc: url "127.0.0.1:<grpc port>", preferredTransport GRPC) with
// that SDK's own card handler. The bare address is called over TLS, since the card came over
// https, with a warning; as the sample writes it (no version, no protocolVersion) the card
// misses only what the platform requires of every card.
func TestSDKCardsA2AGoV03GRPCSample(t *testing.T) {
	t.Parallel()
	sample := func() *sdkv03.AgentCard {
		return &sdkv03.AgentCard{
			Name:               "Hello World Agent",
			Description:        "Just a hello world agent",
			URL:                "127.0.0.1:9000",
			PreferredTransport: sdkv03.TransportProtocolGRPC,
			DefaultInputModes:  []string{"text"},
			DefaultOutputModes: []string{"text"},
			Capabilities:       sdkv03.AgentCapabilities{Streaming: true},
			Skills: []sdkv03.AgentSkill{{
				ID: "hello_world", Name: "Hello, world!", Description: "Returns a 'Hello, world!'",
				Tags: []string{"hello world"}, Examples: []string{"hi", "hello"},
			}},
		}
	}
	ready := sample()
	ready.ProtocolVersion, ready.Version = "0.3.0", "1.0.0"
	for _, tc := range []struct {
		name    string
		card    *sdkv03.AgentCard
		version string
		errors  []pc
	}{
		{name: "as_the_sample_writes_it", card: sample(), errors: []pc{{"version", "required"}, {"protocolVersion", "required"}}},
		{name: "with_the_versions_the_platform_requires", card: ready, version: "0.3.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base, f := serveSDK(t, func(mux *http.ServeMux, _ string) {
				mux.Handle(sdksrvv03.WellKnownAgentCardPath, sdksrvv03.NewStaticAgentCardHandler(tc.card))
			})
			got, rep, err := f.FetchAndValidate(t.Context(), base)
			if err != nil {
				t.Fatalf("FetchAndValidate: %v", err)
			}
			checkInvariants(t, rep)
			want := append([]pc{}, tc.errors...)
			cardchecktest.SortPathCodes(want)
			if diff := cmp.Diff(want, cardchecktest.PathCodes(rep.Problems, connector.SeverityError)); diff != "" {
				t.Fatalf("errors (-want +got):\n%s\ncard: %s", diff, got.Raw)
			}
			if diff := cmp.Diff([]pc{{"url", "recommended"}}, cardchecktest.PathCodes(rep.Problems, connector.SeverityWarning)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			p := rep.Profile
			if p.EndpointURL != "https://127.0.0.1:9000" || p.EndpointBinding != "GRPC" || p.ProtocolVersion != tc.version {
				t.Errorf("endpoint %s %q %q, want GRPC %q over TLS", p.EndpointBinding, p.EndpointURL, p.ProtocolVersion, "https://127.0.0.1:9000")
			}
		})
	}
}
