package main

import (
	"context"
	"crypto/x509"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/agents"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
	"github.com/a2a-connector/a2a-connector/internal/secret"
)

// registerAsConsole registers cardURL with apiKey the way console-api does, extended card
// included: the agents service sends the credentials through an invoker, and the card fetcher
// asks for the extended card on that invoker's wire client, in the agent's binding. roots, when
// not nil, verifies TLS servers (A2AC_AGENT_CA_FILE's pool).
func (r registrar) registerAsConsole(t *testing.T, cardURL, apiKey string, roots *x509.CertPool) (connector.Agent, []connector.Problem) {
	t.Helper()
	var cred *credential.Credential
	if apiKey != "" {
		cred = &credential.Credential{Kind: connector.CredentialKindAPIKey, Secret: apiKey}
	}
	return r.registerWithCredential(t, cardURL, cred, roots)
}

// registerWithCredential is registerAsConsole with any kind of credential (nil: none).
func (r registrar) registerWithCredential(t *testing.T, cardURL string, cred *credential.Credential, roots *x509.CertPool) (connector.Agent, []connector.Problem) {
	t.Helper()
	box, err := secret.New(r.secretKey)
	if err != nil {
		t.Fatal(err)
	}
	pol := netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	inv := invoke.New(invoke.Options{Secrets: box, GRPCPolicy: &pol, RootCAs: roots,
		Client: netguard.NewClient(pol, netguard.ClientOptions{InlineHTTP1: true, RootCAs: roots})})
	t.Cleanup(func() { _ = inv.Close(context.Background()) })
	svc := agents.New(agents.Config{Store: r.store, Secrets: box, Authorizer: inv, Cards: cardfetch.New(cardfetch.Options{
		Client: netguard.NewClient(pol, netguard.ClientOptions{MaxRedirects: 3, RootCAs: roots}), AllowInsecureHTTP: true, Agents: inv,
	})})
	a, warnings, err := svc.RegisterWith(t.Context(), r.tenant, cardURL, cred)
	if err != nil {
		t.Fatalf("register %s: %v", cardURL, err)
	}
	return a, warnings
}

// wantExtendedSkills checks that the agent's skills are its extended card's (skill among them)
// and that no warning says the extended card could not be had.
func wantExtendedSkills(t *testing.T, a connector.Agent, warnings []connector.Problem, skill string) {
	t.Helper()
	if !slices.ContainsFunc(a.Skills, func(s connector.Skill) bool { return s.ID == skill }) {
		t.Errorf("skills %+v, want the extended card's %q; warnings %+v", a.Skills, skill, warnings)
	}
	for _, w := range warnings {
		if w.Code == agents.CodeExtendedCardUnavailable {
			t.Errorf("warning %s: %s", w.Code, w.Message)
		}
	}
}

// converseWithWeatherAgent holds the weather agents' conversation through HandleTurn: streamed
// text, a question held and answered on the same task, and a refusal handed back.
func converseWithWeatherAgent(t *testing.T, s *stack, agentID string) {
	t.Helper()
	r := s.turn(t, "weather-stream", agentID, "weather please")
	wantOutcome(t, r, pb.Outcome_OUTCOME_COMPLETED)
	if diff := cmp.Diff(sdkagent.Chunks(), r.deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	ask := s.turn(t, "weather-hold", agentID, "ask me")
	wantOutcome(t, ask, pb.Outcome_OUTCOME_INPUT_REQUIRED)
	if ask.final.GetText() != sdkagent.Question || ask.final.GetHold() == nil {
		t.Errorf("question turn: text %q hold %v, want the question and a hold", ask.final.GetText(), ask.final.GetHold())
	}
	answer := s.turn(t, "weather-hold", "", "Berlin")
	wantOutcome(t, answer, pb.Outcome_OUTCOME_COMPLETED)
	if answer.final.GetTaskId() != ask.final.GetTaskId() || answer.final.GetText() != sdkagent.Answer("Berlin") {
		t.Errorf("continuation: task %s text %q, want task %s and the answer", answer.final.GetTaskId(), answer.final.GetText(), ask.final.GetTaskId())
	}
	wantOutcome(t, s.turn(t, "weather-reject", agentID, "reject this"), pb.Outcome_OUTCOME_HANDBACK)
}

// A tenant pastes the card URL of an agent built on a2a-go v0.3.15 and served as that SDK's
// hello-world gRPC sample serves one: A2A 0.3 over gRPC only, the card's url a bare
// "127.0.0.1:<port>". The address is called in the card's scheme (plaintext: the card came over
// http, which this stack allows), with a warning naming both; the extended card comes over
// gRPC with the API key; and the dialog engine holds a whole conversation with the agent.
func TestConversationWithAnA2A03GoSDKAgentOverGRPCAtABareAddress(t *testing.T) {
	t.Parallel()
	const key = "sk-go-v03"
	peer := sdkagent.NewV03(t, sdkagent.OptionsV03{GRPCBareAddress: true, APIKey: key, ExtendedSkill: "storm_warnings"})
	s := startStack(t, nil)
	a, warnings := s.registerAsConsole(t, peer.CardURL, key, nil)
	if a.ProtocolVersion != "0.3.0" || a.EndpointBinding != "GRPC" || a.EndpointURL != peer.GRPCURL {
		t.Fatalf("registered A2A %s %s at %s, want 0.3.0 GRPC at %s", a.ProtocolVersion, a.EndpointBinding, a.EndpointURL, peer.GRPCURL)
	}
	if !slices.ContainsFunc(warnings, func(p connector.Problem) bool {
		return p.Path == "url" && strings.Contains(p.Message, strings.TrimPrefix(peer.GRPCURL, "http://")) && strings.Contains(p.Message, peer.GRPCURL)
	}) {
		t.Errorf("warnings %+v, want one at url naming the address as written and as called", warnings)
	}
	wantExtendedSkills(t, a, warnings, "storm_warnings")
	converseWithWeatherAgent(t, s, a.ID)
}

// A tenant registers A2A 0.3 agents built on @a2a-js/sdk 0.3.14 that offer an authenticated
// extended card, one binding each (internal/invoke/testdata/js-agent/extended.mjs): the
// registration asks for it in the agent's own binding — agent/getAuthenticatedExtendedCard,
// GET {url}/v1/card, gRPC GetAgentCard — with the API key, which the SDK's user builder turns
// into an authenticated user; the extended card's skills are the agent's, and turns work.
func TestExtendedCardOfA2A03JSAgentsOnEveryBinding(t *testing.T) {
	t.Parallel()
	ports := runJSAgents(t, "extended.mjs", regexp.MustCompile(`(?m)^A2A_EXTENDED_PORTS=(\d+) (\d+) (\d+)\r?\n`))
	// stored is the binding as the profile keeps it: "" for a 0.x JSON-RPC endpoint (the 0.x
	// default transport).
	for i, tt := range []struct{ name, stored string }{{"jsonrpc", ""}, {"http_json", "HTTP+JSON"}, {"grpc", "GRPC"}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := startStack(t, nil)
			a, warnings := s.registerAsConsole(t, "http://127.0.0.1:"+ports[i]+"/.well-known/agent-card.json", "sk-js-extended", nil)
			if binding := tt.stored; a.EndpointBinding != binding || a.ProtocolVersion != "0.3.0" {
				t.Fatalf("registered A2A %s %q at %s, want 0.3.0 over %s", a.ProtocolVersion, a.EndpointBinding, a.EndpointURL, binding)
			}
			wantExtendedSkills(t, a, warnings, "storm_warnings")
			wantOutcome(t, s.turn(t, "js-extended", a.ID, "weather please"), pb.Outcome_OUTCOME_COMPLETED)
		})
	}
}
