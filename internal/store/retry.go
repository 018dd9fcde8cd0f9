package store

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// retrySafety says whether a statement that failed with some error may run again on another
// connection.
type retrySafety int

const (
	// noRetry: the statement itself failed (a rule, a bug), or the caller's time is up.
	noRetry retrySafety = iota
	// retryIfIdempotent: the connection broke after the statement was sent, so it may have run
	// (its commit's answer lost); only a statement that can run twice may run again.
	retryIfIdempotent
	// retryAlways: Postgres surely did not run the statement (it refused it, or never got it).
	retryAlways
)

// retrySafetyOf classifies err for retrying (see retrySafety). The errors it retries are those
// of a Postgres restart or failover: pooled connections the server has closed (57P01
// admin_shutdown, 57P02 crash_shutdown, a reset or EOF), a server still starting (57P03
// cannot_connect_now), and an old primary come back read-only (25006
// read_only_sql_transaction), which a fresh connection with target_session_attrs=read-write
// avoids.
func retrySafetyOf(err error) retrySafety {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return noRetry
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03", "25006":
			// A statement answered with one of these did not commit: the backend ended (or
			// refused it) before its CommandComplete.
			return retryAlways
		}
		return noRetry // the statement's own error; also a refused login (28P01, 3D000)
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) || pgconn.SafeToRetry(err) {
		return retryAlways
	}
	var netErr net.Error
	if (errors.As(err, &netErr) && !netErr.Timeout()) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return retryIfIdempotent
	}
	return noRetry
}

// retrier runs a statement a second time, on a fresh connection, when the first try failed
// because of its connection rather than the statement (retrySafetyOf).
//
// Why a reset of the pool: after a restart every idle connection in the pool is dead, and a
// retry on the next of them would fail the same way. Resetting closes the idle ones and marks
// the checked-out ones to close when released, so the retry connects anew. gen makes one
// failure per restart reset the pool: the failures of statements that started before the reset
// (they ran on the dead connections) do not reset it again, and close the fresh connections
// of the retries.
//
// Only once: a second failure means Postgres is not back (or not reachable), and the turn must
// fail fast with UNAVAILABLE rather than spend its deadline on a database that is down.
type retrier struct {
	pool *pgxpool.Pool
	gen  atomic.Uint64
}

// do runs op, and runs it again once when it failed in a way retrySafetyOf allows for a
// statement that is (or is not) idempotent, while ctx has not ended. It returns op's last error.
func (r *retrier) do(ctx context.Context, idempotent bool, op func(context.Context) error) error {
	gen := r.gen.Load()
	err := op(ctx)
	if !r.retry(ctx, err, idempotent) {
		return err
	}
	r.reset(gen)
	return op(ctx)
}

// retry tells whether a statement that failed with err may run again.
func (r *retrier) retry(ctx context.Context, err error, idempotent bool) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	switch retrySafetyOf(err) {
	case retryAlways:
		return true
	case retryIfIdempotent:
		return idempotent
	}
	return false
}

// reset empties the pool of the connections of generation gen, unless another failure of that
// generation already did.
func (r *retrier) reset(gen uint64) {
	if r.gen.CompareAndSwap(gen, gen+1) {
		r.pool.Reset()
	}
}

// doOnce runs op, a statement that must not run twice, on a connection that has just answered
// a ping, and runs it again on a fresh connection only when Postgres surely did not run it.
//
// Why the ping: after a crash of Postgres a pooled connection just reads EOF (an immediate
// shutdown sends no error), and a statement that fails so cannot be told from one whose answer
// was lost after it committed. A ping that fails so can: nothing was sent yet. It costs a round
// trip, which is why only the rare statements that cannot be repeated (releasing a hold) pay it.
func (s *Store) doOnce(ctx context.Context, op func(context.Context, *pgxpool.Conn) error) error {
	return s.retry.do(ctx, false, func(ctx context.Context) error {
		conn, err := s.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		if err := conn.Ping(ctx); err != nil {
			return pingError{err}
		}
		return op(ctx, conn)
	})
}

// pingError is a failed ping: whatever broke, the statement after it was never sent.
type pingError struct{ err error }

func (e pingError) Error() string { return "ping: " + e.err.Error() }
func (e pingError) Unwrap() error { return e.err }

// SafeToRetry tells pgconn.SafeToRetry, and so retrySafetyOf, that the statement was not sent.
func (pingError) SafeToRetry() bool { return true }
