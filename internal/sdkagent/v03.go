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
	// Voice is Options.Voice for this agent: the card lists the extension and the executor
	// implements it whenever the SDK reports it requested (gRPC metadata x-a2a-extensions, read
	// through a2asrv.ExtensionsFrom). Read what arrived with ServerV03.TurnOf or LastTurn.
	Voice string
	// Guard is Options.Guard for this agent: in front of its card and its gRPC calls.
	Guard *Guard
}

// ServerV03 is a running a2a-go v0.3.15 agent.
type ServerV03 struct {
	// CardURL is where its card is served (the well-known path).
	CardURL string
	// GRPCURL is its gRPC interface as the connector calls it: "http://127.0.0.1:port", or
	// https:// with TLS.
	GRPCURL string

	turns *turns
}

// Turns returns every user message the executor was handed, in order.
func (s *ServerV03) Turns() []Turn { return s.turns.list() }

// TurnOf returns the user message with that messageId as the executor was handed it.
func (s *ServerV03) TurnOf(messageID string) (Turn, bool) { return s.turns.byMessage(messageID) }

// LastTurn returns the last user message the executor was handed.
func (s *ServerV03) LastTurn() (Turn, bool) { return s.turns.last() }

// LastVoice returns the voice side of the last user message (Turn.Voice); false before any.
func (s *ServerV03) LastVoice() (VoiceTurn, bool) { return s.turns.lastVoice() }

// NewV03 starts the agent on loopback; it stops when the test ends.
func NewV03(tb testing.TB, o OptionsV03) *ServerV03 {
	tb.Helper()
	s := &ServerV03{turns: &turns{}}
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
	if o.Voice != "" {
		card.Capabilities.Extensions = []sdk.AgentExtension{{URI: o.Voice,
			Description: "Voice turns: what the caller heard, DTMF, silence, how the agent ends its part."}}
	}
	// The extended card is the public one with one more skill; the handler holds it before
	// the port, and so the url, is known.
	ext := &sdk.AgentCard{}
	if o.ExtendedSkill != "" {
		card.SupportsAuthenticatedExtendedCard = true
		opts = append(opts, sdksrv.WithExtendedAgentCard(ext))
	}
	handler := sdksrv.NewHandler(&executorV03{voice: o.Voice, turns: s.turns}, opts...)
	var creds []grpc.ServerOption
	if o.TLS != nil {
		creds = append(creds, grpc.Creds(credentials.NewTLS(o.TLS)))
	}
	s.GRPCURL = startGRPC(tb, func(gs *grpc.Server) { sdkgrpc.NewHandler(handler).RegisterWith(gs) }, nil, apiKeyCheck(o.APIKey), append(creds, o.Guard.grpc()...)...)
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
	srv := httptest.NewUnstartedServer(o.Guard.http(mux))
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
type executorV03 struct {
	voice string
	turns *turns
}

// record is executor.record on this SDK: the same API under the same names (the activation
// arrives as gRPC metadata x-a2a-extensions, which the SDK's call context holds).
func (e *executorV03) record(ctx context.Context, m *sdk.Message) VoiceTurn {
	t := Turn{MessageID: m.ID, TaskID: string(m.TaskID), Metadata: m.Metadata, Voice: readVoice(e.voice, m.Metadata)}
	for _, p := range m.Parts {
		switch c := p.(type) {
		case sdk.TextPart:
			t.Parts = append(t.Parts, SeenPart{Kind: "text", Text: c.Text})
		case sdk.DataPart:
			t.Parts = append(t.Parts, SeenPart{Kind: "data", Data: c.Data})
		default:
			t.Parts = append(t.Parts, SeenPart{Kind: "file"})
		}
	}
	if exts, ok := sdksrv.ExtensionsFrom(ctx); ok {
		t.Requested = exts.RequestedURIs()
		if ext := (&sdk.AgentExtension{URI: e.voice}); e.voice != "" && exts.Requested(ext) {
			exts.Activate(ext)
			t.Voice.Active = true
		}
	}
	e.turns.add(t)
	return t.Voice
}

func (e *executorV03) Execute(ctx context.Context, rc *sdksrv.RequestContext, q eventqueue.Queue) error {
	var said strings.Builder
	for _, p := range rc.Message.Parts {
		if tp, ok := p.(sdk.TextPart); ok {
			said.WriteString(tp.Text)
		}
	}
	text := strings.TrimSpace(said.String())
	first, _, _ := strings.Cut(text, " ")
	reply := decideVoice(e.record(ctx, rc.Message), first)
	var events []sdk.Event
	state := func(st sdk.TaskState, msg string, final bool) {
		var m *sdk.Message
		if msg != "" {
			m = sdk.NewMessageForTask(sdk.MessageRoleAgent, rc, sdk.TextPart{Text: msg})
			if reply.key != "" {
				m.SetMeta(e.voice+"/"+reply.key, metaValue(reply.value))
			}
		}
		ev := sdk.NewStatusUpdateEvent(rc, st, m)
		ev.Final = final
		events = append(events, ev)
	}
	// A continuation of the question is answered; otherwise the voice reply or the first word
	// decides.
	chunks, intro := Chunks(), ""
	if reply.act == voiceNone && rc.StoredTask != nil && rc.StoredTask.Status.State == sdk.TaskStateInputRequired {
		chunks = []string{Answer(text)}
	} else {
		if rc.StoredTask == nil {
			events = append(events, sdk.NewSubmittedTask(rc, rc.Message))
		}
		final := map[voiceAct]sdk.TaskState{voiceComplete: sdk.TaskStateCompleted, voiceAsk: sdk.TaskStateInputRequired, voiceReject: sdk.TaskStateRejected}
		switch {
		case reply.act == voiceTerms:
			// The speech policy rides on the reply's first status update.
			chunks, intro = TermsChunks(), reply.text
		case final[reply.act] != "":
			state(sdk.TaskStateWorking, "", false)
			state(final[reply.act], reply.text, true)
			chunks = nil
		case first == "ask":
			state(sdk.TaskStateWorking, "", false)
			state(sdk.TaskStateInputRequired, Question, true)
			chunks = nil
		case first == "reject":
			state(sdk.TaskStateRejected, RejectText, true)
			chunks = nil
		}
	}
	if chunks != nil {
		state(sdk.TaskStateWorking, intro, false)
		head := sdk.NewArtifactEvent(rc, sdk.TextPart{Text: chunks[0]})
		head.LastChunk = len(chunks) == 1
		events = append(events, head)
		for i, c := range chunks[1:] {
			ev := sdk.NewArtifactUpdateEvent(rc, head.Artifact.ID, sdk.TextPart{Text: c})
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

func (*executorV03) Cancel(ctx context.Context, rc *sdksrv.RequestContext, q eventqueue.Queue) error {
	ev := sdk.NewStatusUpdateEvent(rc, sdk.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}
