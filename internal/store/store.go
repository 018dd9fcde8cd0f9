// Package store keeps a2a-connector's state in Postgres (pgx/v5, plain SQL): tenants and the
// hashes of their tokens, agents with every revision of their card, and session holds.
//
// Every method takes the tenant and every query is scoped by it: another tenant's agent is
// ErrNotFound, exactly like a missing one, and so is an id that is not a UUID. Errors wrap the
// sentinels of the connector package — ErrNotFound, ErrConflict (a unique rule),
// ErrInvalid (a value the schema refuses), ErrUnavailable (Postgres cannot be reached) — so the
// edges map them without knowing SQL.
//
// The store refuses to interpret what it keeps: it never sees a plaintext API key (it stores the
// ciphertext and key id it is given), never validates a card, and decides nothing about
// sessions. The schema lives in the migrations package; the store does not create it.
package store

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"

	connector "github.com/a2a-connector/a2a-connector"
)

// Store is the Postgres store. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	// turns carries the turn path's two statements (LookupTurn, SaveTurn), coalescing those
	// of concurrent turns into shared round trips.
	turns *coalescer
	// retry runs the turn path's statements once more on a fresh connection when Postgres
	// closed theirs (a restart, a failover): see retrier.
	retry *retrier
	// later runs the saves after turns' Finals (SaveAfterFinal) and those retried until
	// written (SaveUntilWritten).
	later afterFinal
}

// New returns a store on pool. The caller owns the pool and closes it after the last call (and
// after Drain, when turns were saved with SaveAfterFinal).
func New(pool *pgxpool.Pool) *Store {
	r := &retrier{pool: pool}
	return &Store{pool: pool, turns: newCoalescer(pool, r), retry: r, later: newAfterFinal(afterFinalTimeout)}
}

// Ping checks that Postgres answers (readiness). The error wraps connector.ErrUnavailable when
// it cannot be reached.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping postgres: %w", classify(err))
	}
	return nil
}

// parseID returns the canonical form of a UUID, or false when s is not one. Ids that are not
// UUIDs cannot name anything we store, so callers answer ErrNotFound without asking Postgres
// (which would answer with a syntax error instead).
func parseID(s string) (string, bool) {
	id, err := uuid.Parse(s)
	if err != nil {
		return "", false
	}
	// Every turn parses its tenant's and agent's ids, nearly always sent in canonical form
	// already: keep s then, instead of allocating the same string again (8 allocations a turn).
	var canon [36]byte
	hex.Encode(canon[0:8], id[0:4])
	canon[8] = '-'
	hex.Encode(canon[9:13], id[4:6])
	canon[13] = '-'
	hex.Encode(canon[14:18], id[6:8])
	canon[18] = '-'
	hex.Encode(canon[19:23], id[8:10])
	canon[23] = '-'
	hex.Encode(canon[24:], id[10:])
	if string(canon[:]) == s {
		return s, true
	}
	return string(canon[:]), true
}

// classify wraps err with the connector sentinel it stands for, so callers can match it with
// errors.Is while the message keeps the Postgres detail. Errors that stand for none (a bug, a
// context canceled by the caller) come back unchanged.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch code := pgErr.Code; {
		case code == "23505": // unique_violation
			return fmt.Errorf("%w: %w", connector.ErrConflict, err)
		case code == "23503": // foreign_key_violation: the tenant or agent referred to is gone
			return fmt.Errorf("%w: %w", connector.ErrNotFound, err)
		case code == "23502", code == "23514", strings.HasPrefix(code, "22"):
			// not_null_violation, check_violation, data_exception (malformed JSON, …)
			return fmt.Errorf("%w: %w", connector.ErrInvalid, err)
		case strings.HasPrefix(code, "08"), // connection_exception
			code == "53300", // too_many_connections
			code == "57P01", // admin_shutdown
			code == "57P02", // crash_shutdown
			code == "57P03", // cannot_connect_now (starting up, shutting down)
			code == "25006": // read_only_sql_transaction: a standby, or an old primary come back
			return fmt.Errorf("%w: %w", connector.ErrUnavailable, err)
		}
		return err
	}
	// The caller gave up; that says nothing about Postgres.
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, puddle.ErrClosedPool) || pgconn.SafeToRetry(err) {
		return fmt.Errorf("%w: %w", connector.ErrUnavailable, err)
	}
	return err
}
