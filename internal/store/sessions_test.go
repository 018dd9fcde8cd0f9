package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

func holdRecord(tenant, session, agent, turn string, started time.Time, task string, ttl time.Duration) connector.TurnRecord {
	return connector.TurnRecord{TenantID: tenant, SessionID: session, AgentID: agent, TurnID: turn, StartedAt: started,
		ContextID: "ctx-" + task, SetHold: &connector.Hold{TaskID: task, ContextID: "ctx-" + task, TurnID: turn,
			ExpiresAt: started.Add(ttl)}}
}

func TestSessions_hold_lookup_release(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	a := mustCreate(t, s, newAgent(tenant, "https://hold.example.com"))
	other := mustCreate(t, s, newAgent(tenant, "https://other.example.com"))
	now := time.Now().UTC().Truncate(time.Microsecond)

	// A never-seen session: no hold, no context, but both agents' versions are reported.
	l, err := s.LookupTurn(ctx, tenant, "sess", other.ID, now)
	if err != nil {
		t.Fatal(err)
	}
	if l.Hold != nil || l.ContextID != "" || !l.AgentUpdatedAt.Equal(other.UpdatedAt) {
		t.Fatalf("fresh lookup = %+v", l)
	}

	if err := s.SaveTurn(ctx, holdRecord(tenant, "sess", a.ID, "t1", now, "task-1", time.Minute)); err != nil {
		t.Fatal(err)
	}
	l, err = s.LookupTurn(ctx, tenant, "sess", a.ID, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := &connector.Hold{TenantID: tenant, SessionID: "sess", AgentID: a.ID, TaskID: "task-1", ContextID: "ctx-task-1",
		TurnID: "t1", ExpiresAt: now.Add(time.Minute)}
	if diff := cmp.Diff(want, l.Hold, cmp.Comparer(func(x, y time.Time) bool { return x.Equal(y) }),
		cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".UpdatedAt" }, cmp.Ignore())); diff != "" {
		t.Fatalf("hold (-want +got):\n%s", diff)
	}
	if l.ContextID != "ctx-task-1" || !l.HoldAgentUpdatedAt.Equal(a.UpdatedAt) {
		t.Fatalf("lookup = %+v", l)
	}

	// Another tenant sees nothing of it.
	stranger := testDB.NewTenant(t)
	if l, err := s.LookupTurn(ctx, stranger, "sess", a.ID, now); err != nil || l.Hold != nil || !l.AgentUpdatedAt.IsZero() {
		t.Fatalf("other tenant lookup = %+v, %v", l, err)
	}
	if _, err := s.ReleaseHold(ctx, stranger, "sess", now); !errors.Is(err, connector.ErrNotFound) {
		t.Fatalf("other tenant release: %v", err)
	}

	// Expired holds are not live.
	if l, _ := s.LookupTurn(ctx, tenant, "sess", "", now.Add(2*time.Minute)); l.Hold != nil {
		t.Fatal("expired hold still live")
	}

	h, err := s.ReleaseHold(ctx, tenant, "sess", now.Add(2*time.Second))
	if err != nil || h.AgentID != a.ID || h.TaskID != "task-1" {
		t.Fatalf("ReleaseHold = %+v, %v", h, err)
	}
	if _, err := s.ReleaseHold(ctx, tenant, "sess", now.Add(3*time.Second)); !errors.Is(err, connector.ErrNotFound) {
		t.Fatalf("second release: %v", err)
	}
	// The context survives the release (continuity across tasks).
	if l, _ := s.LookupTurn(ctx, tenant, "sess", a.ID, now); l.Hold != nil || l.ContextID != "ctx-task-1" {
		t.Fatalf("after release lookup = %+v", l)
	}
}

// docs/architecture.md §4, step 4: of two racing turns, the one that started later decides the hold, whatever
// order they finish in; and a release beats a turn that started before it.
func TestSessions_racing_turns_newer_wins(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	a := mustCreate(t, s, newAgent(tenant, "https://race.example.com"))
	t0 := time.Now().UTC()

	// The newer turn (started t0+1s) releases first; the older (t0) finishes later wanting a hold.
	newer := connector.TurnRecord{TenantID: tenant, SessionID: "race", AgentID: a.ID, TurnID: "new", StartedAt: t0.Add(time.Second), ReleaseHold: true}
	if err := s.SaveTurn(ctx, newer); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveTurn(ctx, holdRecord(tenant, "race", a.ID, "old", t0, "task-old", time.Hour)); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.LookupTurn(ctx, tenant, "race", "", t0); l.Hold != nil {
		t.Fatalf("older turn overwrote the newer turn's release: %+v", l.Hold)
	}

	// The other way round: the newer turn holds, the older one's completion must not free it.
	if err := s.SaveTurn(ctx, holdRecord(tenant, "race2", a.ID, "new", t0.Add(time.Second), "task-new", time.Hour)); err != nil {
		t.Fatal(err)
	}
	older := connector.TurnRecord{TenantID: tenant, SessionID: "race2", AgentID: a.ID, TurnID: "old", StartedAt: t0, ReleaseHold: true}
	if err := s.SaveTurn(ctx, older); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.LookupTurn(ctx, tenant, "race2", "", t0); l.Hold == nil || l.Hold.TaskID != "task-new" {
		t.Fatalf("hold after older release = %+v", l.Hold)
	}

	// A turn that started before a release cannot re-establish the hold when it finishes.
	if _, err := s.ReleaseHold(ctx, tenant, "race2", t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveTurn(ctx, holdRecord(tenant, "race2", a.ID, "mid", t0.Add(1500*time.Millisecond), "task-mid", time.Hour)); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.LookupTurn(ctx, tenant, "race2", "", t0); l.Hold != nil {
		t.Fatalf("a turn from before the release re-held the session: %+v", l.Hold)
	}
}

func TestSessions_sweep_and_invalid_records(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	a := mustCreate(t, s, newAgent(tenant, "https://sweep.example.com"))
	if err := s.SaveTurn(ctx, holdRecord(tenant, "sweep", a.ID, "t", time.Now(), "task", time.Minute)); err != nil {
		t.Fatal(err)
	}
	bad := holdRecord(tenant, "sweep", a.ID, "t", time.Now(), "task", time.Minute)
	bad.ReleaseHold = true
	if err := s.SaveTurn(ctx, bad); !errors.Is(err, connector.ErrInvalid) {
		t.Fatalf("set and release together: %v", err)
	}
	// The sweep covers every tenant and parallel tests share the database: only cut-offs in the
	// past (which no other test's fresh rows reach) are used, and only this tenant's rows are
	// asserted on.
	if _, err := s.SweepSessions(ctx, time.Now().Add(-time.Hour)); err != nil {
		t.Fatalf("sweep of nothing old: %v", err)
	}
	// Idle for two days but still held (the hold expires in the future): not swept.
	if _, err := testDB.Pool.Exec(ctx, `update sessions set updated_at = now() - interval '2 days',
		hold_expires_at = now() + interval '1 minute' where tenant_id = $1`, tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SweepSessions(ctx, time.Now().Add(-24*time.Hour)); err != nil {
		t.Fatalf("sweep before expiry: %v", err)
	}
	if got := countRows(t, `select count(*) from sessions where tenant_id = $1`, tenant); got != 1 {
		t.Fatalf("sessions = %d: a live hold was swept", got)
	}
	// Once idle and expired long ago, the session and its contexts go.
	if _, err := testDB.Pool.Exec(ctx, `update sessions set updated_at = now() - interval '2 days',
		hold_expires_at = now() - interval '2 days' where tenant_id = $1`, tenant); err != nil {
		t.Fatal(err)
	}
	// Not its count: a parallel test's sweep with the same cut-off may take this tenant's rows
	// first (the sweep covers every tenant). The rows left say whether they went.
	if _, err := s.SweepSessions(ctx, time.Now().Add(-24*time.Hour)); err != nil {
		t.Fatalf("sweep of an old session: %v", err)
	}
	if got := countRows(t, `select count(*) from sessions where tenant_id = $1`, tenant) +
		countRows(t, `select count(*) from session_contexts where tenant_id = $1`, tenant); got != 0 {
		t.Fatalf("rows left after sweep = %d", got)
	}
}

// A session that was never held has a context with its agent and no sessions row: its context
// goes once idle past the cut-off, by its own age, or the table would grow with every dialog
// ever had. A fresh context stays, and so does an old one under a hold that is still live.
func TestSessions_sweep_takes_old_contexts_of_sessions_never_held(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	a := mustCreate(t, s, newAgent(tenant, "https://sweep-free.example.com"))
	for _, session := range []string{"free-old", "free-new"} {
		if err := s.SaveTurn(ctx, connector.TurnRecord{TenantID: tenant, SessionID: session, AgentID: a.ID,
			TurnID: "t", StartedAt: time.Now(), ContextID: "ctx-" + session}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveTurn(ctx, holdRecord(tenant, "held-old", a.ID, "t", time.Now(), "task", time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := countRows(t, `select count(*) from sessions where tenant_id = $1`, tenant); got != 1 {
		t.Fatalf("sessions rows = %d, want 1 (only the held one): the test's premise changed", got)
	}
	// Idle for two days: the free session's context, and the held one's (its hold still live).
	if _, err := testDB.Pool.Exec(ctx, `update session_contexts set updated_at = now() - interval '2 days'
		 where tenant_id = $1 and session_id in ('free-old', 'held-old')`, tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SweepSessions(ctx, time.Now().Add(-24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	rows, err := testDB.Pool.Query(ctx, `select session_id from session_contexts where tenant_id = $1 order by session_id`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"free-new", "held-old"}; !slices.Equal(left, want) {
		t.Errorf("contexts left after the sweep = %v, want %v", left, want)
	}
	l, err := s.LookupTurn(ctx, tenant, "held-old", a.ID, time.Now())
	if err != nil || l.Hold == nil || l.ContextID != "ctx-task" {
		t.Errorf("the held session after the sweep: %+v, %v; want its hold and context", l, err)
	}
}

// A turn that changes no hold writes only its context, and a turn with neither a context nor a
// hold change writes nothing: no sessions row appears for a session never held.
func TestSessions_save_writes_only_what_changed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	a := mustCreate(t, s, newAgent(tenant, "https://save-only.example.com"))
	rec := connector.TurnRecord{TenantID: tenant, SessionID: "no-context", AgentID: a.ID, TurnID: "t1", StartedAt: time.Now()}
	if err := s.SaveTurn(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got := countRows(t, `select count(*) from session_contexts where tenant_id = $1`, tenant) +
		countRows(t, `select count(*) from sessions where tenant_id = $1`, tenant); got != 0 {
		t.Fatalf("a turn with nothing to record wrote %d rows", got)
	}
	rec.SessionID, rec.ContextID = "with-context", "ctx-1"
	if err := s.SaveTurn(ctx, rec); err != nil {
		t.Fatal(err)
	}
	rec.ContextID = "ctx-2" // the agent started a new context: the newer one wins
	if err := s.SaveTurn(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if l, err := s.LookupTurn(ctx, tenant, "with-context", a.ID, time.Now()); err != nil || l.ContextID != "ctx-2" || l.Hold != nil {
		t.Fatalf("lookup after two context saves = %+v, %v; want context ctx-2 and no hold", l, err)
	}
	if got := countRows(t, `select count(*) from sessions where tenant_id = $1`, tenant); got != 0 {
		t.Fatalf("sessions rows = %d, want none: no hold ever changed", got)
	}
}
