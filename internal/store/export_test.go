package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	connector "github.com/a2a-connector/a2a-connector"
)

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

// Revisions returns every stored card revision of the agent, oldest first. Only tests read
// revisions back; the product writes them (CreateAgent, AddRevision) for audit.
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
