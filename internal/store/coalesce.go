package store

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// coalescer sends the turn-path statements of concurrent turns to Postgres together, as one
// pipelined pgx.Batch on one connection: group commit without a goroutine of its own.
//
// A caller that finds fewer than maxInFlight batches in flight sends at once, together with
// whatever is queued — it never waits for company, so a lone turn pays nothing but a mutex.
// Otherwise its statement is queued; when a batch ends, its runner hands the queue to the
// oldest waiter, which runs it. Queued writes go before queued reads: a save finishes a turn
// already answered, a lookup starts a new one, and under overload (a burst of thousands of new
// streams) the new turns must wait, not the saves of the turns before them, which would give up
// at their bound and lose the session's context. Under load one round trip (and one wake-up of a Postgres
// backend) serves many turns: that is what it buys (docs/performance-history.md).
//
// A batch is one implicit transaction on the server (one Sync at its end). So a statement that
// fails rolls back the others; the runner then runs each statement of that batch on its own, and
// every caller gets its own statement's result. To keep concurrent batches from deadlocking on
// row locks, a batch's statements run in the order of their lock keys.
//
// A deferred statement (doDeferred: the save of a turn whose Final has gone out) does not start
// a batch and is not taken by one: deferred statements collect for linger after the first of
// them, then queue as writes together and start a batch from the timer's goroutine. At low load
// a lone turn's save would otherwise be a round trip and a commit of its own right when the
// next turn starts, slowing it; under load lookups no longer queue behind saves.
type coalescer struct {
	pool *pgxpool.Pool
	// retry runs a batch (or a statement) again on a fresh connection after a Postgres
	// restart; every statement it carries may run twice (lookups, and saves that never
	// overwrite a newer hold).
	retry       *retrier
	maxInFlight int
	maxBatch    int
	// timeout bounds a batch: it runs detached from the runner's context (it carries other
	// callers' statements), so the runner's cancellation cannot fail them.
	timeout time.Duration

	mu       sync.Mutex
	writes   []*statement // queued, taken first
	reads    []*statement
	inFlight int
	// deferred statements wait for the lingering timer (or sendDeferred), then go together.
	deferred  []*statement
	lingering *time.Timer
	// linger is how long the first deferred statement waits for others.
	linger time.Duration
}

// statement is one caller's SQL in a batch.
type statement struct {
	sql  string
	args []any
	// scan reads the statement's single row; nil for a statement that returns none.
	scan func(pgx.Row) error
	// lockKey orders the statements of a batch (see coalescer).
	lockKey string
	// write: the statement changes rows (queued ahead of reads).
	write bool
	// durable: the statement's commit must wait for the WAL flush (and, under synchronous
	// replication, for the standby) although the pool commits asynchronously: its batch then
	// commits so, as one transaction.
	durable bool

	// ctx is a deferred statement's caller's: the batch the linger's timer starts runs with it.
	ctx context.Context

	done chan error // buffered: the runner never waits for a caller that has gone
	// lead receives the batch this waiter must run; buffered.
	lead chan []*statement
}

// deferredLinger is how long a deferred write waits for a statement to go with. It is the
// longest a save that follows a turn's Final can be late on top of its round trip: what another
// replica may miss when the session's next turn reaches it sooner (docs/decisions.md), and far
// below the seconds between a user's turns.
//
// Why not longer: 50 ms (with a whole batch of 64 going at once) cost Postgres less CPU at c=1,
// but the rate on a fresh database then fell as the tables grew: over 80 s at c=10, 2,163 →
// 1,555 and 2,199 → 1,697 turns/s, where 5 ms went 1,720 → 2,130 and 1,339 → 2,013
// (docs/performance-history.md, "Eighth pass").
const deferredLinger = 5 * time.Millisecond

func newCoalescer(pool *pgxpool.Pool, retry *retrier) *coalescer {
	// Two batches in flight: under load the statements of concurrent turns wait for a batch
	// ahead of them and go together in the next, so one round trip (and one wake-up of a
	// backend) serves more turns, and the rest of the pool stays for the console's and the
	// background's statements. Against a quarter of the pool (4 of the default 16), alternating
	// runs measured Postgres CPU per turn at c=10 0.27 / 0.37 -> 0.22 / 0.23 ms and at c=100
	// 0.14 / 0.19 -> 0.12 / 0.14 ms, with turn latency no worse (docs/performance-history.md).
	const inFlight = 2
	return &coalescer{pool: pool, retry: retry, maxInFlight: inFlight, maxBatch: 64, timeout: 5 * time.Second, linger: deferredLinger}
}

// do runs s, alone or in a batch, and returns its own result.
func (c *coalescer) do(ctx context.Context, s *statement) error {
	s.done = make(chan error, 1)
	c.mu.Lock()
	if c.inFlight < c.maxInFlight {
		c.inFlight++
		batch := append(c.takeLocked(c.maxBatch-1), s)
		c.mu.Unlock()
		c.runAndHandOff(ctx, batch)
		return <-s.done
	}
	s.lead = make(chan []*statement, 1)
	if s.write {
		c.writes = append(c.writes, s)
	} else {
		c.reads = append(c.reads, s)
	}
	c.mu.Unlock()
	return c.await(ctx, s)
}

// await waits for queued s's result, running the batch it is handed.
func (c *coalescer) await(ctx context.Context, s *statement) error {
	select {
	case err := <-s.done:
		return err
	case batch := <-s.lead:
		c.runAndHandOff(ctx, batch)
		return <-s.done
	case <-ctx.Done():
	}
	return c.withdraw(ctx, s)
}

// doDeferred runs s together with the other deferred statements of the last c.linger, and
// returns s's own result. It is for a write nobody waits for (the save of a turn whose Final
// has gone out): at low load a lone turn's save no longer costs a round trip and a commit of
// its own right when the next turn starts, and lookups do not queue behind saves
// (docs/performance-history.md). sendDeferred sends them at once.
func (c *coalescer) doDeferred(ctx context.Context, s *statement) error {
	s.done = make(chan error, 1)
	s.lead = make(chan []*statement, 1)
	s.ctx = ctx
	c.mu.Lock()
	c.deferred = append(c.deferred, s)
	if len(c.deferred) == 1 {
		c.lingering = time.AfterFunc(c.linger, c.sendDeferred)
	}
	c.mu.Unlock()
	return c.await(ctx, s)
}

// sendDeferred queues the deferred statements as writes and starts a batch with them when one
// may start (otherwise they go with the hand-off of one in flight).
func (c *coalescer) sendDeferred() {
	c.mu.Lock()
	if len(c.deferred) == 0 {
		c.mu.Unlock()
		return
	}
	c.lingering.Stop()
	// The batch's spans go to the trace of its oldest deferred statement, like a batch's
	// to its runner's.
	ctx := c.deferred[0].ctx
	c.writes = append(c.writes, c.deferred...)
	c.deferred = nil
	if c.inFlight >= c.maxInFlight {
		c.mu.Unlock()
		return
	}
	c.inFlight++
	batch := c.takeLocked(c.maxBatch)
	c.mu.Unlock()
	c.runAndHandOff(ctx, batch)
}

// withdraw takes s out of the queue for a caller that has gone, or, when s is already in a
// batch, waits for that batch (running it when s was chosen to).
func (c *coalescer) withdraw(ctx context.Context, s *statement) error {
	c.mu.Lock()
	for _, q := range []*[]*statement{&c.writes, &c.reads, &c.deferred} {
		if i := slices.Index(*q, s); i >= 0 {
			*q = slices.Delete(*q, i, i+1)
			if len(c.deferred) == 0 && c.lingering != nil {
				c.lingering.Stop()
			}
			c.mu.Unlock()
			return ctx.Err()
		}
	}
	c.mu.Unlock()
	// Already in a batch: either someone runs it (its result no longer matters to a caller
	// that has gone) or this caller was chosen to run it and must, for the others' sake.
	select {
	case <-s.done:
		return ctx.Err()
	case batch := <-s.lead:
		c.runAndHandOff(ctx, batch)
		return ctx.Err()
	}
}

// takeLocked removes up to n queued statements, writes first, each queue oldest first.
func (c *coalescer) takeLocked(n int) []*statement {
	var batch []*statement
	for _, q := range []*[]*statement{&c.writes, &c.reads} {
		k := min(n-len(batch), len(*q))
		if k == 0 {
			continue
		}
		batch = append(batch, (*q)[:k]...)
		*q = slices.Delete(*q, 0, k)
	}
	return batch
}

// runAndHandOff runs batch, then passes its slot to the oldest waiter with the next batch, or
// frees the slot when nobody waits.
func (c *coalescer) runAndHandOff(ctx context.Context, batch []*statement) {
	c.run(ctx, batch)
	c.mu.Lock()
	next := c.takeLocked(c.maxBatch)
	if len(next) == 0 {
		c.inFlight--
	}
	c.mu.Unlock()
	if len(next) > 0 {
		next[0].lead <- next // next[0] was queued, so it waits on lead
	}
}

// run executes batch and delivers each statement's result.
func (c *coalescer) run(ctx context.Context, batch []*statement) {
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	if len(batch) == 1 {
		batch[0].done <- c.runOne(ctx, batch[0])
		return
	}
	slices.SortStableFunc(batch, func(a, b *statement) int { return cmp.Compare(a.lockKey, b.lockKey) })
	var errs []error
	// A batch whose connection failed is sent again, whole, on a fresh one: its statements
	// all may run twice, and running them apart would cost a round trip each.
	_ = c.retry.do(ctx, true, func(ctx context.Context) error {
		errs = c.send(ctx, batch)
		return connectionFailure(errs)
	})
	if statementFailed(errs) {
		// One statement's error aborted the batch's transaction: the others did nothing.
		// Each runs again on its own, so each caller gets the answer to its own statement.
		for i, s := range batch {
			errs[i] = c.runOne(ctx, s)
		}
	}
	for i, s := range batch {
		s.done <- errs[i]
	}
}

// synchronousCommitSQL makes the rest of the batch's transaction commit synchronously; it
// goes first in a batch with a durable statement.
const synchronousCommitSQL = `select set_config('synchronous_commit', 'on', true)`

// send runs batch as one pipelined pgx.Batch (one implicit transaction) and returns each
// statement's error.
func (c *coalescer) send(ctx context.Context, batch []*statement) []error {
	var b pgx.Batch
	durable := slices.ContainsFunc(batch, func(s *statement) bool { return s.durable })
	if durable {
		b.Queue(synchronousCommitSQL)
	}
	for _, s := range batch {
		b.Queue(s.sql, s.args...)
	}
	errs := make([]error, len(batch))
	br := c.pool.SendBatch(ctx, &b)
	if durable {
		if _, err := br.Exec(); err != nil {
			// The transaction is aborted: nothing after it ran.
			_ = br.Close()
			for i := range errs {
				errs[i] = err
			}
			return errs
		}
	}
	failed := false
	for i, s := range batch {
		if s.scan != nil {
			errs[i] = s.scan(br.QueryRow())
		} else {
			_, errs[i] = br.Exec()
		}
		failed = failed || errs[i] != nil
	}
	if err := br.Close(); err != nil && !failed {
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

// connectionFailure returns the first error of errs that is the connection's rather than a
// statement's (one a retry on a fresh connection may cure), or nil.
func connectionFailure(errs []error) error {
	for _, err := range errs {
		if retrySafetyOf(err) != noRetry {
			return err
		}
	}
	return nil
}

// statementFailed tells an error Postgres raised for a statement (which aborts the batch's
// transaction) from one of the connection, which every statement shares anyway (a server
// shutting down answers with a PgError too, 57P01, but that one is the connection's).
func statementFailed(errs []error) bool {
	for _, err := range errs {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && retrySafetyOf(err) == noRetry {
			return true
		}
	}
	return false
}

// runOne runs s on its own, again on a fresh connection if its connection failed.
func (c *coalescer) runOne(ctx context.Context, s *statement) error {
	return c.retry.do(ctx, true, func(ctx context.Context) error {
		if s.durable {
			return c.send(ctx, []*statement{s})[0]
		}
		if s.scan != nil {
			return s.scan(c.pool.QueryRow(ctx, s.sql, s.args...))
		}
		_, err := c.pool.Exec(ctx, s.sql, s.args...)
		return err
	})
}
