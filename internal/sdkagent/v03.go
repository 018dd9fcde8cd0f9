package sdkagent

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/a2aproject/a2a-go/a2a"
	sdkgrpc "github.com/a2aproject/a2a-go/a2agrpc"
	sdksrv "github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// OptionsV03 shape the same weather agent built on the A2A Go SDK's previous major version,
// a2a-go v0.3.15 (A2A 0.3), served as its hello-world gRPC sample serves one: the SDK's gRPC
// handler on one loopback port, the card from the SDK's card handler on another.
type OptionsV03 struct {
	// GRPCBareAddress writes the card's url as the bare "127.0.0.1:port" that sample writes;
	// otherwise it is "http://127.0.0.1:port".
	GRPCBareAddress bool
	// APIKey, when set, is required in x-api-key on every gRPC call (UNAUTHENTICATED
	// otherwise); the card declares the apiKey scheme either way.
	APIKey string
	// ExtendedSkill, when set, is a skill only the authenticated extended card lists (the
	// card says it offers one; GetAgentCard answers it).
	ExtendedSkill string
	// TLS, when set, serves gRPC and the card over TLS with it (GRPCURL and CardURL are then
	// https://; a bare address in the card then means TLS to the connector).
	TLS *tls.Config
}

// ServerV03 is a running a2a-go v0.3.15 agent.
type ServerV03 struct {
	// CardURL is where its card is served (the well-known path).
	CardURL string
	// GRPCURL is its gRPC interface as the connector calls it: "http://127.0.0.1:port", or
	// https:// with TLS.
	GRPCURL string
}

// NewV03 starts the agent on loopback; it stops when the test ends.
func NewV03(tb testing.TB, o OptionsV03) *ServerV03 {
	tb.Helper()
	s := &ServerV03{}
	var opts []sdksrv.RequestHandlerOption
	card := &sdk.AgentCard{Name: "a2a-go v0.3 weather agent", Description: "An agent on the A2A Go SDK v0.3.", Version: "1.0.0",
		ProtocolVersion: "0.3.0", PreferredTransport: sdk.TransportProtocolGRPC,
		Capabilities:      sdk.AgentCapabilities{Streaming: true},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		SecuritySchemes: sdk.NamedSecuritySchemes{"apiKey": sdk.APIKeySecurityScheme{In: sdk.APIKeySecuritySchemeInHeader, Name: "X-API-KEY"}},
		Security:        []sdk.SecurityRequirements{{"apiKey": {}}},
		Skills: []sdk.AgentSkill{{ID: "weather", Name: "Weather", Description: "Tells the weather.", Tags: []string{"weather"},
			Examples: []string{"What is the weather like?"}}},
	}
	// The extended card is the public one with one more skill; the handler holds it before
	// the port, and so the url, is known.
	ext := &sdk.AgentCard{}
	if o.ExtendedSkill != "" {
		card.SupportsAuthenticatedExtendedCard = true
		opts = append(opts, sdksrv.WithExtendedAgentCard(ext))
	}
	handler := sdksrv.NewHandler(executorV03{}, opts...)
	var creds []grpc.ServerOption
	if o.TLS != nil {
		creds = append(creds, grpc.Creds(credentials.NewTLS(o.TLS)))
	}
	s.GRPCURL = startGRPC(tb, func(gs *grpc.Server) { sdkgrpc.NewHandler(handler).RegisterWith(gs) }, nil, o.APIKey, creds...)
	addr := strings.TrimPrefix(s.GRPCURL, "http://")
	if o.TLS != nil {
		s.GRPCURL = "https://" + addr
	}
	card.URL = s.GRPCURL
	if o.GRPCBareAddress {
		card.URL = addr
	}
	*ext = *card
	ext.Skills = append(append([]sdk.AgentSkill(nil), card.Skills...),
		sdk.AgentSkill{ID: o.ExtendedSkill, Name: o.ExtendedSkill, Description: "For members only.", Tags: []string{"weather"}})
	mux := http.NewServeMux()
	mux.Handle(sdksrv.WellKnownAgentCardPath, sdksrv.NewStaticAgentCardHandler(card))
	srv := httptest.NewUnstartedServer(mux)
	if o.TLS != nil {
		srv.TLS = o.TLS.Clone()
		srv.StartTLS()
	} else {
		srv.Start()
	}
	tb.Cleanup(srv.Close)
	s.CardURL = srv.URL + sdksrv.WellKnownAgentCardPath
	return s
}

// executorV03 is executor's logic written against a2a-go v0.3.15's executor interface, which
// writes events to a queue and leaves the final flag to the executor.
type executorV03 struct{}

func (executorV03) Execute(ctx context.Context, rc *sdksrv.RequestContext, q eventqueue.Queue) error {
	var said strings.Builder
	for _, p := range rc.Message.Parts {
		if tp, ok := p.(sdk.TextPart); ok {
			said.WriteString(tp.Text)
		}
	}
	text := strings.TrimSpace(said.String())
	var events []sdk.Event
	state := func(st sdk.TaskState, msg string, final bool) {
		var m *sdk.Message
		if msg != "" {
			m = sdk.NewMessageForTask(sdk.MessageRoleAgent, rc, sdk.TextPart{Text: msg})
		}
		ev := sdk.NewStatusUpdateEvent(rc, st, m)
		ev.Final = final
		events = append(events, ev)
	}
	// A continuation of the question is answered; otherwise the first word decides.
	chunks := Chunks()
	if rc.StoredTask != nil && rc.StoredTask.Status.State == sdk.TaskStateInputRequired {
		chunks = []string{Answer(text)}
	} else {
		if rc.StoredTask == nil {
			events = append(events, sdk.NewSubmittedTask(rc, rc.Message))
		}
		switch word, _, _ := strings.Cut(text, " "); word {
		case "ask":
			state(sdk.TaskStateWorking, "", false)
			state(sdk.TaskStateInputRequired, Question, true)
			chunks = nil
		case "reject":
			state(sdk.TaskStateRejected, RejectText, true)
			chunks = nil
		}
	}
	if chunks != nil {
		state(sdk.TaskStateWorking, "", false)
		first := sdk.NewArtifactEvent(rc, sdk.TextPart{Text: chunks[0]})
		first.LastChunk = len(chunks) == 1
		events = append(events, first)
		for i, c := range chunks[1:] {
			ev := sdk.NewArtifactUpdateEvent(rc, first.Artifact.ID, sdk.TextPart{Text: c})
			ev.LastChunk = i == len(chunks)-2
			events = append(events, ev)
		}
		state(sdk.TaskStateCompleted, "", true)
	}
	for _, ev := range events {
		if err := q.Write(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}

func (executorV03) Cancel(ctx context.Context, rc *sdksrv.RequestContext, q eventqueue.Queue) error {
	ev := sdk.NewStatusUpdateEvent(rc, sdk.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}
