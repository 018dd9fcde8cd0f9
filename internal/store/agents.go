package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	connector "github.com/a2a-connector/a2a-connector"
)

// An agent's API key is stored as internal/secret seals it: AES-256-GCM ciphertext (sealed
// with the agent id as associated data) and the id of the key that sealed it. The store never
// sees the plaintext.
func validSealed(s *connector.Sealed) bool {
	return s != nil && len(s.Ciphertext) > 0 && s.KeyID != ""
}

// RevisionInfo is one stored card revision of an agent.
type RevisionInfo struct {
	Revision        int
	ResolvedCardURL string
	// Card is the card as jsonb gives it back: the same JSON value as fetched, but keys may be
	// reordered and whitespace differs.
	Card      json.RawMessage
	Profile   connector.CardProfile
	Warnings  []connector.Problem
	FetchedAt time.Time
}

// agentColumns and agentJoin read a connector.Agent: the agent row (alias a) joined with its
// live revision, in one query.
const (
	agentColumns = `a.id, a.tenant_id, a.card_url, a.enabled, a.api_key_ciphertext is not null,
	       a.current_revision, a.created_at, a.updated_at, r.profile, r.warnings,
	       case when a.api_key_ciphertext is null then '' else a.credential_kind end,
	       a.on_fallback_revision is not distinct from a.current_revision, a.caller_identity,
	       coalesce(a.tls_ca_pem, '')`
	agentJoin = `
	  join agent_revisions r
	    on r.tenant_id = a.tenant_id and r.agent_id = a.id and r.revision = a.current_revision`
	agentSelect = `select ` + agentColumns + ` from agents a` + agentJoin
)

func scanAgent(row pgx.Row) (connector.Agent, error) { return scanAgentWith(row) }

// scanAgentWith scans agentColumns followed by extra destinations.
func scanAgentWith(row pgx.Row, extra ...any) (connector.Agent, error) {
	var (
		a                 connector.Agent
		profile, warnings []byte
	)
	dest := append([]any{&a.ID, &a.TenantID, &a.CardURL, &a.Enabled, &a.CredentialsSet,
		&a.Revision, &a.CreatedAt, &a.UpdatedAt, &profile, &warnings, &a.CredentialSetKind, &a.OnFallback, &a.CallerIdentity, &a.TLSCAPem}, extra...)
	if err := row.Scan(dest...); err != nil {
		return connector.Agent{}, err
	}
	var err error
	if a.CardProfile, err = decodeProfile(profile); err != nil {
		return connector.Agent{}, err
	}
	if a.Warnings, err = decodeWarnings(warnings); err != nil {
		return connector.Agent{}, err
	}
	return a, nil
}

// querier is what the pool and a transaction have in common.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// getAgent reads one agent through q (the pool or a transaction). Not found is pgx.ErrNoRows.
func getAgent(ctx context.Context, q querier, tenantID, agentID string) (connector.Agent, error) {
	return scanAgent(q.QueryRow(ctx, agentSelect+` where a.tenant_id = $1 and a.id = $2`, tenantID, agentID))
}

// notFound is the error for an agent the tenant does not have (or an id that is no UUID).
func notFound(op, agentID string) error {
	return fmt.Errorf("%s %q: %w", op, agentID, connector.ErrNotFound)
}

// duplicate turns a unique violation on an agent's card URL or card key into a connector.DuplicateError
// naming the agent that holds it (read after the failed transaction). Other errors are
// classified as usual.
func (s *Store) duplicate(ctx context.Context, err error, tenantID, agentID, cardURL, cardKey string) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" ||
		(pgErr.ConstraintName != "agents_tenant_card_url_key" && pgErr.ConstraintName != "agents_tenant_card_key_key") {
		return classify(err)
	}
	// The holder may be gone by now (no row), or the lookup may fail: the conflict stands
	// either way, without a name.
	holder, qerr := s.cardHolder(ctx, tenantID, agentID, cardURL, cardKey)
	if qerr != nil {
		holder = ""
	}
	return &connector.DuplicateError{AgentID: holder, Err: classify(err)}
}

// cardHolder is the id of the tenant's oldest agent, other than exceptID ("": any), that has
// cardURL or cardKey: the rows behind agents_tenant_card_url_key and agents_tenant_card_key_key.
// "" when there is none.
func (s *Store) cardHolder(ctx context.Context, tenantID, exceptID, cardURL, cardKey string) (string, error) {
	var except *string
	if exceptID != "" {
		except = &exceptID
	}
	var holder string
	err := s.pool.QueryRow(ctx,
		`select id from agents where tenant_id = $1 and id is distinct from $2::uuid and (card_url = $3 or card_key = $4)
		  order by created_at, id limit 1`,
		tenantID, except, cardURL, cardKey,
	).Scan(&holder)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return holder, err
}

// AgentWithCard returns the id of the tenant's agent that a registration of cardURL, whose card
// was fetched from resolvedURL, would duplicate: the agent CreateAgent would name in its
// *connector.DuplicateError (the same card URL, or the same CardKey of resolvedURL). "" when
// the registration would store a new agent.
func (s *Store) AgentWithCard(ctx context.Context, tenantID, cardURL, resolvedURL string) (string, error) {
	const op = "agent with card"
	tid, ok := parseID(tenantID)
	if !ok {
		return "", fmt.Errorf("%s: tenant %q: %w", op, tenantID, connector.ErrNotFound)
	}
	id, err := s.cardHolder(ctx, tid, "", cardURL, CardKey(resolvedURL))
	if err != nil {
		return "", fmt.Errorf("%s of tenant %s: %w", op, tid, classify(err))
	}
	return id, nil
}

// CreateAgent stores the agent and its revision 1 in one transaction. A card the tenant has
// registered already (the same card URL, or the same CardKey of ResolvedCardURL) is a
// *connector.DuplicateError matching ErrConflict; a missing tenant is ErrNotFound; a card that is not JSON,
// an empty ResolvedCardURL, or an APIKey with an empty part, is ErrInvalid.
func (s *Store) CreateAgent(ctx context.Context, a connector.NewAgent) (connector.Agent, error) {
	const op = "create agent"
	tid, ok := parseID(a.TenantID)
	if !ok {
		return connector.Agent{}, fmt.Errorf("%s: tenant %q: %w", op, a.TenantID, connector.ErrNotFound)
	}
	var id string
	switch {
	case a.ID == "" && a.Credential != nil:
		return connector.Agent{}, fmt.Errorf("%s: a credential needs the agent id it was sealed with: %w", op, connector.ErrInvalid)
	case a.ID == "":
		id = uuid.NewString()
	default:
		if id, ok = parseID(a.ID); !ok {
			return connector.Agent{}, fmt.Errorf("%s: id %q is not a UUID: %w", op, a.ID, connector.ErrInvalid)
		}
	}
	var ciphertext []byte
	var keyID *string
	if a.Credential != nil {
		if !validSealed(a.Credential) {
			return connector.Agent{}, fmt.Errorf("%s %s: credential without ciphertext or key id: %w", op, id, connector.ErrInvalid)
		}
		ciphertext, keyID = a.Credential.Ciphertext, &a.Credential.KeyID
	}
	if a.ResolvedCardURL == "" {
		return connector.Agent{}, fmt.Errorf("%s %s: no resolved card URL: %w", op, id, connector.ErrInvalid)
	}
	kind := credentialKind(a.CredentialKind)
	key := CardKey(a.ResolvedCardURL)
	profile, warnings, err := encodeRevision(a.Profile, a.Warnings)
	if err != nil {
		return connector.Agent{}, fmt.Errorf("%s %s: %w", op, id, err)
	}

	var agent connector.Agent
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx,
			`insert into agents (tenant_id, id, card_url, card_key, enabled, api_key_ciphertext, api_key_key_id, credential_kind, caller_identity, tls_ca_pem, current_revision)
			 values ($1, $2, $3, $4, $5, $6, $7, $8, $9, nullif($10, ''), 1)`,
			tid, id, a.CardURL, key, a.Enabled, ciphertext, keyID, kind, a.CallerIdentity, a.TLSCAPem,
		); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx,
			`insert into agent_revisions (tenant_id, agent_id, revision, card, profile, warnings, resolved_card_url)
			 values ($1, $2, 1, $3, $4, $5, $6)`,
			tid, id, a.Card, profile, warnings, a.ResolvedCardURL,
		); err != nil {
			return err
		}
		var err error
		agent, err = getAgent(ctx, tx, tid, id)
		return err
	})
	if err != nil {
		return connector.Agent{}, fmt.Errorf("%s %s: %w", op, id, s.duplicate(ctx, err, tid, id, a.CardURL, key))
	}
	return agent, nil
}

// credentialKind is the stored kind of a sealed credential: "" is an API key.
func credentialKind(k string) string {
	if k == "" {
		return connector.CredentialKindAPIKey
	}
	return k
}

func encodeRevision(p connector.CardProfile, w []connector.Problem) (profile, warnings []byte, err error) {
	if profile, err = encodeProfile(p); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", connector.ErrInvalid, err)
	}
	if warnings, err = encodeWarnings(w); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", connector.ErrInvalid, err)
	}
	return profile, warnings, nil
}

// GetAgent returns the tenant's agent at its live revision. Another tenant's agent, a missing
// one and an id that is not a UUID are all ErrNotFound.
func (s *Store) GetAgent(ctx context.Context, tenantID, agentID string) (connector.Agent, error) {
	const op = "get agent"
	tid, ok1 := parseID(tenantID)
	id, ok2 := parseID(agentID)
	if !ok1 || !ok2 {
		return connector.Agent{}, notFound(op, agentID)
	}
	var a connector.Agent
	err := s.retry.do(ctx, true, func(ctx context.Context) (err error) {
		a, err = getAgent(ctx, s.pool, tid, id)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return connector.Agent{}, notFound(op, agentID)
	}
	if err != nil {
		return connector.Agent{}, fmt.Errorf("%s %s: %w", op, id, classify(err))
	}
	return a, nil
}

// ListAgents returns the tenant's agents, oldest first. A tenant without agents (or one that
// does not exist) gets an empty list; a tenant id that is not a UUID is ErrNotFound.
func (s *Store) ListAgents(ctx context.Context, tenantID string) ([]connector.Agent, error) {
	const op = "list agents"
	tid, ok := parseID(tenantID)
	if !ok {
		return nil, fmt.Errorf("%s: tenant %q: %w", op, tenantID, connector.ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, agentSelect+` where a.tenant_id = $1 order by a.created_at, a.id`, tid)
	if err != nil {
		return nil, fmt.Errorf("%s of tenant %s: %w", op, tid, classify(err))
	}
	agents, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (connector.Agent, error) {
		return scanAgent(row)
	})
	if err != nil {
		return nil, fmt.Errorf("%s of tenant %s: %w", op, tid, classify(err))
	}
	return agents, nil
}

// UpdateAgent applies p and returns the agent as it now is. An empty patch changes nothing (not
// even updated_at).
func (s *Store) UpdateAgent(ctx context.Context, tenantID, agentID string, p connector.AgentPatch) (connector.Agent, error) {
	const op = "update agent"
	tid, ok1 := parseID(tenantID)
	id, ok2 := parseID(agentID)
	if !ok1 || !ok2 {
		return connector.Agent{}, notFound(op, agentID)
	}
	args := []any{tid, id}
	var set []string
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	switch {
	case p.Credential != nil && p.ClearCredential:
		return connector.Agent{}, fmt.Errorf("%s %s: both a new credential and clearing it: %w", op, id, connector.ErrInvalid)
	case p.Credential != nil:
		if !validSealed(p.Credential) {
			return connector.Agent{}, fmt.Errorf("%s %s: credential without ciphertext or key id: %w", op, id, connector.ErrInvalid)
		}
		set = append(set, "api_key_ciphertext = "+arg(p.Credential.Ciphertext), "api_key_key_id = "+arg(p.Credential.KeyID),
			"credential_kind = "+arg(credentialKind(p.CredentialKind)))
	case p.ClearCredential:
		set = append(set, "api_key_ciphertext = null", "api_key_key_id = null")
	}
	if p.Enabled != nil {
		set = append(set, "enabled = "+arg(*p.Enabled))
	}
	if p.CallerIdentity != nil {
		set = append(set, "caller_identity = "+arg(*p.CallerIdentity))
	}
	if p.TLSCAPem != nil {
		set = append(set, "tls_ca_pem = nullif("+arg(*p.TLSCAPem)+", '')")
	}
	if len(set) == 0 {
		return s.GetAgent(ctx, tid, id)
	}

	// One statement: the update and the read of the live revision see the same snapshot.
	q := `with a as (update agents set ` + strings.Join(set, ", ") + `, updated_at = now()
	                  where tenant_id = $1 and id = $2 returning *)
	      select ` + agentColumns + ` from a` + agentJoin
	a, err := scanAgent(s.pool.QueryRow(ctx, q, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return connector.Agent{}, notFound(op, agentID)
	}
	if err != nil {
		return connector.Agent{}, fmt.Errorf("%s %s: %w", op, id, classify(err))
	}
	return a, nil
}

// AddRevision stores a new card revision of the agent and makes it live, in one transaction
// that locks the agent row, so concurrent refreshes get consecutive numbers and none is lost.
//
// When nothing would change — the live revision has the same card (as a JSON value: key order
// and spacing aside), resolved URL, profile and warnings — it stores nothing, leaves updated_at
// alone, and returns the agent with added false. A new resolved URL whose CardKey another agent
// of the tenant has is a *DuplicateError (ErrConflict), and the live revision stays; an empty
// ResolvedCardURL is ErrInvalid.
func (s *Store) AddRevision(ctx context.Context, tenantID, agentID string, r connector.Revision) (a connector.Agent, added bool, err error) {
	const op = "add revision to agent"
	tid, ok1 := parseID(tenantID)
	id, ok2 := parseID(agentID)
	if !ok1 || !ok2 {
		return connector.Agent{}, false, notFound(op, agentID)
	}
	profile, warnings, err := encodeRevision(r.Profile, r.Warnings)
	if err != nil {
		return connector.Agent{}, false, fmt.Errorf("%s %s: %w", op, id, err)
	}
	key := CardKey(r.ResolvedCardURL)

	var (
		agent   connector.Agent
		cardURL string
	)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Lock the agent row alone: locking through the join to its live revision would lose
		// the row to a concurrent refresh that moved current_revision on.
		if err := tx.QueryRow(ctx,
			`select card_url from agents where tenant_id = $1 and id = $2 for update`, tid, id,
		).Scan(&cardURL); err != nil {
			return err
		}
		if r.ResolvedCardURL == "" {
			return fmt.Errorf("no resolved card URL: %w", connector.ErrInvalid)
		}
		var same bool
		if err := tx.QueryRow(ctx,
			`select r.card = $3::jsonb and r.profile = $4::jsonb and r.warnings = $5::jsonb and r.resolved_card_url = $6
			   from agents a`+agentJoin+`
			  where a.tenant_id = $1 and a.id = $2`,
			tid, id, r.Card, profile, warnings, r.ResolvedCardURL,
		).Scan(&same); err != nil {
			return err
		}
		if !same {
			// max+1 rather than current_revision+1: the live revision need not be the newest
			// one forever (a rollback to an older card would keep the newer ones).
			var next int
			if err := tx.QueryRow(ctx,
				`select coalesce(max(revision), 0) + 1 from agent_revisions where tenant_id = $1 and agent_id = $2`,
				tid, id,
			).Scan(&next); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx,
				`insert into agent_revisions (tenant_id, agent_id, revision, card, profile, warnings, resolved_card_url)
				 values ($1, $2, $3, $4, $5, $6, $7)`,
				tid, id, next, r.Card, profile, warnings, r.ResolvedCardURL,
			); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx,
				`update agents set current_revision = $3, card_key = $4, updated_at = now() where tenant_id = $1 and id = $2`,
				tid, id, next, key,
			); err != nil {
				return err
			}
			added = true
		}
		var err error
		agent, err = getAgent(ctx, tx, tid, id)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return connector.Agent{}, false, notFound(op, agentID)
	}
	if err != nil {
		return connector.Agent{}, false, fmt.Errorf("%s %s: %w", op, id, s.duplicate(ctx, err, tid, id, cardURL, key))
	}
	return agent, added, nil
}

// MarkOnFallback records that the agent's turns use its card's fallback interface from now on:
// at its live revision, which must be revision (a refresh in between makes this a no-op, since
// the new card starts over). updated_at moves, so that every replica's cached copy of the agent
// is read again. An agent without a fallback, or already marked, is left as it is.
func (s *Store) MarkOnFallback(ctx context.Context, tenantID, agentID string, revision int) error {
	const op = "mark agent on fallback"
	tid, ok1 := parseID(tenantID)
	id, ok2 := parseID(agentID)
	if !ok1 || !ok2 {
		return notFound(op, agentID)
	}
	_, err := s.pool.Exec(ctx, `
		update agents a set on_fallback_revision = a.current_revision, updated_at = now()
		  from agent_revisions r
		 where a.tenant_id = $1 and a.id = $2 and a.current_revision = $3
		   and a.on_fallback_revision is distinct from a.current_revision
		   and r.tenant_id = a.tenant_id and r.agent_id = a.id and r.revision = a.current_revision
		   and coalesce(r.profile->'fallback', 'null'::jsonb) <> 'null'::jsonb`,
		tid, id, revision)
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, id, classify(err))
	}
	return nil
}

// AgentsWithEndpoint returns the ids of the tenant's agents whose live revision calls
// endpointURL, oldest first: registering one agent twice under two card URLs shows as two agents
// with one endpoint.
func (s *Store) AgentsWithEndpoint(ctx context.Context, tenantID, endpointURL string) ([]string, error) {
	const op = "agents with endpoint"
	tid, ok := parseID(tenantID)
	if !ok {
		return nil, fmt.Errorf("%s: tenant %q: %w", op, tenantID, connector.ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, `select a.id from agents a`+agentJoin+`
		  where a.tenant_id = $1 and r.profile->>'endpointUrl' = $2
		  order by a.created_at, a.id`, tid, endpointURL)
	if err != nil {
		return nil, fmt.Errorf("%s of tenant %s: %w", op, tid, classify(err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("%s of tenant %s: %w", op, tid, classify(err))
	}
	return ids, nil
}

// Revisions returns every stored card revision of the agent, oldest first (audit, tests).
func (s *Store) Revisions(ctx context.Context, tenantID, agentID string) ([]RevisionInfo, error) {
	const op = "list revisions of agent"
	tid, ok1 := parseID(tenantID)
	id, ok2 := parseID(agentID)
	if !ok1 || !ok2 {
		return nil, notFound(op, agentID)
	}
	rows, err := s.pool.Query(ctx,
		`select revision, resolved_card_url, card, profile, warnings, fetched_at
		   from agent_revisions
		  where tenant_id = $1 and agent_id = $2
		  order by revision`,
		tid, id,
	)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, id, classify(err))
	}
	revs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RevisionInfo, error) {
		var (
			r                 RevisionInfo
			profile, warnings []byte
		)
		if err := row.Scan(&r.Revision, &r.ResolvedCardURL, &r.Card, &profile, &warnings, &r.FetchedAt); err != nil {
			return RevisionInfo{}, err
		}
		var err error
		if r.Profile, err = decodeProfile(profile); err != nil {
			return RevisionInfo{}, err
		}
		if r.Warnings, err = decodeWarnings(warnings); err != nil {
			return RevisionInfo{}, err
		}
		return r, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, id, classify(err))
	}
	// Every agent has at least its first revision (a deferred foreign key guarantees it), so
	// none means no such agent in this tenant.
	if len(revs) == 0 {
		return nil, notFound(op, agentID)
	}
	return revs, nil
}

// AgentCredential returns the agent's sealed credential, or nil and no error when none is set.
func (s *Store) AgentCredential(ctx context.Context, tenantID, agentID string) (*connector.Sealed, error) {
	const op = "read credential of agent"
	tid, ok1 := parseID(tenantID)
	id, ok2 := parseID(agentID)
	if !ok1 || !ok2 {
		return nil, notFound(op, agentID)
	}
	var (
		ciphertext []byte
		keyID      *string
	)
	err := s.pool.QueryRow(ctx,
		`select api_key_ciphertext, api_key_key_id from agents where tenant_id = $1 and id = $2`, tid, id,
	).Scan(&ciphertext, &keyID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound(op, agentID)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, id, classify(err))
	}
	if ciphertext == nil || keyID == nil {
		return nil, nil
	}
	return &connector.Sealed{Ciphertext: ciphertext, KeyID: *keyID}, nil
}

// DeleteAgent removes the agent with its revisions and session contexts, and frees the sessions
// it held. It returns the holds it released (live or expired), so the caller can cancel their
// tasks at the agent.
func (s *Store) DeleteAgent(ctx context.Context, tenantID, agentID string) ([]connector.Hold, error) {
	const op = "delete agent"
	tid, ok1 := parseID(tenantID)
	id, ok2 := parseID(agentID)
	if !ok1 || !ok2 {
		return nil, notFound(op, agentID)
	}
	// One statement, so the holds go with the agent atomically: its sessions become free.
	rows, err := s.pool.Query(ctx, `
		with old as (
			select session_id, hold_task_id, hold_context_id, hold_turn_id, hold_expires_at
			  from sessions
			 where tenant_id = $1 and hold_agent_id = $2
			   for update),
		released as (
			update sessions s set hold_agent_id = null, hold_task_id = null, hold_context_id = null,
			       hold_turn_id = null, hold_expires_at = null, updated_at = now()
			  from old
			 where s.tenant_id = $1 and s.session_id = old.session_id
			returning old.*),
		gone as (
			delete from agents where tenant_id = $1 and id = $2 returning id),
		contexts as (
			-- No foreign key cascades here (migration 005): the contexts go in this statement.
			delete from session_contexts where tenant_id = $1 and agent_id = $2)
		select (select count(*) from gone), r.session_id, r.hold_task_id, r.hold_context_id,
		       r.hold_turn_id, r.hold_expires_at
		  from (select 1) one left join released r on true`, tid, id)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, id, classify(err))
	}
	var (
		deleted  int64
		released []connector.Hold
	)
	for rows.Next() {
		var (
			session, task, context, turn *string
			expires                      *time.Time
		)
		if err := rows.Scan(&deleted, &session, &task, &context, &turn, &expires); err != nil {
			rows.Close()
			return nil, fmt.Errorf("%s %s: %w", op, id, classify(err))
		}
		if session != nil && expires != nil {
			released = append(released, connector.Hold{TenantID: tid, SessionID: *session, AgentID: id,
				TaskID: deref(task), ContextID: deref(context), TurnID: deref(turn), ExpiresAt: *expires})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, id, classify(err))
	}
	if deleted == 0 {
		return nil, notFound(op, agentID)
	}
	return released, nil
}
