// Package storetest is the contract of the session store: the rules every implementation of
// connector.SessionStore follows, as one suite that runs against the real store (internal/store, on
// Postgres) and against every test double of it (the session router's in-memory store), so a
// double cannot drift from what it stands for.
//
// It is for tests only, and imports nothing of ours but the domain (the session package's own
// tests use it).
//
// It does not test what is the real store's alone (Postgres restarts, coalescing, the sweep,
// which spans every tenant and would take other tests' rows): internal/store's own tests do.
package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	connector "github.com/a2a-connector/a2a-connector"
)

// Fixture is a store with one tenant of its own and two enabled agents of that tenant, as
// stored (their UpdatedAt is the version LookupTurn reports).
type Fixture struct {
	Store    connector.SessionStore
	TenantID string
	Agents   [2]connector.Agent
}

// Run runs the contract against the stores open makes: a fresh fixture for each rule.
func Run(t *testing.T, open func(t *testing.T) Fixture) {
	for _, rule := range []struct {
		name string
		test func(t *testing.T, f Fixture)
	}{
		{"a_free_session_has_no_hold_and_the_agents'_versions", freeSession},
		{"a_hold_set_is_read_back_until_it_expires", holdUntilExpiry},
		{"an_older_turn_never_overwrites_a_newer_turn's_hold", olderTurnLoses},
		{"a_context_is_kept_per_session_and_agent,_only_for_agents_that_exist", contexts},
		{"release_returns_the_live_hold,_and_a_turn_started_before_cannot_bring_it_back", release},
		{"a_record_that_sets_and_releases,_or_names_no_agent_id,_is_ErrInvalid", invalidRecords},
		{"saves_after_the_Final_are_seen_once_WaitSaves_returns,_in_order", savesAfterFinal},
		{"a_save_until_written_is_written_in_order_with_the_session's_other_background_saves", saveUntilWritten},
		{"agents_of_the_tenant_only", agentsOfTheTenant},
	} {
		t.Run(rule.name, func(t *testing.T) {
			t.Parallel()
			rule.test(t, open(t))
		})
	}
}

// now is a time every store keeps exactly (Postgres keeps microseconds).
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

func hold(f Fixture, session, task string, expires time.Time) *connector.Hold {
	return &connector.Hold{TenantID: f.TenantID, SessionID: session, AgentID: f.Agents[0].ID, TaskID: task,
		ContextID: "ctx-" + task, TurnID: "turn-" + task, ExpiresAt: expires}
}

func record(f Fixture, session string, started time.Time) connector.TurnRecord {
	return connector.TurnRecord{TenantID: f.TenantID, SessionID: session, AgentID: f.Agents[0].ID,
		TurnID: "turn-" + started.Format("150405.000000"), StartedAt: started}
}

func mustSave(t *testing.T, s connector.SessionStore, r connector.TurnRecord) {
	t.Helper()
	if err := s.SaveTurn(t.Context(), r); err != nil {
		t.Fatalf("SaveTurn(%+v): %v", r, err)
	}
}

func lookup(t *testing.T, s connector.SessionStore, f Fixture, session, agentID string, at time.Time) connector.TurnLookup {
	t.Helper()
	l, err := s.LookupTurn(t.Context(), f.TenantID, session, agentID, at)
	if err != nil {
		t.Fatalf("LookupTurn(%s, %s): %v", session, agentID, err)
	}
	return l
}

func freeSession(t *testing.T, f Fixture) {
	a := f.Agents[0]
	l := lookup(t, f.Store, f, "free", a.ID, now())
	if l.Hold != nil || l.ContextID != "" || !l.HoldAgentUpdatedAt.IsZero() {
		t.Errorf("free session: %+v; want no hold and no context", l)
	}
	if !l.AgentUpdatedAt.Equal(a.UpdatedAt) {
		t.Errorf("requested agent's version %v, want its UpdatedAt %v", l.AgentUpdatedAt, a.UpdatedAt)
	}
	for _, id := range []string{uuid.NewString(), "not-a-uuid", ""} {
		if l := lookup(t, f.Store, f, "free", id, now()); !l.AgentUpdatedAt.IsZero() {
			t.Errorf("agent %q, not the tenant's: version %v, want zero", id, l.AgentUpdatedAt)
		}
	}
	if l, err := f.Store.LookupTurn(t.Context(), "not-a-uuid", "free", a.ID, now()); err != nil || l.Hold != nil || !l.AgentUpdatedAt.IsZero() {
		t.Errorf("tenant that is not a UUID: %+v, %v; want nothing and no error", l, err)
	}
}

func holdUntilExpiry(t *testing.T, f Fixture) {
	ctx, t0 := t.Context(), now()
	h := hold(f, "held", "task-1", t0.Add(time.Minute))
	r := record(f, "held", t0)
	r.ContextID, r.SetHold = h.ContextID, h
	mustSave(t, f.Store, r)

	l := lookup(t, f.Store, f, "held", f.Agents[1].ID, t0)
	if l.Hold == nil {
		t.Fatal("no hold after it was set")
	}
	got := *l.Hold
	got.UpdatedAt = time.Time{} // the store's clock
	if diff := cmp.Diff(*h, got); diff != "" {
		t.Errorf("hold read back (-saved +read):\n%s", diff)
	}
	if !l.HoldAgentUpdatedAt.Equal(f.Agents[0].UpdatedAt) {
		t.Errorf("holding agent's version %v, want %v", l.HoldAgentUpdatedAt, f.Agents[0].UpdatedAt)
	}
	if gh, ga, err := f.Store.GetHold(ctx, f.TenantID, "held", t0); err != nil || gh.TaskID != "task-1" || ga.ID != f.Agents[0].ID {
		t.Errorf("GetHold = %+v, agent %s, %v; want task-1 of %s", gh, ga.ID, err, f.Agents[0].ID)
	}

	later := t0.Add(2 * time.Minute)
	if l := lookup(t, f.Store, f, "held", f.Agents[0].ID, later); l.Hold != nil {
		t.Errorf("hold still read after it expired: %+v", l.Hold)
	}
	if _, _, err := f.Store.GetHold(ctx, f.TenantID, "held", later); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("GetHold of an expired hold: %v, want ErrNotFound", err)
	}
	if _, _, err := f.Store.GetHold(ctx, f.TenantID, "never-held", t0); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("GetHold of a free session: %v, want ErrNotFound", err)
	}
}

func olderTurnLoses(t *testing.T, f Fixture) {
	t0 := now()
	newer := record(f, "race", t0.Add(2*time.Second))
	newer.SetHold = hold(f, "race", "task-new", t0.Add(time.Hour))
	mustSave(t, f.Store, newer)

	older := record(f, "race", t0.Add(time.Second))
	older.ReleaseHold = true
	mustSave(t, f.Store, older)
	oldest := record(f, "race", t0)
	oldest.SetHold = hold(f, "race", "task-old", t0.Add(time.Hour))
	mustSave(t, f.Store, oldest)

	if l := lookup(t, f.Store, f, "race", "", t0); l.Hold == nil || l.Hold.TaskID != "task-new" {
		t.Errorf("hold after older turns saved theirs: %+v; want the newer turn's task-new", l.Hold)
	}
}

func contexts(t *testing.T, f Fixture) {
	t0 := now()
	r := record(f, "ctx", t0)
	r.ContextID = "ctx-a"
	mustSave(t, f.Store, r) // neither sets nor releases: only the context
	gone := record(f, "ctx", t0)
	gone.AgentID, gone.ContextID = uuid.NewString(), "ctx-gone"
	mustSave(t, f.Store, gone)

	for _, c := range []struct {
		session, agent, want string
	}{
		{"ctx", f.Agents[0].ID, "ctx-a"},
		{"ctx", f.Agents[1].ID, ""},
		{"other", f.Agents[0].ID, ""},
		{"ctx", gone.AgentID, ""},
	} {
		if l := lookup(t, f.Store, f, c.session, c.agent, t0); l.ContextID != c.want || l.Hold != nil {
			t.Errorf("session %s, agent %s: context %q, hold %+v; want %q and no hold", c.session, c.agent, l.ContextID, l.Hold, c.want)
		}
	}
}

func release(t *testing.T, f Fixture) {
	ctx, t0 := t.Context(), now()
	r := record(f, "rel", t0)
	r.SetHold = hold(f, "rel", "task-1", t0.Add(time.Hour))
	mustSave(t, f.Store, r)

	h, err := f.Store.ReleaseHold(ctx, f.TenantID, "rel", t0.Add(2*time.Second))
	if err != nil || h.TaskID != "task-1" || h.AgentID != f.Agents[0].ID {
		t.Fatalf("ReleaseHold = %+v, %v; want task-1 of %s", h, err, f.Agents[0].ID)
	}
	if _, err := f.Store.ReleaseHold(ctx, f.TenantID, "rel", t0.Add(3*time.Second)); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("second ReleaseHold: %v, want ErrNotFound", err)
	}
	// A turn that was running when the session was released ends after it.
	running := record(f, "rel", t0.Add(time.Second))
	running.SetHold = hold(f, "rel", "task-2", t0.Add(time.Hour))
	mustSave(t, f.Store, running)
	if l := lookup(t, f.Store, f, "rel", "", t0.Add(4*time.Second)); l.Hold != nil {
		t.Errorf("a turn started before the release brought a hold back: %+v", l.Hold)
	}
	if _, err := f.Store.ReleaseHold(ctx, f.TenantID, "never-held", t0); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("ReleaseHold of a free session: %v, want ErrNotFound", err)
	}
}

func invalidRecords(t *testing.T, f Fixture) {
	t0 := now()
	both := record(f, "bad", t0)
	both.SetHold, both.ReleaseHold = hold(f, "bad", "task-1", t0.Add(time.Hour)), true
	noAgent := record(f, "bad", t0)
	noAgent.AgentID, noAgent.ReleaseHold = "not-a-uuid", true
	for name, r := range map[string]connector.TurnRecord{"set and release": both, "agent id not a UUID": noAgent} {
		if err := f.Store.SaveTurn(t.Context(), r); !errors.Is(err, connector.ErrInvalid) {
			t.Errorf("%s: SaveTurn = %v, want ErrInvalid", name, err)
		}
	}
	if l := lookup(t, f.Store, f, "bad", "", t0); l.Hold != nil {
		t.Errorf("an invalid record left a hold: %+v", l.Hold)
	}
}

func savesAfterFinal(t *testing.T, f Fixture) {
	ctx, t0 := t.Context(), now()
	var (
		mu   sync.Mutex
		errs []error
	)
	done := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	for i, c := range []string{"ctx-1", "ctx-2", "ctx-3"} {
		r := record(f, "late", t0.Add(time.Duration(i)*time.Millisecond))
		r.ContextID, r.ReleaseHold = c, true
		f.Store.SaveAfterFinal(ctx, r, done)
	}
	if err := f.Store.WaitSaves(ctx, f.TenantID, "late"); err != nil {
		t.Fatalf("WaitSaves: %v", err)
	}
	if l := lookup(t, f.Store, f, "late", f.Agents[0].ID, t0); l.ContextID != "ctx-3" {
		t.Errorf("context once the session's saves are waited for: %q, want the last one's ctx-3", l.ContextID)
	}
	if err := f.Store.WaitSaves(ctx, f.TenantID, "nothing-pending"); err != nil {
		t.Errorf("WaitSaves of a session with nothing pending: %v", err)
	}
	f.Store.Drain()
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]error{nil, nil, nil}, errs, cmp.Comparer(func(a, b error) bool { return errors.Is(a, b) })); diff != "" {
		t.Errorf("results reported to done once drained (-want +got):\n%s", diff)
	}
}

func saveUntilWritten(t *testing.T, f Fixture) {
	ctx, t0 := t.Context(), now()
	held := record(f, "retried", t0)
	held.SetHold = hold(f, "retried", "task-1", t0.Add(time.Hour))
	mustSave(t, f.Store, held)
	errs := make(chan error, 3)
	done := func(err error) { errs <- err }
	// The order the turns asked for: a context, the release (retried until written), a
	// context again; then a later turn's hold, which the release must not have undone.
	first := record(f, "retried", t0.Add(time.Millisecond))
	first.ContextID = "ctx-a"
	f.Store.SaveAfterFinal(ctx, first, done)
	release := record(f, "retried", t0.Add(2*time.Millisecond))
	release.ReleaseHold = true
	f.Store.SaveUntilWritten(ctx, release, time.Minute, done)
	last := record(f, "retried", t0.Add(3*time.Millisecond))
	last.ContextID = "ctx-b"
	f.Store.SaveAfterFinal(ctx, last, done)
	if err := f.Store.WaitSaves(ctx, f.TenantID, "retried"); err != nil {
		t.Fatalf("WaitSaves: %v", err)
	}
	if l := lookup(t, f.Store, f, "retried", f.Agents[0].ID, t0); l.Hold != nil || l.ContextID != "ctx-b" {
		t.Errorf("after the session's saves: hold %+v, context %q; want released, the last context ctx-b", l.Hold, l.ContextID)
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Errorf("a background save reported %v", err)
		}
	}

	// A release of an earlier turn, written late, leaves a later turn's hold alone.
	later := record(f, "retried", t0.Add(5*time.Millisecond))
	later.SetHold = hold(f, "retried", "task-2", t0.Add(time.Hour))
	mustSave(t, f.Store, later)
	stale := record(f, "retried", t0.Add(4*time.Millisecond))
	stale.ReleaseHold = true
	f.Store.SaveUntilWritten(ctx, stale, time.Minute, done)
	if err := f.Store.WaitSaves(ctx, f.TenantID, "retried"); err != nil {
		t.Fatalf("WaitSaves: %v", err)
	}
	if err := <-errs; err != nil {
		t.Errorf("the late release reported %v", err)
	}
	if l := lookup(t, f.Store, f, "retried", "", t0); l.Hold == nil || l.Hold.TaskID != "task-2" {
		t.Errorf("hold after an earlier turn's late release: %+v; want the later turn's task-2", l.Hold)
	}
}

func agentsOfTheTenant(t *testing.T, f Fixture) {
	ctx := t.Context()
	a, _, err := f.Store.AgentForTurn(ctx, f.TenantID, f.Agents[1].ID)
	if err != nil || a.ID != f.Agents[1].ID || !a.UpdatedAt.Equal(f.Agents[1].UpdatedAt) {
		t.Errorf("AgentForTurn = %s (version %v), %v; want %s", a.ID, a.UpdatedAt, err, f.Agents[1].ID)
	}
	for _, c := range []struct{ tenant, agent string }{
		{f.TenantID, uuid.NewString()},
		{f.TenantID, "not-a-uuid"},
		{uuid.NewString(), f.Agents[0].ID}, // another tenant's view of this agent
	} {
		if _, _, err := f.Store.AgentForTurn(ctx, c.tenant, c.agent); !errors.Is(err, connector.ErrNotFound) {
			t.Errorf("AgentForTurn(%s, %s) = %v, want ErrNotFound", c.tenant, c.agent, err)
		}
	}
	list, err := f.Store.ListAgents(ctx, f.TenantID)
	var ids []string
	for _, a := range list {
		ids = append(ids, a.ID)
	}
	want := []string{f.Agents[0].ID, f.Agents[1].ID}
	slices.Sort(ids)
	slices.Sort(want)
	if err != nil || !slices.Equal(want, ids) {
		t.Errorf("ListAgents = %q, %v; want %q", ids, err, want)
	}
	if other, err := f.Store.ListAgents(ctx, uuid.NewString()); err != nil || len(other) != 0 {
		t.Errorf("ListAgents of another tenant = %d agents, %v; want none", len(other), err)
	}
}
