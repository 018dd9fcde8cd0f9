package cardfetch

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	sdkv03 "github.com/a2aproject/a2a-go/a2a"
	sdkgrpcv03 "github.com/a2aproject/a2a-go/a2agrpc"
	sdksrvv03 "github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	connector "github.com/a2a-connector/a2a-connector"
	wire "github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck/cardchecktest"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/reqauth"
)

const bearer = "Bearer t0ken"

// withBearer refuses HTTP calls without the bearer token.
func withBearer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Authorization") != bearer {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// wireClient is the agents' client as the binaries build it: the guarded HTTP client, and gRPC
// through the guard's dialer.
func wireClient(t *testing.T, hc *http.Client) *a2aclient.Client {
	t.Helper()
	pol := netguard.Policy{AllowedCIDRs: loopback, AllowInsecureHTTP: true}
	c := a2aclient.NewClient(hc, a2aclient.ClientOptions{MaxRetries: -1, GRPC: a2aclient.GRPCOptions{Dial: pol.Dialer(0), CheckURL: pol.CheckURL}})
	t.Cleanup(c.Close)
	return c
}

// TestFetchExtended: an a2a-go v2 agent (A2A 1.0 JSON-RPC, over TLS) with an extended card
// answers it to the credentials, and its skills come back; without them the tenant learns the
// agent's refusal.
func TestFetchExtended(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	srv, client := tlsServer(t, withBearer(mux))
	ext := sdkCard(srv.URL, a2a.NewAgentInterface("/a2a", a2a.TransportProtocolJSONRPC))
	ext.Capabilities.ExtendedAgentCard = true
	ext.Skills = append(ext.Skills, a2a.AgentSkill{ID: "refund", Name: "Refunds", Description: "Refunds an invoice.", Tags: []string{"billing"}})
	mux.Handle("/a2a", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(helloExecutor{}, a2asrv.WithExtendedAgentCard(ext))))
	f := New(Options{Client: client, Agents: wireClient(t, client)})
	p := connector.CardProfile{EndpointURL: srv.URL + "/a2a", ProtocolVersion: "1.0", EndpointBinding: "JSONRPC"}

	skills, err := f.FetchExtended(t.Context(), p, reqauth.Header(http.Header{"Authorization": {bearer}}))
	if err != nil || len(skills) != 2 || skills[1].ID != "refund" {
		t.Fatalf("skills %+v, err %v", skills, err)
	}
	_, err = f.FetchExtended(t.Context(), p, nil)
	var ee *ExtendedError
	if !errors.As(err, &ee) || ee.Why != "HTTP 401" {
		t.Errorf("without credentials: %v, want the agent's HTTP 401", err)
	}
}

// helloExecutorV03 is the smallest a2a-go v0.3.15 agent: the tests only ask for its card.
type helloExecutorV03 struct{}

func (helloExecutorV03) Execute(context.Context, *sdksrvv03.RequestContext, eventqueue.Queue) error {
	return nil
}

func (helloExecutorV03) Cancel(context.Context, *sdksrvv03.RequestContext, eventqueue.Queue) error {
	return nil
}

// TestFetchExtendedOverGRPCAtABareAddress registers the way the console does an a2a-go v0.3.15
// gRPC agent as its hello-world sample writes its card (url "127.0.0.1:<port>", preferredTransport
// GRPC), behind an API key and offering an extended card: the public card is fetched and judged,
// the interface is called in the card's scheme, and the extended card comes over gRPC
// (GetAgentCard) with the key, its skills replacing the public ones.
func TestFetchExtendedOverGRPCAtABareAddress(t *testing.T) {
	t.Parallel()
	const key = "sk-grpc"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	card := func(skills ...string) *sdkv03.AgentCard {
		c := &sdkv03.AgentCard{Name: "Hello World Agent", Description: "Just a hello world agent", Version: "1.0.0",
			ProtocolVersion: "0.3.0", URL: ln.Addr().String(), PreferredTransport: sdkv03.TransportProtocolGRPC,
			DefaultInputModes: []string{"text"}, DefaultOutputModes: []string{"text"},
			Capabilities:                      sdkv03.AgentCapabilities{Streaming: true},
			SecuritySchemes:                   sdkv03.NamedSecuritySchemes{"apiKey": sdkv03.APIKeySecurityScheme{In: sdkv03.APIKeySecuritySchemeInHeader, Name: "X-API-KEY"}},
			Security:                          []sdkv03.SecurityRequirements{{"apiKey": {}}},
			SupportsAuthenticatedExtendedCard: true,
		}
		for _, s := range skills {
			c.Skills = append(c.Skills, sdkv03.AgentSkill{ID: s, Name: s, Description: "Does " + s + ".", Tags: []string{s}})
		}
		return c
	}
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		if md, _ := metadata.FromIncomingContext(ctx); !slices.Equal(md.Get("x-api-key"), []string{key}) {
			return nil, status.Error(codes.Unauthenticated, "no key")
		}
		return next(ctx, req)
	}))
	sdkgrpcv03.NewHandler(sdksrvv03.NewHandler(helloExecutorV03{}, sdksrvv03.WithExtendedAgentCard(card("hello_world", "secret_world")))).RegisterWith(gs)
	go gs.Serve(ln) //nolint:errcheck // ends with Stop
	t.Cleanup(gs.Stop)

	mux := http.NewServeMux()
	mux.Handle(sdksrvv03.WellKnownAgentCardPath, sdksrvv03.NewStaticAgentCardHandler(card("hello_world")))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	hc := guardedClient(t, nil, netguard.Policy{AllowedCIDRs: loopback, AllowInsecureHTTP: true})
	f := New(Options{Client: hc, AllowInsecureHTTP: true, Agents: wireClient(t, hc)})

	_, rep, err := f.FetchAndValidate(t.Context(), srv.URL)
	if err != nil || !rep.Valid {
		t.Fatalf("public card: err %v, problems %+v", err, rep.Problems)
	}
	if want := "http://" + ln.Addr().String(); rep.Profile.EndpointURL != want || rep.Profile.EndpointBinding != "GRPC" || !rep.Profile.ExtendedCard {
		t.Fatalf("profile %+v, want gRPC at %s with an extended card", rep.Profile, want)
	}
	skills, err := f.FetchExtended(t.Context(), rep.Profile, reqauth.Header(http.Header{"X-Api-Key": {key}}))
	if err != nil || len(skills) != 2 || skills[1].ID != "secret_world" {
		t.Fatalf("extended skills %+v, err %v", skills, err)
	}
	_, err = f.FetchExtended(t.Context(), rep.Profile, reqauth.Header(http.Header{"X-Api-Key": {"wrong"}}))
	rpc, ok := errors.AsType[*wire.RPCError](err)
	if !ok || rpc.Code != wire.CodeUnauthenticated {
		t.Errorf("with a wrong key: %v, want the agent's UNAUTHENTICATED", err)
	}
}

// An answer that is no valid card leaves the public card's skills: the tenant is told.
func TestFetchExtendedInvalidCard(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(cardchecktest.FixturesDir(t), "valid", "bearer-1.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	var card map[string]any
	if err := json.Unmarshal(raw, &card); err != nil {
		t.Fatal(err)
	}
	delete(card, "skills")
	srv, client := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage
			Method string
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": card})
	}))
	f := New(Options{Client: client})
	_, err = f.FetchExtended(t.Context(), connector.CardProfile{EndpointURL: srv.URL, ProtocolVersion: "1.0"}, nil)
	var ee *ExtendedError
	if !errors.As(err, &ee) || ee.Why != "not a valid card" {
		t.Errorf("err = %v, want not a valid card", err)
	}
}
