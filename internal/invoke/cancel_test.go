package invoke

import (
	"testing"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2a"
)

func TestCancelAfter(t *testing.T) {
	t.Parallel()
	const task, other = "task-1", "task-0"
	// refused is a turn our side failed on what the agent sent (protocol error, too large):
	// the task was seen, no status ended the turn, the stream was not lost.
	refused := turnEnd{taskID: task, state: a2a.TaskStateWorking, outcome: connector.OutcomeFailed, taskSeen: true}
	with := func(change func(e *turnEnd)) turnEnd {
		e := refused
		change(&e)
		return e
	}
	for _, c := range []struct {
		name string
		end  turnEnd
		want bool
	}{
		{"refused_reply_cancels_the_live_task", refused, true},
		{"no_task_nothing_to_cancel", with(func(e *turnEnd) { e.taskID = "" }), false},
		{"completed_task_is_final", with(func(e *turnEnd) { e.state = a2a.TaskStateCompleted }), false},
		{"failed_task_is_final", with(func(e *turnEnd) { e.state = a2a.TaskStateFailed }), false},
		{"input_required_is_final_for_the_turn", with(func(e *turnEnd) { e.state = a2a.TaskStateInputRequired }), false},
		{"agent_lost_the_stream_task_may_be_fine", with(func(e *turnEnd) { e.lost = true }), false},
		{"a_status_ended_the_turn", with(func(e *turnEnd) { e.endedByStatus = true }), false},
		{"task_not_seen_this_turn", with(func(e *turnEnd) { e.taskSeen = false }), false},
		{"outcome_not_failed", with(func(e *turnEnd) { e.outcome = connector.OutcomeCompleted }), false},
		{"timeout_on_a_new_task_cancels_it", with(func(e *turnEnd) {
			e.interrupted, e.outcome, e.taskSeen = true, connector.OutcomeFailed, false
		}), true},
		{"barge_in_on_a_new_task_cancels_it", with(func(e *turnEnd) {
			e.interrupted, e.outcome = true, connector.OutcomeCanceled
		}), true},
		{"interrupted_even_after_a_lost_stream", with(func(e *turnEnd) { e.interrupted, e.lost = true, true }), true},
		{"interrupted_continuation_of_the_held_task_keeps_it", with(func(e *turnEnd) {
			e.interrupted, e.heldTaskID = true, task
		}), false},
		{"interrupted_turn_that_moved_to_another_task_cancels_it", with(func(e *turnEnd) {
			e.interrupted, e.heldTaskID = true, other
		}), true},
		{"refused_reply_on_the_held_task_still_cancels", with(func(e *turnEnd) { e.heldTaskID = task }), true},
		{"interrupted_but_final", with(func(e *turnEnd) {
			e.interrupted, e.state = true, a2a.TaskStateCanceled
		}), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := cancelAfter(c.end); got != c.want {
				t.Errorf("cancelAfter(%+v) = %v, want %v", c.end, got, c.want)
			}
		})
	}
}
