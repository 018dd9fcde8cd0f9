package invoke_test

import (
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
)

// a2a-go v2's 0.3 HTTP+JSON compatibility server (a2av0.NewRESTHandler) is the only interface
// of an agent's 0.3 card. It serves another form of 0.3 HTTP+JSON than the spec, @a2a-js and
// a2a-python do (no /v1 in the paths, the 0.3 JSON-RPC objects with snake_case keys): the
// connector's first call on a /v1 path is answered 404, it moves to that form once and stays
// there for the interface.
func TestSDKV2RESTV03Interop(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var requests []peerRequest
	sdk := sdkagent.New(t, sdkagent.Options{Streaming: true, RESTV0Only: true, APIKey: testAPIKey, Observe: func(r *http.Request) {
		raw := r.URL.Path
		rec := recordRequest(r)
		rec.fromRESTV0()
		rec.RawPath = raw
		mu.Lock()
		requests = append(requests, rec)
		mu.Unlock()
	}})
	hc := netguard.NewClient(netguard.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AllowInsecureHTTP: true},
		netguard.ClientOptions{MaxRedirects: cardfetch.DefaultMaxRedirects})
	t.Cleanup(hc.CloseIdleConnections)
	_, rep, err := cardfetch.New(cardfetch.Options{Client: hc, AllowInsecureHTTP: true}).FetchAndValidate(t.Context(), sdk.CardURL)
	if err != nil || !rep.Valid {
		t.Fatalf("card: %v %+v", err, rep.Problems)
	}
	if p := rep.Profile; p.EndpointURL != sdk.RESTV0URL || p.EndpointBinding != "HTTP+JSON" || !strings.HasPrefix(p.ProtocolVersion, "0.3") {
		t.Fatalf("profile = %+v, want HTTP+JSON 0.3 at %s", p, sdk.RESTV0URL)
	}
	p := peer{Name: "go-v2-compat-0.3-http-json", URL: sdk.RESTV0URL, Protocol: rep.Profile.ProtocolVersion, Binding: "HTTP+JSON", Streaming: true,
		Requests: func(t *testing.T) []peerRequest {
			mu.Lock()
			defer mu.Unlock()
			return append([]peerRequest(nil), requests...)
		}}
	testPeer(t, p, func(t *testing.T) *harness { return newHarness(t, nil) })

	// One client: the first turn tries /v1 once, the next goes straight to the form that answered.
	t.Run("form_remembered", func(t *testing.T) {
		h := newHarness(t, nil)
		a := p.agent(true)
		key := h.seal(t, a.ID)
		var paths [2][]string
		for i, id := range []string{"remember-1", "remember-2"} {
			res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: key, MessageID: id, Text: "stream " + userWords})
			if res.Outcome != connector.OutcomeCompleted {
				t.Fatalf("turn %d = %+v", i+1, res)
			}
			mu.Lock()
			for _, r := range requests {
				if r.MessageID == id {
					paths[i] = append(paths[i], r.RawPath)
				}
			}
			mu.Unlock()
		}
		base := strings.TrimPrefix(sdk.RESTV0URL, sdk.Origin)
		want := [2][]string{{base + "/v1/message:stream", base + "/message:stream"}, {base + "/message:stream"}}
		if diff := cmp.Diff(want, paths); diff != "" {
			t.Errorf("paths (-want +got):\n%s", diff)
		}
	})
}

// fromRESTV0 rewrites a recorded 0.3 HTTP+JSON request (either form: with or without /v1) the
// way a 0.3 JSON-RPC one reads: the 0.3 method from its path, the path cut to the interface's.
func (rec *peerRequest) fromRESTV0() {
	names := map[string]string{"SendMessage": "message/send", "SendStreamingMessage": "message/stream", "CancelTask": "tasks/cancel", "SubscribeToTask": "tasks/resubscribe"}
	rec.fromREST()
	if m, ok := names[rec.RPCMethod]; ok {
		rec.RPCMethod = m
		rec.Path = strings.TrimSuffix(rec.Path, "/v1")
	}
}
