package a2aclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"iter"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	sdk03 "github.com/a2aproject/a2a-go/a2a"
	sdkgrpc03 "github.com/a2aproject/a2a-go/a2agrpc"
	sdksrv03 "github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	sdkgrpcv0 "github.com/a2aproject/a2a-go/v2/a2agrpc/v0"
	sdkgrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck"
	"github.com/a2a-connector/a2a-connector/internal/neterr"
	"github.com/a2a-connector/a2a-connector/internal/testca"
)

// The extended card is asked for of real SDK agents, one per binding and generation: a2a-go
// v2.3.1 (1.0 on all three bindings; 0.3 through its compat JSON-RPC, REST and gRPC
// handlers) and a2a-go v0.3.15 (0.3 JSON-RPC and gRPC), each behind an API key. The answer
// must be a card internal/cardcheck judges valid, with the skill only the extended card has.

const (
	cardKey       = "sk-extended"
	extendedSkill = "refund"
)

// idleExecutor is an a2a-go v2 agent that does nothing: the tests only ask for its card.
type idleExecutor struct{}

func (idleExecutor) Execute(context.Context, *a2asrv.ExecutorContext) iter.Seq2[sdk.Event, error] {
	return func(func(sdk.Event, error) bool) {}
}

func (idleExecutor) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[sdk.Event, error] {
	return func(func(sdk.Event, error) bool) {}
}

// idleExecutor03 is idleExecutor for a2a-go v0.3.15.
type idleExecutor03 struct{}

func (idleExecutor03) Execute(context.Context, *sdksrv03.RequestContext, eventqueue.Queue) error {
	return nil
}

func (idleExecutor03) Cancel(context.Context, *sdksrv03.RequestContext, eventqueue.Queue) error {
	return nil
}

// extendedCardV1 is the extended card an a2a-go v2 agent serves: its public skill and one more.
// It lists a 0.3 interface too, without which the SDK's 0.3 gRPC handler refuses to convert it.
func extendedCardV1(url string) *sdk.AgentCard {
	return &sdk.AgentCard{Name: "Billing agent", Description: "Answers billing questions.", Version: "1.0.0",
		SupportedInterfaces: []*sdk.AgentInterface{sdk.NewAgentInterface(url, sdk.TransportProtocolJSONRPC),
			{URL: url + "/v0", ProtocolBinding: sdk.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version}},
		Capabilities:      sdk.AgentCapabilities{Streaming: true, ExtendedAgentCard: true},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		SecuritySchemes:      sdk.NamedSecuritySchemes{"apiKey": sdk.APIKeySecurityScheme{Location: sdk.APIKeySecuritySchemeLocationHeader, Name: "X-API-KEY"}},
		SecurityRequirements: sdk.SecurityRequirementsOptions{{"apiKey": {}}},
		Skills: []sdk.AgentSkill{
			{ID: "invoice", Name: "Invoices", Description: "Finds an invoice.", Tags: []string{"billing"}},
			{ID: extendedSkill, Name: "Refunds", Description: "Refunds an invoice.", Tags: []string{"billing"}},
		},
	}
}

// extendedCardV03 is the same card for a2a-go v0.3.15 (url as its gRPC sample writes it).
func extendedCardV03(url string) *sdk03.AgentCard {
	return &sdk03.AgentCard{Name: "Billing agent", Description: "Answers billing questions.", Version: "1.0.0",
		ProtocolVersion: "0.3.0", URL: url, PreferredTransport: sdk03.TransportProtocolGRPC,
		Capabilities:      sdk03.AgentCapabilities{Streaming: true},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		SecuritySchemes:                   sdk03.NamedSecuritySchemes{"apiKey": sdk03.APIKeySecurityScheme{In: sdk03.APIKeySecuritySchemeInHeader, Name: "X-API-KEY"}},
		Security:                          []sdk03.SecurityRequirements{{"apiKey": {}}},
		SupportsAuthenticatedExtendedCard: true,
		Skills: []sdk03.AgentSkill{
			{ID: "invoice", Name: "Invoices", Description: "Finds an invoice.", Tags: []string{"billing"}},
			{ID: extendedSkill, Name: "Refunds", Description: "Refunds an invoice.", Tags: []string{"billing"}},
		},
	}
}

// keyed refuses HTTP calls without the API key.
func keyed(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-KEY") != cardKey {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// serveGRPCKeyed serves register's services on loopback, refusing calls without the API key
// (UNAUTHENTICATED), and returns the plaintext interface URL.
func serveGRPCKeyed(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get("x-api-key"); len(v) != 1 || v[0] != cardKey {
			return nil, status.Error(codes.Unauthenticated, "no key")
		}
		return next(ctx, req)
	}))
	register(gs)
	go gs.Serve(ln) //nolint:errcheck // ends with Stop
	t.Cleanup(gs.Stop)
	return "http://" + ln.Addr().String()
}

// grpcTestOptions dial loopback directly; the guard is netguard's, tested there.
func grpcTestOptions() GRPCOptions {
	var d net.Dialer
	return GRPCOptions{
		Dial:     func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) },
		CheckURL: func(*url.URL) error { return nil },
	}
}

// extendedAgents starts the SDK agents; with configured false they offer no extended card.
func extendedAgents(t *testing.T, configured bool) map[string]Endpoint {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(keyed(mux))
	t.Cleanup(srv.Close)
	var opts []a2asrv.RequestHandlerOption
	var opts03 []sdksrv03.RequestHandlerOption
	if configured {
		opts = append(opts, a2asrv.WithExtendedAgentCard(extendedCardV1(srv.URL+"/v1")))
	}
	h := a2asrv.NewHandler(idleExecutor{}, opts...)
	mux.Handle("/v1", a2asrv.NewJSONRPCHandler(h))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(h)))
	mux.Handle("/trest/", http.StripPrefix("/trest", a2asrv.NewTenantRESTHandler("/{*}", h)))
	mux.Handle("/v0", a2av0.NewJSONRPCHandler(h))
	mux.Handle("/rest03/", http.StripPrefix("/rest03", a2av0.NewRESTHandler(h)))
	grpc1 := serveGRPCKeyed(t, func(gs *grpc.Server) { sdkgrpc.NewHandler(h).RegisterWith(gs) })
	grpc03 := serveGRPCKeyed(t, func(gs *grpc.Server) { sdkgrpcv0.NewHandler(h).RegisterWith(gs) })

	// a2a-go v0.3.15, whose gRPC sample's card writes the bare address.
	grpcOld := serveGRPCKeyed(t, func(gs *grpc.Server) {
		var o []sdksrv03.RequestHandlerOption
		if configured {
			o = append(o, sdksrv03.WithExtendedAgentCard(extendedCardV03("127.0.0.1:9000")))
		}
		sdkgrpc03.NewHandler(sdksrv03.NewHandler(idleExecutor03{}, o...)).RegisterWith(gs)
	})
	if configured {
		opts03 = append(opts03, sdksrv03.WithExtendedAgentCard(extendedCardV03(srv.URL+"/old03")))
	}
	mux.Handle("/old03", sdksrv03.NewJSONRPCHandler(sdksrv03.NewHandler(idleExecutor03{}, opts03...)))

	return map[string]Endpoint{
		"v2_1.0_jsonrpc":          {URL: srv.URL + "/v1", Wire: WireV1},
		"v2_1.0_http_json":        {URL: srv.URL + "/rest", Wire: WireV1, Binding: BindingHTTPJSON},
		"v2_1.0_http_json_tenant": {URL: srv.URL + "/trest", Wire: WireV1, Binding: BindingHTTPJSON, Tenant: "acme"},
		"v2_1.0_grpc":             {URL: grpc1, Wire: WireV1, Binding: BindingGRPC},
		"v2_0.3_jsonrpc":          {URL: srv.URL + "/v0", Wire: WireV0},
		"v2_0.3_http_json_compat": {URL: srv.URL + "/rest03", Wire: WireV0, Binding: BindingHTTPJSON},
		"v2_0.3_grpc":             {URL: grpc03, Wire: WireV0, Binding: BindingGRPC},
		"v0.3.15_0.3_jsonrpc":     {URL: srv.URL + "/old03", Wire: WireV0},
		"v0.3.15_0.3_grpc":        {URL: grpcOld, Wire: WireV0, Binding: BindingGRPC},
	}
}

func withKey(ep Endpoint, key string) Endpoint {
	ep.Header = http.Header{"X-Api-Key": {key}}
	return ep
}

func TestGetExtendedAgentCard(t *testing.T) {
	t.Parallel()
	eps := extendedAgents(t, true)
	c := NewClient(testHTTPClient(t), ClientOptions{GRPC: grpcTestOptions(), MaxRetries: -1})
	t.Cleanup(c.Close)
	checker := cardcheck.New(cardcheck.Options{AllowInsecureHTTP: true})
	for _, name := range slices.Sorted(maps.Keys(eps)) {
		ep := eps[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := c.GetExtendedAgentCard(t.Context(), withKey(ep, cardKey), 0)
			if err != nil {
				t.Fatalf("GetExtendedAgentCard: %v", err)
			}
			rep := checker.CheckAt(raw, ep.URL)
			if !rep.Valid || !slices.ContainsFunc(rep.Profile.Skills, func(s connector.Skill) bool { return s.ID == extendedSkill }) {
				t.Fatalf("card valid %v, skills %+v, problems %+v:\n%s", rep.Valid, rep.Profile.Skills, rep.Problems, raw)
			}
			// Each generation's own card: 1.0 lists supportedInterfaces and has no top-level
			// url, 0.3 has one.
			var top map[string]json.RawMessage
			if err := json.Unmarshal(raw, &top); err != nil {
				t.Fatal(err)
			}
			if _, hasURL := top["url"]; hasURL == (ep.Wire == WireV1) {
				t.Errorf("a card of A2A %s has a top-level url: %v:\n%s", ep.Wire, hasURL, raw)
			}
			// a2a-go v2's compat JSON-RPC and REST handlers convert the card with
			// a2av0.FromV1AgentCard, which leaves security out ("simplified conversion").
			if !rep.Profile.APIKeyRequired && name != "v2_0.3_jsonrpc" && name != "v2_0.3_http_json_compat" {
				t.Errorf("the card's API key requirement was lost in conversion:\n%s", raw)
			}

			// Without the key the agent refuses; the refusal reads as on a turn.
			_, err = c.GetExtendedAgentCard(t.Context(), withKey(ep, "wrong"), 0)
			if !refusedCredentials(err) {
				t.Errorf("without the key: %v, want a 401 or UNAUTHENTICATED", err)
			}
		})
	}
}

// refusedCredentials: an HTTP 401, or the A2A unauthenticated error (gRPC UNAUTHENTICATED).
func refusedCredentials(err error) bool {
	if hse, ok := errors.AsType[*HTTPStatusError](err); ok {
		return hse.StatusCode == http.StatusUnauthorized
	}
	rpc, ok := errors.AsType[*a2a.RPCError](err)
	return ok && rpc.Code == a2a.CodeUnauthenticated
}

// An agent that offers no extended card says so in each binding's words; the Client reads
// them all as the one A2A error.
func TestGetExtendedAgentCardNotConfigured(t *testing.T) {
	t.Parallel()
	eps := extendedAgents(t, false)
	c := NewClient(testHTTPClient(t), ClientOptions{GRPC: grpcTestOptions(), MaxRetries: -1})
	t.Cleanup(c.Close)
	for name, ep := range eps {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := c.GetExtendedAgentCard(t.Context(), withKey(ep, cardKey), 0)
			var rpc *a2a.RPCError
			if !errors.As(err, &rpc) {
				var hse *HTTPStatusError
				if errors.As(err, &hse) && hse.RPC != nil {
					rpc = hse.RPC
				}
			}
			if rpc == nil || rpc.Code != a2a.CodeAuthenticatedExtendedCardNotConfigured {
				t.Errorf("err = %v (%T), want the A2A error %d", err, err, a2a.CodeAuthenticatedExtendedCardNotConfigured)
			}
		})
	}
}

// The answer is capped as cards are (maxBytes), on every binding.
func TestGetExtendedAgentCardIsCapped(t *testing.T) {
	t.Parallel()
	eps := extendedAgents(t, true)
	c := NewClient(testHTTPClient(t), ClientOptions{GRPC: grpcTestOptions(), MaxRetries: -1})
	t.Cleanup(c.Close)
	for _, name := range []string{"v2_1.0_jsonrpc", "v2_1.0_http_json", "v2_1.0_grpc", "v0.3.15_0.3_grpc"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := c.GetExtendedAgentCard(t.Context(), withKey(eps[name], cardKey), 64)
			var pe *a2a.ProtocolError
			if !errors.As(err, &pe) || (pe.Kind != a2a.ProtocolBodyTooLarge && pe.Kind != a2a.ProtocolEventTooLarge) {
				t.Errorf("err = %v, want the answer refused as too large", err)
			}
		})
	}
}

// A gRPC agent whose certificate the Client does not trust (a private CA it was not given)
// fails with the certificate error itself, not gRPC's UNAVAILABLE text, so that callers can
// say why; given the CA, the same call succeeds.
func TestGRPCUntrustedCertificateIsATLSError(t *testing.T) {
	t.Parallel()
	ca := testca.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(ca.ServerTLS(t))))
	sdkgrpc.NewHandler(a2asrv.NewHandler(idleExecutor{}, a2asrv.WithExtendedAgentCard(extendedCardV1("https://"+ln.Addr().String())))).RegisterWith(gs)
	go gs.Serve(ln) //nolint:errcheck // ends with Stop
	t.Cleanup(gs.Stop)
	ep := Endpoint{URL: "https://" + ln.Addr().String(), Wire: WireV1, Binding: BindingGRPC}

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	for _, tc := range []struct {
		name    string
		roots   *x509.CertPool
		trusted bool
	}{{"system_roots", nil, false}, {"with_the_ca", roots, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := grpcTestOptions()
			if tc.roots != nil {
				o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: tc.roots}
			}
			c := NewClient(testHTTPClient(t), ClientOptions{GRPC: o, MaxRetries: -1})
			t.Cleanup(c.Close)
			_, err := c.GetExtendedAgentCard(t.Context(), ep, 0)
			if tc.trusted {
				if err != nil {
					t.Fatalf("with the CA: %v", err)
				}
				return
			}
			if neterr.Classify(err) != neterr.TLS || !strings.Contains(neterr.Reason(err), "certificate") {
				t.Errorf("err = %v (%s), want the refused certificate", err, neterr.Reason(err))
			}
		})
	}
}
