package invoke

import (
	"context"
	"errors"
	"net/http"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/reqauth"
	"github.com/a2a-connector/a2a-connector/internal/sigv4"
)

// authorize sets the agent's credential on h: the API key under each of its header names, or
// Authorization: Bearer with the stored bearer token or an access token (cached by
// inv.tokens; fetched only when none is valid), or for an AWS key, sign: the SigV4 signature
// of each attempt (h stays empty). A client certificate sets nothing: it goes in the handshake
// (withTLS). accessToken is the token sent, for forgetting it after a 401; "" for the kinds
// that have none to refetch.
func (inv *Invoker) authorize(ctx context.Context, h http.Header, agent *connector.Agent, sealed *connector.Sealed) (accessToken string, sign reqauth.Func, _ *connector.TurnError) {
	if agent.CredentialSetKind == connector.CredentialKindMTLS {
		return "", nil, nil
	}
	if agent.CredentialSetKind == connector.CredentialKindAWSSigV4 {
		if sign := inv.signers.get(agent.ID, sealed); sign != nil {
			return "", sign, nil
		}
	}
	cred, herr := inv.open(agent, sealed)
	if herr != nil {
		return "", nil, herr
	}
	switch cred.Kind {
	case connector.CredentialKindAPIKey:
		if !validHeaderValue(cred.Secret) {
			return "", nil, &connector.TurnError{Code: connector.CodeCredentials, Message: "the agent's API key contains characters not allowed in an HTTP header"}
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
		return "", nil, nil
	case connector.CredentialKindBearerToken:
		if !validHeaderValue(cred.Secret) {
			return "", nil, &connector.TurnError{Code: connector.CodeCredentials, Message: "the agent's bearer token contains characters not allowed in an HTTP header"}
		}
		h.Set("Authorization", "Bearer "+cred.Secret)
		return "", nil, nil
	case connector.CredentialKindAWSSigV4:
		if cred.AWS == nil {
			return "", nil, &connector.TurnError{Code: connector.CodeCredentials, Message: "the agent's AWS key cannot be read"}
		}
		sign := sigv4.New(cred.AWS, nil).Sign
		inv.signers.put(agent.ID, sealed, sign)
		return "", sign, nil
	}
	tok, err := inv.tokens.Token(ctx, credential.Target{AgentID: agent.ID, Cred: cred, TokenURL: agent.OAuth2TokenURL, Scopes: agent.OAuth2Scopes})
	if err != nil {
		return "", nil, tokenFailure(err)
	}
	if !validHeaderValue(tok) {
		return "", nil, &connector.TurnError{Code: connector.CodeAgentUnauthorized, Message: "the token endpoint returned an access token not allowed in an HTTP header"}
	}
	h.Set("Authorization", "Bearer "+tok)
	return tok, nil, nil
}

// tokenFailure is the Error of a turn whose access token could not be had. Refused by the
// token endpoint is agent_unauthorized (the credentials are wrong or revoked, as with a 401
// from the agent); a token URL the guard refuses is blocked_address, and never contacted.
func tokenFailure(err error) *connector.TurnError {
	f := classify(err)
	if f.kind == blockedAddress {
		return &connector.TurnError{Code: connector.CodeBlockedAddress, Message: "the token URL's address is one the connector may not call (loopback, private, link-local or another reserved range, or plain http where https is required)"}
	}
	if te, ok := errors.AsType[*credential.TokenError](err); ok {
		if te.Code != "" || te.Status != 0 {
			return &connector.TurnError{Code: connector.CodeAgentUnauthorized, Message: te.Error() + " (check the OAuth 2.0 client or service account set for this agent in the console)"}
		}
		return &connector.TurnError{Code: connector.CodeAgentUnreachable, Message: "the token endpoint could not be reached: " + te.TokenURL + ": " + transportReason(te.Err)}
	}
	if f.ctxEnded {
		return &connector.TurnError{Code: connector.CodeTimeout, Message: "no access token before the deadline: " + err.Error()}
	}
	return &connector.TurnError{Code: connector.CodeAgentUnauthorized, Message: "no access token: " + err.Error()}
}

// Authorizer is what authorizes a request with the agent's credential (sealed): its headers,
// with the access token fetched or taken from the cache as for a turn, or for an AWS key the
// SigV4 signature of each request. The agents service uses it for a card that answered 401 or
// 403 and for the authenticated extended card. Nil when there is no credential. Its errors say
// what failed without the secret.
func (inv *Invoker) Authorizer(ctx context.Context, agent *connector.Agent, sealed *connector.Sealed) (reqauth.Func, error) {
	if sealed == nil {
		return nil, nil
	}
	h := make(http.Header, 2)
	_, sign, herr := inv.authorize(ctx, h, agent, sealed)
	if herr != nil {
		return nil, herr
	}
	if sign != nil {
		return sign, nil
	}
	return reqauth.Header(h), nil
}
