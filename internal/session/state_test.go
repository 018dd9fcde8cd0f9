package session

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
)

func TestAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ttl := 10 * time.Minute
	base := TurnEnd{TenantID: "t", SessionID: "s", TurnID: "turn-2", AgentID: "a", TaskID: "task-1", ContextID: "ctx-1"}
	with := func(o connector.Outcome, interrupted bool) TurnEnd {
		e := base
		e.Outcome, e.Interrupted = o, interrupted
		return e
	}
	held := connector.Hold{TenantID: "t", SessionID: "s", AgentID: "a", TaskID: "task-1", ContextID: "ctx-1",
		TurnID: "turn-2", ExpiresAt: now.Add(ttl), UpdatedAt: now}
	for _, c := range []struct {
		name string
		end  TurnEnd
		want Change
	}{
		{"input_required_holds_with_ttl", with(connector.OutcomeInputRequired, false), Change{Kind: Set, Hold: held}},
		{"completed_releases", with(connector.OutcomeCompleted, false), Change{Kind: Release}},
		{"rejected_hands_back_and_releases", with(connector.OutcomeHandback, false), Change{Kind: Release}},
		{"agent_failure_releases", with(connector.OutcomeFailed, false), Change{Kind: Release}},
		{"agent_canceled_releases", with(connector.OutcomeCanceled, false), Change{Kind: Release}},
		{"timeout_keeps_hold_as_before", with(connector.OutcomeFailed, true), Change{Kind: Keep}},
		{"barge_in_keeps_hold_as_before", with(connector.OutcomeCanceled, true), Change{Kind: Keep}},
		{"input_required_without_task_cannot_hold", func() TurnEnd {
			e := with(connector.OutcomeInputRequired, false)
			e.TaskID = ""
			return e
		}(), Change{Kind: Release}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, After(c.end, now, ttl)); diff != "" {
				t.Errorf("After (-want +got):\n%s", diff)
			}
		})
	}
}
