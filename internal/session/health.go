package session

import (
	"context"
	"errors"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
)

// HealthRecorder receives every turn that reached one of the tenant's agents, for the tenant's
// per-agent health view. It is called on the turn path, so it must not block;
// internal/health's Recorder is one.
type HealthRecorder interface {
	Record(t connector.TurnStat)
}

// recordHealth tells r.health how the turn went, when it concerned an agent of the tenant: one
// that was called, or one that exists but was refused for its own state (disabled, key
// missing), which its owner wants to see. Unknown agents and NO_AGENT are not recorded.
func (r *Router) recordHealth(o *turnObs, err error) {
	if r.health == nil {
		return
	}
	ht := connector.TurnStat{TenantID: o.tenantID, AgentID: o.agentID, Outcome: o.outcome,
		ErrorCode: o.errCode, ErrorMessage: o.errMsg, FirstText: o.firstText, HasText: o.sawText,
		Duration: time.Since(o.start)}
	switch {
	case errors.Is(err, connector.ErrAgentDisabled):
		ht.Outcome, ht.ErrorCode, ht.ErrorMessage = connector.OutcomeError, errorType(err), "the agent is disabled"
	case errors.Is(err, connector.ErrCredentialsMissing):
		ht.Outcome, ht.ErrorCode, ht.ErrorMessage = connector.OutcomeError, errorType(err), "the agent needs credentials and none are set"
	case !o.routed, errors.Is(err, connector.ErrNoInputUnsupported):
		// A no-input turn for an agent without the voice extension was never sent: nothing
		// about the agent to report.
		return
	case ht.Outcome == "" && errors.Is(err, context.Canceled):
		// The caller left before the agent was called: not the agent's failure.
		ht.Outcome = connector.OutcomeCanceled
	case ht.Outcome == "":
		ht.Outcome, ht.ErrorCode, ht.ErrorMessage = connector.OutcomeError, errorType(err), "the turn ended before the agent was called"
	}
	r.health.Record(ht)
}

// errMessage is the message of a turn's error: the connector's own sentence, which never holds
// the user's text (see invoke.Error).
func errMessage(e *connector.TurnError) string {
	if e == nil {
		return ""
	}
	return e.Message
}
