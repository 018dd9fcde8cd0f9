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
