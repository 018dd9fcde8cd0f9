package main

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/agents"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
	"github.com/a2a-connector/a2a-connector/internal/testca"
)

// agentsService is the agents service as console-api builds it (an Invoker authorizing card
// fetches and carrying agents' TLS), trusting the system roots only: an agent's private CA
// reaches it through its tls.caPem alone.
func (r registrar) agentsService(t *testing.T) *agents.Service {
	t.Helper()
	box, err := secret.New(r.secretKey)
	if err != nil {
		t.Fatal(err)
	}
	pol := netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	inv := invoke.New(invoke.Options{Secrets: box, GRPCPolicy: &pol,
		Client: netguard.NewClient(pol, netguard.ClientOptions{InlineHTTP1: true})})
	t.Cleanup(func() { _ = inv.Close(context.Background()) })
	return agents.New(agents.Config{Store: r.store, Secrets: box, Authorizer: inv, Canceler: inv, Cards: cardfetch.New(cardfetch.Options{
		Client: netguard.NewClient(pol, netguard.ClientOptions{MaxRedirects: 3}), AllowInsecureHTTP: true, Agents: inv,
	})})
}

// Agents behind mutual TLS on a private CA, on every binding (a2a-go v2 agents whose card, and
// every interface, demand a client certificate of that CA and declare mtlsSecurityScheme):
// registered with credentials.mtls and tls.caPem (no A2AC_AGENT_CA_FILE anywhere), each turn
// through the connector's HandleTurn completes. A PATCH takes effect on the next turn, with no
// pooled connection of the old settings reused: a certificate of another CA is refused by the
// agent, no certificate at all is asked for, a CA bundle of another CA does not verify the
// agent; each a failed turn saying so in words; and back to the right ones, turns complete.
func TestAgentsBehindMutualTLS(t *testing.T) {
	t.Parallel()
	ca, other := testca.New(t), testca.New(t)
	certPEM, keyPEM := ca.ClientCert(t, "connector", testca.ClientOptions{})
	strangerCert, strangerKey := other.ClientCert(t, "stranger", testca.ClientOptions{})
	mtls := func(cert, key []byte) *credential.Credential {
		return &credential.Credential{Kind: connector.CredentialKindMTLS,
			MTLS: &credential.ClientCert{CertificatePEM: string(cert), PrivateKeyPEM: string(key)}}
	}
	// The failures below are on purpose: the breaker must not stop the turns after them. Logs
	// at debug and every span are kept, to look for the keys in them at the end.
	logs, spans := &syncBuffer{}, tracetest.NewInMemoryExporter()
	s := startStack(t, map[string]string{"A2AC_BREAKER_FAILURES": "0", "A2AC_LOG_LEVEL": "debug"},
		func(c *stackConfig) { c.stderr = logs }, withTelemetry(telemetry.Options{SpanExporter: spans}))
	t.Cleanup(func() { wantNoKeyIn(t, logs.String(), spans, keyPEM, strangerKey) })
	svc := s.registrar.agentsService(t)
	caPEM, otherCA, empty := string(ca.PEM), string(other.PEM), ""

	for _, b := range []struct {
		name string
		o    sdkagent.Options
	}{
		{"JSONRPC", sdkagent.Options{}},
		{"HTTP+JSON", sdkagent.Options{RESTOnly: true}},
		{"GRPC", sdkagent.Options{GRPCOnly: true}},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			o := b.o
			o.Streaming, o.MTLS, o.TLS = true, true, ca.MutualServerTLS(t)
			peer := sdkagent.New(t, o)
			a, _, err := svc.RegisterAgent(t.Context(), s.tenant, peer.CardURL, agents.Registration{Credential: mtls(certPEM, keyPEM), TLSCAPem: caPEM})
			if err != nil {
				t.Fatalf("register the agent behind mutual TLS: %v", err)
			}
			if a.Credential() != connector.CredentialKindMTLS || bindingName(a.EndpointBinding) != b.name {
				t.Errorf("registered with credential kind %q binding %q", a.Credential(), a.EndpointBinding)
			}
			completes := func(step string) {
				t.Helper()
				r := s.turn(t, "mtls-"+step, a.ID, "weather please")
				if r.final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED || !strings.Contains(strings.Join(r.deltas, ""), "sunny") {
					t.Fatalf("%s: %v %v %q, want a completed turn about the weather", step, r.final.GetOutcome(), r.final.GetError(), r.deltas)
				}
			}
			fails := func(step string, p agents.Patch, want string) {
				t.Helper()
				if _, err := svc.Update(t.Context(), s.tenant, a.ID, p); err != nil {
					t.Fatalf("%s: %v", step, err)
				}
				r := s.turn(t, "mtls-"+step, a.ID, "weather please")
				e := r.final.GetError()
				if r.final.GetOutcome() != pb.Outcome_OUTCOME_FAILED || !strings.Contains(e.GetMessage(), want) {
					t.Errorf("%s: %v %s %q, want a failed turn saying %q", step, r.final.GetOutcome(), e.GetCode(), e.GetMessage(), want)
				}
				if strings.Contains(e.GetMessage(), "PRIVATE KEY") {
					t.Errorf("%s: the outcome quotes a key", step)
				}
			}
			completes("first")
			completes("pooled")
			fails("stranger_certificate", agents.Patch{Credential: mtls(strangerCert, strangerKey)}, "our client certificate")
			// A credential of another kind cannot be sent the way the card asks: no turn starts.
			if _, err := svc.Update(t.Context(), s.tenant, a.ID, agents.Patch{Credential: &credential.Credential{Kind: connector.CredentialKindAPIKey, Secret: "not-a-certificate"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.tryTurn(t, "mtls-api-key", a.ID, "weather please"); status.Code(err) != codes.FailedPrecondition {
				t.Errorf("turn of an mTLS agent holding an API key: %v, want FAILED_PRECONDITION", err)
			}
			fails("wrong_ca", agents.Patch{Credential: mtls(certPEM, keyPEM), TLSCAPem: &otherCA}, "certificate signed by unknown authority")
			fails("no_ca", agents.Patch{TLSCAPem: &empty}, "certificate signed by unknown authority")
			if _, err := svc.Update(t.Context(), s.tenant, a.ID, agents.Patch{TLSCAPem: &caPEM}); err != nil {
				t.Fatal(err)
			}
			completes("restored")
		})
	}
}

// wantNoKeyIn checks that no private key, nor a piece of one, is in the logs or in any span's
// name, attributes, events or status.
func wantNoKeyIn(t *testing.T, logs string, spans *tracetest.InMemoryExporter, keys ...[]byte) {
	t.Helper()
	b, err := json.Marshal(spans.GetSpans().Snapshots())
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) == 0 || len(b) < 10 {
		t.Fatal("nothing was captured: the check would prove nothing")
	}
	for _, k := range keys {
		body := string(k[len("-----BEGIN PRIVATE KEY-----\n"):][:48])
		if strings.Contains(logs, body) || strings.Contains(logs, "BEGIN PRIVATE KEY") {
			t.Error("a private key is in the connector's logs")
		}
		if strings.Contains(string(b), body) || strings.Contains(string(b), "BEGIN PRIVATE KEY") {
			t.Error("a private key is in a span")
		}
	}
}

func bindingName(b string) string {
	if b == "" {
		return "JSONRPC"
	}
	return b
}
