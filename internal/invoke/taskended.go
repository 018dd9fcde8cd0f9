package invoke

import (
	"context"
	"fmt"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2a"
)

// TaskEnded asks the agent (tasks/get; 1.0: GetTask) whether taskID is over: true when the
// agent reports it in a terminal state (completed, failed, canceled, rejected) or does not know
// it (TaskNotFound, or HTTP 404 on HTTP+JSON). The session router asks it of a held task the
// agent refused to continue: a hold on a task that is over is stale, and the turn is routed as
// on a free session. Bounded by CancelTimeout within ctx; an error says nothing either way.
func (inv *Invoker) TaskEnded(ctx context.Context, agent connector.Agent, sealed *connector.Sealed, taskID string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, inv.opts.CancelTimeout)
	defer cancel()
	hdr, _, herr := inv.header(ctx, &agent, sealed)
	if herr != nil {
		return false, fmt.Errorf("get task %s: %w", taskID, herr)
	}
	rt, _ := inv.routes(&agent)
	task, err := inv.client.GetTask(ctx, rt.endpoint(rt.url, hdr), a2a.GetTaskRequest{ID: taskID})
	if taskNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("get task %s: %w", taskID, err)
	}
	return task.Status.State.IsTerminal(), nil
}

// taskNotFound reports whether the agent answered that it does not know the task.
func taskNotFound(err error) bool {
	f := classify(err)
	return f.rpc != nil && f.rpc.Code == a2a.CodeTaskNotFound
}
