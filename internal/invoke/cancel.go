package invoke

import (
	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2a"
)

// turnEnd is what the cancel-after-turn policy looks at: the turn's task and how the turn ended.
type turnEnd struct {
	// taskID is the task the turn ended on ("" when the agent named none); heldTaskID the task
	// the turn was sent to continue (Request.TaskID, "" for a new task).
	taskID, heldTaskID string
	// state is the last task state seen.
	state   a2a.TaskState
	outcome connector.Outcome
	// interrupted: our side ended the turn (turn timeout, caller cancel, first-event or idle
	// limit).
	interrupted bool
	// taskSeen: the agent named a task during this turn.
	taskSeen bool
	// endedByStatus: a task status ended the turn (interrupted, terminal or not understood).
	endedByStatus bool
	// lost: the stream ended or broke on the agent's side before a final state.
	lost bool
}

// cancelAfter is the cancel-after-turn policy: whether the turn's task gets a best-effort
// tasks/cancel.
//
//	no task, or its last state is final (terminal or interrupted)     -> no
//	our side interrupted the turn (timeout, barge-in)                 -> yes,
//	    unless the turn only continued the held task: the session
//	    keeps its hold (docs/architecture.md §4), the next turn goes on -> no
//	our side refused what the agent sent (protocol error, too large)  -> yes
//	    (a task was seen, the turn failed, no status ended it, the
//	    stream was not lost)
//	the agent lost the connection, or anything else                   -> no: the task may be
//	    running fine; it is resumed or looked up, never canceled for that
func cancelAfter(e turnEnd) bool {
	if e.taskID == "" || e.state.IsTerminal() || e.state.IsInterrupted() {
		return false
	}
	refused := e.taskSeen && e.outcome == connector.OutcomeFailed && !e.endedByStatus && !e.lost
	if !e.interrupted {
		return refused
	}
	keptByHold := e.heldTaskID != "" && e.taskID == e.heldTaskID
	return !keptByHold
}
