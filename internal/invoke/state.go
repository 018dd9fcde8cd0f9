package invoke

import (
	"strings"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
)

// apiState is how the connector spells an A2A task state wherever it says one about a turn: the
// gRPC API's StatusUpdate.state, Result.State (the turn log line, the a2a.task.state metric
// attribute, the probe) and the unknown-state error. Those keep A2A 0.x's lowercase names
// whatever wire, generation or binding the agent spoke. The mapping is written out state by
// state rather than derived from the core model's values (A2A 1.0's TASK_STATE_*), so that the
// connector's API, console and stored rows do not depend on the wire layer's model. A state A2A
// does not define keeps the agent's spelling (a 1.0 one without its TASK_STATE_ prefix,
// lowercased, as 0.x would spell it), for the error that reports it.
func apiState(s a2a.TaskState) string {
	switch s {
	case a2a.TaskStateSubmitted:
		return "submitted"
	case a2a.TaskStateWorking:
		return "working"
	case a2a.TaskStateInputRequired:
		return "input-required"
	case a2a.TaskStateAuthRequired:
		return "auth-required"
	case a2a.TaskStateCompleted:
		return "completed"
	case a2a.TaskStateFailed:
		return "failed"
	case a2a.TaskStateCanceled:
		return "canceled"
	case a2a.TaskStateRejected:
		return "rejected"
	case a2a.TaskStateUnspecified:
		return "unknown"
	}
	if rest, ok := strings.CutPrefix(string(s), "TASK_STATE_"); ok {
		return strings.ReplaceAll(strings.ToLower(rest), "_", "-")
	}
	return string(s)
}
