package invoke

import "github.com/a2a-connector/a2a-connector/internal/a2a"

// apiState is how the connector spells an A2A task state wherever it says one about a turn: the
// gRPC API's StatusUpdate.state, Result.State (the turn log line, the a2a.task.state metric
// attribute, the probe) and the unknown-state error. Those keep A2A 0.x's lowercase names
// whatever wire, generation or binding the agent spoke. The mapping is written out state by
// state rather than taken from the neutral TaskState's values, so that those values can become
// A2A 1.0's (issue 23, item 1) without the connector's API, console and stored rows changing. A state
// A2A does not define keeps the agent's spelling, for the error that reports it.
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
	case a2a.TaskStateUnknown:
		return "unknown"
	}
	return string(s)
}
