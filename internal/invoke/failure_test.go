package invoke

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

// One error, one record: each kind of call error maps to one Error code, one pair of breaker
// verdicts (before and after the agent answered) and the second calls it allows. The errors are
// the client's own types, wrapped as the client and the transport wrap them; the turns that
// meet them on real servers are in invoke_test.go, breaker_test.go and fallback_test.go.
func TestClassify_one_record_per_error(t *testing.T) {
	status := func(code int, rpc *a2a.RPCError, b a2aclient.Binding) error {
		return fmt.Errorf("a2a call: %w", &a2aclient.HTTPStatusError{Method: "message/send", StatusCode: code, RPC: rpc, Binding: b})
	}
	rpc := func(code int) *a2a.RPCError { return &a2a.RPCError{Code: code, Message: "no"} }
	for _, c := range []struct {
		name                     string
		err                      error
		kind                     failureKind
		code                     string
		breaker, breakerAnswered verdict
		retry                    retrySafe
	}{
		{"none", nil, noFailure, "", up, up, retrySafe{}},
		{"own", &connector.TurnError{Code: connector.CodeCredentials}, ownError, connector.CodeCredentials, neutral, up, retrySafe{}},
		{"own protocol", &connector.TurnError{Code: connector.CodeProtocolError}, ownError, connector.CodeProtocolError, down, down, retrySafe{}},
		{"first event", fmt.Errorf("no event within 1s: %w", a2aclient.ErrFirstEventTimeout), firstEventLimit, connector.CodeTimeout, down, neutral, retrySafe{}},
		{"idle", fmt.Errorf("nothing for 1s: %w", a2aclient.ErrIdleTimeout), idleLimit, connector.CodeTimeout, down, neutral, retrySafe{}},
		{"blocked", &url.Error{Op: "Post", URL: "https://10.0.0.1", Err: netguard.ErrBlockedAddress}, blockedAddress, connector.CodeBlockedAddress, neutral, neutral, retrySafe{}},
		{"401", status(401, nil, a2aclient.BindingJSONRPC), httpStatus, connector.CodeAgentUnauthorized, up, up, retrySafe{newToken: true}},
		{"404", status(404, nil, a2aclient.BindingJSONRPC), httpStatus, connector.CodeAgentHTTPStatus, up, up, retrySafe{onBase: true, otherBinding: true}},
		{"302", status(302, nil, a2aclient.BindingJSONRPC), httpStatus, connector.CodeRedirect, up, up, retrySafe{}},
		{"503", status(503, nil, a2aclient.BindingJSONRPC), httpStatus, connector.CodeAgentHTTPStatus, down, down, retrySafe{}},
		{"rest 404 task not found", status(404, rpc(a2a.CodeTaskNotFound), a2aclient.BindingHTTPJSON), agentError, connector.CodeAgentRPCError, up, up, retrySafe{onBase: true}},
		{"rest 503 with an A2A error", status(503, rpc(-32603), a2aclient.BindingHTTPJSON), agentError, connector.CodeAgentRPCError, down, down, retrySafe{}},
		{"rpc unauthenticated", rpc(a2a.CodeUnauthenticated), agentError, connector.CodeAgentUnauthorized, up, up, retrySafe{newToken: true}},
		{"rpc version", rpc(a2a.CodeVersionNotSupported), agentError, connector.CodeAgentRPCError, up, up, retrySafe{otherVersion: true}},
		{"event too large", &a2a.ProtocolError{Kind: a2a.ProtocolEventTooLarge}, tooLarge, connector.CodeTooLarge, up, up, retrySafe{}},
		{"body too large", &a2a.ProtocolError{Kind: a2a.ProtocolBodyTooLarge}, tooLarge, connector.CodeTooLarge, up, up, retrySafe{}},
		{"html page", &a2a.ProtocolError{Kind: a2a.ProtocolUnexpectedContentType}, protocolBreach, connector.CodeProtocolError, down, down, retrySafe{onBase: true}},
		{"canceled", fmt.Errorf("dial: %w", context.Canceled), unreachable, connector.CodeAgentUnreachable, down, neutral, retrySafe{}},
	} {
		f := classify(c.err)
		if f.kind != c.kind || f.code != c.code || f.breaker != c.breaker || f.breakerAnswered != c.breakerAnswered || f.retry != c.retry {
			t.Errorf("%s: got kind %d code %q breaker %d/%d retry %+v; want kind %d code %q breaker %d/%d retry %+v", c.name,
				f.kind, f.code, f.breaker, f.breakerAnswered, f.retry, c.kind, c.code, c.breaker, c.breakerAnswered, c.retry)
		}
	}
}
