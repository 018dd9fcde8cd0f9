package main

import (
	"cmp"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
	"github.com/a2a-connector/a2a-connector/internal/sigv4"
	"github.com/a2a-connector/a2a-connector/internal/sigv4/sigv4test"
)

// e2eAWSKey is the AWS key of the SigV4 tests; its secret and session token must never reach
// the connector's logs.
var e2eAWSKey = credential.AWSKey{AccessKeyID: "AKIAE2ETESTKEY000001", SecretAccessKey: "e2e/SECRET+access-key-9f8e7d6c5b4a",
	SessionToken: "e2e-SESSION-token-0a1b2c3d4e5f", Region: "eu-central-1"}

// awsCredential is the credential a tenant registers for k.
func awsCredential(k credential.AWSKey) *credential.Credential {
	return &credential.Credential{Kind: connector.CredentialKindAWSSigV4, AWS: &k}
}

// signingClient signs every request it sends with k: how the test itself reads a card behind
// the verifier (the connector's own fetches are what the test checks).
func signingClient(k credential.AWSKey) *http.Client {
	s := sigv4.New(&k, nil)
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		if err := s.Sign(r, nil); err != nil {
			return nil, err
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// behindVerifier serves host's cards behind v as well: the returned func maps a card URL of
// host to the same card behind the verifier.
func behindVerifier(t *testing.T, host *fixtureagent.CardHost, v *sigv4test.Verifier) func(string) string {
	t.Helper()
	guarded := httptest.NewServer(v.Handler(host.Config.Handler))
	t.Cleanup(guarded.Close)
	return func(url string) string { return guarded.URL + strings.TrimPrefix(url, host.URL) }
}

// waitCanceled waits (bounded) until the agent's executor was asked to cancel the task.
func waitCanceled(t *testing.T, canceled func(string) bool, taskID string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second) // only a failing test waits this long
	for !canceled(taskID) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent never accepted a cancel of task %s", taskID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An agent behind AWS Signature Version 4, checked by botocore (sigv4test: an implementation
// nobody here wrote, in front of the whole agent as AgentCore's gateway is), on every binding
// and both protocol generations (a2a-go v2's JSON-RPC, HTTP+JSON and gRPC in 1.0, and its 0.3
// handlers), registered with credentials.awsSigV4 the way console-api does and called through
// the connector binary's HandleTurn:
//   - the card fetch is signed: the card URL answers 403 without a signature;
//   - turns complete with the SDK's chunks, twice on the same key;
//   - a turn the caller ends (ReleaseSession of a held question) sends a signed cancel, which
//     the agent accepts;
//   - a key with a wrong secret ends the turn FAILED · agent_unauthorized, in words that say the
//     signature was refused and what botocore said;
//   - neither the secret access key nor the session token reaches the connector's logs.
func TestAWSSigV4AgentThroughHandleTurnOnEveryBinding(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	s := startStack(t, map[string]string{"A2AC_LOG_LEVEL": "debug"}, func(c *stackConfig) { c.stderr = logs })
	v := sigv4test.Start(t, e2eAWSKey, 5*time.Minute)
	guard := &sdkagent.Guard{HTTP: v.Handler, GRPC: v.ServerOptions()}
	v2 := sdkagent.New(t, sdkagent.Options{Streaming: true, Compat: true, REST: true, GRPC: true, GRPCV0: true, Guard: guard})
	rest03 := sdkagent.New(t, sdkagent.Options{Streaming: true, RESTV0Only: true, Guard: guard})
	host := fixtureagent.NewCardHost(t, false)
	guarded := behindVerifier(t, host, v)

	// The agents' own cards are behind the verifier too: an unsigned GET is refused.
	if res, err := http.Get(v2.CardURL); err != nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("unsigned GET of the card: %v %v, want 403", res.StatusCode, err)
	} else {
		res.Body.Close()
	}
	var v2Card, rest03Card map[string]any
	getJSONWith(t, signingClient(e2eAWSKey), v2.CardURL, &v2Card)
	getJSONWith(t, signingClient(e2eAWSKey), rest03.CardURL, &rest03Card)

	for _, p := range []struct {
		name, binding, version string
		card                   map[string]any
		url                    string
		canceled               func(string) bool
	}{
		{"jsonrpc-1.0", "JSONRPC", "1.0", v2Card, v2.V1URL, v2.Canceled},
		{"jsonrpc-0.3", "JSONRPC", "0.3", v2Card, v2.V0URL, v2.Canceled},
		{"http+json-1.0", "HTTP+JSON", "1.0", v2Card, v2.RESTURL, v2.Canceled},
		{"http+json-0.3", "HTTP+JSON", "0.3", rest03Card, rest03.RESTV0URL, rest03.Canceled},
		{"grpc-1.0", "GRPC", "1.0", v2Card, v2.GRPCURL, v2.Canceled},
		{"grpc-0.3", "GRPC", "0.3", v2Card, v2.GRPCV0URL, v2.Canceled},
	} {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			public := forceCard(t, host, p.card, p.url, p.version)
			a, _ := s.registerWithCredential(t, guarded(public), awsCredential(e2eAWSKey), nil)
			if cmp.Or(a.EndpointBinding, "JSONRPC") != p.binding || !strings.HasPrefix(a.ProtocolVersion, p.version) || a.CredentialSetKind != connector.CredentialKindAWSSigV4 {
				t.Fatalf("registered A2A %s %q (credential %q), want %s over %s with an AWS key", a.ProtocolVersion, a.EndpointBinding, a.CredentialSetKind, p.version, p.binding)
			}
			for i := range 2 {
				r := s.turn(t, "sigv4-"+p.name+"-"+string(rune('a'+i)), a.ID, "weather please")
				wantOutcome(t, r, pb.Outcome_OUTCOME_COMPLETED)
				if diff := gocmp.Diff(sdkagent.Chunks(), r.deltas); diff != "" {
					t.Errorf("deltas (-want +got):\n%s", diff)
				}
			}

			// A question held, then released by the caller: the cancel is signed too.
			session := "sigv4-" + p.name + "-release"
			ask := s.turn(t, session, a.ID, "ask me")
			wantOutcome(t, ask, pb.Outcome_OUTCOME_INPUT_REQUIRED)
			if rel, err := s.client.ReleaseSession(t.Context(), &pb.ReleaseSessionRequest{TenantId: s.tenant, SessionId: session}); err != nil || !rel.GetReleased() {
				t.Fatalf("ReleaseSession = %+v, %v", rel, err)
			}
			waitCanceled(t, p.canceled, ask.final.GetTaskId())

			// The same agent registered with a wrong secret (from the public copy of its card,
			// which a wrong signature could not fetch): refused in words.
			wrong := e2eAWSKey
			wrong.SecretAccessKey = "not-" + wrong.SecretAccessKey
			bad, _ := s.registerWithCredential(t, public, awsCredential(wrong), nil)
			r := s.turn(t, "sigv4-"+p.name+"-wrong", bad.ID, "weather please")
			e := r.final.GetError()
			if r.final.GetOutcome() != pb.Outcome_OUTCOME_FAILED || e.GetCode() != connector.CodeAgentUnauthorized ||
				!strings.Contains(e.GetMessage(), "refused the SigV4 signature") || !strings.Contains(e.GetMessage(), "the signature does not match") {
				t.Errorf("turn with a wrong secret: %v %s %q, want FAILED agent_unauthorized saying the signature was refused and why", r.final.GetOutcome(), e.GetCode(), e.GetMessage())
			}
		})
	}
	t.Cleanup(func() {
		_, refusals := v.Accepted()
		if !slices.ContainsFunc(refusals, func(r string) bool { return strings.Contains(r, "no AWS4-HMAC-SHA256 Authorization header") }) {
			t.Errorf("the verifier never refused an unsigned request (a card fetch tries without first): %q", refusals)
		}
		out := logs.String()
		for _, secret := range []string{e2eAWSKey.SecretAccessKey, e2eAWSKey.SessionToken, "not-" + e2eAWSKey.SecretAccessKey} {
			if strings.Contains(out, secret) {
				t.Error("an AWS secret or session token is in the connector's logs")
			}
		}
	})
}

// The card and the authenticated extended card of an agent behind SigV4 (a2a-go v0.3.15's
// gRPC agent, whose extended card comes from GetAgentCard): registered with credentials.awsSigV4
// as console-api does, the card URL answers 403 to the unsigned first try and the connector
// fetches it again signed; the extended card's call is signed and botocore accepts it; turns
// work.
func TestAWSSigV4CardAndExtendedCardAreSigned(t *testing.T) {
	t.Parallel()
	v := sigv4test.Start(t, e2eAWSKey, 5*time.Minute)
	peer := sdkagent.NewV03(t, sdkagent.OptionsV03{ExtendedSkill: "storm_warnings",
		Guard: &sdkagent.Guard{HTTP: v.Handler, GRPC: v.ServerOptions()}})
	s := startStack(t, nil)
	if res, err := http.Get(peer.CardURL); err != nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("unsigned GET of the card: %v %v, want 403", res.StatusCode, err)
	} else {
		res.Body.Close()
	}
	a, warnings := s.registerWithCredential(t, peer.CardURL, awsCredential(e2eAWSKey), nil)
	if a.EndpointBinding != "GRPC" || a.CredentialSetKind != connector.CredentialKindAWSSigV4 {
		t.Fatalf("registered %q with credential %q, want GRPC with an AWS key", a.EndpointBinding, a.CredentialSetKind)
	}
	wantExtendedSkills(t, a, warnings, "storm_warnings")
	wantOutcome(t, s.turn(t, "sigv4-extended", a.ID, "weather please"), pb.Outcome_OUTCOME_COMPLETED)
	if n, refusals := v.Accepted(); n < 3 {
		t.Errorf("botocore accepted %d requests (refused %q), want the card, the extended card and the turn", n, refusals)
	}
}
