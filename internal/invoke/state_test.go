package invoke

import (
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
)

// The connector's own API spells states as A2A 0.x does, whatever the core model holds (A2A 1.0): these
// strings reach the engine, the console and the logs, and must not change with the wire model.
func TestAPIState_is_the_connectors_spelling(t *testing.T) {
	for state, want := range map[a2a.TaskState]string{
		a2a.TaskStateSubmitted:     "submitted",
		a2a.TaskStateWorking:       "working",
		a2a.TaskStateInputRequired: "input-required",
		a2a.TaskStateAuthRequired:  "auth-required",
		a2a.TaskStateCompleted:     "completed",
		a2a.TaskStateFailed:        "failed",
		a2a.TaskStateCanceled:      "canceled",
		a2a.TaskStateRejected:      "rejected",
		a2a.TaskStateUnspecified:   "unknown",
		"":                         "",
		"paused":                   "paused",  // not A2A's: reported as the agent spelled it
		"TASK_STATE_PAUSED":        "paused",  // not A2A's, on a 1.0 wire: as 0.x would spell it
		"TASK_STATE_ON_HOLD":       "on-hold", // idem
	} {
		if got := apiState(state); got != want {
			t.Errorf("apiState(%q) = %q, want %q", state, got, want)
		}
	}
}
