//go:build unix

package invoke_test

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
)

// The voice peers: agents on the official SDKs that implement the platform's voice extension
// and read it through their SDK's own API (internal/sdkagent's Options.Voice on a2a-go v2.3.1
// and v0.3.15; testdata/voice.mjs in the @a2a-js/sdk 1.3.0 and 0.3.14 agents, started with
// --voice=URI). Every executor records each user message as its SDK handed it over
// (sdkagent.Turn: parts, requested extensions, metadata, the voice keys and whether the SDK
// reported the activation), read back by messageId. The tests here call the peers straight
// with the connector's A2A client, so that the connector's voice tests can trust them.

// voiceURI is the extension's URI in these tests (the connector's default).
const voiceURI = "urn:a2a-connector:voice:v1"

// voicePeer is one interface of a voice-aware agent.
type voicePeer struct {
	name string
	// ep is the interface, without the activation header (activated adds it).
	ep a2aclient.Endpoint
	// turnOf returns the user message with that messageId as the agent's executor got it.
	turnOf func(t *testing.T, messageID string) (sdkagent.Turn, bool)
	// js is true for the @a2a-js/sdk agents (they answer unknown words with a Message).
	js bool
}

// activated returns ep with the activation header as the connector sends it (X-A2A-Extensions;
// the 1.0 wire adds A2A-Extensions).
func activated(ep a2aclient.Endpoint, uri string) a2aclient.Endpoint {
	ep.Header = http.Header{}
	ep.Header.Set(a2aclient.LegacyExtensionsHeader, uri)
	return ep
}

// voiceClient is the connector's A2A client on loopback, every binding, no retries.
func voiceClient(t *testing.T) *a2aclient.Client {
	t.Helper()
	pol := netguard.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AllowInsecureHTTP: true}
	hc := netguard.NewClient(pol, netguard.ClientOptions{InlineHTTP1: true})
	t.Cleanup(hc.CloseIdleConnections)
	c := a2aclient.NewClient(hc, a2aclient.ClientOptions{MaxRetries: -1, GRPC: a2aclient.GRPCOptions{
		Dial: pol.Dialer(0), CheckURL: pol.CheckURL, TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12},
	}})
	t.Cleanup(c.Close)
	return c
}

func endpoint(url string, w a2aclient.Wire, b a2aclient.Binding) a2aclient.Endpoint {
	return a2aclient.Endpoint{URL: url, Wire: w, Binding: b}
}

// goVoicePeers starts the a2a-go agents with Voice uri ("" for plain ones) and returns every
// interface they serve: v2.3.1's JSON-RPC 1.0 and 0.3, HTTP+JSON 1.0 and 0.3, gRPC 1.0 and 0.3,
// and v0.3.15's gRPC.
func goVoicePeers(t *testing.T, uri string) []voicePeer {
	t.Helper()
	v2 := sdkagent.New(t, sdkagent.Options{Streaming: true, Compat: true, REST: true, GRPC: true, GRPCV0: true, Voice: uri})
	v2rest03 := sdkagent.New(t, sdkagent.Options{Streaming: true, RESTV0Only: true, Voice: uri})
	v03 := sdkagent.NewV03(t, sdkagent.OptionsV03{Voice: uri})
	of := func(turnOf func(string) (sdkagent.Turn, bool)) func(*testing.T, string) (sdkagent.Turn, bool) {
		return func(_ *testing.T, id string) (sdkagent.Turn, bool) { return turnOf(id) }
	}
	return []voicePeer{
		{name: "go-v2/jsonrpc-1.0", ep: endpoint(v2.V1URL, a2aclient.WireV1, a2aclient.BindingJSONRPC), turnOf: of(v2.TurnOf)},
		{name: "go-v2/jsonrpc-0.3", ep: endpoint(v2.V0URL, a2aclient.WireV0, a2aclient.BindingJSONRPC), turnOf: of(v2.TurnOf)},
		{name: "go-v2/http+json-1.0", ep: endpoint(v2.RESTURL, a2aclient.WireV1, a2aclient.BindingHTTPJSON), turnOf: of(v2.TurnOf)},
		{name: "go-v2/grpc-1.0", ep: endpoint(v2.GRPCURL, a2aclient.WireV1, a2aclient.BindingGRPC), turnOf: of(v2.TurnOf)},
		{name: "go-v2/grpc-0.3", ep: endpoint(v2.GRPCV0URL, a2aclient.WireV0, a2aclient.BindingGRPC), turnOf: of(v2.TurnOf)},
		{name: "go-v2/http+json-0.3", ep: endpoint(v2rest03.RESTV0URL, a2aclient.WireV0, a2aclient.BindingHTTPJSON), turnOf: of(v2rest03.TurnOf)},
		{name: "go-v0.3.15/grpc-0.3", ep: endpoint(v03.GRPCURL, a2aclient.WireV0, a2aclient.BindingGRPC), turnOf: of(v03.TurnOf)},
	}
}

// jsVoicePeers starts the @a2a-js/sdk agents with --voice=uri (no flag for "") and returns every
// interface they serve: 1.3.0's JSON-RPC 1.0, JSON-RPC 0.3 (legacy compat), HTTP+JSON 1.0 and
// gRPC 1.0; 0.3.14's JSON-RPC, HTTP+JSON and gRPC.
func jsVoicePeers(t *testing.T, uri string) []voicePeer {
	t.Helper()
	var flags []string
	if uri != "" {
		flags = append(flags, "--voice="+uri)
	}
	v1out := &portsWriter{ports: make(chan [4]int, 1)}
	v1p := awaitReady(t, startNode(t, jsV1AgentDir, v1out, append([]string{"agent.mjs"}, flags...)...), v1out.ports)
	v03out := &portWriter{port: make(chan int, 1)}
	v03p := awaitReady(t, startNode(t, jsAgentDir, v03out, append([]string{"agent.mjs", "0"}, flags...)...), v03out.port)
	bout := &bindingPortsWriter{ports: make(chan [2]int, 1)}
	bp := awaitReady(t, startNode(t, jsAgentDir, bout, append([]string{"bindings.mjs"}, flags...)...), bout.ports)

	origin := func(port int) string { return "http://127.0.0.1:" + strconv.Itoa(port) }
	reader := &jsBindings{client: loopbackClient(t)}
	turns := func(o string) func(*testing.T, string) (sdkagent.Turn, bool) {
		return func(t *testing.T, id string) (sdkagent.Turn, bool) {
			t.Helper()
			var all []sdkagent.Turn
			reader.getJSON(t, o+"/debug/turns", &all)
			for i := len(all) - 1; i >= 0; i-- {
				if all[i].MessageID == id {
					return all[i], true
				}
			}
			return sdkagent.Turn{}, false
		}
	}
	v1 := &jsV1Agents{GRPC: origin(v1p[3])}
	return []voicePeer{
		{name: "js-1.3/jsonrpc-1.0", ep: endpoint(origin(v1p[0])+"/a2a", a2aclient.WireV1, a2aclient.BindingJSONRPC), turnOf: turns(origin(v1p[0])), js: true},
		{name: "js-1.3/jsonrpc-0.3", ep: endpoint(origin(v1p[1])+"/a2a", a2aclient.WireV0, a2aclient.BindingJSONRPC), turnOf: turns(origin(v1p[1])), js: true},
		{name: "js-1.3/http+json-1.0", ep: endpoint(origin(v1p[2])+"/rest", a2aclient.WireV1, a2aclient.BindingHTTPJSON), turnOf: turns(origin(v1p[2])), js: true},
		{name: "js-1.3/grpc-1.0", ep: endpoint(jsGRPCURL(t, v1), a2aclient.WireV1, a2aclient.BindingGRPC), turnOf: turns(origin(v1p[3])), js: true},
		{name: "js-0.3.14/jsonrpc-0.3", ep: endpoint(origin(v03p)+"/a2a", a2aclient.WireV0, a2aclient.BindingJSONRPC), turnOf: turns(origin(v03p)), js: true},
		{name: "js-0.3.14/http+json-0.3", ep: endpoint(origin(bp[0])+"/rest", a2aclient.WireV0, a2aclient.BindingHTTPJSON), turnOf: turns(origin(bp[0])), js: true},
		{name: "js-0.3.14/grpc-0.3", ep: endpoint(profileOf(t, origin(bp[1])).EndpointURL, a2aclient.WireV0, a2aclient.BindingGRPC), turnOf: turns(origin(bp[1])), js: true},
	}
}

// voiceReply is what an agent answered to one message, over either kind of call.
type voiceReply struct {
	// task and context are the task's ids ("" for a Message reply).
	task, context string
	// state is the last state (of the Task or the last status update; "" for a Message).
	state a2a.TaskState
	// last is the last status message (or the Message reply); first the first status update
	// (streams only).
	last  *a2a.Message
	first *a2a.TaskStatusUpdateEvent
	// artifact is the text of every artifact chunk, in order.
	artifact string
}

// send sends msg to ep, as a stream or a blocking send, and collects the reply.
func send(t *testing.T, c *a2aclient.Client, ep a2aclient.Endpoint, msg a2a.Message, stream bool) (voiceReply, error) {
	t.Helper()
	var r voiceReply
	req := &a2a.SendMessageRequest{Message: msg}
	collect := func(ev a2a.Event) {
		switch e := ev.(type) {
		case *a2a.Task:
			r.task, r.context, r.state, r.last = e.ID, e.ContextID, e.Status.State, e.Status.Message
			for _, a := range e.Artifacts {
				r.artifact += partsOnlyText(a.Parts)
			}
		case *a2a.Message:
			r.last = e
		case *a2a.TaskStatusUpdateEvent:
			r.task, r.context, r.state, r.last = e.TaskID, e.ContextID, e.Status.State, e.Status.Message
			if r.first == nil {
				r.first = e
			}
		case *a2a.TaskArtifactUpdateEvent:
			r.task, r.context = e.TaskID, e.ContextID
			r.artifact += partsOnlyText(e.Artifact.Parts)
		}
	}
	if !stream {
		ev, err := c.SendMessage(t.Context(), ep, req)
		if err == nil {
			collect(ev)
		}
		return r, err
	}
	s, err := c.SendStreamingMessage(t.Context(), ep, req, a2aclient.StreamOptions{IdleTimeout: 20 * time.Second})
	if err != nil {
		return r, err
	}
	defer s.Close()
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			return r, nil
		}
		if err != nil {
			return r, err
		}
		collect(ev)
	}
}

func partsOnlyText(ps a2a.Parts) string {
	var b strings.Builder
	for _, p := range ps {
		if p.Kind == a2a.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// metaIs reports whether metadata[key] is the JSON object want.
func metaIs(t *testing.T, metadata map[string]any, key, want string) bool {
	t.Helper()
	got, ok := metadata[key]
	if !ok {
		return false
	}
	gotJSON, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(gotJSON, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(g, w)
}

// voiceMessage is a user message carrying the extension's keys (values as JSON objects).
func voiceMessage(id, text string, keys map[string]string) a2a.Message {
	m := a2a.Message{MessageID: id, Role: a2a.RoleUser, Parts: a2a.Parts{{Kind: a2a.PartText, Text: text}}, Metadata: map[string]any{}}
	for k, v := range keys {
		var obj any
		if err := json.Unmarshal([]byte(v), &obj); err != nil {
			panic(err)
		}
		m.Metadata[voiceURI+"/"+k] = obj
	}
	return m
}

// mustTurn returns the message as the peer's executor got it. It needs no wait: every executor
// records a message before it sends its first event, and the reply has come back by now.
func mustTurn(t *testing.T, p voicePeer, id string) sdkagent.Turn {
	t.Helper()
	turn, ok := p.turnOf(t, id)
	if !ok {
		t.Fatalf("%s: the executor was never handed message %s", p.name, id)
	}
	return turn
}

func voiceKeysOf(msg *a2a.Message) []string {
	if msg == nil {
		return nil
	}
	var keys []string
	for k := range msg.Metadata {
		if strings.HasPrefix(k, voiceURI+"/") {
			keys = append(keys, k)
		}
	}
	return keys
}

// TestVoicePeers proves the voice peers on every binding they serve, called without the
// connector: with the activation header each SDK reports the extension requested and the agent
// answers per the extension (expect, finish, speech, the reprompt) from the metadata it read;
// without it the same metadata arrives, the agent says the extension is not active and answers
// as a plain agent, with no voice keys. It also shows that a2a-go does not split a header value
// naming two URIs, where @a2a-js does.
func TestVoicePeers(t *testing.T) {
	t.Parallel()
	c := voiceClient(t)
	peers := append(goVoicePeers(t, voiceURI), jsVoicePeers(t, voiceURI)...)
	for _, p := range peers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			id := func(s string) string { return strings.ReplaceAll(p.name, "/", ".") + "." + s }
			on := activated(p.ep, voiceURI)

			// "pin" on a voice channel: input-required with the expect; the channel and input
			// kind arrived as sent.
			pin, err := send(t, c, on, voiceMessage(id("pin"), "pin", map[string]string{
				"input": `{"kind":"speech"}`, "channel": `{"kind":"voice","locale":"zh-CN"}`}), false)
			if err != nil {
				t.Fatalf("pin: %v", err)
			}
			if pin.state != a2a.TaskStateInputRequired || pin.last == nil || partsOnlyText(pin.last.Parts) != sdkagent.PINPrompt ||
				!metaIs(t, pin.last.Metadata, voiceURI+"/expect", sdkagent.ExpectPIN) {
				t.Fatalf("pin: %+v (status message %+v), want input-required %q with the expect", pin, pin.last, sdkagent.PINPrompt)
			}
			turn := mustTurn(t, p, id("pin"))
			if !turn.Voice.Active || !slices.Contains(turn.Requested, voiceURI) || turn.Voice.Channel == nil ||
				*turn.Voice.Channel != (sdkagent.VoiceChannel{Kind: "voice", Locale: "zh-CN"}) ||
				turn.Voice.Input == nil || turn.Voice.Input.Kind != "speech" {
				t.Errorf("pin as the executor saw it: %+v (voice %+v)", turn, turn.Voice)
			}

			// DTMF on the same task: completed with the finish; the digits arrived both as the
			// text part and in the input key.
			dtmf := voiceMessage(id("dtmf"), "4711", map[string]string{
				"input": `{"kind":"dtmf","dtmf":{"digits":"4711","termination":"endKey"}}`})
			dtmf.TaskID, dtmf.ContextID = pin.task, pin.context
			got, err := send(t, c, on, dtmf, true)
			if err != nil {
				t.Fatalf("dtmf: %v", err)
			}
			if got.state != a2a.TaskStateCompleted || got.task != pin.task || got.last == nil ||
				!metaIs(t, got.last.Metadata, voiceURI+"/finish", sdkagent.FinishPIN) {
				t.Errorf("dtmf: %+v (status message %+v), want the pin task completed with finish %s", got, got.last, sdkagent.FinishPIN)
			}
			turn = mustTurn(t, p, id("dtmf"))
			if in := turn.Voice.Input; !turn.Voice.Active || in == nil || in.DTMF == nil ||
				*in.DTMF != (sdkagent.VoiceDTMF{Digits: "4711", Termination: "endKey"}) || turn.TaskID != pin.task ||
				!reflect.DeepEqual(turn.Parts, []sdkagent.SeenPart{{Kind: "text", Text: "4711"}}) {
				t.Errorf("dtmf as the executor saw it: %+v (input %+v)", turn, turn.Voice.Input)
			}

			// "human" after an interruption: escalate; the interruption arrived.
			human, err := send(t, c, on, voiceMessage(id("human"), "human please", map[string]string{
				"input": `{"kind":"speech"}`, "interruption": `{"messageId":"m-earlier","heardText":"The weather is"}`}), false)
			if err != nil {
				t.Fatalf("human: %v", err)
			}
			if human.state != a2a.TaskStateCompleted || human.last == nil || !metaIs(t, human.last.Metadata, voiceURI+"/finish", sdkagent.FinishHuman) {
				t.Errorf("human: %+v (status message %+v), want completed with finish %s", human, human.last, sdkagent.FinishHuman)
			}
			turn = mustTurn(t, p, id("human"))
			if in := turn.Voice.Interruption; in == nil || *in != (sdkagent.VoiceInterruption{MessageID: "m-earlier", HeardText: "The weather is"}) {
				t.Errorf("human: interruption as the executor saw it: %+v", in)
			}

			// "bye": rejected with endConversation.
			bye, err := send(t, c, on, voiceMessage(id("bye"), "bye", nil), true)
			if err != nil {
				t.Fatalf("bye: %v", err)
			}
			if bye.state != a2a.TaskStateRejected || bye.last == nil || !metaIs(t, bye.last.Metadata, voiceURI+"/finish", sdkagent.FinishBye) {
				t.Errorf("bye: %+v (status message %+v), want rejected with finish %s", bye, bye.last, sdkagent.FinishBye)
			}

			// "terms", streamed: the first status update asks not to be interrupted, then the
			// terms arrive as an artifact.
			terms, err := send(t, c, on, voiceMessage(id("terms"), "terms", nil), true)
			if err != nil {
				t.Fatalf("terms: %v", err)
			}
			if f := terms.first; f == nil || f.Status.State != a2a.TaskStateWorking || f.Status.Message == nil ||
				!metaIs(t, f.Status.Message.Metadata, voiceURI+"/speech", sdkagent.SpeechTerms) ||
				terms.artifact != strings.Join(sdkagent.TermsChunks(), "") || terms.state != a2a.TaskStateCompleted {
				t.Errorf("terms: %+v (first status %+v), want a working status with speech %s, then %q, completed",
					terms, terms.first, sdkagent.SpeechTerms, strings.Join(sdkagent.TermsChunks(), ""))
			}

			// Two URIs joined in one header value ("a, b", as a client activating several
			// extensions may send them): @a2a-js splits the value, a2a-go keeps it whole, so its
			// Requested misses the URI and the agent answers as a plain one. A client must send
			// one header value per URI to reach a2a-go agents.
			joined := p.ep
			joined.Header = http.Header{}
			joined.Header.Set(a2aclient.LegacyExtensionsHeader, "urn:example:other:v1, "+voiceURI)
			if _, err := send(t, c, joined, voiceMessage(id("joined"), "pin", nil), false); err != nil {
				t.Fatalf("pin with a joined header: %v", err)
			}
			if turn := mustTurn(t, p, id("joined")); turn.Voice.Active != p.js {
				t.Errorf("pin with the header value %q: active %v (requested %q), want %v", "urn:example:other:v1, "+voiceURI,
					turn.Voice.Active, turn.Requested, p.js)
			}

			// Without the header the same metadata arrives, unused: not active, no voice keys back.
			plain, err := send(t, c, p.ep, voiceMessage(id("plain"), "pin", map[string]string{
				"input": `{"kind":"speech"}`, "channel": `{"kind":"voice"}`}), false)
			if err != nil {
				t.Fatalf("pin without the header: %v", err)
			}
			if plain.state == a2a.TaskStateInputRequired || len(voiceKeysOf(plain.last)) != 0 {
				t.Errorf("pin without the header: %+v (message %+v), want the plain agent's answer", plain, plain.last)
			}
			turn = mustTurn(t, p, id("plain"))
			if turn.Voice.Active || slices.Contains(turn.Requested, voiceURI) ||
				!slices.Equal(turn.Voice.Keys, []string{voiceURI + "/channel", voiceURI + "/input"}) {
				t.Errorf("pin without the header as the executor saw it: requested %q, voice %+v", turn.Requested, turn.Voice)
			}
		})
	}
}

// TestVoicePeersUndeclared proves the agents without the extension (the same SDKs, no Voice)
// ignore it even when a client sends the header: a2a-go still reports the header's URI as
// requested (it keeps what the client sent), @a2a-js drops URIs its card does not declare, and
// neither activates anything.
func TestVoicePeersUndeclared(t *testing.T) {
	t.Parallel()
	c := voiceClient(t)
	goPeers := goVoicePeers(t, "")
	jsPeers := jsVoicePeers(t, "")
	for _, p := range []voicePeer{goPeers[0], goPeers[6], jsPeers[0], jsPeers[4]} {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			id := strings.ReplaceAll(p.name, "/", ".") + ".undeclared"
			got, err := send(t, c, activated(p.ep, voiceURI), voiceMessage(id, "pin", map[string]string{"input": `{"kind":"speech"}`}), true)
			if err != nil {
				t.Fatal(err)
			}
			if got.state == a2a.TaskStateInputRequired || len(voiceKeysOf(got.last)) != 0 {
				t.Errorf("%+v (message %+v), want the plain agent's answer", got, got.last)
			}
			turn := mustTurn(t, p, id)
			if turn.Voice.Active || turn.Voice.Keys != nil || p.js == slices.Contains(turn.Requested, voiceURI) {
				t.Errorf("as the executor saw it: requested %q, voice %+v", turn.Requested, turn.Voice)
			}
			if _, ok := turn.Metadata[voiceURI+"/input"]; !ok {
				t.Errorf("metadata %v: the key the client sent is missing", turn.Metadata)
			}
		})
	}
}

// TestVoicePeerRequired proves Options.VoiceRequired: a2a-go refuses a call that does not request
// the extension, and serves one that does.
func TestVoicePeerRequired(t *testing.T) {
	t.Parallel()
	c := voiceClient(t)
	s := sdkagent.New(t, sdkagent.Options{Streaming: true, Voice: voiceURI, VoiceRequired: true})
	ep := endpoint(s.V1URL, a2aclient.WireV1, a2aclient.BindingJSONRPC)
	_, err := send(t, c, ep, voiceMessage("required-without", "pin", nil), false)
	if err == nil || !strings.Contains(err.Error(), "extension") {
		t.Errorf("without the header: %v, want the SDK's extension support required error", err)
	}
	got, err := send(t, c, activated(ep, voiceURI), voiceMessage("required-with", "pin", nil), false)
	if err != nil || got.state != a2a.TaskStateInputRequired {
		t.Errorf("with the header: %+v, %v; want input-required", got, err)
	}
}
