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
		looks   [reads]store.TurnLookup
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
		looks [reads]store.TurnLookup
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
