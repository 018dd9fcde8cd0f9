package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	connector "github.com/a2a-connector/a2a-connector"
)

// LookupTurn reads the session's live hold, the session's context with agentID, and the
// versions (updated_at) of the holding and the requested agent, in one query. A tenant or agent
// id that is not a UUID simply matches nothing.
func (s *Store) LookupTurn(ctx context.Context, tenantID, sessionID, agentID string, now time.Time) (connector.TurnLookup, error) {
	tid, ok := parseID(tenantID)
	if !ok {
		return connector.TurnLookup{}, nil
	}
	var aid *string
	if id, ok := parseID(agentID); ok {
		aid = &id
	}
	// pgtype values, not pointers: NULL-able columns without an allocation per column; in one
	// struct, which the scan closure captures as one allocation instead of nine.
	var r struct {
		holdAgent, holdTask, holdContext, holdTurn, contextID pgtype.Text
		holdExpires, holdUpdated, holdAgentUpdated, agentUpd  pgtype.Timestamptz
	}
	err := s.turns.do(ctx, &statement{lockKey: tid + "\x00" + sessionID, sql: `
		select s.hold_agent_id::text, s.hold_task_id, s.hold_context_id, s.hold_turn_id,
		       s.hold_expires_at, s.updated_at, ha.updated_at, ra.updated_at, c.context_id
		  from (select $1::uuid as tenant_id) k
		  left join sessions s
		         on s.tenant_id = k.tenant_id and s.session_id = $2
		        and s.hold_agent_id is not null and s.hold_expires_at > $4
		  left join agents ha on ha.tenant_id = k.tenant_id and ha.id = s.hold_agent_id
		  left join agents ra on ra.tenant_id = k.tenant_id and ra.id = $3::uuid
		  left join session_contexts c
		         on c.tenant_id = k.tenant_id and c.session_id = $2 and c.agent_id = $3::uuid`,
		args: []any{tid, sessionID, aid, now},
		scan: func(row pgx.Row) error {
			return row.Scan(&r.holdAgent, &r.holdTask, &r.holdContext, &r.holdTurn, &r.holdExpires, &r.holdUpdated,
				&r.holdAgentUpdated, &r.agentUpd, &r.contextID)
		},
	})
	if err != nil {
		return connector.TurnLookup{}, fmt.Errorf("look up session %q: %w", sessionID, classify(err))
	}
	var l connector.TurnLookup
	if r.holdAgent.Valid {
		l.Hold = &connector.Hold{TenantID: tid, SessionID: sessionID, AgentID: r.holdAgent.String,
			TaskID: r.holdTask.String, ContextID: r.holdContext.String, TurnID: r.holdTurn.String,
			ExpiresAt: r.holdExpires.Time, UpdatedAt: r.holdUpdated.Time}
	}
	if r.holdAgentUpdated.Valid {
		l.HoldAgentUpdatedAt = r.holdAgentUpdated.Time
	}
	if r.agentUpd.Valid {
		l.AgentUpdatedAt = r.agentUpd.Time
	}
	l.ContextID = r.contextID.String
	return l, nil
}

// SaveTurn writes a turn's result in one statement, or none when there is nothing to write,
// and returns once it is written: a hold set or released commits durably (see saveTurn).
func (s *Store) SaveTurn(ctx context.Context, r connector.TurnRecord) error {
	return s.saveTurn(ctx, r, false)
}

// saveTurn is SaveTurn, or with afterFinal the statement of SaveAfterFinal: it may wait for
// company in the coalescer, and commits without waiting for the WAL flush.
func (s *Store) saveTurn(ctx context.Context, r connector.TurnRecord, afterFinal bool) error {
	tid, ok1 := parseID(r.TenantID)
	aid, ok2 := parseID(r.AgentID)
	if !ok1 || !ok2 {
		return fmt.Errorf("save turn of session %q: %w", r.SessionID, connector.ErrInvalid)
	}
	if r.SetHold != nil && r.ReleaseHold {
		return fmt.Errorf("save turn of session %q: both set and release: %w", r.SessionID, connector.ErrInvalid)
	}
	var (
		holdAgent, holdTask, holdContext, holdTurn *string
		holdExpires                                *time.Time
	)
	if h := r.SetHold; h != nil {
		holdAgent, holdTask, holdContext, holdTurn, holdExpires = &aid, &h.TaskID, &h.ContextID, &h.TurnID, &h.ExpiresAt
	}
	st := &statement{lockKey: tid + "\x00" + r.SessionID, write: true}
	switch {
	case r.SetHold != nil || r.ReleaseHold:
		st.sql = saveTurnAndHoldSQL
		// A hold change the engine waits for (it is told of it in the turn's Final) must
		// outlive a Postgres crash and a failover to a synchronous standby, although the
		// connector's pool commits asynchronously: that costs a WAL flush (and the standby's
		// acknowledgement) on these saves only.
		st.durable = !afterFinal
		st.args = []any{tid, r.SessionID, aid, r.ContextID, holdAgent, holdTask, holdContext, holdTurn, holdExpires, r.StartedAt}
	case r.ContextID != "":
		// Most turns: the hold is unchanged, so only the context is written. (Postgres's CPU
		// per save measured the same, 55 µs, as with the statement above and its hold insert
		// switched off; this one just says what it does.)
		st.sql = saveContextSQL
		st.args = []any{tid, r.SessionID, aid, r.ContextID}
	default:
		return nil // no context and no hold change: nothing to write
	}
	do := s.turns.do
	if afterFinal {
		do = s.turns.doDeferred
	}
	err := do(ctx, st)
	if err != nil {
		return fmt.Errorf("save turn of session %q: %w", r.SessionID, classify(err))
	}
	return nil
}

// saveContextSQL records the context a session now has with an agent (none when the agent is
// gone: a context row needs its agent).
const saveContextSQL = `
	insert into session_contexts (tenant_id, session_id, agent_id, context_id, updated_at)
	select $1, $2, $3, $4, now()
	 where exists (select 1 from agents where tenant_id = $1 and id = $3)
	on conflict (tenant_id, session_id, agent_id)
	do update set context_id = excluded.context_id, updated_at = now()`

// saveTurnAndHoldSQL records the context (when there is one) and the session's new hold state,
// unless a turn that started later already wrote the hold.
const saveTurnAndHoldSQL = `
	with ctx as (
		insert into session_contexts (tenant_id, session_id, agent_id, context_id, updated_at)
		select $1, $2, $3, $4, now()
		 where $4 <> '' and exists (select 1 from agents where tenant_id = $1 and id = $3)
		on conflict (tenant_id, session_id, agent_id)
		do update set context_id = excluded.context_id, updated_at = now()
	)
	insert into sessions as s (tenant_id, session_id, hold_agent_id, hold_task_id, hold_context_id,
	                           hold_turn_id, hold_expires_at, last_turn_started_at, updated_at)
	values ($1, $2, $5::uuid, $6, $7, $8, $9, $10, now())
	on conflict (tenant_id, session_id) do update
	   set hold_agent_id = excluded.hold_agent_id, hold_task_id = excluded.hold_task_id,
	       hold_context_id = excluded.hold_context_id, hold_turn_id = excluded.hold_turn_id,
	       hold_expires_at = excluded.hold_expires_at,
	       last_turn_started_at = excluded.last_turn_started_at, updated_at = now()
	 where s.last_turn_started_at <= excluded.last_turn_started_at`

// ReleaseHold frees the session and returns the live hold it had; ErrNotFound when there was
// none. It also moves the session's turn clock to now, so a turn still running from before the
// release cannot re-establish the hold when it ends.
func (s *Store) ReleaseHold(ctx context.Context, tenantID, sessionID string, now time.Time) (connector.Hold, error) {
	tid, ok := parseID(tenantID)
	if !ok {
		return connector.Hold{}, fmt.Errorf("release session %q: %w", sessionID, connector.ErrNotFound)
	}
	h := connector.Hold{TenantID: tid, SessionID: sessionID}
	var holdContext, holdTurn *string
	// Not idempotent: a second run finds no hold, and the held task would never be canceled.
	err := s.doOnce(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		return conn.QueryRow(ctx, `
		with old as (
			select tenant_id, session_id, hold_agent_id, hold_task_id, hold_context_id, hold_turn_id, hold_expires_at
			  from sessions
			 where tenant_id = $1 and session_id = $2 and hold_agent_id is not null
			   for update)
		update sessions s
		   set hold_agent_id = null, hold_task_id = null, hold_context_id = null, hold_turn_id = null,
		       hold_expires_at = null, updated_at = now(),
		       last_turn_started_at = greatest(s.last_turn_started_at, $3)
		  from old
		 where s.tenant_id = old.tenant_id and s.session_id = old.session_id
		returning old.hold_agent_id::text, old.hold_task_id, old.hold_context_id, old.hold_turn_id, old.hold_expires_at`,
			tid, sessionID, now,
		).Scan(&h.AgentID, &h.TaskID, &holdContext, &holdTurn, &h.ExpiresAt)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return connector.Hold{}, fmt.Errorf("release session %q: no hold: %w", sessionID, connector.ErrNotFound)
	}
	if err != nil {
		return connector.Hold{}, fmt.Errorf("release session %q: %w", sessionID, classify(err))
	}
	h.ContextID, h.TurnID = deref(holdContext), deref(holdTurn)
	if !h.ExpiresAt.After(now) {
		// It had already expired: cleared, but it was not a live hold.
		return connector.Hold{}, fmt.Errorf("release session %q: hold expired: %w", sessionID, connector.ErrNotFound)
	}
	return h, nil
}

// GetHold returns the session's live hold and its agent; ErrNotFound when the session is free,
// its hold expired, or the holding agent no longer exists.
func (s *Store) GetHold(ctx context.Context, tenantID, sessionID string, now time.Time) (connector.Hold, connector.Agent, error) {
	l, err := s.LookupTurn(ctx, tenantID, sessionID, "", now)
	if err != nil {
		return connector.Hold{}, connector.Agent{}, err
	}
	if l.Hold == nil || l.HoldAgentUpdatedAt.IsZero() {
		return connector.Hold{}, connector.Agent{}, fmt.Errorf("session %q: no hold: %w", sessionID, connector.ErrNotFound)
	}
	a, err := s.GetAgent(ctx, tenantID, l.Hold.AgentID)
	if err != nil {
		return connector.Hold{}, connector.Agent{}, err
	}
	return *l.Hold, a, nil
}

// AgentForTurn reads the agent and its sealed API key (nil when none) in one query.
func (s *Store) AgentForTurn(ctx context.Context, tenantID, agentID string) (connector.Agent, *connector.Sealed, error) {
	const op = "read agent for turn"
	tid, ok1 := parseID(tenantID)
	id, ok2 := parseID(agentID)
	if !ok1 || !ok2 {
		return connector.Agent{}, nil, notFound(op, agentID)
	}
	var (
		ciphertext []byte
		keyID      *string
	)
	var a connector.Agent
	err := s.retry.do(ctx, true, func(ctx context.Context) (err error) {
		a, err = scanAgentWith(s.pool.QueryRow(ctx,
			`select `+agentColumns+`, a.api_key_ciphertext, a.api_key_key_id from agents a`+agentJoin+
				` where a.tenant_id = $1 and a.id = $2`, tid, id), &ciphertext, &keyID)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return connector.Agent{}, nil, notFound(op, agentID)
	}
	if err != nil {
		return connector.Agent{}, nil, fmt.Errorf("%s %s: %w", op, id, classify(err))
	}
	if ciphertext == nil || keyID == nil {
		return a, nil, nil
	}
	return a, &connector.Sealed{Ciphertext: ciphertext, KeyID: *keyID}, nil
}

// SweepSessions deletes sessions untouched since before, with their contexts, and contexts
// untouched since before that no live hold covers (those of sessions never held, which have no
// sessions row); it returns how many sessions went. Without it both tables grow with every
// dialog ever had.
func (s *Store) SweepSessions(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `
		with gone as (
			delete from sessions
			 where updated_at < $1 and (hold_expires_at is null or hold_expires_at < $1)
			returning tenant_id, session_id),
		-- A session that was never held has contexts and no sessions row: its contexts go by
		-- their own age. Any context of a swept session goes with it. A context under a hold
		-- that is still live stays, however old. (A scan of session_contexts every sweep: an
		-- index on updated_at would cost every turn's save an index write.)
		contexts as (
			delete from session_contexts c
			 where exists (select 1 from gone where gone.tenant_id = c.tenant_id and gone.session_id = c.session_id)
			    or (c.updated_at < $1 and not exists (
			            select 1 from sessions s
			             where s.tenant_id = c.tenant_id and s.session_id = c.session_id
			               and s.hold_expires_at >= $1)))
		select count(*) from gone`, before).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sweep sessions: %w", classify(err))
	}
	return n, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
