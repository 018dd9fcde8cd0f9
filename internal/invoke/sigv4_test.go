package invoke_test

import (
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/sigv4/sigv4test"
)

// sigv4Key is the AWS key of the SigV4 tests; its secret and token must never reach a log.
var sigv4Key = credential.AWSKey{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCY-SECRET-1234",
	SessionToken: "IQoJb3JpZ2luX2VjEXAMPLE-TOKEN-5678", Region: "eu-west-1"}

// sigv4Agents start an agent of each binding behind botocore (sigv4test): JSON-RPC 0.3 and 1.0,
// HTTP+JSON 1.0 and gRPC 1.0.
var sigv4Agents = []struct {
	name, version, binding string
	start                  func(*testing.T, *sigv4test.Verifier) string
}{
	{"jsonrpc_0.3", "0.3.0", "", func(t *testing.T, v *sigv4test.Verifier) string { return signedHTTP(t, v, fixtureagent.New(t)) }},
	{"jsonrpc_1.0", "1.0", "JSONRPC", func(t *testing.T, v *sigv4test.Verifier) string { return signedHTTP(t, v, fixtureagent.NewV1(t)) }},
	{"http_json_1.0", "1.0", "HTTP+JSON", func(t *testing.T, v *sigv4test.Verifier) string { return signedHTTP(t, v, fixtureagent.NewREST(t)) }},
	{"grpc_1.0", "1.0", "GRPC", signedGRPC},
}

func signedHTTP(t *testing.T, v *sigv4test.Verifier, fx *fixtureagent.Server) string {
	srv := httptest.NewServer(v.Handler(fx))
	t.Cleanup(srv.Close)
	return srv.URL + "/a2a"
}

func signedGRPC(t *testing.T, v *sigv4test.Verifier) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(v.ServerOptions()...)
	a2apb.RegisterA2AServiceServer(gs, oneChunkAgent{})
	done := make(chan struct{})
	go func() { defer close(done); _ = gs.Serve(ln) }()
	t.Cleanup(func() { gs.Stop(); <-done })
	return "http://" + ln.Addr().String()
}

// TestAWSSigV4OnEveryBinding: every call of a turn is signed so that botocore accepts it, on
// every binding, streaming and not; a key with a wrong secret, region or service is refused
// (agent_unauthorized), which shows the agent really checks; the secret and the session token
// never reach the logs.
func TestAWSSigV4OnEveryBinding(t *testing.T) {
	t.Parallel()
	v := sigv4test.Start(t, sigv4Key, 5*time.Minute)
	for _, b := range sigv4Agents {
		t.Run(b.name, func(t *testing.T) {
			h := newHarness(t, nil)
			a := agentAt(b.start(t, v), b.binding != "JSONRPC" && b.binding != "")
			a.ProtocolVersion, a.EndpointBinding = b.version, b.binding
			a.CredentialSetKind = connector.CredentialKindAWSSigV4
			turn := func(k credential.AWSKey, id string) connector.TurnResult {
				sealed := sealCredential(t, h.box, a.ID, credential.Credential{Kind: connector.CredentialKindAWSSigV4, AWS: &k})
				res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: sealed, MessageID: id, Text: "hi"})
				return res
			}
			for _, streaming := range []bool{a.Streaming, !a.Streaming} {
				a.Streaming = streaming
				if b.binding == "GRPC" && !streaming {
					continue // oneChunkAgent streams only
				}
				if res := turn(sigv4Key, "m-ok"); res.Outcome != connector.OutcomeCompleted {
					t.Fatalf("signed turn (streaming %v): %s %+v", streaming, res.Outcome, res.Err)
				}
			}
			a.Streaming = b.binding == "GRPC"
			for what, k := range map[string]credential.AWSKey{
				"secret":  {AccessKeyID: sigv4Key.AccessKeyID, SecretAccessKey: "wrong" + sigv4Key.SecretAccessKey, SessionToken: sigv4Key.SessionToken, Region: sigv4Key.Region},
				"region":  {AccessKeyID: sigv4Key.AccessKeyID, SecretAccessKey: sigv4Key.SecretAccessKey, SessionToken: sigv4Key.SessionToken, Region: "us-east-1"},
				"service": {AccessKeyID: sigv4Key.AccessKeyID, SecretAccessKey: sigv4Key.SecretAccessKey, SessionToken: sigv4Key.SessionToken, Region: sigv4Key.Region, Service: "execute-api"},
			} {
				res := turn(k, "m-"+what)
				if res.Outcome != connector.OutcomeFailed || res.Err == nil || res.Err.Code != connector.CodeAgentUnauthorized {
					t.Errorf("turn signed with a wrong %s: %s %+v, want FAILED agent_unauthorized", what, res.Outcome, res.Err)
				} else if !strings.HasPrefix(res.Err.Message, "the agent refused the SigV4 signature: ") || !strings.Contains(res.Err.Message, "check the access key, region and service") {
					t.Errorf("wrong %s: message %q does not say the signature was refused and what to check", what, res.Err.Message)
				}
			}
			for _, s := range []string{sigv4Key.SecretAccessKey, sigv4Key.SessionToken} {
				if strings.Contains(h.logs.String(), s) {
					t.Error("an AWS secret is in the logs")
				}
			}
		})
	}
	if n, _ := v.Accepted(); n < len(sigv4Agents) {
		t.Errorf("botocore accepted %d signatures, want at least one per binding", n)
	}
}
