// Package voiceagent is a real A2A agent on the official A2A Go SDK v2 (a2a-go v2.3.1) that
// speaks the platform's voice extension (docs/voice-extension.md) through the SDK's own APIs: it
// reads the activation from the call's service parameters (a2asrv.ExtensionsFrom) and the user
// message's metadata (Message.Meta), and answers with the extension's finish, expect and speech
// metadata on its status messages (Message.SetMeta). Tests of the console's test turns, of "check
// my agent" and of `connector chat` drive it like an agent developer's own.
//
// What it says, for a message that carries the extension's input metadata:
//   - noInput: input-required, StillThere, expecting speech or one digit.
//   - dtmf: completed, "You pressed <digits> (<termination>)." (Pressed).
//   - text with "pin": input-required, AskPIN, expecting four digits ended by #.
//   - text with "human": completed with finish escalate (EscalateReason, EscalateSummary).
//   - text with "bye": completed with finish endConversation.
//   - text with "disclosure": a working status that says bargeIn false, then Disclosure, completed.
//   - anything else: "You said: <text>." (Echo), completed with finish complete.
//
// With an interruption the reply starts with Heard(heardText). A message without the metadata
// (or to an agent whose card does not declare the extension) gets Echo and no metadata.
//
// It refuses to be anything but a test peer: no persistence, and it must never be linked into a
// binary.
package voiceagent

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	connector "github.com/a2a-connector/a2a-connector"
)

// What the agent says.
const (
	StillThere      = "Are you still there? Say yes, or press 1."
	AskPIN          = "Please type your four-digit PIN, then the hash key."
	Disclosure      = "This call is recorded. Your data is processed under our privacy policy."
	Goodbye         = "Goodbye."
	Connecting      = "I am connecting you to a colleague."
	EscalateReason  = "the caller asked for a human"
	EscalateSummary = "The caller wants to talk to a person."
)

// Echo is the reply to text t.
func Echo(t string) string { return "You said: " + t + "." }

// Pressed is the reply to DTMF digits.
func Pressed(digits, termination string) string {
	return fmt.Sprintf("You pressed %s (%s).", digits, termination)
}

// Heard is how a reply starts after an interruption.
func Heard(heardText string) string { return fmt.Sprintf("You heard %q. ", heardText) }

// Options shape the agent.
type Options struct {
	// URI is the extension's URI; "" is connector.VoiceExtensionURI.
	URI string
	// Undeclared leaves the extension off the card: an agent that does not speak it.
	Undeclared bool
	// Required declares the extension with required: true.
	Required bool
	// V03 serves A2A 0.3 JSON-RPC only (the SDK's compatibility handler and card), instead of
	// A2A 1.0 JSON-RPC.
	V03 bool
	// Refuse, when set, is the error an activated message is refused with, before the executor
	// runs (a2a.ErrInvalidParams: an agent that validates metadata strictly;
	// a2a.ErrExtensionSupportRequired: one that does not find its extension activated).
	Refuse error
}

// Received is what one message brought the agent.
type Received struct {
	// Activated: the call asked for the extension (A2A-Extensions, X-A2A-Extensions on 0.3).
	Activated bool
	Text      string
	MessageID string
	// Input, Interruption and Channel are the extension's metadata members; nil when absent.
	Input, Interruption, Channel map[string]any
	// Parts is how many parts the message had.
	Parts int
}

// Server is a running agent.
type Server struct {
	// CardURL is the well-known card URL; URL the interface turns are sent to.
	CardURL, URL string

	ext *a2a.AgentExtension
	mu  sync.Mutex
	got []Received
}

// New starts the agent on loopback; it stops when the test ends.
func New(tb testing.TB, o Options) *Server {
	tb.Helper()
	uri := o.URI
	if uri == "" {
		uri = connector.VoiceExtensionURI
	}
	s := &Server{ext: &a2a.AgentExtension{URI: uri, Required: o.Required, Description: "Voice turns: DTMF, silence, barge-in."}}
	caps := a2a.AgentCapabilities{Streaming: true}
	if !o.Undeclared {
		caps.Extensions = []a2a.AgentExtension{*s.ext}
	}
	opts := []a2asrv.RequestHandlerOption{a2asrv.WithCapabilityChecks(&caps), a2asrv.WithLogger(slog.New(slog.DiscardHandler))}
	if o.Refuse != nil {
		opts = append(opts, a2asrv.WithCallInterceptors(refuser{ext: s.ext, err: o.Refuse}))
	}
	handler := a2asrv.NewHandler(executor{s: s}, opts...)
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	origin := "http://" + srv.Listener.Addr().String()
	s.CardURL = origin + a2asrv.WellKnownAgentCardPath
	card := &a2a.AgentCard{Name: "Voice test agent", Description: "Speaks the platform's voice extension.", Version: "1.0.0",
		Capabilities: caps, DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "voice", Name: "Voice", Description: "Answers calls.", Tags: []string{"voice"}, Examples: []string{"hello"}}}}
	if o.V03 {
		s.URL = origin + "/a2a/v0"
		card.SupportedInterfaces = []*a2a.AgentInterface{{URL: s.URL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version}}
		v0 := a2av0.NewJSONRPCHandler(handler)
		mux.Handle("/a2a/v0", v0)
		mux.Handle("/a2a/v0/stream", v0) // the platform's 0.x streaming path, as its guide asks
		mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(a2av0.NewStaticAgentCardProducer(card)))
	} else {
		s.URL = origin + "/a2a/v1"
		card.SupportedInterfaces = []*a2a.AgentInterface{a2a.NewAgentInterface(s.URL, a2a.TransportProtocolJSONRPC)}
		mux.Handle("/a2a/v1", a2asrv.NewJSONRPCHandler(handler))
		mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	}
	srv.Start()
	tb.Cleanup(srv.Close)
	return s
}

// Received returns the messages the agent received, in order.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// key is the metadata key of the extension's member name.
func (s *Server) key(name string) string { return s.ext.URI + "/" + name }

// refuser refuses an activated message with err, as an agent's own check would.
type refuser struct {
	a2asrv.PassthroughCallInterceptor
	ext *a2a.AgentExtension
	err error
}

func (r refuser) Before(ctx context.Context, callCtx *a2asrv.CallContext, req *a2asrv.Request) (context.Context, any, error) {
	send, ok := req.Payload.(*a2a.SendMessageRequest)
	if !ok || send.Message == nil || !callCtx.Extensions().Requested(r.ext) {
		return ctx, nil, nil
	}
	if _, has := send.Message.Meta()[r.ext.URI+"/input"]; has {
		return ctx, nil, fmt.Errorf("%w: the voice metadata of this message cannot be used", r.err)
	}
	return ctx, nil, nil
}

type executor struct{ s *Server }

func (x executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		s := x.s
		activated := false
		if exts, ok := a2asrv.ExtensionsFrom(ctx); ok && exts.Requested(s.ext) {
			activated = true
			exts.Activate(s.ext)
		}
		meta := ec.Message.Meta()
		member := func(name string) map[string]any {
			m, _ := meta[s.key(name)].(map[string]any)
			return m
		}
		var text strings.Builder
		for _, p := range ec.Message.Parts {
			text.WriteString(p.Text())
		}
		got := Received{Activated: activated, Text: text.String(), MessageID: ec.Message.ID, Parts: len(ec.Message.Parts),
			Input: member("input"), Interruption: member("interruption"), Channel: member("channel")}
		s.mu.Lock()
		s.got = append(s.got, got)
		s.mu.Unlock()

		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		r := s.reply(got)
		if r.speech != nil {
			working := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(""))
			working.SetMeta(s.key("speech"), r.speech)
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, working), nil) {
				return
			}
		}
		if r.text != "" {
			ev := a2a.NewArtifactEvent(ec, a2a.NewTextPart(r.text))
			ev.LastChunk = true
			if !yield(ev, nil) {
				return
			}
		}
		end := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(r.status))
		for k, v := range r.meta {
			end.SetMeta(s.key(k), v)
		}
		yield(a2a.NewStatusUpdateEvent(ec, r.state, end), nil)
	}
}

func (executor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// reply is how the agent answers one message.
type reply struct {
	state  a2a.TaskState
	text   string         // the artifact's text, "" for none
	status string         // the last status message's text
	meta   map[string]any // the extension's members on the last status message
	speech map[string]any // the speech member of a working status before the text, nil for none
}

func (s *Server) reply(got Received) reply {
	if got.Input == nil {
		return reply{state: a2a.TaskStateCompleted, text: Echo(got.Text)}
	}
	heard := ""
	if h, ok := got.Interruption["heardText"].(string); ok {
		heard = Heard(h)
	}
	done := func(text string, finish map[string]any) reply {
		return reply{state: a2a.TaskStateCompleted, text: heard + text, meta: map[string]any{"finish": finish}}
	}
	ask := func(question string, expect map[string]any) reply {
		return reply{state: a2a.TaskStateInputRequired, status: heard + question, meta: map[string]any{"expect": expect}}
	}
	said := strings.ToLower(got.Text)
	switch kind, _ := got.Input["kind"].(string); {
	case kind == "noInput":
		return ask(StillThere, map[string]any{"input": []any{"speech", "dtmf"}, "dtmf": map[string]any{"maxDigits": 1}, "noInputTimeoutMs": 5000})
	case kind == "dtmf":
		d, _ := got.Input["dtmf"].(map[string]any)
		digits, _ := d["digits"].(string)
		termination, _ := d["termination"].(string)
		return done(Pressed(digits, termination), map[string]any{"type": "complete"})
	case strings.Contains(said, "pin"):
		return ask(AskPIN, map[string]any{"input": []any{"dtmf"}, "dtmf": map[string]any{"maxDigits": 4, "endKey": "#", "timeoutMs": 8000}, "noInputTimeoutMs": 6000})
	case strings.Contains(said, "human"):
		return done(Connecting, map[string]any{"type": "escalate", "reason": EscalateReason, "summary": EscalateSummary})
	case strings.Contains(said, "bye"):
		return done(Goodbye, map[string]any{"type": "endConversation"})
	case strings.Contains(said, "disclosure"):
		r := done(Disclosure, map[string]any{"type": "complete"})
		r.speech = map[string]any{"bargeIn": false}
		return r
	}
	return done(Echo(got.Text), map[string]any{"type": "complete"})
}
