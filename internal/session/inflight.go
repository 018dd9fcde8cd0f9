package session

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
)

// InflightStore keeps replicas' heartbeats and in-flight tasks (internal/store implements it).
type InflightStore interface {
	// SyncInflight writes the replica's heartbeat and replaces its stored tasks, in one round trip.
	SyncInflight(ctx context.Context, replicaID string, tasks []connector.InflightTask) error
	// ClaimOrphans takes, once across all replicas, the tasks of replicas whose heartbeat is
	// older than stale and that no live hold continues.
	ClaimOrphans(ctx context.Context, stale time.Duration) ([]connector.InflightTask, error)
	DeleteReplica(ctx context.Context, replicaID string) error
	AgentForTurn(ctx context.Context, tenantID, agentID string) (connector.Agent, *connector.Sealed, error)
}

// TaskCanceler sends a best-effort tasks/cancel in the background (internal/invoke does).
type TaskCanceler interface {
	CancelTask(ctx context.Context, a connector.Agent, key *connector.Sealed, taskID string)
}

// InflightConfig wires an Inflight.
type InflightConfig struct {
	// ReplicaID names this process among the replicas (pod name + pid + random): unique per
	// process start, so a restarted pod never takes over its dead predecessor's rows.
	ReplicaID string
	Store     InflightStore
	Canceler  TaskCanceler
	// Sync is how often the heartbeat and the tasks are written and orphans looked for
	// (A2AC_INFLIGHT_SYNC, default 2s); Stale is how old a heartbeat must be for its
	// replica's tasks to be orphans (A2AC_INFLIGHT_STALE, default 15s). A replica whose last
	// heartbeat that succeeded started Stale/2 ago is cut off from Postgres (see fence): it
	// refuses turns and ends its running ones.
	Sync, Stale time.Duration
	// OnDatabase is told when the replica is cut off from Postgres (false) and when it
	// reaches it again (true): the binary's gRPC health follows it. Nil: nobody is told.
	OnDatabase func(reachable bool)
	Logger     *slog.Logger
}

// Inflight keeps, in memory, the agent tasks this replica's turns are running, and writes them
// to the store every Sync with a heartbeat, so that when this process dies mid-turn (SIGKILL,
// OOM, a lost node) another replica cancels those tasks at their agents instead of leaving them
// working, or waiting in input-required, for a caller that is gone. Run also does that sweep for
// the other replicas.
//
// It stays off the turn path: a turn only adds and removes one map entry under a mutex; the
// store sees one statement per replica per Sync, however many turns run. The price is a window:
// a task that started less than one Sync before the kill was never written, and is missed.
type Inflight struct {
	cfg   InflightConfig
	fence *fence

	next  atomic.Uint64
	mu    sync.Mutex
	tasks map[uint64]connector.InflightTask
}

// NewInflight returns an Inflight; call Run to sync and sweep, and Close after Run returned.
func NewInflight(c InflightConfig) *Inflight {
	if c.Sync <= 0 {
		c.Sync = 2 * time.Second
	}
	if c.Stale <= 0 {
		c.Stale = 15 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return &Inflight{cfg: c, fence: newFence(c.Stale/2, c.OnDatabase, c.Logger), tasks: make(map[uint64]connector.InflightTask)}
}

// inflightTurn is one turn's entry; its task method is the turn's connector.TurnRequest.OnTask.
type inflightTurn struct {
	f                            *Inflight
	id                           uint64
	tenantID, agentID, sessionID string
}

// begin starts tracking a turn; nothing is stored until the agent names a task.
func (f *Inflight) begin(tenantID, agentID, sessionID string) *inflightTurn {
	return &inflightTurn{f: f, id: f.next.Add(1), tenantID: tenantID, agentID: agentID, sessionID: sessionID}
}

func (t *inflightTurn) task(taskID string) {
	t.f.mu.Lock()
	t.f.tasks[t.id] = connector.InflightTask{TenantID: t.tenantID, AgentID: t.agentID, TaskID: taskID, SessionID: t.sessionID}
	t.f.mu.Unlock()
}

// done ends tracking: the turn ended, and its task is finished, held (the hold owns it) or being
// canceled by invoke.
func (t *inflightTurn) done() {
	t.f.mu.Lock()
	delete(t.f.tasks, t.id)
	t.f.mu.Unlock()
}

func (f *Inflight) snapshot() []connector.InflightTask {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]connector.InflightTask, 0, len(f.tasks))
	for _, t := range f.tasks {
		out = append(out, t)
	}
	return out
}

// Run syncs this replica's tasks and cancels other replicas' orphans every Sync, until ctx
// ends. Every replica runs it; the store's claim makes each orphan canceled by one of them.
// From its start, a replica that cannot write its heartbeat for Stale/2 is cut off (fence).
//
// The heartbeat has a loop of its own: a sweep that cancels a dead replica's thousand tasks,
// one agent lookup each, must not hold it up, or a busy replica would cut itself off.
func (f *Inflight) Run(ctx context.Context) {
	f.fence.beat(time.Now()) // the pool has just connected: as good as a heartbeat
	defer f.fence.stop()
	var sweeps sync.WaitGroup
	defer sweeps.Wait()
	sweeps.Go(func() { f.sweeps(ctx) })
	t := time.NewTimer(f.cfg.Sync)
	defer t.Stop()
	for {
		f.sync(ctx)
		// Cut off, the replica tries its heartbeat more often: the first that succeeds lets it
		// serve again, so turns are refused for at most this long once Postgres is back.
		wait := f.cfg.Sync
		if f.fence.cutOff() {
			wait = min(wait, cutOffRetry)
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// cutOffRetry is how often a replica cut off from Postgres tries its heartbeat.
const cutOffRetry = 200 * time.Millisecond

// sweeps sweeps every Sync until ctx ends; a replica cut off from Postgres does not.
func (f *Inflight) sweeps(ctx context.Context) {
	t := time.NewTicker(f.cfg.Sync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !f.fence.cutOff() {
			f.sweep(ctx)
		}
	}
}

// sweep claims the orphans of dead replicas and cancels them at their agents. The agents are
// read once per sweep each: a dead replica's tasks are mostly of a few agents.
func (f *Inflight) sweep(ctx context.Context) {
	// Bounded by the stale bound: past it this replica looks dead anyway.
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Stale)
	defer cancel()
	orphans, err := f.cfg.Store.ClaimOrphans(ctx, f.cfg.Stale)
	if err != nil {
		if ctx.Err() == nil {
			f.cfg.Logger.WarnContext(ctx, "in-flight tasks: claim orphans", slog.Any("error", err))
		}
		return
	}
	type agentKey struct{ tenantID, agentID string }
	type agent struct {
		a   connector.Agent
		key *connector.Sealed
		err error
	}
	agents := make(map[agentKey]agent)
	for _, o := range orphans {
		k := agentKey{o.TenantID, o.AgentID}
		ag, ok := agents[k]
		if !ok {
			ag.a, ag.key, ag.err = f.cfg.Store.AgentForTurn(ctx, o.TenantID, o.AgentID)
			agents[k] = ag
		}
		if ag.err != nil {
			// Agent or tenant deleted: nothing to cancel at. A store error loses this one
			// cancel: the claim is already gone, and a task lost is what the window allows.
			f.cfg.Logger.InfoContext(ctx, "orphaned task not canceled", slog.String("tenant_id", o.TenantID),
				slog.String("agent_id", o.AgentID), slog.String("task_id", o.TaskID), slog.Any("error", ag.err))
			continue
		}
		f.cfg.Logger.InfoContext(ctx, "canceling orphaned task of a dead replica", slog.String("tenant_id", o.TenantID),
			slog.String("agent_id", o.AgentID), slog.String("task_id", o.TaskID))
		f.cfg.Canceler.CancelTask(ctx, ag.a, ag.key, o.TaskID)
	}
}

// sync writes the heartbeat and the tasks, and tells the fence when that succeeded. A slow
// heartbeat still counts if it lands before the replica would be cut off, so its round trip may
// take until then; cut off (or nearly), it is bounded by one Sync, so that the first try after
// Postgres is back comes soon.
func (f *Inflight) sync(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(f.fence.remaining(), f.cfg.Sync))
	defer cancel()
	start := time.Now()
	if err := f.cfg.Store.SyncInflight(ctx, f.cfg.ReplicaID, f.snapshot()); err != nil {
		if context.Cause(ctx) != context.Canceled { // not the end of Run
			f.cfg.Logger.WarnContext(ctx, "in-flight tasks: sync", slog.Any("error", err))
		}
		return
	}
	f.fence.beat(start)
}

// Close deletes this replica's heartbeat and tasks: a replica that stopped gracefully drained or
// canceled its turns itself. Call it after Run returned and the turns ended.
func (f *Inflight) Close(ctx context.Context) error {
	return f.cfg.Store.DeleteReplica(ctx, f.cfg.ReplicaID)
}
