package invoke_test

import (
	"encoding/json"
	"net/http"
	"path"
	"strings"
	"sync"
	"testing"

	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
)

// v2Server records the requests a sdkagent (an agent on the official A2A Go SDK v2) receives.
// With streaming it is dual: A2A 1.0 first, 0.3 through the SDK's compatibility handler; without,
// a 1.0-only agent whose card does not stream, so the SDK refuses streaming calls (an SSE error
// event -32004).
type v2Server struct {
	*sdkagent.Server

	mu       sync.Mutex
	requests []peerRequest
}

func newV2Server(t *testing.T, streaming bool) *v2Server {
	t.Helper()
	s := &v2Server{}
	s.Server = sdkagent.New(t, sdkagent.Options{Streaming: streaming, Compat: streaming, REST: true, GRPC: true, GRPCV0: true, Observe: func(r *http.Request) {
		rec := recordRequest(r)
		s.mu.Lock()
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
	}, ObserveGRPC: func(method string, md metadata.MD, req any) {
		rec := recordGRPC(method, md, req)
		s.mu.Lock()
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
	}})
	return s
}

// recordGRPC reads what peerRequest holds from a gRPC call: the method's name, the request
// through its 1.0 JSON, the service parameters from the metadata. Path is "/", the path of the
// interface URL (http://host:port).
func recordGRPC(fullMethod string, md metadata.MD, req any) peerRequest {
	first := func(k string) string {
		if vs := md.Get(k); len(vs) > 0 {
			return vs[0]
		}
		return ""
	}
	rec := peerRequest{Path: "/", RPCMethod: path.Base(fullMethod), A2AVersion: first("a2a-version"), APIKey: first("x-api-key"),
		Extensions: first("a2a-extensions"), XExtensions: first("x-a2a-extensions"), ContentType: first("content-type")}
	m, ok := req.(proto.Message)
	if !ok {
		return rec
	}
	raw, err := protojson.Marshal(m)
	if err != nil {
		return rec
	}
	var body struct {
		ID      string `json:"id"`
		Tenant  string `json:"tenant"`
		Message struct {
			MessageID string `json:"messageId"`
			TaskID    string `json:"taskId"`
			ContextID string `json:"contextId"`
		} `json:"message"`
	}
	if json.Unmarshal(raw, &body) == nil {
		rec.Tenant, rec.TaskID = body.Tenant, body.ID
		rec.MessageID, rec.ContextID = body.Message.MessageID, body.Message.ContextID
		if body.Message.TaskID != "" {
			rec.TaskID = body.Message.TaskID
		}
	}
	return rec
}

func (s *v2Server) Requests(*testing.T) []peerRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]peerRequest(nil), s.requests...)
}

func v2Text(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text())
	}
	return b.String()
}

// probeV1 proves a 1.0 interface works without the connector, with the JSON-RPC client of the
// A2A Go SDK v2: a send completes with the whole text, and a stream (when the card streams)
// delivers it in chunks and ends completed.
func probeV1(t *testing.T, hc *http.Client, url string, streaming bool) {
	t.Helper()
	probeSDK(t, url, streaming, a2a.TransportProtocolJSONRPC, a2aclient.WithJSONRPCTransport(hc))
}

// probeREST is probeV1 on an HTTP+JSON interface, with the SDK's REST client.
func probeREST(t *testing.T, hc *http.Client, url string, streaming bool) {
	t.Helper()
	probeSDK(t, url, streaming, a2a.TransportProtocolHTTPJSON, a2aclient.WithRESTTransport(hc))
}

func probeSDK(t *testing.T, url string, streaming bool, binding a2a.TransportProtocol, opt a2aclient.FactoryOption) {
	t.Helper()
	c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(url, binding)}, opt)
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
		{Name: "go-v2", URL: dual.V1URL, Protocol: "1.0", Streaming: true, Requests: dual.Requests},
		{Name: "go-v2-compat-0.3", URL: dual.V0URL, Protocol: "0.3", Streaming: true, Requests: dual.Requests},
		{Name: "go-v2-non-streaming", URL: plain.V1URL, Protocol: "1.0", Streaming: false, Requests: plain.Requests},
		{Name: "go-v2-http-json", URL: dual.RESTURL, Protocol: "1.0", Binding: "HTTP+JSON", Streaming: true, Requests: dual.Requests},
		{Name: "go-v2-http-json-non-streaming", URL: plain.RESTURL, Protocol: "1.0", Binding: "HTTP+JSON", Streaming: false, Requests: plain.Requests},
		{Name: "go-v2-grpc", URL: dual.GRPCURL, Protocol: "1.0", Binding: "GRPC", Streaming: true, Requests: dual.Requests},
		{Name: "go-v2-grpc-non-streaming", URL: plain.GRPCURL, Protocol: "1.0", Binding: "GRPC", Streaming: false, Requests: plain.Requests},
		{Name: "go-v2-compat-0.3-grpc", URL: dual.GRPCV0URL, Protocol: "0.3", Binding: "GRPC", Streaming: true, Requests: dual.Requests},
	}
	hc := loopbackClient(t)
	for _, p := range peers {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			// The peer works with a client that is not ours before the connector is judged by it.
			switch {
			case p.Binding == "HTTP+JSON":
				probeREST(t, hc, p.URL, p.Streaming)
			case p.Binding == "GRPC" && !p.v1():
				// a2a-go v2's own client speaks 0.3 gRPC only through its compat factory; the
				// peer's 0.3 face is the SDK's a2agrpc/v0 handler, judged by the turns below.
			case p.Binding == "GRPC":
				probeSDK(t, strings.TrimPrefix(p.URL, "http://"), p.Streaming, a2a.TransportProtocolGRPC,
					a2agrpc.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials())))
			case p.v1():
				probeV1(t, hc, p.URL, p.Streaming)
			default:
				probeV0(t, hc, p.URL)
			}
			testPeer(t, p, func(t *testing.T) *harness { return newHarness(t, nil) })
		})
	}
}

// A gRPC agent dials through the SSRF guard like every other call: with the default policy
// (public addresses only) a loopback gRPC interface is refused before connect(2).
func TestGRPCDialGoesThroughTheGuard(t *testing.T) {
	t.Parallel()
	peer := sdkagent.New(t, sdkagent.Options{Streaming: true, GRPCOnly: true})
	// Plain http allowed, loopback not: the refusal comes from the dialer itself.
	h := newHarness(t, func(o *invoke.Options) { o.GRPCPolicy = &netguard.Policy{AllowInsecureHTTP: true} })
	a := peer1Agent(peer.GRPCURL)
	res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, MessageID: "guarded", Text: "stream " + userWords})
	if res.Outcome != connector.OutcomeFailed || res.Err == nil || res.Err.Code != connector.CodeBlockedAddress {
		t.Fatalf("result = %+v (err %+v), want FAILED %s", res, res.Err, connector.CodeBlockedAddress)
	}
}

func peer1Agent(url string) connector.Agent {
	return connector.Agent{ID: "grpc-guarded", Enabled: true, CardProfile: connector.CardProfile{
		Name: "grpc", EndpointURL: url, EndpointBinding: "GRPC", ProtocolVersion: "1.0", Streaming: true}}
}
