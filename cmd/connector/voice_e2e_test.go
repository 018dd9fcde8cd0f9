//go:build unix

package main

import (
	"cmp"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
	"github.com/a2a-connector/a2a-connector/internal/session"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// The voice extension end to end (docs/voice-extension.md): the dialog engine's voice fields go
// through the connector's real gRPC HandleTurn to agents on the official SDKs — a2a-go v2.3.1
// and v0.3.15 (internal/sdkagent), @a2a-js/sdk 1.3.0 and 0.3.14 (internal/invoke/testdata) —
// that read the extension through their SDK's own API, on every binding of both protocol
// generations; and to the same agents without the extension, which see nothing new. Every peer
// records each user message as its SDK handed it over (sdkagent.Turn), found by the messageId
// the connector sent (session.MessageID of the turn).

// voiceKey is the API key the peers are registered with: their cards declare an apiKey scheme,
// and they accept any key.
const voiceKey = "sk-voice-e2e"

// voicePeer is one interface of an agent on an official SDK.
type voicePeer struct {
	name string
	// cardURL is a card whose first interface the connector speaks is this one: the agent's
	// own card when it lists this interface alone, else a copy listing only it (forceInterface).
	cardURL string
	// binding ("JSONRPC", "HTTP+JSON", "GRPC") and version ("1.0", "0.3") are the interface.
	binding, version string
	// turnOf returns the user message with that messageId as the agent's executor got it.
	turnOf func(t *testing.T, messageID string) (sdkagent.Turn, bool)
	// calls counts the calls that reached the interface (nil where the test does not need it).
	calls func(t *testing.T) int
	// extensionHeaders returns the extension activation headers (A2A-Extensions and
	// X-A2A-Extensions) the message arrived with, as the agent's server saw them, joined.
	extensionHeaders func(t *testing.T, turn sdkagent.Turn) string
}

// registerPeer registers p's card for the stack's tenant and checks that the connector chose the
// interface the peer stands for.
func registerPeer(t *testing.T, s *stack, p voicePeer) connector.Agent {
	t.Helper()
	a := s.register(t, p.cardURL, voiceKey)
	if cmp.Or(a.EndpointBinding, "JSONRPC") != p.binding || !strings.HasPrefix(a.ProtocolVersion, p.version) {
		t.Fatalf("registered A2A %s %q at %s, want %s over %s", a.ProtocolVersion, a.EndpointBinding, a.EndpointURL, p.version, p.binding)
	}
	return a
}

// wantListed checks what ListAgents says of agent a: its voice extension, and that turns went to
// the interface it was registered with (the agent is not on a fallback).
func wantListed(t *testing.T, s *stack, a connector.Agent, voice bool) {
	t.Helper()
	list, err := s.client.ListAgents(t.Context(), &pb.ListAgentsRequest{TenantId: s.tenant})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list.GetAgents(), func(g *pb.Agent) bool { return g.GetAgentId() == a.ID })
	if i < 0 {
		t.Fatalf("ListAgents has no %s", a.ID)
	}
	if g := list.GetAgents()[i]; g.GetVoiceExtension() != voice || g.GetOnFallback() || g.GetEndpointUrl() != a.EndpointURL {
		t.Errorf("ListAgents: %v, want voice_extension %v at the registered interface %s", g, voice, a.EndpointURL)
	}
}

// forceInterface serves on host a copy of the card at cardURL whose supportedInterfaces lists
// only the entry at url in A2A version, and returns the copy's URL. The connector calls a card's
// first interface it speaks, so this is how a test registers any interface of an agent that
// serves several.
func forceInterface(t *testing.T, host *fixtureagent.CardHost, cardURL, url, version string) string {
	t.Helper()
	var card map[string]any
	getJSON(t, cardURL, &card)
	return forceCard(t, host, card, url, version)
}

// forceCard is forceInterface for a card already read (left as it is).
func forceCard(t *testing.T, host *fixtureagent.CardHost, card map[string]any, url, version string) string {
	t.Helper()
	card = maps.Clone(card)
	ifaces, _ := card["supportedInterfaces"].([]any)
	var kept []any
	for _, e := range ifaces {
		if m, _ := e.(map[string]any); m["url"] == url && strings.HasPrefix(m["protocolVersion"].(string), version) {
			kept = append(kept, e)
		}
	}
	if len(kept) != 1 {
		t.Fatalf("card %q lists %d interfaces at %s in A2A %s, want 1: %v", card["name"], len(kept), url, version, ifaces)
	}
	card["supportedInterfaces"] = kept
	b, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	return host.Set("/"+uuid.NewString()+"/.well-known/agent-card.json", string(b))
}

// getJSON decodes the JSON body of GET url into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	getJSONWith(t, http.DefaultClient, url, v)
}

// getJSONWith is getJSON through client.
func getJSONWith(t *testing.T, client *http.Client, url string, v any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, res.StatusCode, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// goTurnOf adapts a Go peer's TurnOf.
func goTurnOf(turnOf func(string) (sdkagent.Turn, bool)) func(*testing.T, string) (sdkagent.Turn, bool) {
	return func(_ *testing.T, id string) (sdkagent.Turn, bool) { return turnOf(id) }
}

// goExtensionHeaders is what a2a-go reports the client requested (the activation headers'
// values as sent: a2asrv.ExtensionsFrom(ctx).RequestedURIs()).
func goExtensionHeaders(_ *testing.T, turn sdkagent.Turn) string {
	return strings.Join(turn.Requested, ", ")
}

// goVoicePeers starts the a2a-go agents that declare the voice extension and returns every
// interface they serve: v2.3.1's JSON-RPC, HTTP+JSON and gRPC in A2A 1.0 and 0.3 (through the
// SDK's compatibility handlers), v0.3.15's gRPC, and v2.3.1 with the extension required, on
// its 1.0 bindings.
func goVoicePeers(t *testing.T, host *fixtureagent.CardHost) []voicePeer {
	t.Helper()
	v2 := sdkagent.New(t, sdkagent.Options{Streaming: true, Compat: true, REST: true, GRPC: true, GRPCV0: true, Voice: connector.VoiceExtensionURI})
	rest03 := sdkagent.New(t, sdkagent.Options{Streaming: true, RESTV0Only: true, Voice: connector.VoiceExtensionURI})
	v03 := sdkagent.NewV03(t, sdkagent.OptionsV03{Voice: connector.VoiceExtensionURI})
	required := sdkagent.New(t, sdkagent.Options{Streaming: true, REST: true, GRPC: true, Voice: connector.VoiceExtensionURI, VoiceRequired: true})
	peer := func(name string, s *sdkagent.Server, url, binding, version string) voicePeer {
		return voicePeer{name: name, cardURL: forceInterface(t, host, s.CardURL, url, version), binding: binding, version: version,
			turnOf: goTurnOf(s.TurnOf), extensionHeaders: goExtensionHeaders}
	}
	return []voicePeer{
		peer("v2/jsonrpc-1.0", v2, v2.V1URL, "JSONRPC", "1.0"),
		peer("v2/jsonrpc-0.3", v2, v2.V0URL, "JSONRPC", "0.3"),
		peer("v2/http+json-1.0", v2, v2.RESTURL, "HTTP+JSON", "1.0"),
		peer("v2/grpc-1.0", v2, v2.GRPCURL, "GRPC", "1.0"),
		peer("v2/grpc-0.3", v2, v2.GRPCV0URL, "GRPC", "0.3"),
		{name: "v2/http+json-0.3", cardURL: rest03.CardURL, binding: "HTTP+JSON", version: "0.3",
			turnOf: goTurnOf(rest03.TurnOf), extensionHeaders: goExtensionHeaders},
		{name: "v0.3.15/grpc-0.3", cardURL: v03.CardURL, binding: "GRPC", version: "0.3",
			turnOf: goTurnOf(v03.TurnOf), extensionHeaders: goExtensionHeaders},
		peer("v2-required/jsonrpc-1.0", required, required.V1URL, "JSONRPC", "1.0"),
		peer("v2-required/http+json-1.0", required, required.RESTURL, "HTTP+JSON", "1.0"),
		peer("v2-required/grpc-1.0", required, required.GRPCURL, "GRPC", "1.0"),
	}
}

// The JS test agents' folders and the lines on which they announce their ports.
const jsV1AgentDir = "../../internal/invoke/testdata/js-agent-v1"

var (
	jsV1Ports      = regexp.MustCompile(`(?m)^A2A_AGENT_PORTS=(\d+) (\d+) (\d+) (\d+)\r?\n`)
	jsV03Port      = regexp.MustCompile(`(?m)^A2A_AGENT_PORT=(\d+)\r?\n`)
	jsBindingPorts = regexp.MustCompile(`(?m)^A2A_BINDING_PORTS=(\d+) (\d+)\r?\n`)
)

// jsRecord is one call as a JS agent's server recorded it (GET /debug/requests).
type jsRecord struct {
	MessageID   string `json:"messageId"`
	Extensions  string `json:"extensions"`
	XExtensions string `json:"xExtensions"`
}

// jsPeer is one interface of a JS agent whose HTTP port is origin (the gRPC agents' card port):
// what its executor got is at origin/debug/turns, the calls at origin/debug/requests (headers
// recorded by the 1.x agents only: headers says so).
func jsPeer(name, origin, cardURL, binding, version string, headers bool) voicePeer {
	p := voicePeer{name: name, cardURL: cmp.Or(cardURL, origin+"/.well-known/agent-card.json"), binding: binding, version: version,
		turnOf: func(t *testing.T, id string) (sdkagent.Turn, bool) {
			t.Helper()
			var all []sdkagent.Turn
			getJSON(t, origin+"/debug/turns", &all)
			i := slices.IndexFunc(all, func(turn sdkagent.Turn) bool { return turn.MessageID == id })
			if i < 0 {
				return sdkagent.Turn{}, false
			}
			return all[i], true
		},
		calls: func(t *testing.T) int {
			t.Helper()
			var all []jsRecord
			getJSON(t, origin+"/debug/requests", &all)
			return len(all)
		},
	}
	if headers {
		p.extensionHeaders = func(t *testing.T, turn sdkagent.Turn) string {
			t.Helper()
			var all []jsRecord
			getJSON(t, origin+"/debug/requests", &all)
			i := slices.IndexFunc(all, func(r jsRecord) bool { return r.MessageID == turn.MessageID })
			if i < 0 {
				t.Fatalf("%s: no call with message %s", name, turn.MessageID)
			}
			return strings.Trim(all[i].Extensions+", "+all[i].XExtensions, ", ")
		}
	}
	return p
}

// jsV1Peers runs the @a2a-js/sdk 1.3.0 agents (flags: --voice=URI, or none) and returns their
// interfaces: JSON-RPC 1.0, JSON-RPC 0.3 (the SDK's legacy compatibility, forced on the dual
// agent's card), HTTP+JSON 1.0 and gRPC 1.0. It skips without Node.js, except under CI.
func jsV1Peers(t *testing.T, host *fixtureagent.CardHost, flags ...string) []voicePeer {
	t.Helper()
	ports := runNodeAgents(t, jsV1AgentDir, jsV1Ports, append([]string{"agent.mjs"}, flags...)...)
	origin := func(i int) string { return "http://127.0.0.1:" + ports[i] }
	dual03 := forceInterface(t, host, origin(1)+"/.well-known/agent-card.json", origin(1)+"/a2a", "0.3")
	return []voicePeer{
		jsPeer("1.3/jsonrpc-1.0", origin(0), "", "JSONRPC", "1.0", true),
		jsPeer("1.3/jsonrpc-0.3", origin(1), dual03, "JSONRPC", "0.3", true),
		jsPeer("1.3/http+json-1.0", origin(2), "", "HTTP+JSON", "1.0", true),
		jsPeer("1.3/grpc-1.0", origin(3), "", "GRPC", "1.0", true),
	}
}

// jsVoicePeers returns every interface of the JS agents that declare the voice extension: the
// 1.3.0 ones (jsV1Peers) and @a2a-js/sdk 0.3.14's JSON-RPC, HTTP+JSON and gRPC agents.
func jsVoicePeers(t *testing.T, host *fixtureagent.CardHost) []voicePeer {
	t.Helper()
	flag := "--voice=" + connector.VoiceExtensionURI
	peers := jsV1Peers(t, host, flag)
	v03 := runNodeAgents(t, jsAgentDir, jsV03Port, "agent.mjs", "0", flag)
	b := runNodeAgents(t, jsAgentDir, jsBindingPorts, "bindings.mjs", flag)
	return append(peers,
		jsPeer("0.3.14/jsonrpc-0.3", "http://127.0.0.1:"+v03[0], "", "JSONRPC", "0.3", false),
		jsPeer("0.3.14/http+json-0.3", "http://127.0.0.1:"+b[0], "", "HTTP+JSON", "0.3", false),
		jsPeer("0.3.14/grpc-0.3", "http://127.0.0.1:"+b[1], "", "GRPC", "0.3", false),
	)
}

// voiceSession is one conversation of the dialog engine with a peer.
type voiceSession struct {
	s  *stack
	p  voicePeer
	id string
}

// turn sends req in the session (tenant, session and, when it has none, a new turn id filled
// in) and returns what the stream said and the user message as the peer's executor got it.
// Every executor records a message before it answers, so it is there once the turn has ended.
func (v voiceSession) turn(t *testing.T, req *pb.HandleTurnRequest) (turnResult, sdkagent.Turn) {
	t.Helper()
	req.TenantId, req.SessionId, req.TurnId = v.s.tenant, v.id, cmp.Or(req.TurnId, uuid.NewString())
	r := v.s.request(t, req)
	got, ok := v.p.turnOf(t, session.MessageID(v.s.tenant, v.id, req.TurnId))
	if !ok {
		t.Fatalf("%s: the executor was never handed the message of turn %s (outcome %v)", v.p.name, req.TurnId, r.final.GetOutcome())
	}
	return r, got
}

// voiceKeys returns the metadata keys under the voice extension's URI.
func voiceKeys(md map[string]any) []string {
	var keys []string
	for k := range md {
		if strings.HasPrefix(k, connector.VoiceExtensionURI+"/") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func textParts(texts ...string) []sdkagent.SeenPart {
	parts := make([]sdkagent.SeenPart, len(texts))
	for i, s := range texts {
		parts[i] = sdkagent.SeenPart{Kind: "text", Text: s}
	}
	return parts
}

// TestVoiceConversationOnEveryBinding: the dialog engine holds a voice conversation through
// HandleTurn with agents on the official SDKs that declare the extension, on every binding of
// both protocol generations — a2a-go v2.3.1 (also with the extension required), v0.3.15 and
// @a2a-js/sdk 1.3.0 and 0.3.14:
//   - a text turn from an engine that knows nothing of voice: the agent's usual answer, and
//     the agent learns only that the input is text;
//   - "pin": the agent asks for keypad input, and the engine gets how to collect it, typed;
//   - silence on the held task: the agent gets noInput and one empty text part, and reprompts;
//   - the digits on the held task: the agent gets them as DTMF and as the text part, and
//     finishes with complete;
//   - "human" after the caller cut off the PIN reply, on a voice channel: the agent learns which
//     message's reply was cut off and what the caller heard, and escalates with a summary;
//   - "terms": the engine learns that the reply must not be interrupted before its first text.
func TestVoiceConversationOnEveryBinding(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	host := fixtureagent.NewCardHost(t, false)
	t.Run("a2a-go", func(t *testing.T) {
		t.Parallel()
		for _, p := range goVoicePeers(t, host) {
			t.Run(p.name, func(t *testing.T) {
				t.Parallel()
				converseByVoice(t, s, p)
			})
		}
	})
	t.Run("a2a-js", func(t *testing.T) {
		t.Parallel()
		for _, p := range jsVoicePeers(t, host) {
			t.Run(p.name, func(t *testing.T) {
				t.Parallel()
				converseByVoice(t, s, p)
			})
		}
	})
}

func converseByVoice(t *testing.T, s *stack, p voicePeer) {
	a := registerPeer(t, s, p)
	v := voiceSession{s: s, p: p, id: uuid.NewString()}

	// A text turn as today's engines send it: the usual answer; the agent is told it is text,
	// and nothing more.
	r, got := v.turn(t, &pb.HandleTurnRequest{AgentId: a.ID, Text: "stream please"})
	wantOutcome(t, r, pb.Outcome_OUTCOME_COMPLETED)
	if diff := gocmp.Diff(sdkagent.Chunks(), r.deltas); diff != "" || len(r.speech) != 0 || r.final.GetFinish() != nil {
		t.Errorf("text turn: deltas (-want +got):\n%s\nspeech %v, finish %v", diff, r.speech, r.final.GetFinish())
	}
	if !got.Voice.Active || !slices.Equal(got.Voice.Keys, []string{connector.VoiceExtensionURI + "/input"}) ||
		got.Voice.Input == nil || *got.Voice.Input != (sdkagent.VoiceInput{Kind: "text"}) {
		t.Errorf("text turn as the agent got it: voice %s", asJSON(got.Voice))
	}

	// "pin": the agent asks for the PIN on the keypad.
	pin, got := v.turn(t, &pb.HandleTurnRequest{AgentId: a.ID, Text: "pin"})
	wantOutcome(t, pin, pb.Outcome_OUTCOME_INPUT_REQUIRED)
	wantExpect := &pb.Expect{Input: []pb.InputMode{pb.InputMode_INPUT_MODE_DTMF},
		Dtmf: &pb.DtmfCollection{MaxDigits: 4, EndKey: "#", TimeoutMs: 5000}, NoInputTimeoutMs: 4000}
	if diff := gocmp.Diff(wantExpect, pin.final.GetExpect(), protocmp.Transform()); diff != "" || pin.final.GetText() != sdkagent.PINPrompt {
		t.Fatalf("pin: text %q, expect (-want +got):\n%s", pin.final.GetText(), diff)
	}
	if !got.Voice.Active {
		t.Errorf("pin: the SDK did not report the extension activated (requested %q)", got.Requested)
	}
	task := pin.final.GetTaskId()

	// Silence: the held task gets a no-input turn, one empty text part; the agent reprompts.
	silent, got := v.turn(t, &pb.HandleTurnRequest{NoInput: &pb.NoInput{SilenceMs: 4000}})
	wantOutcome(t, silent, pb.Outcome_OUTCOME_INPUT_REQUIRED)
	if silent.final.GetText() != sdkagent.Reprompt || !silent.started.GetHeld() || silent.final.GetTaskId() != task {
		t.Errorf("silence: text %q held %v task %s, want %q on the held task %s", silent.final.GetText(), silent.started.GetHeld(),
			silent.final.GetTaskId(), sdkagent.Reprompt, task)
	}
	if !got.Voice.Active || got.TaskID != task || !gocmp.Equal(textParts(""), got.Parts) || got.Voice.Input == nil ||
		*got.Voice.Input != (sdkagent.VoiceInput{Kind: "noInput", SilenceMs: 4000}) {
		t.Errorf("silence as the agent got it: task %s (want %s) parts %+v voice %s", got.TaskID, task, got.Parts, asJSON(got.Voice))
	}

	// The digits, typed on the held task: the agent gets them twice and finishes.
	typedTurn := uuid.NewString()
	typed, got := v.turn(t, &pb.HandleTurnRequest{TurnId: typedTurn,
		Dtmf: &pb.DtmfInput{Digits: "4711", Termination: pb.DtmfTermination_DTMF_TERMINATION_END_KEY}})
	wantOutcome(t, typed, pb.Outcome_OUTCOME_COMPLETED)
	if diff := gocmp.Diff(&pb.Finish{Type: pb.FinishType_FINISH_TYPE_COMPLETE, Reason: "pin received"}, typed.final.GetFinish(), protocmp.Transform()); diff != "" ||
		typed.final.GetText() != sdkagent.PINReceived || typed.final.GetTaskId() != task {
		t.Errorf("dtmf: text %q task %s (want %s), finish (-want +got):\n%s", typed.final.GetText(), typed.final.GetTaskId(), task, diff)
	}
	if in := got.Voice.Input; !got.Voice.Active || !slices.Contains(got.Requested, connector.VoiceExtensionURI) || got.TaskID != task ||
		!gocmp.Equal(textParts("4711"), got.Parts) || in == nil || in.DTMF == nil || in.Kind != "dtmf" ||
		*in.DTMF != (sdkagent.VoiceDTMF{Digits: "4711", Termination: "endKey"}) {
		t.Errorf("dtmf as the agent got it: requested %q task %s (want %s) parts %+v voice %s", got.Requested, got.TaskID, task, got.Parts, asJSON(got.Voice))
	}
	typedMessage := got.MessageID

	// The caller cut the PIN reply off and asks for a human, on a voice channel in Mandarin.
	human, got := v.turn(t, &pb.HandleTurnRequest{AgentId: a.ID, Text: "human please",
		Interruption: &pb.Interruption{TurnId: typedTurn, HeardText: "PIN rec"},
		Channel:      &pb.Channel{Kind: "voice", Locale: "zh-CN"}})
	wantOutcome(t, human, pb.Outcome_OUTCOME_COMPLETED)
	wantFinish := &pb.Finish{Type: pb.FinishType_FINISH_TYPE_ESCALATE, Reason: "asked for a human", Summary: "The caller asked for a human agent."}
	if diff := gocmp.Diff(wantFinish, human.final.GetFinish(), protocmp.Transform()); diff != "" || human.final.GetText() != sdkagent.Escalated {
		t.Errorf("human: text %q, finish (-want +got):\n%s", human.final.GetText(), diff)
	}
	if !got.Voice.Active || got.Voice.Interruption == nil || got.Voice.Channel == nil || got.Voice.Input == nil ||
		*got.Voice.Interruption != (sdkagent.VoiceInterruption{MessageID: typedMessage, HeardText: "PIN rec"}) ||
		*got.Voice.Channel != (sdkagent.VoiceChannel{Kind: "voice", Locale: "zh-CN"}) || got.Voice.Input.Kind != "speech" {
		t.Errorf("human as the agent got it: voice %s, want the interruption of message %s", asJSON(got.Voice), typedMessage)
	}

	// "terms": the engine is told not to let the caller interrupt before any text arrives.
	terms, _ := v.turn(t, &pb.HandleTurnRequest{AgentId: a.ID, Text: "terms"})
	wantOutcome(t, terms, pb.Outcome_OUTCOME_COMPLETED)
	speechAt, deltaAt := slices.Index(terms.order, "speech"), slices.Index(terms.order, "delta")
	if len(terms.speech) != 1 || terms.speech[0].GetBargeIn() || speechAt < 0 || deltaAt < 0 || speechAt > deltaAt ||
		!slices.Equal(terms.deltas, sdkagent.TermsChunks()) {
		t.Errorf("terms: events %v, speech %v, deltas %q; want barge_in false before the first text, then the terms", terms.order, terms.speech, terms.deltas)
	}

	wantListed(t, s, a, true)
}

// goPlainPeers starts a2a-go agents without the voice extension, one per interface, and
// counts the calls that reach each: v2.3.1 on JSON-RPC 1.0, gRPC 1.0 and HTTP+JSON 0.3 (the
// SDK's compatibility handler), and v0.3.15 on gRPC.
func goPlainPeers(t *testing.T) []voicePeer {
	t.Helper()
	peer := func(name, binding, version string, o sdkagent.Options) voicePeer {
		var calls atomic.Int64
		o.Streaming = true
		o.Observe = func(*http.Request) { calls.Add(1) }
		o.ObserveGRPC = func(string, metadata.MD, any) { calls.Add(1) }
		s := sdkagent.New(t, o)
		return voicePeer{name: name, cardURL: s.CardURL, binding: binding, version: version, turnOf: goTurnOf(s.TurnOf),
			calls: func(*testing.T) int { return int(calls.Load()) }, extensionHeaders: goExtensionHeaders}
	}
	v03 := sdkagent.NewV03(t, sdkagent.OptionsV03{})
	return []voicePeer{
		peer("v2/jsonrpc-1.0", "JSONRPC", "1.0", sdkagent.Options{}),
		peer("v2/grpc-1.0", "GRPC", "1.0", sdkagent.Options{GRPCOnly: true}),
		peer("v2/http+json-0.3", "HTTP+JSON", "0.3", sdkagent.Options{RESTV0Only: true}),
		{name: "v0.3.15/grpc-0.3", cardURL: v03.CardURL, binding: "GRPC", version: "0.3", turnOf: goTurnOf(v03.TurnOf),
			calls: func(*testing.T) int { return len(v03.Turns()) }, extensionHeaders: goExtensionHeaders},
	}
}

// TestAgentsWithoutTheVoiceExtension: agents on the same SDKs whose cards do not declare the
// extension (a2a-go v2.3.1 and v0.3.15, @a2a-js/sdk 1.3.0; A2A 1.0 and 0.3) see nothing new. A
// DTMF turn, even with an interruption and a channel, arrives as a plain message whose one text
// part is the digits, with no voice metadata and no activation header. A no-input turn is not
// sent: the engine gets FAILED_PRECONDITION with reason NO_INPUT_UNSUPPORTED, the agent gets no
// call, the session stays held by the agent's question, and no breaker counts it (one failure
// would open it here): the caller's answer then continues the held task.
func TestAgentsWithoutTheVoiceExtension(t *testing.T) {
	t.Parallel()
	s := startStack(t, map[string]string{"A2AC_BREAKER_FAILURES": "1",
		// No probe during the test, however slow the machine: an open breaker would stay open.
		"A2AC_BREAKER_COOLDOWN": "1h", "A2AC_BREAKER_MAX_COOLDOWN": "2h"})
	host := fixtureagent.NewCardHost(t, false)
	t.Run("a2a-go", func(t *testing.T) {
		t.Parallel()
		for _, p := range goPlainPeers(t) {
			t.Run(p.name, func(t *testing.T) {
				t.Parallel()
				converseWithoutVoice(t, s, p)
			})
		}
	})
	t.Run("a2a-js", func(t *testing.T) {
		t.Parallel()
		for _, p := range jsV1Peers(t, host) {
			if p.binding == "HTTP+JSON" {
				continue // the other three say it all for this SDK
			}
			t.Run(p.name, func(t *testing.T) {
				t.Parallel()
				converseWithoutVoice(t, s, p)
			})
		}
	})
}

func converseWithoutVoice(t *testing.T, s *stack, p voicePeer) {
	a := registerPeer(t, s, p)
	v := voiceSession{s: s, p: p, id: uuid.NewString()}
	plain := func(what string, got sdkagent.Turn) {
		t.Helper()
		if keys := voiceKeys(got.Metadata); len(keys) != 0 || got.Voice.Active {
			t.Errorf("%s as the agent got it: voice keys %q, active %v; want none", what, keys, got.Voice.Active)
		}
		if h := p.extensionHeaders(t, got); h != "" {
			t.Errorf("%s arrived with extension headers %q, want none", what, h)
		}
	}

	earlierTurn := uuid.NewString()
	earlier, got := v.turn(t, &pb.HandleTurnRequest{TurnId: earlierTurn, AgentId: a.ID, Text: "stream please"})
	wantOutcome(t, earlier, pb.Outcome_OUTCOME_COMPLETED)
	plain("a text turn", got)

	// DTMF after an interruption, on a voice channel: the digits as text, nothing else.
	typed, got := v.turn(t, &pb.HandleTurnRequest{AgentId: a.ID,
		Dtmf:         &pb.DtmfInput{Digits: "4711", Termination: pb.DtmfTermination_DTMF_TERMINATION_END_KEY},
		Interruption: &pb.Interruption{TurnId: earlierTurn, HeardText: "The weather"},
		Channel:      &pb.Channel{Kind: "voice", Locale: "en-US"}})
	if typed.final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED || typed.final.GetFinish() != nil || len(typed.speech) != 0 {
		t.Errorf("dtmf: outcome %v (error %v), finish %v, speech %v; want the plain agent's answer", typed.final.GetOutcome(),
			typed.final.GetError(), typed.final.GetFinish(), typed.speech)
	}
	if !gocmp.Equal(textParts("4711"), got.Parts) {
		t.Errorf("dtmf as the agent got it: parts %+v, want the digits as the one text part", got.Parts)
	}
	plain("a dtmf turn", got)

	// The agent asks; silence is not sent to it.
	ask, _ := v.turn(t, &pb.HandleTurnRequest{AgentId: a.ID, Text: "ask me"})
	wantOutcome(t, ask, pb.Outcome_OUTCOME_INPUT_REQUIRED)
	getSession := func() *pb.GetSessionResponse {
		t.Helper()
		res, err := s.client.GetSession(t.Context(), &pb.GetSessionRequest{TenantId: s.tenant, SessionId: v.id})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	hold := getSession()
	if !hold.GetHeld() || hold.GetAgentId() != a.ID || hold.GetTaskId() != ask.final.GetTaskId() {
		t.Fatalf("GetSession after the question = %v, want held by %s on task %s", hold, a.ID, ask.final.GetTaskId())
	}
	before := p.calls(t)
	for _, agentID := range []string{"", a.ID} { // routed by the hold, then named
		_, err := s.tryRequest(t, &pb.HandleTurnRequest{TenantId: s.tenant, SessionId: v.id, TurnId: uuid.NewString(), AgentId: agentID,
			NoInput: &pb.NoInput{SilenceMs: 5000}})
		wantNoInputUnsupported(t, err)
	}
	if after := p.calls(t); after != before {
		t.Errorf("the agent got %d calls for the no-input turns, want none", after-before)
	}
	if diff := gocmp.Diff(hold, getSession(), protocmp.Transform()); diff != "" {
		t.Errorf("the hold changed with the no-input turns (-before +after):\n%s", diff)
	}
	answer, _ := v.turn(t, &pb.HandleTurnRequest{Text: "Berlin"})
	wantOutcome(t, answer, pb.Outcome_OUTCOME_COMPLETED)
	if !answer.started.GetHeld() || answer.final.GetTaskId() != ask.final.GetTaskId() || answer.final.GetText() != sdkagent.Answer("Berlin") {
		t.Errorf("answer: held %v task %s text %q; want the held task %s answered", answer.started.GetHeld(), answer.final.GetTaskId(),
			answer.final.GetText(), ask.final.GetTaskId())
	}
	wantListed(t, s, a, false)
}

// wantNoInputUnsupported checks the refusal of a no-input turn for an agent without the voice
// extension: FAILED_PRECONDITION with the google.rpc.ErrorInfo engines branch on.
func wantNoInputUnsupported(t *testing.T, err error) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != codes.FailedPrecondition {
		t.Fatalf("no-input turn: %v, want FAILED_PRECONDITION", err)
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == "NO_INPUT_UNSUPPORTED" {
			return
		}
	}
	t.Errorf("no-input turn: details %v, want an ErrorInfo with reason NO_INPUT_UNSUPPORTED", st.Details())
}

// TestListAgentsSaysWhichAgentsSpeakVoice: ListAgents marks the agents whose cards declare the
// voice extension under the connector's URI (required or not, A2A 1.0 or 0.3), and no other:
// not the demo agent, not an agent without extensions, not one declaring another URI.
func TestListAgentsSaysWhichAgentsSpeakVoice(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	reg := func(cardURL string) string { return s.register(t, cardURL, voiceKey).ID }
	want := map[string]bool{
		s.agent: false,
		reg(sdkagent.New(t, sdkagent.Options{Streaming: true, Voice: connector.VoiceExtensionURI}).CardURL):                      true,
		reg(sdkagent.New(t, sdkagent.Options{Streaming: true, Voice: connector.VoiceExtensionURI, VoiceRequired: true}).CardURL): true,
		reg(sdkagent.NewV03(t, sdkagent.OptionsV03{Voice: connector.VoiceExtensionURI}).CardURL):                                 true,
		reg(sdkagent.New(t, sdkagent.Options{Streaming: true}).CardURL):                                                          false,
		reg(sdkagent.New(t, sdkagent.Options{Streaming: true, Voice: "urn:example:voice:v2"}).CardURL):                           false,
	}
	list, err := s.client.ListAgents(t.Context(), &pb.ListAgentsRequest{TenantId: s.tenant})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, a := range list.GetAgents() {
		got[a.GetAgentId()] = a.GetVoiceExtension()
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("voice_extension by agent (-want +got):\n%s", diff)
	}
}

// TestTraceOfAVoiceTurn: the session span of a DTMF turn that interrupted the agent's question
// says the input kind, the interruption and how the agent finished; a text turn's says nothing
// of voice. No span of either trace holds the digits or the text the caller heard, though both
// reached the agent.
func TestTraceOfAVoiceTurn(t *testing.T) {
	t.Parallel()
	const (
		// Characters no id or hex string holds, so a match can only be the digits.
		digits = "73*91*58#"
		heard  = "heard-7Q2X please type"
	)
	spans := tracetest.NewInMemoryExporter()
	s := startStack(t, nil, withTelemetry(telemetry.Options{SpanExporter: spans}))
	peer := sdkagent.New(t, sdkagent.Options{Streaming: true, Voice: connector.VoiceExtensionURI})
	a := s.register(t, peer.CardURL, voiceKey)
	sessionID, pinTurn, typedTurn := uuid.NewString(), uuid.NewString(), uuid.NewString()

	pin := s.request(t, &pb.HandleTurnRequest{TenantId: s.tenant, SessionId: sessionID, TurnId: pinTurn, AgentId: a.ID, Text: "pin"})
	wantOutcome(t, pin, pb.Outcome_OUTCOME_INPUT_REQUIRED)
	typed := s.request(t, &pb.HandleTurnRequest{TenantId: s.tenant, SessionId: sessionID, TurnId: typedTurn,
		Dtmf:         &pb.DtmfInput{Digits: digits, Termination: pb.DtmfTermination_DTMF_TERMINATION_MAX_DIGITS},
		Interruption: &pb.Interruption{TurnId: pinTurn, HeardText: heard},
		Channel:      &pb.Channel{Kind: "voice", Locale: "de-DE"}})
	wantOutcome(t, typed, pb.Outcome_OUTCOME_COMPLETED)
	got, ok := peer.TurnOf(session.MessageID(s.tenant, sessionID, typedTurn))
	if !ok || text(got.Parts) != digits || got.Voice.Interruption == nil || got.Voice.Interruption.HeardText != heard {
		t.Fatalf("the agent got %s, want the digits and the heard text: the test would prove nothing", asJSON(got))
	}

	// Both turns' server spans end last: every span of the two traces has been exported then.
	waitForSpans(t, spans, pb.Connector_ServiceDesc.ServiceName+"/HandleTurn", 2)
	sess := waitForSpans(t, spans, "session.HandleTurn", 2)
	byKind := func(kind any) tracetest.SpanStub {
		return only(t, sess, func(sp tracetest.SpanStub) bool { return attr(sp, "a2ac.voice.input_kind") == kind })
	}
	wantAttrs(t, byKind("dtmf"), map[attribute.Key]any{"a2ac.voice.interrupted": true, "a2ac.voice.finish": "complete", "a2ac.outcome": "COMPLETED"})
	for _, kv := range byKind(nil).Attributes {
		if strings.HasPrefix(string(kv.Key), "a2ac.voice.") {
			t.Errorf("the text turn's span has %s = %s", kv.Key, kv.Value.String())
		}
	}
	for _, sp := range spans.GetSpans() {
		for _, v := range spanStrings(sp) {
			if strings.Contains(v, digits) || strings.Contains(v, heard) {
				t.Errorf("span %s holds %q", sp.Name, v)
			}
		}
	}
}

// asJSON shows v in errors (the peers' records hold pointers).
func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// text joins the text parts.
func text(parts []sdkagent.SeenPart) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}
