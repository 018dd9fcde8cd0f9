package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// Statements of concurrent turns that share a batch each get their own answer, and one that
// Postgres refuses (which aborts the batch's transaction) fails alone: the others are written.
func TestTurnStatements_in_one_batch_each_get_their_own_answer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	a := mustCreate(t, s, newAgent(tenant, "https://batch.example.com"))
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i := range 3 { // sessions with a hold, read back inside the batch
		if err := s.SaveTurn(ctx, holdRecord(tenant, fmt.Sprint("read-", i), a.ID, "t0", now, fmt.Sprint("task-r", i), time.Hour)); err != nil {
			t.Fatal(err)
		}
	}

	queued, resume := s.PauseTurns()
	const saves, reads = 5, 3
	var (
		wg      sync.WaitGroup
		saveErr [saves]error
		badErr  error
		looks   [reads]connector.TurnLookup
		lookErr [reads]error
	)
	for i := range saves {
		wg.Go(func() {
			saveErr[i] = s.SaveTurn(ctx, holdRecord(tenant, fmt.Sprint("write-", i), a.ID, "t1", now, fmt.Sprint("task-w", i), time.Hour))
		})
	}
	wg.Go(func() {
		bad := holdRecord(tenant, "bad", a.ID, "t1", now, "task-bad", time.Hour)
		bad.ContextID = "no\x00nul" // Postgres text refuses NUL: the statement fails on the server
		badErr = s.SaveTurn(ctx, bad)
	})
	for i := range reads {
		wg.Go(func() {
			looks[i], lookErr[i] = s.LookupTurn(ctx, tenant, fmt.Sprint("read-", i), a.ID, now.Add(time.Second))
		})
	}
	for queued() < saves+1+reads {
		time.Sleep(time.Millisecond) // waiting for the goroutines to queue; no verdict depends on it
	}
	resume()
	wg.Wait()

	if !errors.Is(badErr, connector.ErrInvalid) {
		t.Errorf("refused statement: err = %v, want ErrInvalid", badErr)
	}
	for i, err := range saveErr {
		if err != nil {
			t.Errorf("save %d: %v", i, err)
		}
		l, err := s.LookupTurn(ctx, tenant, fmt.Sprint("write-", i), a.ID, now.Add(time.Second))
		if err != nil || l.Hold == nil || l.Hold.TaskID != fmt.Sprint("task-w", i) {
			t.Errorf("session write-%d after the batch: %+v, %v", i, l.Hold, err)
		}
	}
	for i := range reads {
		if lookErr[i] != nil || looks[i].Hold == nil || looks[i].Hold.TaskID != fmt.Sprint("task-r", i) {
			t.Errorf("lookup read-%d in the batch: %+v, %v", i, looks[i].Hold, lookErr[i])
		}
	}
	if l, err := s.LookupTurn(ctx, tenant, "bad", a.ID, now); err != nil || l.Hold != nil {
		t.Errorf("the refused save left a hold: %+v, %v", l.Hold, err)
	}
}

// A caller that gives up while its statement waits for a batch gets its context's error at once,
// and its statement is not run.
func TestTurnStatements_a_queued_caller_that_gives_up_is_not_run(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	a := mustCreate(t, s, newAgent(tenant, "https://batch-cancel.example.com"))
	now := time.Now().UTC().Truncate(time.Microsecond)

	queued, resume := s.PauseTurns()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- s.SaveTurn(ctx, holdRecord(tenant, "gave-up", a.ID, "t1", now, "task", time.Hour)) }()
	for queued() < 1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-errc; !errors.Is(err, ctx.Err()) {
		t.Fatalf("err = %v, want %v", err, ctx.Err())
	}
	resume()
	if l, err := s.LookupTurn(t.Context(), tenant, "gave-up", a.ID, now); err != nil || l.Hold != nil {
		t.Fatalf("the abandoned save ran: %+v, %v", l.Hold, err)
	}
}

// Queued saves go before queued lookups: under a burst of new turns, the saves of the turns
// already answered must not wait behind them (they would give up at their bound). Batches of
// one statement, one at a time here, so the order is the order of the batches: a save queued
// last still runs first, and every lookup queued before it sees the hold it wrote.
func TestTurnStatements_queued_saves_go_before_queued_lookups(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := store.New(testDB.Pool)
	s.SetTurnLimits(1, 1)
	tenant := testDB.NewTenant(t)
	a := mustCreate(t, s, newAgent(tenant, "https://batch-order.example.com"))
	now := time.Now().UTC().Truncate(time.Microsecond)

	queued, resume := s.PauseTurns()
	const reads = 3
	var (
		wg    sync.WaitGroup
		looks [reads]connector.TurnLookup
		errs  [reads]error
	)
	for i := range reads {
		wg.Go(func() { looks[i], errs[i] = s.LookupTurn(ctx, tenant, "order", a.ID, now.Add(time.Second)) })
	}
	for queued() < reads {
		time.Sleep(time.Millisecond)
	}
	var saveErr error
	wg.Go(func() {
		saveErr = s.SaveTurn(ctx, holdRecord(tenant, "order", a.ID, "t1", now, "task-1", time.Hour))
	})
	for queued() < reads+1 {
		time.Sleep(time.Millisecond)
	}
	resume()
	wg.Wait()
	if saveErr != nil {
		t.Fatal(saveErr)
	}
	for i := range reads {
		if errs[i] != nil || looks[i].Hold == nil || looks[i].Hold.TaskID != "task-1" {
			t.Errorf("lookup %d, queued before the save, ran before it: hold %+v, err %v", i, looks[i].Hold, errs[i])
		}
	}
}

// deferredRecord is the save a turn leaves for after its Final: a free session's context and
// turn order.
func deferredRecord(tenant, session, agent string, started time.Time) connector.TurnRecord {
	return connector.TurnRecord{TenantID: tenant, SessionID: session, AgentID: agent, TurnID: "t1", StartedAt: started,
		ContextID: "ctx-" + session, ReleaseHold: true}
}

// saveAfterFinal is SaveAfterFinal, waited for: its error.
func saveAfterFinal(ctx context.Context, s *store.Store, r connector.TurnRecord) error {
	errc := make(chan error, 1)
	s.SaveAfterFinal(ctx, r, func(err error) { errc <- err })
	return <-errc
}

// Saves left for after their turns' Finals wait for each other and go in one transaction; a
// lookup in the meantime runs at once and does not take them along.
func TestTurnStatements_deferred_saves_go_together_and_not_with_lookups(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := store.New(testDB.Pool)
	s.SetDeferredLinger(time.Hour) // only WaitSaves sends them
	tenant := testDB.NewTenant(t)
	a := mustCreate(t, s, newAgent(tenant, "https://deferred.example.com"))
	now := time.Now().UTC().Truncate(time.Microsecond)

	const n = 3
	var (
		wg   sync.WaitGroup
		errs [n]error
	)
	for i := range n {
		wg.Go(func() { errs[i] = saveAfterFinal(ctx, s, deferredRecord(tenant, fmt.Sprint("d-", i), a.ID, now)) })
	}
	waitDeferred(t, s, n)
	l, err := s.LookupTurn(ctx, tenant, "d-0", a.ID, now)
	if err != nil || l.ContextID != "" {
		t.Fatalf("lookup while the saves wait: context %q, %v; want none yet", l.ContextID, err)
	}
	if got := s.DeferredQueued(); got != n {
		t.Fatalf("deferred saves still waiting after a lookup ran: %d, want %d", got, n)
	}

	// A turn of one of the sessions waits for its save: that sends them all at once.
	if err := s.WaitSaves(ctx, tenant, "d-0"); err != nil {
		t.Fatalf("WaitSaves: %v", err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("save %d: %v", i, err)
		}
		l, err := s.LookupTurn(ctx, tenant, fmt.Sprint("d-", i), a.ID, now)
		if want := fmt.Sprint("ctx-d-", i); err != nil || l.ContextID != want {
			t.Errorf("session d-%d after the saves: context %q, %v; want %q", i, l.ContextID, err, want)
		}
	}
	var transactions int
	if err := testDB.Pool.QueryRow(ctx, `select count(distinct xmin::text) from session_contexts where tenant_id = $1`,
		tenant).Scan(&transactions); err != nil {
		t.Fatal(err)
	}
	if transactions != 1 {
		t.Errorf("the %d deferred saves were written by %d transactions, want 1", n, transactions)
	}
}

// A save after the Final goes on its own once its linger has passed. It outlives its caller's
// context (the turn's RPC has ended), but not its own bound: one that cannot go in time is not
// written.
func TestTurnStatements_a_deferred_save_goes_after_its_linger_within_its_own_bound(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := store.New(testDB.Pool)
	s.SetDeferredLinger(time.Hour)
	s.SetAfterFinalTimeout(200 * time.Millisecond)
	tenant := testDB.NewTenant(t)
	a := mustCreate(t, s, newAgent(tenant, "https://linger.example.com"))
	now := time.Now().UTC().Truncate(time.Microsecond)

	gone, leave := context.WithCancel(ctx)
	leave() // the turn's caller has gone: the save still goes, until its own bound
	if err := saveAfterFinal(gone, s, deferredRecord(tenant, "timed-out", a.ID, now)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("save that waited past its bound: err = %v, want context.DeadlineExceeded", err)
	}
	if got := s.DeferredQueued(); got != 0 {
		t.Fatalf("%d deferred saves still waiting after the only one timed out", got)
	}

	// A store with the default bound (seconds, not the 200 ms above), so that a slow machine
	// cannot time this save out: only its caller is gone.
	kept := store.New(testDB.Pool)
	kept.SetDeferredLinger(time.Millisecond)
	if err := saveAfterFinal(gone, kept, deferredRecord(tenant, "kept", a.ID, now)); err != nil {
		t.Fatalf("a deferred save with nothing to go with, its caller gone: %v", err)
	}
	kept.Drain()
	s.Drain()
	for session, want := range map[string]string{"kept": "ctx-kept", "timed-out": ""} {
		if l, err := s.LookupTurn(ctx, tenant, session, a.ID, now); err != nil || l.ContextID != want {
			t.Errorf("session %s: context %q, %v; want %q", session, l.ContextID, err, want)
		}
	}
}

// waitDeferred waits for n deferred saves to be queued (goroutines getting there; a minute is
// far more than they need, so no verdict depends on the machine's speed).
func waitDeferred(t *testing.T, s *store.Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); s.DeferredQueued() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d deferred saves waiting after a minute, want %d", s.DeferredQueued(), n)
		}
	}
}
