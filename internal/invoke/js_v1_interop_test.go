//go:build unix

package invoke_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

// The interop tests below run the connector against two A2A agents built on the official
// JavaScript SDK at protocol 1.0 (@a2a-js/sdk 1.3.0, pinned in testdata/js-agent-v1), under the
// machine's Node.js: a 1.0-only agent as the SDK's quickstart builds it, and the same agent with
// the SDK's legacy compatibility enabled (1.0 and 0.3 on one URL). One node process serves both;
// testdata/js-agent-v1/agent.mjs describes what they answer. Tools and installation work as for
// the 0.3 agent (js_interop_test.go: lookTool, ensureNodeModules).

const jsV1AgentDir = "testdata/js-agent-v1"

// jsV1Agents is a running testdata/js-agent-v1 process.
type jsV1Agents struct {
	// V1Only and Dual are the origins (http://127.0.0.1:port) of the two JSON-RPC agents; each
	// serves JSON-RPC at /a2a. REST is the origin of the HTTP+JSON agent (at /rest); GRPC the
	// origin of the gRPC agent's card and records, GRPCURL its gRPC interface.
	V1Only, Dual, REST, GRPC, GRPCURL string
	client                            *http.Client
}

// portsWriter collects the agent's stdout and hands over the ports of its ready line once.
type portsWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ports chan [4]int // buffered, receives once
	sent  bool
}

var jsV1PortsLine = regexp.MustCompile(`(?m)^A2A_AGENT_PORTS=(\d+) (\d+) (\d+) (\d+)\r?\n`)

func (w *portsWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		if m := jsV1PortsLine.FindSubmatch(w.buf.Bytes()); m != nil {
			a, errA := strconv.Atoi(string(m[1]))
			b, errB := strconv.Atoi(string(m[2]))
			c, errC := strconv.Atoi(string(m[3]))
			d, errD := strconv.Atoi(string(m[4]))
			if errA == nil && errB == nil && errC == nil && errD == nil {
				w.sent = true
				w.ports <- [4]int{a, b, c, d}
			}
		}
	}
	return len(p), nil
}

func (w *portsWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startJSV1Agents installs the agent's packages if needed (npm ci, cached by the lock file's
// hash) and starts `node agent.mjs` in its own process group. The process ends, and is waited
// for, at t's cleanup; it also exits on its own when its stdin (held by this process) closes.
func startJSV1Agents(t *testing.T) *jsV1Agents {
	t.Helper()
	stdout := &portsWriter{ports: make(chan [4]int, 1)}
	ports := awaitReady(t, startNode(t, jsV1AgentDir, stdout, "agent.mjs"), stdout.ports)
	return &jsV1Agents{V1Only: "http://127.0.0.1:" + strconv.Itoa(ports[0]), Dual: "http://127.0.0.1:" + strconv.Itoa(ports[1]),
		REST: "http://127.0.0.1:" + strconv.Itoa(ports[2]), GRPC: "http://127.0.0.1:" + strconv.Itoa(ports[3]), client: loopbackClient(t)}
}

// requests returns what the agent at origin recorded (GET /debug/requests).
func (a *jsV1Agents) requests(origin string) func(t *testing.T) []peerRequest {
	return func(t *testing.T) []peerRequest {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, origin+"/debug/requests", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := a.client.Do(req)
		if err != nil {
			t.Fatalf("GET %s/debug/requests: %v", origin, err)
		}
		defer resp.Body.Close()
		var all []peerRequest
		if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
			t.Fatalf("GET %s/debug/requests: %v", origin, err)
		}
		for i := range all {
			all[i].fromREST()
		}
		return all
	}
}

// post sends one JSON-RPC body to url with the given A2A-Version ("" for none) and returns the
// decoded JSON answer.
func (a *jsV1Agents) post(t *testing.T, url, version, body string) map[string]any {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("POST %s: %v\n%s", url, err, raw)
	}
	return out
}

func rpcErrorCode(answer map[string]any) int {
	e, _ := answer["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return int(code)
}

func TestJSV1Interop(t *testing.T) {
	t.Parallel()
	agents := startJSV1Agents(t)
	peers := []peer{
		{Name: "js-v1-only", URL: agents.V1Only + "/a2a", Protocol: "1.0", Streaming: true, Requests: agents.requests(agents.V1Only)},
		{Name: "js-v1-dual-1.0", URL: agents.Dual + "/a2a", Protocol: "1.0", Streaming: true, Requests: agents.requests(agents.Dual)},
		{Name: "js-v1-dual-0.3", URL: agents.Dual + "/a2a", Protocol: "0.3", Streaming: true, Requests: agents.requests(agents.Dual)},
		{Name: "js-v1-http-json", URL: agents.REST + "/rest", Protocol: "1.0", Binding: "HTTP+JSON", Streaming: true, Requests: agents.requests(agents.REST)},
		{Name: "js-v1-grpc", URL: jsGRPCURL(t, agents), Protocol: "1.0", Binding: "GRPC", Streaming: true, Requests: agents.requests(agents.GRPC)},
	}

	// What makes the two agents what they are, seen from outside: the 1.0-only one refuses a
	// call that names no version (the 0.3 default) with -32009 and a 0.3 method under 1.0 with
	// -32601; the dual one answers the 0.3 call.
	t.Run("versions_served", func(t *testing.T) {
		t.Parallel()
		send := `{"jsonrpc":"2.0","id":"v","method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"versions",` +
			`"parts":[{"kind":"text","text":"hello"}]}}}`
		if code := rpcErrorCode(agents.post(t, agents.V1Only+"/a2a", "", send)); code != -32009 {
			t.Errorf("1.0-only agent, no A2A-Version: error %d, want -32009", code)
		}
		if code := rpcErrorCode(agents.post(t, agents.V1Only+"/a2a", "1.0", send)); code != -32601 {
			t.Errorf("1.0-only agent, message/send under 1.0: error %d, want -32601", code)
		}
		if got := agents.post(t, agents.Dual+"/a2a", "", send); got["result"] == nil {
			t.Errorf("dual agent, 0.3 call: %v, want a result", got)
		}
	})

	// Registration as a tenant does it — the origin pasted, the card the SDK serves fetched and
	// validated — yields the interface the turns use: the 1.0 one, and for the dual agent the
	// 0.3 one as fallback; and a turn with exactly that profile completes.
	t.Run("card_from_the_origin", func(t *testing.T) {
		t.Parallel()
		hc := netguard.NewClient(netguard.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AllowInsecureHTTP: true},
			netguard.ClientOptions{MaxRedirects: cardfetch.DefaultMaxRedirects})
		t.Cleanup(hc.CloseIdleConnections)
		f := cardfetch.New(cardfetch.Options{Client: hc, AllowInsecureHTTP: true})
		for _, origin := range []string{agents.V1Only, agents.Dual} {
			_, rep, err := f.FetchAndValidate(t.Context(), origin)
			if err != nil || !rep.Valid {
				t.Fatalf("card of %s: %v %+v", origin, err, rep.Problems)
			}
			p := rep.Profile
			if p.ProtocolVersion != "1.0" || p.EndpointURL != origin+"/a2a" || !p.Streaming || !p.APIKeyRequired {
				t.Errorf("profile of %s = %+v, want streaming A2A 1.0 at %s/a2a with an API key", origin, p, origin)
			}
			if wantFallback := origin == agents.Dual; (p.Fallback != nil) != wantFallback ||
				(wantFallback && (p.Fallback.URL != origin+"/a2a" || p.Fallback.ProtocolVersion != "0.3")) {
				t.Errorf("fallback of %s = %+v, want one (0.3 on the same url): %v", origin, p.Fallback, wantFallback)
			}
			h := jsHarness(t)
			res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &connector.Agent{ID: "js-v1-card", Enabled: true, CardProfile: p},
				Credential: h.seal(t, "js-v1-card"), MessageID: "js-v1-card-" + strings.TrimPrefix(origin, "http://"), Text: "stream " + userWords})
			if res.Outcome != connector.OutcomeCompleted || res.Text != strings.Join(peerChunks, "") {
				t.Errorf("turn with the registered profile of %s = %+v", origin, res)
			}
		}
	})

	for _, p := range peers {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			// The peer works with a client that is not ours before the connector is judged by it.
			switch {
			case p.Binding == "HTTP+JSON":
				probeREST(t, agents.client, p.URL, p.Streaming)
			case p.Binding == "GRPC":
				probeSDK(t, strings.TrimPrefix(p.URL, "http://"), p.Streaming, a2a.TransportProtocolGRPC,
					a2agrpc.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials())))
			case p.v1():
				probeV1(t, agents.client, p.URL, p.Streaming)
			default:
				probeV0(t, agents.client, p.URL)
			}
			testPeer(t, p, jsHarness)
		})
	}
}

// jsGRPCURL is the gRPC interface the JS gRPC agent's card lists, read the way registration
// reads it.
func jsGRPCURL(t *testing.T, agents *jsV1Agents) string {
	t.Helper()
	hc := netguard.NewClient(netguard.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AllowInsecureHTTP: true},
		netguard.ClientOptions{MaxRedirects: cardfetch.DefaultMaxRedirects})
	t.Cleanup(hc.CloseIdleConnections)
	_, rep, err := cardfetch.New(cardfetch.Options{Client: hc, AllowInsecureHTTP: true}).FetchAndValidate(t.Context(), agents.GRPC)
	if err != nil || !rep.Valid || rep.Profile.EndpointBinding != "GRPC" {
		t.Fatalf("card of the gRPC agent: %v %+v %+v", err, rep.Problems, rep.Profile)
	}
	return rep.Profile.EndpointURL
}
