package session

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/admission"
	"github.com/a2a-connector/a2a-connector/internal/voice"
)

// saveTimeout bounds writing a turn's result before its Final, even when the caller has gone
// (barge-in): the hold decision must not be lost with the RPC. (A save after the Final is the
// store's to bound.)
const saveTimeout = 5 * time.Second

// Invoker runs one turn against one agent (internal/invoke implements it), in the domain's
// records (connector.TurnRequest, connector.TurnResult), so the session does not import invoke.
type Invoker interface {
	Turn(ctx context.Context, req connector.TurnRequest, emit func(connector.TurnEvent)) *connector.TurnResult
	// CancelTask asks the agent to cancel a task, best effort, in the background.
	CancelTask(ctx context.Context, a connector.Agent, key *connector.Sealed, taskID string)
	// TaskEnded asks the agent whether a task is over: in a terminal state, or unknown to it.
	TaskEnded(ctx context.Context, a connector.Agent, key *connector.Sealed, taskID string) (bool, error)
}

// Config wires a Router.
type Config struct {
	Store   connector.SessionStore
	Invoker Invoker
	HoldTTL time.Duration // A2AC_HOLD_TTL; default 10m
	Now     func() time.Time
	Logger  *slog.Logger
	// TracerProvider traces each turn (span session.HandleTurn, parent of the store's and the
	// invoker's spans); nil: no tracing.
	TracerProvider trace.TracerProvider
	// MeterProvider measures turns (a2ac.turns, a2ac.turn.duration,
	// a2ac.turn.time_to_first_text); nil: no metrics.
	MeterProvider metric.MeterProvider
	// Health receives each turn for the tenant's per-agent health view; nil: none.
	Health HealthRecorder
	// Inflight, when set, is told the agent tasks of running turns, so that another replica
	// can cancel them if this one dies mid-turn; nil: not tracked.
	Inflight *Inflight
	// StartedWithin is how long Started may wait for the agent's first event once the agent is
	// being called (it goes out with that event, so as not to delay the call); default 50ms.
	StartedWithin time.Duration
	// Admission caps the turns in flight per tenant, per agent and in all; a turn over a cap
	// is refused at once with an *connector.RefusedError. nil: no caps.
	Admission *admission.Limiter
	// VoiceExtension is the URI of the platform's voice extension (A2AC_VOICE_EXTENSION);
	// "" is connector.VoiceExtensionURI.
	VoiceExtension string
}

// Router runs turns and keeps session holds. It is safe for concurrent use.
type Router struct {
	store   connector.SessionStore
	invoker Invoker
	agents  *agentCache
	holdTTL time.Duration
	now     func() time.Time
	log     *slog.Logger
	obs     *observer
	health  HealthRecorder
	// startedWithin: see Config.StartedWithin.
	startedWithin time.Duration
	admit         *admission.Limiter
	inflight      *Inflight
	voice         *voice.Extension
}

// New returns a Router.
func New(c Config) *Router {
	if c.HoldTTL <= 0 {
		c.HoldTTL = 10 * time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.StartedWithin <= 0 {
		c.StartedWithin = defaultStartedWithin
	}
	return &Router{store: c.Store, invoker: c.Invoker, agents: newAgentCache(4096),
		holdTTL: c.HoldTTL, now: c.Now, log: c.Logger,
		obs: newObserver(c.TracerProvider, c.MeterProvider, c.Logger), health: c.Health,
		startedWithin: c.StartedWithin, admit: c.Admission, inflight: c.Inflight, voice: voice.New(c.VoiceExtension)}
}

// messageNamespace derives A2A messageIds from turn ids (UUIDv5), so a retried turn sends the
// agent the same messageId.
var messageNamespace = uuid.MustParse("6f0b8a52-4a55-4f43-9c35-3f1f6e5d2a10")

// MessageID is the A2A messageId of a turn: stable for (tenant, session, turn).
func MessageID(tenantID, sessionID, turnID string) string {
	return uuid.NewHash(sha1.New(), messageNamespace, []byte(tenantID+"\x00"+sessionID+"\x00"+turnID), 5).String()
}

// HandleTurn routes and runs one turn. Request problems are returned as errors before anything
// reaches the sink: connector.ErrNotFound (agent not in tenant), ErrAgentDisabled,
// ErrCredentialsMissing, ErrUnavailable (store down), *connector.RefusedError (over a cap),
// ErrCutOff (this replica cannot reach Postgres; also how a running turn ends when it is cut
// off). Agent misbehaviour is a connector.TurnFinal{FAILED}.
func (r *Router) HandleTurn(ctx context.Context, t connector.Turn, sink connector.TurnSink) error {
	obs := turnObs{start: time.Now(), tenantID: t.TenantID, agentID: t.AgentID} // the routed agent replaces it
	obs.noteVoice(&t)
	ctx, span := r.obs.start(ctx, t.TenantID)
	turnCtx, leave, err := r.enter(ctx)
	if err == nil {
		err = r.handleTurn(turnCtx, &t, sink, &obs, attempt{})
		if stale, ok := errors.AsType[*staleHoldError](err); ok {
			// The hold was stale and is dropped: the turn runs again, as on a free session.
			err = r.handleTurn(turnCtx, &t, sink, &obs, attempt{afterStaleHold: true, startedSent: stale.startedSent})
		}
		err = leave(err)
	}
	r.obs.end(ctx, span, &obs, err)
	r.recordHealth(&obs, err)
	return err
}

// enter admits the turn past the in-flight tracker's fence: a replica cut off from Postgres
// refuses it (connector.ErrCutOff), and ends it if cut off while it runs (see fence).
func (r *Router) enter(ctx context.Context) (context.Context, func(error) error, error) {
	if r.inflight == nil {
		return ctx, func(err error) error { return err }, nil
	}
	return r.inflight.fence.enter(ctx)
}

// handleTurn is HandleTurn; it notes in obs what the turn's span and metrics report. It runs
// the turn's three steps: route (which agent, which task), run (the agent call, events to the
// sink), record (the hold decision, saved, and the Final). It returns a *staleHoldError when
// the turn was routed by a hold whose task the agent says is over, which it dropped: HandleTurn
// then runs it once more (a).
func (r *Router) handleTurn(ctx context.Context, t *connector.Turn, sink connector.TurnSink, obs *turnObs, a attempt) error {
	// The tenant's and the replica's caps before the lookup, so that a tenant over its cap
	// costs no database round trip; the agent's once routing has named the agent (a hold may
	// send the turn to another than the one asked for). Never queued: a refusal is at once.
	// A turn the edge admitted already (grpcapi, at its stream's start) brings its permit,
	// which its admitter releases.
	permit := admission.Admitted(ctx)
	if permit == nil {
		p, err := r.admit.Acquire(ctx, t.TenantID)
		if err != nil {
			return err
		}
		defer p.Release()
		permit = &p
	}
	startedAt := r.now()
	rt, err := r.route(ctx, t, startedAt)
	if err != nil {
		return err
	}
	if rt.agent == nil {
		obs.outcome = connector.OutcomeNoAgent
		return sink.Final(connector.TurnFinal{Outcome: connector.OutcomeNoAgent})
	}
	if err := permit.AcquireAgent(ctx, rt.agent.ID); err != nil {
		return err
	}
	obs.agentID, obs.held, obs.routed = rt.agent.ID, rt.held, true
	rt.voice = r.voice.Active(rt.agent)
	msg, err := r.voice.Outgoing(t, rt.voice, func(turnID string) string { return MessageID(t.TenantID, t.SessionID, turnID) })
	if err != nil {
		return fmt.Errorf("agent %s: %w", rt.agent.ID, err)
	}
	started := newStartedOnce(sink, rt, r.startedWithin, a.startedSent)
	defer started.stop()
	req := connector.TurnRequest{
		Agent:      rt.agent,
		Credential: rt.key,
		MessageID:  MessageID(t.TenantID, t.SessionID, t.TurnID),
		Text:       msg.Text,
		Metadata:   msg.Metadata,
		TaskID:     rt.taskID,
		ContextID:  rt.contextID,
		UserID:     t.UserID,
	}
	if r.inflight != nil {
		it := r.inflight.begin(t.TenantID, rt.agent.ID, t.SessionID)
		defer it.done() // after record: a hold saved there owns the task from then on
		req.OnTask = it.task
	}
	var wh *withholder // only on a retry that says what the engine already has
	if t.ReceivedTextBytes > 0 {
		wh = &withholder{left: t.ReceivedTextBytes}
	}
	emit := func(e connector.TurnEvent) {
		if started.send() == nil {
			_ = sink.Event(e)
		}
	}
	if rt.voice {
		req.OnMetadata = r.speechWatcher(emit)
	}
	spoke := false // the agent sent an event
	res := r.invoker.Turn(ctx, req, func(e connector.TurnEvent) {
		spoke = true
		if e.Kind == connector.TextEvent {
			if wh != nil {
				if e.Text = wh.cut(e.Text); e.Text == "" {
					return
				}
			}
			obs.text()
		}
		emit(e)
	})
	if !a.afterStaleHold && !spoke && r.staleHold(ctx, t, rt, res, startedAt) {
		return &staleHoldError{startedSent: started.sent()}
	}
	if err := started.send(); err != nil {
		return err
	}
	withheld := 0
	if wh != nil {
		withheld = wh.withheld
	}
	return r.record(ctx, t, rt, startedAt, res, withheld, sink, obs)
}

// routed is where a turn goes; agent is nil when nowhere (NO_AGENT).
type routed struct {
	agent     *connector.Agent // shared with the agent cache: read only
	key       *connector.Sealed
	held      bool            // the turn continues the session's held task
	hold      *connector.Hold // the live hold before the turn, when held
	taskID    string          // the held task, when held
	contextID string
	voice     bool // the agent declares the voice extension
}

// route decides the turn's agent: a live hold on an agent that can still be called wins over
// the engine's choice (docs/architecture.md §4, step 2); a hold on one that cannot is dropped
// for good.
func (r *Router) route(ctx context.Context, t *connector.Turn, startedAt time.Time) (*routed, error) {
	if err := r.store.WaitSaves(ctx, t.TenantID, t.SessionID); err != nil {
		return nil, fmt.Errorf("session %s: wait for the previous turn's save: %w", t.SessionID, err)
	}
	lookup, err := r.store.LookupTurn(ctx, t.TenantID, t.SessionID, t.AgentID, startedAt)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", t.SessionID, err)
	}
	return r.routeTo(ctx, t, &lookup, startedAt)
}

// routeTo is route once the session is looked up: a function of its own, so that its frame
// (it handles agents and errors) is not on the goroutine's stack during the lookup's round trip.
func (r *Router) routeTo(ctx context.Context, t *connector.Turn, lookup *connector.TurnLookup, startedAt time.Time) (*routed, error) {
	if h := lookup.Hold; h != nil {
		a, k, err := r.agent(ctx, t.TenantID, h.AgentID, lookup.HoldAgentUpdatedAt)
		switch {
		case err == nil && a.Invocable() == nil:
			return &routed{agent: a, key: k, held: true, hold: h, taskID: h.TaskID, contextID: h.ContextID}, nil
		case err == nil || errors.Is(err, connector.ErrNotFound):
			r.log.InfoContext(ctx, "dropping hold of an agent that cannot be called",
				slog.String("tenant_id", t.TenantID), slog.String("agent_id", h.AgentID))
			if err := r.dropHold(ctx, t, h.AgentID, startedAt); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("session %s: %w", t.SessionID, err)
		}
	}
	if t.AgentID == "" {
		return &routed{}, nil
	}
	a, k, err := r.agent(ctx, t.TenantID, t.AgentID, lookup.AgentUpdatedAt)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", t.AgentID, err)
	}
	if err := a.Invocable(); err != nil {
		return nil, fmt.Errorf("agent %s: %w", a.ID, err)
	}
	return &routed{agent: a, key: k, contextID: lookup.ContextID}, nil
}

// dropHold releases a hold that must not route the turn, for good: one of an agent that was
// deleted or disabled (it must not come back if the agent is re-enabled), or a stale one; the
// turn is then routed as if there were none. Rare, so the extra round trip is fine.
func (r *Router) dropHold(ctx context.Context, t *connector.Turn, agentID string, startedAt time.Time) error {
	err := r.store.SaveTurn(ctx, connector.TurnRecord{TenantID: t.TenantID, SessionID: t.SessionID,
		AgentID: agentID, TurnID: t.TurnID, StartedAt: startedAt, ReleaseHold: true})
	if err != nil && !errors.Is(err, connector.ErrInvalid) {
		return fmt.Errorf("session %s: drop hold: %w", t.SessionID, err)
	}
	return nil
}

// record decides what the turn does to the hold (After), saves it and sends the Final. A change
// that the engine's next turn depends on (a hold set, or a hold released) is saved before the
// Final says so; one that changes nothing it reads is handed to the store after the Final
// (Store.SaveAfterFinal), so that the RPC ends with the Final.
func (r *Router) record(ctx context.Context, t *connector.Turn, rt *routed, startedAt time.Time, res *connector.TurnResult, withheld int, sink connector.TurnSink, obs *turnObs) error {
	change := After(TurnEnd{
		TenantID: t.TenantID, SessionID: t.SessionID, TurnID: t.TurnID, AgentID: rt.agent.ID,
		Outcome: res.Outcome, TaskID: res.TaskID, ContextID: res.ContextID, Interrupted: res.Interrupted,
	}, r.now(), r.holdTTL)
	final := connector.TurnFinal{Outcome: res.Outcome, Text: res.Text, TaskID: res.TaskID, ContextID: res.ContextID,
		Err: res.Err, Metadata: res.Metadata, WithheldTextBytes: withheld}
	if rt.voice {
		r.voiceEnding(&final, res.EndMetadata)
		obs.finish = final.Finish
	}
	rec := turnRecord(t, rt.agent.ID, startedAt, res.ContextID, change)
	durableFirst := savesBeforeFinal(change.Kind, rt.held)
	if durableFirst {
		if err := r.save(ctx, rec); err != nil {
			r.logSaveError(ctx, t, rt.agent.ID, change.Kind, err)
			if change.Kind == Release {
				// The session is free (the agent is done with the held task) and the engine
				// is told so; left in the store, the hold would route the next turn to a
				// finished task. Queued before the Final, so that the session's next turn on
				// this replica waits for it (another replica drops the stale hold: staleHold).
				r.retryRelease(ctx, t, rec, rt.hold)
			}
			if change.Kind == Set {
				// The agent wants the next turn but we could not remember that: say so rather
				// than let the engine believe the session is held. (The store has already tried
				// again on a fresh connection.) The agent's task waits for an answer no turn
				// will bring: cancel it, or it stays input-required at the agent for good.
				final.Outcome = connector.OutcomeFailed
				final.Err = &connector.TurnError{Code: connector.CodeInternal, Message: "the session hold could not be saved"}
				change.Kind = Release // an unsaved hold is no hold: no expiry to report
				r.invoker.CancelTask(ctx, *rt.agent, rt.key, res.TaskID)
			}
		}
	}
	switch {
	case change.Kind == Set:
		final.HoldExpiresAt = change.Hold.ExpiresAt
	case change.Kind == Keep && rt.held:
		final.HoldExpiresAt = rt.hold.ExpiresAt
	}
	obs.outcome, obs.errCode, obs.errMsg = final.Outcome, errCode(final.Err), errMessage(final.Err)
	var sinkErr error
	if ctx.Err() == nil { // barge-in or deadline: nobody is left to send a Final to
		sinkErr = sink.Final(final)
	}
	if !durableFirst {
		// The turn's span ends with its RPC: a span of its own keeps the save (and its Postgres
		// span, which needs a recording parent) in the turn's trace.
		saveCtx, span := r.obs.startLateSave(ctx, t.TenantID)
		kind := change.Kind
		r.store.SaveAfterFinal(saveCtx, rec, func(err error) {
			if err != nil {
				r.logSaveError(saveCtx, t, rec.AgentID, kind, err)
			}
			r.obs.endLateSave(span, err)
		})
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return sinkErr
}

// logSaveError logs a save that failed; the turn goes on (or is over).
func (r *Router) logSaveError(ctx context.Context, t *connector.Turn, agentID string, k ChangeKind, err error) {
	r.log.ErrorContext(ctx, "save session after turn", slog.String("tenant_id", t.TenantID),
		slog.String("agent_id", agentID), slog.String("change", k.String()), slog.Any("error", err))
}

// savesBeforeFinal tells whether a turn's change must be durable before its Final: a hold set,
// or a hold released, is what the engine's next turn reads. Keeping the hold, or releasing
// when there was none, writes only the session's context and the racing-turn order.
func savesBeforeFinal(k ChangeKind, held bool) bool {
	return k == Set || (k == Release && held)
}

// turnRecord is what the store writes for a turn: the session's context with the agent, and the
// hold change (none for Keep).
func turnRecord(t *connector.Turn, agentID string, startedAt time.Time, contextID string, c Change) connector.TurnRecord {
	rec := connector.TurnRecord{
		TenantID: t.TenantID, SessionID: t.SessionID, AgentID: agentID, TurnID: t.TurnID,
		StartedAt: startedAt, ContextID: contextID,
	}
	switch c.Kind {
	case Set:
		h := c.Hold
		rec.SetHold = &h
	case Release:
		rec.ReleaseHold = true
	}
	return rec
}

// save writes a record before the turn's Final. It runs even when the caller went away, with
// its own bound: the hold decision must not be lost with the RPC.
func (r *Router) save(ctx context.Context, rec connector.TurnRecord) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	return r.store.SaveTurn(ctx, rec)
}

// agent returns the agent and its sealed key from the cache when the stored version
// (updated_at, read by LookupTurn in the same round trip as the hold) matches, else from the
// store. So a change made through any replica's console is seen by the very next turn.
func (r *Router) agent(ctx context.Context, tenantID, agentID string, version time.Time) (*connector.Agent, *connector.Sealed, error) {
	if version.IsZero() {
		return nil, nil, fmt.Errorf("agent %s: %w", agentID, connector.ErrNotFound)
	}
	if e := r.agents.get(tenantID, agentID, version); e != nil {
		return &e.agent, e.key, nil
	}
	a, s, err := r.store.AgentForTurn(ctx, tenantID, agentID)
	if err != nil {
		return nil, nil, err
	}
	e := &cachedAgent{agent: a, key: s}
	r.agents.put(tenantID, e)
	return &e.agent, e.key, nil
}

// Wait returns once the saves that ended turns left for after their Final are done (each is
// bounded by its own timeout: Store.Drain). Call it after the server has stopped taking turns
// and before the store's pool closes.
func (r *Router) Wait() { r.store.Drain() }

// Release ends the session's hold and asks the agent to cancel the held task (best effort, in
// the background). released is false when the session was free.
func (r *Router) Release(ctx context.Context, tenantID, sessionID string) (released bool, agentID string, err error) {
	h, err := r.store.ReleaseHold(ctx, tenantID, sessionID, r.now())
	if err != nil {
		if errors.Is(err, connector.ErrNotFound) {
			return false, "", nil
		}
		return false, "", fmt.Errorf("session %s: release: %w", sessionID, err)
	}
	a, s, err := r.store.AgentForTurn(ctx, tenantID, h.AgentID)
	if err != nil {
		// Agent gone: nothing to cancel at.
		return true, h.AgentID, nil
	}
	r.invoker.CancelTask(ctx, a, s, h.TaskID)
	return true, h.AgentID, nil
}

// Get reports the session's live hold, if any.
func (r *Router) Get(ctx context.Context, tenantID, sessionID string) (connector.SessionInfo, error) {
	h, a, err := r.store.GetHold(ctx, tenantID, sessionID, r.now())
	if errors.Is(err, connector.ErrNotFound) {
		return connector.SessionInfo{}, nil
	}
	if err != nil {
		return connector.SessionInfo{}, fmt.Errorf("session %s: %w", sessionID, err)
	}
	if a.Invocable() != nil {
		return connector.SessionInfo{}, nil
	}
	return connector.SessionInfo{Held: true, Hold: h, AgentName: a.Name}, nil
}

// Agents lists the tenant's agents that can be called now.
func (r *Router) Agents(ctx context.Context, tenantID string) ([]connector.Agent, error) {
	all, err := r.store.ListAgents(ctx, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	out := all[:0]
	for _, a := range all {
		if a.Invocable() == nil {
			out = append(out, a)
		}
	}
	return out, nil
}

func errCode(e *connector.TurnError) string {
	if e == nil {
		return ""
	}
	return e.Code
}
