package probe

import (
	"strings"

	connector "github.com/a2a-connector/a2a-connector"
)

// ProbeUserID is the platform user "check my agent" names on its turns: an agent that asks for
// the caller's identity receives a token for it (its pairwise sub is stable per tenant, so an
// agent may recognise the check's calls).
const ProbeUserID = "a2a-connector-check"

// identityCheck judges the turn of an agent that asks for the caller's identity: the platform
// could sign the token and the agent took the call that carried it. Whether the agent verifies
// the token is its own business; a refusal says what to check.
func identityCheck(t turn) Result {
	err := t.res.Err
	switch {
	case err != nil && strings.Contains(err.Message, "A2AC_IDENTITY_ISSUER"):
		return Result{Check: CheckIdentity, Status: Fail, Message: "The platform cannot sign the caller's identity token: this deployment has no identity issuer.",
			Fix: "Ask the operator to set A2AC_IDENTITY_ISSUER (the console's public URL), or turn callerIdentity off for this agent."}
	case err != nil && err.Code == connector.CodeInternal:
		return Result{Check: CheckIdentity, Status: Fail, Message: "The caller's identity token could not be issued: " + err.Message, Fix: "Try again; if it persists, tell the operator."}
	case err != nil && err.Code == connector.CodeAgentUnauthorized:
		return Result{Check: CheckIdentity, Status: Fail, Message: "The agent refused the call that carried the caller's identity token (A2A-Caller-Identity): " + err.Message,
			Fix: "Verify the token with the keys at {issuer}/.well-known/jwks.json (ES256), issuer the platform's, audience this agent's card URL as registered; fetch the keys again on an unknown kid (docs: The caller's identity)."}
	}
	if _, ok := t.answer(); !ok {
		return Result{Check: CheckIdentity, Status: Warn, Message: "Not checked: the message did not get through.", Fix: fixEndpointFirst}
	}
	return Result{Check: CheckIdentity, Status: Pass, Message: "The agent took a call carrying the caller's identity token (A2A-Caller-Identity, signed by the platform, for the check's own user \"" + ProbeUserID + "\")."}
}
