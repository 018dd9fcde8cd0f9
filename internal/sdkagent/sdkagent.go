// Package sdkagent is a real A2A agent built on the official A2A Go SDK v2 (a2a-go v2.3.1): the
// SDK's executor interface, request handler, JSON-RPC transports and card handlers, serving
// A2A 1.0 and, through the SDK's compatibility handler, A2A 0.3, on loopback. Tests use it to
// prove the connector against code nobody here wrote, from card discovery to the last event.
//
// The agent talks about the weather: "ask …" asks Question (input-required) and the user's next
// message on that task completes it with Answer(city); "reject …" is rejected with RejectText in
// the status message; anything else streams Chunks() as chunks of one artifact and completes.
//
// It refuses to be anything but a test peer: no persistence, no push notifications, and it must
// never be linked into a binary.
package sdkagent

import (
	"context"
	"crypto/tls"
	"io"
	"iter"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	a2agrpcv0 "github.com/a2aproject/a2a-go/v2/a2agrpc/v0"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// What the agent says.
const (
	Question   = "Which city?"
	RejectText = "I only talk about the weather."
)

// Chunks returns the artifact chunks of a streamed reply, in order.
func Chunks() []string { return []string{"The weather ", "is sunny ", "all day."} }

// Answer is the reply to the answer of Question.
func Answer(city string) string { return "Weather in " + city + ": sunny." }

// Options shape the agent.
type Options struct {
	// Prefix mounts everything under a path ("/agents/weather"), as SDK users do when one
	// server hosts several agents; "" mounts it at the origin.
	Prefix string
	// Streaming is the card's capabilities.streaming; without it the SDK's capability checks
	// refuse streaming calls.
	Streaming bool
	// Compat also serves A2A 0.3 through the SDK's compatibility handler, listed second on the
	// card (a dual-version agent), and serves the card through the compat card producer.
	Compat bool
	// REST also serves the A2A 1.0 HTTP+JSON binding (the SDK's REST handler) at RESTURL, listed
	// after the JSON-RPC interfaces; a first path segment that is no REST path is a tenant.
	REST bool
	// RESTOnly lists the HTTP+JSON interface alone on the card (implies REST): an agent like
	// Google's hosted ones, which serve nothing else.
	RESTOnly bool
	// GRPC also serves the A2A 1.0 gRPC binding (the SDK's a2agrpc handler) on a second
	// loopback port, plaintext, at GRPCURL ("http://127.0.0.1:port"), listed last on the card.
	// ObserveGRPC, when set, sees every gRPC call's method, metadata and request first.
	GRPC        bool
	ObserveGRPC func(method string, md metadata.MD, req any)
	// GRPCOnly lists the gRPC interface alone on the card (implies GRPC).
	GRPCOnly bool
	// GRPCBareAddress writes the gRPC interface's url as a bare "127.0.0.1:port", as a2a-go's
	// hello-world gRPC sample and its CLI do (GRPCURL keeps the http:// form the connector
	// calls).
	GRPCBareAddress bool
	// RESTV0Only serves A2A 0.3 over HTTP+JSON only, through the SDK's compatibility handler
	// (a2av0.NewRESTHandler: the 1.0 paths without /v1, the 0.3 JSON-RPC objects with
	// snake_case keys), at RESTV0URL, the one interface of a 0.3 card.
	RESTV0Only bool
	// GRPCV0 also serves A2A 0.3 over gRPC (the SDK's a2agrpc/v0 handler) on a third loopback
	// port at GRPCV0URL, listed last on the card with protocolVersion 0.3.
	GRPCV0 bool
	// APIKey, when set, is required in X-API-KEY on every call (401 otherwise). The card
	// declares the apiKey scheme either way.
	APIKey string
	// OAuth2, when set, replaces the API key: the card declares an OAuth 2.0 client-credentials
	// scheme, and every call needs "Authorization: Bearer <token>" with a token OAuth2.Valid
	// accepts (401, or gRPC UNAUTHENTICATED, otherwise).
	OAuth2 *OAuth2
	// Observe, when set, sees every POST before the SDK handles it (tests record requests).
	Observe func(*http.Request)
	// Voice, when set, is the URI of the platform's voice extension ("urn:a2a-connector:voice:v1"
	// by default in the connector): the card lists it in capabilities.extensions (on every
	// interface, 0.3 included) and the executor implements it whenever the SDK reports it
	// requested (voice.go). "" is the plain weather agent. What arrived is read back with
	// Server.TurnOf(messageID) (or LastTurn): Turn.Voice.Active says whether the SDK reported
	// the activation, Turn.Voice.Input/Interruption/Channel what the message metadata said.
	Voice string
	// VoiceRequired lists Voice with required: true; the SDK then refuses calls that do not
	// request it.
	VoiceRequired bool
	// TLS, when set, serves every face (the card, JSON-RPC, HTTP+JSON, gRPC) over TLS with it:
	// the URLs are https://. With ClientAuth tls.RequireAndVerifyClientCert it is an agent
	// behind mutual TLS.
	TLS *tls.Config
	// MTLS declares the mutual TLS scheme (mtlsSecurityScheme) on the card, instead of the
	// API key's.
	MTLS bool
	// Guard, when set, stands in front of the whole agent as a gateway does (card included).
	Guard *Guard
}

// Guard is a gateway in front of an agent that refuses calls it does not accept before the
// SDK sees them: HTTP wraps the agent's HTTP handler, GRPC are options of its gRPC servers
// (interceptors), run before the agent's own. sigv4test.Verifier's Handler and ServerOptions
// are one: an agent behind AWS Signature Version 4.
type Guard struct {
	HTTP func(http.Handler) http.Handler
	GRPC []grpc.ServerOption
}

// http is h behind the guard's HTTP side (h itself without one).
func (g *Guard) http(h http.Handler) http.Handler {
	if g == nil || g.HTTP == nil {
		return h
	}
	return g.HTTP(h)
}

// grpc are the guard's gRPC server options (none without a guard).
func (g *Guard) grpc() []grpc.ServerOption {
	if g == nil {
		return nil
	}
	return g.GRPC
}

// Server is a running agent.
type Server struct {
	// Origin is "http://127.0.0.1:port".
	Origin string
	// Base is Origin + Prefix: what a tenant would paste.
	Base string
	// CardURL is the well-known card URL under Base.
	CardURL string
	// V1URL is the A2A 1.0 JSON-RPC interface; V0URL the 0.3 one ("" without Compat); RESTURL
	// the 1.0 HTTP+JSON one ("" without REST); GRPCURL the 1.0 gRPC one ("" without GRPC).
	V1URL, V0URL, RESTURL, GRPCURL, GRPCV0URL string
	// RESTV0URL is the 0.3 HTTP+JSON interface ("" without RESTV0Only).
	RESTV0URL string

	turns *turns
}

// Turns returns every user message the executor was handed, in order.
func (s *Server) Turns() []Turn { return s.turns.list() }

// TurnOf returns the user message with that messageId as the executor was handed it.
func (s *Server) TurnOf(messageID string) (Turn, bool) { return s.turns.byMessage(messageID) }

// LastTurn returns the last user message the executor was handed.
func (s *Server) LastTurn() (Turn, bool) { return s.turns.last() }

// OAuth2 is an agent's OAuth 2.0 authorization server (client credentials) and its check of
// the access tokens it issued.
type OAuth2 struct {
	TokenURL string
	Valid    func(accessToken string) bool
}

// credentialCheck is what every call must carry: a header (on gRPC, the metadata key
// lowercased) whose value ok accepts. A nil check lets every call through.
type credentialCheck struct {
	header string
	ok     func(string) bool
}

func (c *credentialCheck) allows(value string) bool { return c == nil || c.ok(value) }

func (o Options) credentialCheck() *credentialCheck {
	switch {
	case o.OAuth2 != nil:
		return &credentialCheck{header: "Authorization", ok: func(v string) bool {
			tok, ok := strings.CutPrefix(v, "Bearer ")
			return ok && o.OAuth2.Valid(tok)
		}}
	case o.APIKey != "":
		return apiKeyCheck(o.APIKey)
	}
	return nil
}

func apiKeyCheck(key string) *credentialCheck {
	if key == "" {
		return nil
	}
	return &credentialCheck{header: "X-API-KEY", ok: func(v string) bool { return v == key }}
}

// Canceled reports whether the executor was asked to cancel the task (a cancel the SDK, and
// the Guard before it, accepted).
func (s *Server) Canceled(taskID string) bool { return s.turns.wasCanceled(taskID) }

// LastVoice returns the voice side of the last user message (Turn.Voice); false before any.
func (s *Server) LastVoice() (VoiceTurn, bool) { return s.turns.lastVoice() }

// New starts the agent on loopback; it stops when the test ends.
func New(tb testing.TB, o Options) *Server {
	tb.Helper()
	caps := a2a.AgentCapabilities{Streaming: o.Streaming}
	if o.Voice != "" {
		caps.Extensions = []a2a.AgentExtension{{URI: o.Voice, Required: o.VoiceRequired,
			Description: "Voice turns: what the caller heard, DTMF, silence, how the agent ends its part."}}
	}
	rec := &turns{}
	handler := a2asrv.NewHandler(&executor{voice: o.Voice, turns: rec}, a2asrv.WithCapabilityChecks(&caps), a2asrv.WithLogger(slog.New(slog.DiscardHandler)))
	check := o.credentialCheck()
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(o.Guard.http(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if o.Observe != nil {
				o.Observe(r)
			}
			if check != nil && !check.allows(r.Header.Get(check.header)) {
				http.Error(w, `{"error":"missing or wrong `+check.header+`"}`, http.StatusUnauthorized)
				return
			}
		}
		mux.ServeHTTP(w, r)
	})))
	scheme := "http://"
	if o.TLS != nil {
		scheme = "https://"
	}
	s := &Server{Origin: scheme + srv.Listener.Addr().String(), turns: rec}
	s.Base = s.Origin + o.Prefix
	s.CardURL = s.Base + a2asrv.WellKnownAgentCardPath
	s.V1URL = s.Base + "/a2a/v1"

	card := &a2a.AgentCard{Name: "a2a-go v2 weather agent", Description: "An agent on the A2A Go SDK v2.", Version: "1.0.0",
		Capabilities: caps, DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		SecuritySchemes:      a2a.NamedSecuritySchemes{"apiKey": a2a.APIKeySecurityScheme{Location: a2a.APIKeySecuritySchemeLocationHeader, Name: "X-API-KEY"}},
		SecurityRequirements: a2a.SecurityRequirementsOptions{{"apiKey": {}}},
		Skills: []a2a.AgentSkill{{ID: "weather", Name: "Weather", Description: "Tells the weather.", Tags: []string{"weather"},
			Examples: []string{"What is the weather like?"}}},
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(s.V1URL, a2a.TransportProtocolJSONRPC)},
	}
	if o.OAuth2 != nil {
		card.SecuritySchemes = a2a.NamedSecuritySchemes{"oauth": a2a.OAuth2SecurityScheme{
			Flows: a2a.ClientCredentialsOAuthFlow{TokenURL: o.OAuth2.TokenURL, Scopes: map[string]string{}}}}
		card.SecurityRequirements = a2a.SecurityRequirementsOptions{{"oauth": {}}}
	}
	if o.MTLS {
		card.SecuritySchemes = a2a.NamedSecuritySchemes{"mtls": a2a.MutualTLSSecurityScheme{Description: "A client certificate of our CA."}}
		card.SecurityRequirements = a2a.SecurityRequirementsOptions{{"mtls": {}}}
	}
	var grpcCreds []grpc.ServerOption
	if o.TLS != nil {
		grpcCreds = append(grpcCreds, grpc.Creds(credentials.NewTLS(o.TLS)))
	}
	mux.Handle(o.Prefix+"/a2a/v1", a2asrv.NewJSONRPCHandler(handler))
	if o.Compat {
		s.V0URL = s.Base + "/a2a/v0"
		card.SupportedInterfaces = append(card.SupportedInterfaces,
			&a2a.AgentInterface{URL: s.V0URL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version})
		mux.Handle(o.Prefix+"/a2a/v0", a2av0.NewJSONRPCHandler(handler))
	}
	if o.REST || o.RESTOnly {
		s.RESTURL = s.Base + "/a2a/rest"
		restIface := a2a.NewAgentInterface(s.RESTURL, a2a.TransportProtocolHTTPJSON)
		if o.RESTOnly {
			card.SupportedInterfaces = []*a2a.AgentInterface{restIface}
		} else {
			card.SupportedInterfaces = append(card.SupportedInterfaces, restIface)
		}
		plain := a2asrv.NewRESTHandler(handler)
		tenanted := a2asrv.NewTenantRESTHandler("/{*}", handler)
		mux.Handle(o.Prefix+"/a2a/rest/", http.StripPrefix(o.Prefix+"/a2a/rest", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// A first segment that is no REST path is a tenant (the interface's tenant segment).
			first, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
			if strings.HasPrefix(first, "message:") || first == "tasks" || first == "extendedAgentCard" {
				plain.ServeHTTP(w, r)
				return
			}
			tenanted.ServeHTTP(w, r)
		})))
	}
	if o.GRPC || o.GRPCOnly {
		s.GRPCURL = startGRPC(tb, func(gs *grpc.Server) { a2agrpc.NewHandler(handler).RegisterWith(gs) }, o.ObserveGRPC, check, append(grpcCreds, o.Guard.grpc()...)...)
		if o.TLS != nil {
			s.GRPCURL = "https://" + strings.TrimPrefix(s.GRPCURL, "http://")
		}
		iface := a2a.NewAgentInterface(s.GRPCURL, a2a.TransportProtocolGRPC)
		if o.GRPCBareAddress {
			iface.URL = strings.TrimPrefix(strings.TrimPrefix(s.GRPCURL, "http://"), "https://")
		}
		if o.GRPCOnly {
			card.SupportedInterfaces = []*a2a.AgentInterface{iface}
		} else {
			card.SupportedInterfaces = append(card.SupportedInterfaces, iface)
		}
	}
	if o.GRPCV0 {
		s.GRPCV0URL = startGRPC(tb, func(gs *grpc.Server) { a2agrpcv0.NewHandler(handler).RegisterWith(gs) }, o.ObserveGRPC, check, append(grpcCreds, o.Guard.grpc()...)...)
		if o.TLS != nil {
			s.GRPCV0URL = "https://" + strings.TrimPrefix(s.GRPCV0URL, "http://")
		}
		card.SupportedInterfaces = append(card.SupportedInterfaces,
			&a2a.AgentInterface{URL: s.GRPCV0URL, ProtocolBinding: a2a.TransportProtocolGRPC, ProtocolVersion: a2av0.Version})
	}
	if o.RESTV0Only {
		s.RESTV0URL = s.Base + "/a2a/rest03"
		card.SupportedInterfaces = []*a2a.AgentInterface{{URL: s.RESTV0URL, ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: a2av0.Version}}
		mux.Handle(o.Prefix+"/a2a/rest03/", http.StripPrefix(o.Prefix+"/a2a/rest03", a2av0.NewRESTHandler(handler)))
	}
	if o.Compat || o.RESTV0Only {
		mux.Handle(o.Prefix+a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(a2av0.NewStaticAgentCardProducer(card)))
	} else {
		mux.Handle(o.Prefix+a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	}
	if o.TLS != nil {
		srv.TLS = o.TLS.Clone()
		// Refused handshakes are what mutual TLS tests provoke; the client reports them.
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.StartTLS()
	} else {
		srv.Start()
	}
	tb.Cleanup(srv.Close)
	return s
}

// startGRPC serves a gRPC server (register adds the A2A service, extra are further server
// options, whose interceptors run first) on loopback until the test ends and returns its URL.
func startGRPC(tb testing.TB, register func(*grpc.Server), observe func(string, metadata.MD, any), check *credentialCheck, extra ...grpc.ServerOption) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("sdkagent: listen: %v", err)
	}
	// keyed refuses a call without the credential (in the metadata), as the HTTP face answers
	// 401: UNAUTHENTICATED.
	keyed := func(ctx context.Context) error {
		if check == nil {
			return nil
		}
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get(check.header); len(v) != 1 || !check.allows(v[0]) {
			return status.Error(codes.Unauthenticated, "missing or wrong "+strings.ToLower(check.header))
		}
		return nil
	}
	opts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			if observe != nil {
				md, _ := metadata.FromIncomingContext(ctx)
				observe(info.FullMethod, md, req)
			}
			if err := keyed(ctx); err != nil {
				return nil, err
			}
			return next(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, next grpc.StreamHandler) error {
			if observe != nil {
				ss = &observedStream{ServerStream: ss, method: info.FullMethod, observe: observe}
			}
			if err := keyed(ss.Context()); err != nil {
				return err
			}
			return next(srv, ss)
		}),
	}
	gs := grpc.NewServer(append(slices.Clip(extra), opts...)...)
	register(gs)
	go gs.Serve(ln) //nolint:errcheck // ends with Stop below
	tb.Cleanup(gs.Stop)
	return "http://" + ln.Addr().String()
}

// observedStream shows a server stream's request to the observer as it is received.
type observedStream struct {
	grpc.ServerStream
	method  string
	observe func(string, metadata.MD, any)
}

func (s *observedStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil {
		md, _ := metadata.FromIncomingContext(s.Context())
		s.observe(s.method, md, m)
	}
	return err
}

// executor is the agent's logic, written against the SDK's executor interface. voice is
// Options.Voice; turns records what it is handed.
type executor struct {
	voice string
	turns *turns
}

func text(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text())
	}
	return b.String()
}

// record notes the user message as the SDK handed it over and reads the voice extension: the
// activation through the SDK's call context (a2asrv.ExtensionsFrom, which the SDK keeps on the
// execution's context), the keys from the message metadata.
func (e *executor) record(ctx context.Context, m *a2a.Message) VoiceTurn {
	t := Turn{MessageID: m.ID, TaskID: string(m.TaskID), Metadata: m.Metadata, Voice: readVoice(e.voice, m.Metadata)}
	for _, p := range m.Parts {
		switch c := p.Content.(type) {
		case a2a.Text:
			t.Parts = append(t.Parts, SeenPart{Kind: "text", Text: string(c)})
		case a2a.Data:
			t.Parts = append(t.Parts, SeenPart{Kind: "data", Data: c.Value})
		default:
			t.Parts = append(t.Parts, SeenPart{Kind: "file"})
		}
	}
	if exts, ok := a2asrv.ExtensionsFrom(ctx); ok {
		t.Requested = exts.RequestedURIs()
		if ext := (&a2a.AgentExtension{URI: e.voice}); e.voice != "" && exts.Requested(ext) {
			exts.Activate(ext)
			t.Voice.Active = true
		}
	}
	e.turns.add(t)
	return t.Voice
}

func (e *executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		said := strings.TrimSpace(text(ec.Message.Parts))
		first, _, _ := strings.Cut(said, " ")
		reply := decideVoice(e.record(ctx, ec.Message), first)
		// status sends a status update; a message carries the reply's metadata key, if any.
		status := func(state a2a.TaskState, msg string) bool {
			var m *a2a.Message
			if msg != "" {
				m = a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(msg))
				if reply.key != "" {
					m.SetMeta(e.voice+"/"+reply.key, metaValue(reply.value))
				}
			}
			return yield(a2a.NewStatusUpdateEvent(ec, state, m), nil)
		}
		// artifact streams chunks as one artifact, then completes.
		artifact := func(chunks []string) {
			var artifactID a2a.ArtifactID
			for i, c := range chunks {
				var ev *a2a.TaskArtifactUpdateEvent
				if i == 0 {
					ev = a2a.NewArtifactEvent(ec, a2a.NewTextPart(c))
					artifactID = ev.Artifact.ID
				} else {
					ev = a2a.NewArtifactUpdateEvent(ec, artifactID, a2a.NewTextPart(c))
				}
				ev.LastChunk = i == len(chunks)-1
				if !yield(ev, nil) {
					return
				}
			}
			status(a2a.TaskStateCompleted, "")
		}
		if reply.act == voiceNone && ec.StoredTask != nil && ec.StoredTask.Status.State == a2a.TaskStateInputRequired {
			if status(a2a.TaskStateWorking, "") {
				artifact([]string{Answer(said)})
			}
			return
		}
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if reply.act == voiceTerms {
			// The speech policy rides on the reply's first status update.
			if status(a2a.TaskStateWorking, reply.text) {
				artifact(TermsChunks())
			}
			return
		}
		if !status(a2a.TaskStateWorking, "") {
			return
		}
		switch reply.act {
		case voiceComplete:
			status(a2a.TaskStateCompleted, reply.text)
			return
		case voiceAsk:
			status(a2a.TaskStateInputRequired, reply.text)
			return
		case voiceReject:
			status(a2a.TaskStateRejected, reply.text)
			return
		}
		switch first {
		case "ask":
			status(a2a.TaskStateInputRequired, Question)
		case "reject":
			status(a2a.TaskStateRejected, RejectText)
		default:
			artifact(Chunks())
		}
	}
}

func (e *executor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	e.turns.cancel(string(ec.TaskID))
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}
