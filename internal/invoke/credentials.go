package invoke

import (
	"context"
	"errors"
	"net/http"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

// authorize sets the agent's credential on h: the API key under each of its header names, or
// Authorization: Bearer with the stored bearer token or an access token (cached by
// inv.tokens; fetched only when none is valid). accessToken is the token sent, for forgetting
// it after a 401; "" for the kinds that have none to refetch.
func (inv *Invoker) authorize(ctx context.Context, h http.Header, agent *connector.Agent, sealed *connector.Sealed) (accessToken string, _ *connector.TurnError) {
	if agent.CredentialSetKind == connector.CredentialKindMTLS {
		return "", nil // a client certificate goes in the handshake (withTLS), not in a header
	}
	cred, herr := inv.open(agent, sealed)
	if herr != nil {
		return "", herr
	}
	switch cred.Kind {
	case connector.CredentialKindAPIKey:
		if !validHeaderValue(cred.Secret) {
			return "", &connector.TurnError{Code: connector.CodeAPIKey, Message: "the agent's API key contains characters not allowed in an HTTP header"}
		}
		names := agent.APIKeyHeaders
		if len(names) == 0 {
			names = []string{connector.APIKeyHeader}
		}
		for _, name := range names {
			if !validHeaderName(name) {
				continue // cardcheck validated the card; a bad name here is not worth failing the turn
			}
			h.Set(name, cred.Secret)
		}
		return "", nil
	case connector.CredentialKindBearerToken:
		if !validHeaderValue(cred.Secret) {
			return "", &connector.TurnError{Code: connector.CodeAPIKey, Message: "the agent's bearer token contains characters not allowed in an HTTP header"}
		}
		h.Set("Authorization", "Bearer "+cred.Secret)
		return "", nil
	}
	tok, err := inv.tokens.Token(ctx, credential.Target{AgentID: agent.ID, Cred: cred, TokenURL: agent.OAuth2TokenURL, Scopes: agent.OAuth2Scopes})
	if err != nil {
		return "", tokenFailure(err)
	}
	if !validHeaderValue(tok) {
		return "", &connector.TurnError{Code: connector.CodeAgentUnauthorized, Message: "the token endpoint returned an access token not allowed in an HTTP header"}
	}
	h.Set("Authorization", "Bearer "+tok)
	return tok, nil
}

// tokenFailure is the Error of a turn whose access token could not be had. Refused by the
// token endpoint is agent_unauthorized (the credentials are wrong or revoked, as with a 401
// from the agent); a token URL the guard refuses is blocked_address, and never contacted.
func tokenFailure(err error) *connector.TurnError {
	if errors.Is(err, netguard.ErrBlockedAddress) || errors.Is(err, netguard.ErrInsecureURL) {
		return &connector.TurnError{Code: connector.CodeBlockedAddress, Message: "the token URL's address is one the connector may not call (loopback, private, link-local or another reserved range, or plain http where https is required)"}
	}
	if te, ok := errors.AsType[*credential.TokenError](err); ok {
		if te.Code != "" || te.Status != 0 {
			return &connector.TurnError{Code: connector.CodeAgentUnauthorized, Message: te.Error() + " (check the OAuth 2.0 client or service account set for this agent in the console)"}
		}
		return &connector.TurnError{Code: connector.CodeAgentUnreachable, Message: "the token endpoint could not be reached: " + te.TokenURL + ": " + transportReason(te.Err)}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &connector.TurnError{Code: connector.CodeTimeout, Message: "no access token before the deadline: " + err.Error()}
	}
	return &connector.TurnError{Code: connector.CodeAgentUnauthorized, Message: "no access token: " + err.Error()}
}

// unauthorized reports an agent's refusal of the credentials: HTTP 401 (a 403 says the token
// is valid but not enough, which a new token would not change) or the A2A unauthenticated
// error.
func unauthorized(err error) bool {
	if hse, ok := errors.AsType[*a2aclient.HTTPStatusError](err); ok {
		return hse.StatusCode == http.StatusUnauthorized
	}
	if rpc, ok := errors.AsType[*a2a.RPCError](err); ok {
		return rpc.Code == a2a.CodeUnauthenticated
	}
	return false
}

// AuthHeader is the header that carries the agent's credential (sealed) on a call, the access
// token fetched or taken from the cache as for a turn. The agents service sends it when fetching
// a card that answered 401 or 403. Its errors say what failed without the secret.
func (inv *Invoker) AuthHeader(ctx context.Context, agent *connector.Agent, sealed *connector.Sealed) (http.Header, error) {
	h := make(http.Header, 2)
	if sealed == nil {
		return h, nil
	}
	if _, herr := inv.authorize(ctx, h, agent, sealed); herr != nil {
		return nil, herr
	}
	return h, nil
}
