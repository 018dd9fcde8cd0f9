package invoke_test

import (
	"context"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// v2Executor is an agent written on the official A2A Go SDK v2 (A2A 1.0), code nobody here
// wrote the server side of. It answers like the other SDK peers (peers_v1_test.go): "ask ..."
// asks peerQuestion (input-required) and the answer completes the same task with
// peerAnswer(answer); "reject ..." is rejected with peerRejectText; anything else streams
// peerChunks as chunks of one artifact and completes.
type v2Executor struct{}

func v2Text(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text())
	}
	return b.String()
}

func (v2Executor) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := strings.TrimSpace(v2Text(ec.Message.Parts))
		status := func(state a2a.TaskState, msg string) bool {
			var m *a2a.Message
			if msg != "" {
				m = a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(msg))
			}
			return yield(a2a.NewStatusUpdateEvent(ec, state, m), nil)
		}
		if ec.StoredTask != nil && ec.StoredTask.Status.State == a2a.TaskStateInputRequired {
			if !status(a2a.TaskStateWorking, "") {
				return
			}
			ev := a2a.NewArtifactEvent(ec, a2a.NewTextPart(peerAnswer(text)))
			ev.LastChunk = true
			if yield(ev, nil) {
				status(a2a.TaskStateCompleted, "")
			}
			return
		}
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !status(a2a.TaskStateWorking, "") {
			return
		}
		switch word, _, _ := strings.Cut(text, " "); word {
		case "ask":
			status(a2a.TaskStateInputRequired, peerQuestion)
		case "reject":
			status(a2a.TaskStateRejected, peerRejectText)
		default:
			var artifactID a2a.ArtifactID
			for i, c := range peerChunks {
				var ev *a2a.TaskArtifactUpdateEvent
				if i == 0 {
					ev = a2a.NewArtifactEvent(ec, a2a.NewTextPart(c))
					artifactID = ev.Artifact.ID
				} else {
					ev = a2a.NewArtifactUpdateEvent(ec, artifactID, a2a.NewTextPart(c))
				}
				ev.LastChunk = i == len(peerChunks)-1
				if !yield(ev, nil) {
					return
				}
			}
			status(a2a.TaskStateCompleted, "")
		}
	}
}

func (v2Executor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// v2Server runs v2Executor behind the SDK's handlers on loopback:
//
//	/v1  a2asrv.NewJSONRPCHandler: A2A 1.0
//	/v0  a2av0.NewJSONRPCHandler: A2A 0.3 (the SDK's compatibility handler), same tasks
//	/.well-known/agent-card.json  the card, in the union shape a2av0's producer serves, listing
//	     the 1.0 interface first, then the 0.3 one
//
// With streaming false it is a 1.0-only agent with a non-streaming card: the handler is built
// with the SDK's capability checks, so it refuses streaming calls (an SSE error event -32004),
// only /v1 is served, and the card (the plain 1.0 shape) says so.
type v2Server struct {
	Origin string

	mu       sync.Mutex
	requests []peerRequest
}

func newV2Server(t *testing.T, streaming bool) *v2Server {
	t.Helper()
	s := &v2Server{}
	caps := a2a.AgentCapabilities{Streaming: streaming}
	handler := a2asrv.NewHandler(v2Executor{}, a2asrv.WithCapabilityChecks(&caps), a2asrv.WithLogger(slog.New(slog.DiscardHandler)))
	card := &a2a.AgentCard{Name: "a2a-go v2 weather agent", Description: "An agent on the A2A Go SDK v2.", Version: "1.0.0",
		Capabilities: caps, DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		SecuritySchemes:      a2a.NamedSecuritySchemes{"apiKey": a2a.APIKeySecurityScheme{Location: a2a.APIKeySecuritySchemeLocationHeader, Name: "X-API-KEY"}},
		SecurityRequirements: a2a.SecurityRequirementsOptions{{"apiKey": {}}},
		Skills:               []a2a.AgentSkill{{ID: "weather", Name: "Weather", Description: "Tells the weather.", Tags: []string{"weather"}}}}
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			rec := recordRequest(r)
			s.mu.Lock()
			s.requests = append(s.requests, rec)
			s.mu.Unlock()
		}
		mux.ServeHTTP(w, r)
	}))
	s.Origin = "http://" + srv.Listener.Addr().String()
	card.SupportedInterfaces = []*a2a.AgentInterface{a2a.NewAgentInterface(s.Origin+"/v1", a2a.TransportProtocolJSONRPC)}
	mux.Handle("/v1", a2asrv.NewJSONRPCHandler(handler))
	if streaming {
		card.SupportedInterfaces = append(card.SupportedInterfaces,
			&a2a.AgentInterface{URL: s.Origin + "/v0", ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version})
		mux.Handle("/v0", a2av0.NewJSONRPCHandler(handler))
		mux.Handle("/.well-known/agent-card.json", a2asrv.NewAgentCardHandler(a2av0.NewStaticAgentCardProducer(card)))
	} else {
		mux.Handle("/.well-known/agent-card.json", a2asrv.NewStaticAgentCardHandler(card))
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return s
}

func (s *v2Server) Requests(*testing.T) []peerRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]peerRequest(nil), s.requests...)
}

// probeV1 proves a 1.0 interface works without the connector, with the JSON-RPC client of the
// A2A Go SDK v2: a send completes with the whole text, and a stream (when the card streams)
// delivers it in chunks and ends completed.
func probeV1(t *testing.T, hc *http.Client, url string, streaming bool) {
	t.Helper()
	c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatalf("a2aclient for %s: %v", url, err)
	}
	defer c.Destroy()
	msg := func() *a2a.SendMessageRequest {
		return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("stream probe"))}
	}
	res, err := c.SendMessage(t.Context(), msg())
	if err != nil {
		t.Fatalf("probe SendMessage %s: %v", url, err)
	}
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 || v2Text(task.Artifacts[0].Parts) != strings.Join(peerChunks, "") {
		t.Fatalf("probe SendMessage %s answered %#v", url, res)
	}
	if !streaming {
		return
	}
	var chunks []string
	var last a2a.Event
	for ev, err := range c.SendStreamingMessage(t.Context(), msg()) {
		if err != nil {
			t.Fatalf("probe SendStreamingMessage %s: %v", url, err)
		}
		if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
			chunks = append(chunks, v2Text(a.Artifact.Parts))
		}
		last = ev
	}
	if st, ok := last.(*a2a.TaskStatusUpdateEvent); !ok || st.Status.State != a2a.TaskStateCompleted || strings.Join(chunks, "|") != strings.Join(peerChunks, "|") {
		t.Fatalf("probe SendStreamingMessage %s: chunks %q, last event %#v", url, chunks, last)
	}
}

func TestSDKV2Interop(t *testing.T) {
	t.Parallel()
	dual := newV2Server(t, true)
	plain := newV2Server(t, false)
	peers := []peer{
		{Name: "go-v2", URL: dual.Origin + "/v1", Protocol: "1.0", Streaming: true, Requests: dual.Requests},
		{Name: "go-v2-compat-0.3", URL: dual.Origin + "/v0", Protocol: "0.3", Streaming: true, Requests: dual.Requests},
		{Name: "go-v2-non-streaming", URL: plain.Origin + "/v1", Protocol: "1.0", Streaming: false, Requests: plain.Requests},
	}
	hc := loopbackClient(t)
	for _, p := range peers {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			// The peer works with a client that is not ours before the connector is judged by it.
			if p.v1() {
				probeV1(t, hc, p.URL, p.Streaming)
			} else {
				probeV0(t, hc, p.URL)
			}
			testPeer(t, p, func(t *testing.T) *harness { return newHarness(t, nil) })
		})
	}
}
