package invoke

import (
	"context"
	"errors"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/identity"
)

// turnHeader is header plus, for an agent that asks for it on a turn that names a user, the
// caller's identity token. A turn without a user sends none: the agent decides what an
// anonymous call may do.
func (inv *Invoker) turnHeader(ctx context.Context, req *connector.TurnRequest) (callAuth, string, *connector.TurnError) {
	h, accessToken, herr := inv.header(ctx, req.Agent, req.Credential)
	if herr != nil || !req.Agent.CallerIdentity || req.UserID == "" {
		return h, accessToken, herr
	}
	if inv.opts.Identity == nil {
		return callAuth{}, "", &connector.TurnError{Code: connector.CodeCredentials, Message: "the agent asks for the caller's identity, but this connector has no identity issuer (A2AC_IDENTITY_ISSUER)"}
	}
	tok, err := inv.opts.Identity.Token(ctx, req.Agent.TenantID, req.UserID, req.Agent.CardURL)
	if err != nil {
		// identity's errors never hold the user id or the key.
		if errors.Is(err, identity.ErrNoIssuer) {
			return callAuth{}, "", &connector.TurnError{Code: connector.CodeCredentials, Message: "the agent asks for the caller's identity, but this connector has no identity issuer (A2AC_IDENTITY_ISSUER)"}
		}
		return callAuth{}, "", &connector.TurnError{Code: connector.CodeInternal, Message: "the caller's identity token cannot be issued: " + err.Error()}
	}
	h.header.Set(identity.Header, tok) // signed with the rest when the agent takes SigV4
	return h, accessToken, nil
}
