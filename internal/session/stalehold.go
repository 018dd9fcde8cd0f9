package session

import (
	"context"
	"log/slog"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
)

// A stale hold is one whose release the engine was told of (the held task finished) but that
// Postgres did not take when the turn saved it: the store still holds the session for a task
// that is over. Two things keep it from failing the session's next turn:
//
//   - the replica that could not save the release tries again in the background until it is
//     written (retryRelease), and the session's next turn on that replica waits for it before
//     its lookup (Store.WaitSaves);
//   - a replica that meets the hold anyway (the next turn went elsewhere, or came before
//     Postgres was back) sends the turn to the held task as usual; when the agent refuses to
//     continue it and says, asked (tasks/get), that the task is over or unknown, the hold is
//     dropped and the turn runs as on a free session (staleHold).

// attempt says how a turn's run differs from its first: the run after a stale hold was dropped
// checks for none again, and sends no second Started.
type attempt struct {
	afterStaleHold bool
	startedSent    bool
}

// staleHoldError ends a turn's first run when its hold was stale and is dropped; HandleTurn runs
// the turn again.
type staleHoldError struct {
	startedSent bool // the first run sent Started (the agent took longer than StartedWithin to refuse)
}

func (*staleHoldError) Error() string { return "the session's hold was stale; routing the turn again" }

// staleHold reports whether a held turn that the agent answered with nothing but an error was
// routed by a stale hold: the agent refused (an A2A error or an HTTP error status, before any
// event) to continue the held task, and says that task is over or unknown. It then drops the
// hold, durably (the turn's run again must not meet it), and returns true; when the drop cannot
// be saved, the turn ends as the agent answered.
func (r *Router) staleHold(ctx context.Context, t *connector.Turn, rt *routed, res *connector.TurnResult, startedAt time.Time) bool {
	if !rt.held || res.Interrupted || res.Outcome != connector.OutcomeFailed || res.Err == nil || ctx.Err() != nil {
		return false
	}
	if c := res.Err.Code; c != connector.CodeAgentRPCError && c != connector.CodeAgentHTTPStatus {
		return false
	}
	ended, err := r.invoker.TaskEnded(ctx, *rt.agent, rt.key, rt.taskID)
	if err != nil || !ended {
		return false
	}
	r.log.InfoContext(ctx, "dropping a stale hold: the agent says its task is over",
		slog.String("tenant_id", t.TenantID), slog.String("agent_id", rt.agent.ID), slog.String("task_id", rt.taskID))
	if err := r.dropHold(ctx, t, rt.agent.ID, startedAt); err != nil {
		r.log.WarnContext(ctx, "stale hold not dropped", slog.String("tenant_id", t.TenantID), slog.Any("error", err))
		return false
	}
	return true
}

// retryRelease hands a release that could not be saved to the store, to be tried again until it
// is written, in order with the session's other saves, for as long as the hold it ends would
// have lived: past its expiry no lookup sees it.
func (r *Router) retryRelease(ctx context.Context, t *connector.Turn, rec connector.TurnRecord, h *connector.Hold) {
	within := h.ExpiresAt.Sub(r.now())
	if within <= 0 {
		return
	}
	r.store.SaveUntilWritten(ctx, rec, within, func(err error) {
		if err != nil {
			r.logSaveError(ctx, t, rec.AgentID, Release, err)
			return
		}
		r.log.InfoContext(ctx, "hold release saved on a later try", slog.String("tenant_id", t.TenantID),
			slog.String("agent_id", rec.AgentID))
	})
}
