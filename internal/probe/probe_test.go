package probe_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"go.uber.org/goleak"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/probe"
	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
	"github.com/a2a-connector/a2a-connector/internal/secret"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const apiKey = "sk-probe-DO-NOT-LEAK"

// harness fetches cards and calls agents on loopback over plain HTTP, as the console does in
// local development.
type harness struct {
	cards *cardfetch.Fetcher
	box   *secret.Box
	opts  invoke.Options
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	policy := netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	box, err := secret.New(bytes.Repeat([]byte{3}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return &harness{
		cards: cardfetch.New(cardfetch.Options{AllowInsecureHTTP: true, Client: netguard.NewClient(policy, netguard.ClientOptions{MaxRedirects: 3})}),
		box:   box,
		opts:  invoke.Options{Client: netguard.NewClient(policy, netguard.ClientOptions{}), Secrets: box},
	}
}

// target registers the card the way the console does (fetch, validate, profile, sealed key).
func (h *harness) target(t *testing.T, cardURL, key string) probe.Target {
	t.Helper()
	_, rep, err := h.cards.FetchAndValidate(t.Context(), cardURL)
	if err != nil {
		t.Fatalf("fetch card %s: %v", cardURL, err)
	}
	if !rep.Valid {
		t.Fatalf("card %s is invalid: %+v", cardURL, rep.Problems)
	}
	a := connector.Agent{ID: uuid.NewString(), TenantID: "tenant", CardURL: cardURL, CardProfile: rep.Profile,
		Enabled: true, Revision: 1, CredentialsSet: key != ""}
	tg := probe.Target{Agent: a, StoredCard: rep.Card}
	if key != "" {
		sealed, err := h.box.Seal(a.ID, []byte(key))
		if err != nil {
			t.Fatal(err)
		}
		tg.Credential = &sealed
	}
	return tg
}

// serveCard serves body as a JSON card on loopback and returns its URL.
func serveCard(t *testing.T, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/card.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/card.json"
}

// v0Card is an A2A 0.2.5 card for url; withKey declares the apiKey scheme as required.
func v0Card(url string, streaming, withKey bool) string {
	security := `"security": [],`
	if withKey {
		security = `"security": ["apiKey"], "securitySchemes": {"apiKey": {"type": "apiKey", "in": "header", "name": "X-API-KEY"}},`
	}
	return fmt.Sprintf(`{
  "name": "Fixture", "description": "A fixture agent.", "protocolVersion": "0.2.5",
  "url": %q, "version": "1.0.0", "capabilities": {"streaming": %t}, %s
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
  "skills": [{"id": "echo", "name": "Echo", "description": "Answers.", "tags": ["demo"], "examples": ["hello there"]}]
}`, url, streaming, security)
}

// v1Card is an A2A 1.0 card with one JSON-RPC interface at url.
func v1Card(url string) string {
	return fmt.Sprintf(`{
  "name": "Fixture 1.0", "description": "A fixture agent.", "version": "1.0.0",
  "supportedInterfaces": [{"url": %q, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
  "capabilities": {"streaming": true},
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
  "skills": [{"id": "echo", "name": "Echo", "description": "Answers.", "tags": ["demo"]}]
}`, url)
}

// dualCard is an A2A 1.0 card whose preferred interface is 1.0 at url and whose other is 0.3 at
// the same url, as dual-version servers publish them.
func dualCard(url string) string {
	return fmt.Sprintf(`{
  "name": "Dual", "description": "A dual-version agent.", "version": "1.0.0",
  "supportedInterfaces": [{"url": %[1]q, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                          {"url": %[1]q, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}],
  "capabilities": {"streaming": true},
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
  "skills": [{"id": "echo", "name": "Echo", "description": "Answers.", "tags": ["demo"]}]
}`, url)
}

func statuses(rep probe.Report) map[string]probe.Status {
	out := map[string]probe.Status{}
	for _, c := range rep.Checks {
		out[c.Check] = c.Status
	}
	return out
}

// allPass is the verdict of a conforming agent, with the exceptions given.
func allPass(except map[string]probe.Status) map[string]probe.Status {
	out := map[string]probe.Status{}
	for _, c := range []string{probe.CheckCard, probe.CheckRevision, probe.CheckEndpoint, probe.CheckVersion,
		probe.CheckStreaming, probe.CheckFirstEvent, probe.CheckTaskIDs, probe.CheckAPIKey} {
		out[c] = probe.Pass
	}
	for k, v := range except {
		out[k] = v
	}
	return out
}

// checkReport asserts the verdicts, the fixed order, and that every warn and fail has a fix and
// that nothing of the key leaks into the report.
func checkReport(t *testing.T, rep probe.Report, want map[string]probe.Status) {
	t.Helper()
	if diff := cmp.Diff(want, statuses(rep)); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s\nreport:\n%s", diff, dump(rep))
	}
	order := []string{probe.CheckCard, probe.CheckRevision, probe.CheckEndpoint, probe.CheckVersion,
		probe.CheckStreaming, probe.CheckFirstEvent, probe.CheckTaskIDs, probe.CheckAPIKey}
	for i, c := range rep.Checks {
		if i < len(order) && c.Check != order[i] {
			t.Errorf("check %d is %s, want %s", i, c.Check, order[i])
		}
		if c.Message == "" {
			t.Errorf("%s has no message", c.Check)
		}
		if (c.Status == probe.Pass) != (c.Fix == "") {
			t.Errorf("%s %s with fix %q: a fix belongs to every warn and fail, and only to them", c.Check, c.Status, c.Fix)
		}
		// fmt's complaints (%!(EXTRA …), %!s(MISSING)) mean a text was formatted wrongly.
		if strings.Contains(c.Message, "%!") || strings.Contains(c.Fix, "%!") {
			t.Errorf("%s: a text formatted wrongly: message %q, fix %q", c.Check, c.Message, c.Fix)
		}
	}
	if strings.Contains(dump(rep), apiKey) {
		t.Error("the report holds the API key")
	}
}

func dump(rep probe.Report) string {
	b, _ := json.MarshalIndent(rep, "", "  ")
	return string(b)
}

func find(t *testing.T, rep probe.Report, check string) probe.Result {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Check == check {
			return c
		}
	}
	t.Fatalf("no %s check in %s", check, dump(rep))
	return probe.Result{}
}

// TestDemoAgentPassesEverything: the demo agent (A2A 0.2.5, streams on url/stream, requires its
// key) is what the platform expects.
func TestDemoAgentPassesEverything(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	demo := agent.New(agent.Options{APIKey: apiKey})
	srv := httptest.NewServer(demo.Handler())
	t.Cleanup(srv.Close)

	tg := h.target(t, srv.URL, apiKey)
	rep := probe.New(probe.Config{Cards: h.cards, Invoke: h.opts}).Run(t.Context(), tg)
	checkReport(t, rep, allPass(nil))
	if rep.Text != "示例: 重复我说的话" {
		t.Errorf("sent %q, want the card's first skill example", rep.Text)
	}
	if rep.ProtocolVersion != "0.2.5" || rep.AnsweredURL != tg.Agent.EndpointURL+"/stream" {
		t.Errorf("answered by %s in %s, want %s/stream in 0.2.5", rep.AnsweredURL, rep.ProtocolVersion, tg.Agent.EndpointURL)
	}
	if m := find(t, rep, probe.CheckAPIKey).Message; !strings.Contains(m, "HTTP 401") {
		t.Errorf("api key check says %q, want the 401 it saw", m)
	}
	// The call without the key reached the agent and was refused; the key went with the other.
	var with, without int
	for _, r := range demo.Requests() {
		if r.Header.Get("X-API-KEY") == "" {
			without++
		} else {
			with++
		}
	}
	if with == 0 || without == 0 {
		t.Errorf("the agent saw %d calls with the key and %d without, want both", with, without)
	}

	// A card that changed since its revision was stored is reported, with the way to apply it.
	tg.StoredCard = []byte(strings.Replace(string(tg.StoredCard), "超级AI助理", "old name", 1))
	rep = probe.New(probe.Config{Cards: h.cards, Invoke: h.opts}).Run(t.Context(), tg)
	checkReport(t, rep, allPass(map[string]probe.Status{probe.CheckRevision: probe.Warn}))
	if fix := find(t, rep, probe.CheckRevision).Fix; !strings.Contains(fix, "Refresh") {
		t.Errorf("revision fix = %q", fix)
	}
}

// TestFixtureBehaviours runs the probe against agents that each break one expectation.
func TestFixtureBehaviours(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		v1        bool
		dual      bool
		behavior  fixtureagent.Behavior
		streaming bool
		withKey   bool
		// firstEvent is the probe's first-event limit (0: the default).
		firstEvent time.Duration
		want       map[string]probe.Status
		// say is a check whose message must contain a text.
		say map[string]string
	}{
		{name: "conforming_0.x_agent", behavior: fixtureagent.Stream, streaming: true,
			want: allPass(nil), say: map[string]string{probe.CheckStreaming: "/stream"}},
		{name: "stream_on_url_only", behavior: fixtureagent.NoStreamPath, streaming: true,
			want: allPass(map[string]probe.Status{probe.CheckStreaming: probe.Warn}),
			say:  map[string]string{probe.CheckStreaming: "HTTP 404"}},
		{name: "stream_on_url_only_405", behavior: fixtureagent.NoStreamPath405, streaming: true,
			want: allPass(map[string]probe.Status{probe.CheckStreaming: probe.Warn}),
			say:  map[string]string{probe.CheckStreaming: "HTTP 405"}},
		{name: "answers_without_the_key_the_card_demands", behavior: fixtureagent.Stream, streaming: true, withKey: true,
			want: allPass(map[string]probe.Status{probe.CheckAPIKey: probe.Fail}),
			say:  map[string]string{probe.CheckAPIKey: "answered"}},
		{name: "slow_first_event", behavior: fixtureagent.HangHeaders, streaming: true, firstEvent: 300 * time.Millisecond,
			want: allPass(map[string]probe.Status{probe.CheckEndpoint: probe.Fail, probe.CheckVersion: probe.Warn,
				probe.CheckStreaming: probe.Warn, probe.CheckFirstEvent: probe.Fail, probe.CheckTaskIDs: probe.Warn}),
			say: map[string]string{probe.CheckFirstEvent: "No event within 300ms"}},
		{name: "no_task_id", behavior: fixtureagent.NoTaskID, streaming: true,
			want: allPass(map[string]probe.Status{probe.CheckTaskIDs: probe.Fail}),
			say:  map[string]string{probe.CheckTaskIDs: "without an id"}},
		{name: "no_task_id_on_send", behavior: fixtureagent.NoTaskID,
			want: allPass(map[string]probe.Status{probe.CheckTaskIDs: probe.Fail, probe.CheckStreaming: probe.Warn})},
		{name: "message_instead_of_a_task", behavior: fixtureagent.MessageResult, streaming: true,
			want: allPass(map[string]probe.Status{probe.CheckTaskIDs: probe.Warn}),
			say:  map[string]string{probe.CheckTaskIDs: "Message"}},
		{name: "no_streaming", behavior: fixtureagent.Stream,
			want: allPass(map[string]probe.Status{probe.CheckStreaming: probe.Warn}),
			say:  map[string]string{probe.CheckFirstEvent: "message/send"}},
		{name: "http_500", behavior: fixtureagent.HTTP500, streaming: true,
			want: allPass(map[string]probe.Status{probe.CheckEndpoint: probe.Fail, probe.CheckVersion: probe.Warn,
				probe.CheckStreaming: probe.Warn, probe.CheckFirstEvent: probe.Warn, probe.CheckTaskIDs: probe.Warn}),
			say: map[string]string{probe.CheckEndpoint: "agent_http_status"}},
		{name: "task_failed", behavior: fixtureagent.Failed, streaming: true,
			want: allPass(map[string]probe.Status{probe.CheckEndpoint: probe.Fail}),
			say:  map[string]string{probe.CheckEndpoint: fixtureagent.FailedText}},
		{name: "json_rpc_error_to_the_stream", behavior: fixtureagent.JSONError, streaming: true,
			want: allPass(map[string]probe.Status{probe.CheckEndpoint: probe.Fail, probe.CheckVersion: probe.Warn,
				probe.CheckStreaming: probe.Warn, probe.CheckFirstEvent: probe.Warn, probe.CheckTaskIDs: probe.Warn}),
			say: map[string]string{probe.CheckEndpoint: "agent_rpc_error"}},
		{name: "preferred_interface_refuses_its_version", dual: true, behavior: fixtureagent.Stream, streaming: true,
			want: allPass(map[string]probe.Status{probe.CheckVersion: probe.Warn}),
			say:  map[string]string{probe.CheckVersion: "refused the version", probe.CheckStreaming: "/stream"}},
		{name: "A2A_1.0_agent", v1: true, behavior: fixtureagent.Stream, streaming: true,
			want: allPass(nil), say: map[string]string{probe.CheckVersion: "A2A 1.0"}},
		{name: "A2A_1.0_agent_without_task_id", v1: true, behavior: fixtureagent.NoTaskID, streaming: true,
			want: allPass(map[string]probe.Status{probe.CheckTaskIDs: probe.Fail})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.opts.FirstEventTimeout = tc.firstEvent
			var fx *fixtureagent.Server
			var card string
			switch {
			case tc.v1:
				fx = fixtureagent.NewV1(t)
				card = v1Card(fx.URL)
			case tc.dual:
				fx = fixtureagent.New(t) // speaks 0.x only: the 1.0 interface refuses
				card = dualCard(fx.URL)
			default:
				fx = fixtureagent.New(t)
				card = v0Card(fx.URL, tc.streaming, tc.withKey)
			}
			fx.SetBehavior(tc.behavior)
			key := ""
			if tc.withKey {
				key = apiKey
			}
			tg := h.target(t, serveCard(t, card), key)
			rep := probe.New(probe.Config{Cards: h.cards, Invoke: h.opts}).Run(t.Context(), tg)
			checkReport(t, rep, tc.want)
			for check, text := range tc.say {
				if m := find(t, rep, check); !strings.Contains(m.Message, text) {
					t.Errorf("%s says %q, want it to mention %q", check, m.Message, text)
				}
			}
			if tc.dual && (rep.ProtocolVersion != "0.3" || rep.AnsweredURL != fx.URL+"/stream") {
				t.Errorf("answered by %s in %q, want %s/stream in 0.3", rep.AnsweredURL, rep.ProtocolVersion, fx.URL)
			}
			if tc.behavior == fixtureagent.Stream && !tc.v1 && !tc.dual && tc.streaming {
				if got := rep.Text; got != "hello there" {
					t.Errorf("sent %q, want the skill example", got)
				}
			}
			if tc.v1 && rep.ProtocolVersion != "1.0" {
				t.Errorf("protocol version = %q, want 1.0", rep.ProtocolVersion)
			}
		})
	}
}

// TestKeyNotSet: the demo agent demands a key and none is set: the endpoint check says to set it,
// and the agent's refusal without it passes.
func TestKeyNotSet(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	demo := agent.New(agent.Options{APIKey: apiKey})
	srv := httptest.NewServer(demo.Handler())
	t.Cleanup(srv.Close)
	rep := probe.New(probe.Config{Cards: h.cards, Invoke: h.opts}).Run(t.Context(), h.target(t, srv.URL, ""))
	checkReport(t, rep, allPass(map[string]probe.Status{probe.CheckEndpoint: probe.Fail, probe.CheckVersion: probe.Warn,
		probe.CheckStreaming: probe.Warn, probe.CheckFirstEvent: probe.Warn, probe.CheckTaskIDs: probe.Warn}))
	if fix := find(t, rep, probe.CheckEndpoint).Fix; !strings.Contains(fix, "Set the agent's API key") {
		t.Errorf("endpoint fix = %q", fix)
	}
}

// TestKeyRefused: the stored key is not the agent's, and the fix says so, as plain text.
func TestKeyRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	demo := agent.New(agent.Options{APIKey: apiKey})
	srv := httptest.NewServer(demo.Handler())
	t.Cleanup(srv.Close)
	rep := probe.New(probe.Config{Cards: h.cards, Invoke: h.opts}).Run(t.Context(), h.target(t, srv.URL, "not-"+apiKey))
	checkReport(t, rep, allPass(map[string]probe.Status{probe.CheckEndpoint: probe.Fail, probe.CheckVersion: probe.Warn,
		probe.CheckStreaming: probe.Warn, probe.CheckFirstEvent: probe.Warn, probe.CheckTaskIDs: probe.Warn}))
	want := "The agent refused the API key stored for it: set the right key in the console (Rotate key), or fix the agent's key check."
	if fix := find(t, rep, probe.CheckEndpoint).Fix; fix != want {
		t.Errorf("endpoint fix = %q, want %q", fix, want)
	}
}

// TestSDKAgent probes an agent built on the official A2A Go SDK v2 (A2A 1.0, streaming,
// requires its key): it conforms.
func TestSDKAgent(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sdk := sdkagent.New(t, sdkagent.Options{Streaming: true, APIKey: apiKey})
	tg := h.target(t, sdk.CardURL, apiKey)
	rep := probe.New(probe.Config{Cards: h.cards, Invoke: h.opts}).Run(t.Context(), tg)
	checkReport(t, rep, allPass(nil))
	if rep.ProtocolVersion != "1.0" || rep.AnsweredURL != sdk.V1URL || rep.Text != "What is the weather like?" {
		t.Errorf("report = %s", dump(rep))
	}
}

// TestCardUnreachable: the card is gone, the agent still answers at its stored endpoint.
func TestCardUnreachable(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	fx := fixtureagent.New(t)
	tg := h.target(t, serveCard(t, v0Card(fx.URL, true, false)), "")
	tg.Agent.CardURL = fixtureagent.RefusedURL(t) + "/card.json"
	rep := probe.New(probe.Config{Cards: h.cards, Invoke: h.opts}).Run(t.Context(), tg)
	checkReport(t, rep, allPass(map[string]probe.Status{probe.CheckCard: probe.Fail, probe.CheckRevision: probe.Warn}))
	if m := find(t, rep, probe.CheckCard).Message; !strings.Contains(m, "refused") {
		t.Errorf("card check says %q, want the refusal explained", m)
	}
}

// TestNoSkillExample: without an example the probe says "ping".
func TestNoSkillExample(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	fx := fixtureagent.NewV1(t)
	tg := h.target(t, serveCard(t, v1Card(fx.URL)), "")
	rep := probe.New(probe.Config{Cards: h.cards, Invoke: h.opts}).Run(t.Context(), tg)
	if rep.Text != probe.PingText {
		t.Errorf("sent %q, want %q", rep.Text, probe.PingText)
	}
	var got string
	for _, r := range fx.RequestsForOp(fixtureagent.OpStream) {
		got = r.Text
	}
	if got != probe.PingText {
		t.Errorf("the agent received %q, want %q", got, probe.PingText)
	}
}

// TestFirstEventPastHalfTheLimit: the probe's clock says the first event took 6s of a 10s limit:
// a warn with the fix. The clock is the test's, so the agent's real speed does not matter.
func TestFirstEventPastHalfTheLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.opts.FirstEventTimeout = 10 * time.Second
	fx := fixtureagent.New(t)
	tg := h.target(t, serveCard(t, v0Card(fx.URL, true, false)), "")
	var ticks int
	now := func() time.Time { // each reading is 6s after the one before
		ticks++
		return time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC).Add(time.Duration(ticks) * 6 * time.Second)
	}
	rep := probe.New(probe.Config{Cards: h.cards, Invoke: h.opts, Now: now}).Run(t.Context(), tg)
	checkReport(t, rep, allPass(map[string]probe.Status{probe.CheckFirstEvent: probe.Warn}))
	if m := find(t, rep, probe.CheckFirstEvent).Message; !strings.Contains(m, "after 6s, more than half the limit of 10s") {
		t.Errorf("first event check says %q", m)
	}
}

// TestSDKAgentHTTPJSON probes the same SDK agent serving HTTP+JSON only: it conforms, and the
// answer came from the binding's stream path under its interface URL.
func TestSDKAgentHTTPJSON(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sdk := sdkagent.New(t, sdkagent.Options{Streaming: true, APIKey: apiKey, RESTOnly: true})
	tg := h.target(t, sdk.CardURL, apiKey)
	rep := probe.New(probe.Config{Cards: h.cards, Invoke: h.opts}).Run(t.Context(), tg)
	checkReport(t, rep, allPass(nil))
	if rep.ProtocolVersion != "1.0" || rep.AnsweredURL != sdk.RESTURL+"/message:stream" {
		t.Errorf("report = %s", dump(rep))
	}
}

// TestSDKAgentGRPC probes the same SDK agent serving gRPC only: the probe judges the gRPC
// exchanges the wire client reports, so the version and streaming checks are established there
// too, and the call without the key is refused (UNAUTHENTICATED).
func TestSDKAgentGRPC(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.opts.GRPCPolicy = &netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	sdk := sdkagent.New(t, sdkagent.Options{Streaming: true, APIKey: apiKey, GRPCOnly: true})
	tg := h.target(t, sdk.CardURL, apiKey)
	if tg.Agent.EndpointBinding != "GRPC" {
		t.Fatalf("profile = %+v, want the gRPC interface", tg.Agent.CardProfile)
	}
	rep := probe.New(probe.Config{Cards: h.cards, Invoke: h.opts}).Run(t.Context(), tg)
	checkReport(t, rep, allPass(nil))
	if rep.ProtocolVersion != "1.0" || rep.AnsweredURL != sdk.GRPCURL {
		t.Errorf("report = %s", dump(rep))
	}
	if m := find(t, rep, probe.CheckStreaming).Message; !strings.Contains(m, "gRPC") {
		t.Errorf("streaming check says %q, want the gRPC stream named", m)
	}
	if m := find(t, rep, probe.CheckVersion).Message; !strings.Contains(m, "GRPC binding") {
		t.Errorf("version check says %q, want the binding named", m)
	}
}

// TestFixtureRESTV03 probes an A2A 0.3 agent whose card lists HTTP+JSON only (the form of
// Google's hosted agents): the answer came from the 0.3 stream path, /v1/message:stream.
func TestFixtureRESTV03(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := fixtureagent.NewRESTV03(t)
	card := strings.Replace(v0Card(srv.URL, true, false), `"protocolVersion": "0.2.5",`, `"protocolVersion": "0.3.0", "preferredTransport": "HTTP+JSON",`, 1)
	tg := h.target(t, serveCard(t, card), "")
	if tg.Agent.EndpointBinding != "HTTP+JSON" {
		t.Fatalf("profile = %+v, want the HTTP+JSON interface", tg.Agent.CardProfile)
	}
	rep := probe.New(probe.Config{Cards: h.cards, Invoke: h.opts}).Run(t.Context(), tg)
	checkReport(t, rep, allPass(nil))
	if rep.ProtocolVersion != "0.3.0" || rep.AnsweredURL != srv.URL+"/v1/message:stream" {
		t.Errorf("report = %s", dump(rep))
	}
	if m := find(t, rep, probe.CheckVersion).Message; !strings.Contains(m, "0.3.0 HTTP+JSON binding") {
		t.Errorf("version check says %q", m)
	}
}
