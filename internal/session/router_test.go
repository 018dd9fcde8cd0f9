package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/admission"
	"github.com/a2a-connector/a2a-connector/internal/storetest"
)

// These tests run the router's logic against in-process fakes: no Postgres, no agent. The
// same behaviours against the real store and real agents are in cmd/connector's end-to-end
// tests; these pin the decisions (routing, hold changes, what is durable before the Final).

const (
	tenantID = "7d9f2a55-0c1e-4b8e-9a41-3c2f1e0d9b77"
	agentA   = "0a0a0a0a-0000-4000-8000-00000000000a"
	agentB   = "0b0b0b0b-0000-4000-8000-00000000000b"
)

// memStore is Store in memory, with the same rules as internal/store: holds expire, a record
// never overwrites the hold of a later-started turn, contexts only for agents that exist, a
// session's saves after the Final in order. TestMemStoreContract checks those rules with the
// suite the real store passes (internal/storetest).
type memStore struct {
	mu       sync.Mutex
	log      *[]string // shared with the sink: the order of saves and Finals
	agents   map[string]connector.Agent
	sessions map[string]*memSession
	contexts map[string]string
	saveErr  error
	// saveGate, when set, holds every save until it is closed.
	saveGate chan struct{}
	// afterFinal records, for each save, whether it came through SaveAfterFinal; waited counts
	// the WaitSaves that found a save of the session pending.
	afterFinal []bool
	waited     int
	// pending holds, per session, a channel closed when its latest SaveAfterFinal is over;
	// later owns their goroutines.
	pending map[string]chan struct{}
	later   sync.WaitGroup
	// drained: Drain is waiting; saves retried until written give up.
	drained bool
}

type memSession struct {
	hold        *connector.Hold
	lastStarted time.Time
}

var _ connector.SessionStore = (*memStore)(nil)

func TestMemStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Fixture {
		a, b := testAgent(agentA, "A"), testAgent(agentB, "B")
		return storetest.Fixture{Store: newMemStore(new([]string), a, b), TenantID: tenantID, Agents: [2]connector.Agent{a, b}}
	})
}

func newMemStore(log *[]string, agents ...connector.Agent) *memStore {
	s := &memStore{log: log, agents: map[string]connector.Agent{}, sessions: map[string]*memSession{}, contexts: map[string]string{}}
	for _, a := range agents {
		s.agents[a.ID] = a
	}
	return s
}

func (s *memStore) LookupTurn(_ context.Context, tenant, session, agentID string, now time.Time) (connector.TurnLookup, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var l connector.TurnLookup
	if ss := s.sessions[tenant+"/"+session]; ss != nil && ss.hold != nil && ss.hold.ExpiresAt.After(now) {
		h := *ss.hold
		l.Hold = &h
		if a, ok := s.agents[h.AgentID]; ok {
			l.HoldAgentUpdatedAt = a.UpdatedAt
		}
	}
	if a, ok := s.agents[agentID]; ok && a.TenantID == tenant {
		l.AgentUpdatedAt = a.UpdatedAt
	}
	l.ContextID = s.contexts[tenant+"/"+session+"/"+agentID]
	return l, nil
}

func (s *memStore) SaveTurn(ctx context.Context, r connector.TurnRecord) error {
	return s.save(ctx, r, false)
}

// SaveAfterFinal saves in the background, after the session's earlier such saves.
func (s *memStore) SaveAfterFinal(ctx context.Context, r connector.TurnRecord, done func(error)) {
	s.inOrder(r, func() error { return s.save(context.WithoutCancel(ctx), r, true) }, done)
}

// SaveUntilWritten saves in the background, after the session's earlier such saves, again every
// millisecond while the save fails with ErrUnavailable, for at most within (there is no
// Postgres to wait for here).
func (s *memStore) SaveUntilWritten(ctx context.Context, r connector.TurnRecord, within time.Duration, done func(error)) {
	deadline := time.Now().Add(within)
	s.inOrder(r, func() error {
		for {
			err := s.save(context.WithoutCancel(ctx), r, false)
			s.mu.Lock()
			drained := s.drained
			s.mu.Unlock()
			if !errors.Is(err, connector.ErrUnavailable) || drained || time.Now().After(deadline) {
				return err
			}
			time.Sleep(time.Millisecond)
		}
	}, done)
}

// inOrder runs save in the background after the session's earlier saves, and reports its error
// to done.
func (s *memStore) inOrder(r connector.TurnRecord, save func() error, done func(error)) {
	key := r.TenantID + "/" + r.SessionID
	finished := make(chan struct{})
	s.mu.Lock()
	if s.pending == nil {
		s.pending = map[string]chan struct{}{}
	}
	prev := s.pending[key]
	s.pending[key] = finished
	s.mu.Unlock()
	s.later.Go(func() {
		if prev != nil {
			<-prev
		}
		err := save()
		if done != nil {
			done(err)
		}
		s.mu.Lock()
		if s.pending[key] == finished {
			delete(s.pending, key)
		}
		s.mu.Unlock()
		close(finished)
	})
}

func (s *memStore) WaitSaves(ctx context.Context, tenant, session string) error {
	s.mu.Lock()
	finished := s.pending[tenant+"/"+session]
	if finished != nil {
		s.waited++
	}
	s.mu.Unlock()
	if finished == nil {
		return nil
	}
	select {
	case <-finished:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Drain waits for the background saves; those retried until written give up. (Unlike the real
// store's, the store stays usable: the harness drains after every turn.)
func (s *memStore) Drain() {
	s.mu.Lock()
	s.drained = true
	s.mu.Unlock()
	s.later.Wait()
	s.mu.Lock()
	s.drained = false
	s.mu.Unlock()
}

func (s *memStore) save(_ context.Context, r connector.TurnRecord, afterFinal bool) error {
	if _, err := uuid.Parse(r.AgentID); err != nil || (r.SetHold != nil && r.ReleaseHold) {
		return fmt.Errorf("save turn of session %q: %w", r.SessionID, connector.ErrInvalid)
	}
	s.mu.Lock()
	s.afterFinal = append(s.afterFinal, afterFinal)
	s.mu.Unlock()
	if s.saveGate != nil {
		<-s.saveGate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.log = append(*s.log, fmt.Sprintf("save set=%v release=%v", r.SetHold != nil, r.ReleaseHold))
	if s.saveErr != nil {
		return s.saveErr
	}
	if _, ok := s.agents[r.AgentID]; ok && r.ContextID != "" {
		s.contexts[r.TenantID+"/"+r.SessionID+"/"+r.AgentID] = r.ContextID
	}
	if r.SetHold == nil && !r.ReleaseHold {
		return nil
	}
	key := r.TenantID + "/" + r.SessionID
	ss := s.sessions[key]
	if ss == nil {
		ss = &memSession{}
		s.sessions[key] = ss
	} else if ss.lastStarted.After(r.StartedAt) {
		return nil
	}
	ss.lastStarted = r.StartedAt
	ss.hold = nil
	if h := r.SetHold; h != nil {
		held := *h
		held.TenantID, held.SessionID, held.AgentID = r.TenantID, r.SessionID, r.AgentID
		ss.hold = &held
	}
	return nil
}

func (s *memStore) AgentForTurn(_ context.Context, tenant, agentID string) (connector.Agent, *connector.Sealed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agents[agentID]
	if !ok || a.TenantID != tenant {
		return connector.Agent{}, nil, fmt.Errorf("agent %s: %w", agentID, connector.ErrNotFound)
	}
	return a, nil, nil
}

func (s *memStore) ReleaseHold(_ context.Context, tenant, session string, now time.Time) (connector.Hold, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[tenant+"/"+session]
	if ss == nil || ss.hold == nil || !ss.hold.ExpiresAt.After(now) {
		return connector.Hold{}, connector.ErrNotFound
	}
	h := *ss.hold
	ss.hold, ss.lastStarted = nil, now
	return h, nil
}

func (s *memStore) GetHold(ctx context.Context, tenant, session string, now time.Time) (connector.Hold, connector.Agent, error) {
	l, _ := s.LookupTurn(ctx, tenant, session, "", now)
	if l.Hold == nil {
		return connector.Hold{}, connector.Agent{}, connector.ErrNotFound
	}
	a, _, err := s.AgentForTurn(ctx, tenant, l.Hold.AgentID)
	return *l.Hold, a, err
}

func (s *memStore) ListAgents(_ context.Context, tenant string) ([]connector.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []connector.Agent
	for _, a := range s.agents {
		if a.TenantID == tenant {
			out = append(out, a)
		}
	}
	return out, nil
}

func (s *memStore) SweepSessions(context.Context, time.Time) (int64, error) { return 0, nil }
func (s *memStore) saves() (afterFinal []bool, waited int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.afterFinal), s.waited
}

func (s *memStore) setEnabled(id string, enabled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agents[id]
	a.Enabled = enabled
	a.UpdatedAt = a.UpdatedAt.Add(time.Second)
	s.agents[id] = a
}

// scriptedInvoker answers each turn with the next scripted reply.
type scriptedInvoker struct {
	mu       sync.Mutex
	replies  []reply
	requests []connector.TurnRequest
	canceled []string
	// ended are the tasks the agent says are over; asked lists the tasks asked about.
	ended []string
	asked []string
}

type reply struct {
	texts  []string
	result connector.TurnResult
}

var _ Invoker = (*scriptedInvoker)(nil)

func (v *scriptedInvoker) Turn(_ context.Context, req connector.TurnRequest, emit func(connector.TurnEvent)) *connector.TurnResult {
	v.mu.Lock()
	v.requests = append(v.requests, req)
	r := v.replies[0]
	v.replies = v.replies[1:]
	v.mu.Unlock()
	for _, t := range r.texts {
		emit(connector.TurnEvent{Kind: connector.TextEvent, Text: t})
	}
	res := r.result
	return &res
}

func (v *scriptedInvoker) CancelTask(_ context.Context, a connector.Agent, _ *connector.Sealed, taskID string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.canceled = append(v.canceled, a.ID+"/"+taskID)
}

func (v *scriptedInvoker) TaskEnded(_ context.Context, a connector.Agent, _ *connector.Sealed, taskID string) (bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.asked = append(v.asked, a.ID+"/"+taskID)
	return slices.Contains(v.ended, taskID), nil
}

// logSink records what the engine would see.
type logSink struct {
	log    *[]string
	finals []connector.TurnFinal
}

func (k *logSink) Started(a *connector.Agent, held bool, taskID string) error {
	*k.log = append(*k.log, fmt.Sprintf("started %s held=%v task=%q", a.Name, held, taskID))
	return nil
}

func (k *logSink) Event(e connector.TurnEvent) error {
	*k.log = append(*k.log, "text "+e.Text)
	return nil
}

func (k *logSink) Final(f connector.TurnFinal) error {
	*k.log = append(*k.log, "final "+string(f.Outcome))
	k.finals = append(k.finals, f)
	return nil
}

func testAgent(id, name string) connector.Agent {
	return connector.Agent{ID: id, TenantID: tenantID, Enabled: true, UpdatedAt: time.Unix(1_700_000_000, 0),
		CardProfile: connector.CardProfile{Name: name}}
}

// harness is one router over fakes, with a clock the test moves.
type harness struct {
	log    []string
	store  *memStore
	inv    *scriptedInvoker
	router *Router
	now    time.Time
}

func newHarness(t *testing.T, replies ...reply) *harness {
	t.Helper()
	h := &harness{now: time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)}
	h.store = newMemStore(&h.log, testAgent(agentA, "A"), testAgent(agentB, "B"))
	h.inv = &scriptedInvoker{replies: replies}
	h.router = New(Config{Store: h.store, Invoker: h.inv, HoldTTL: 10 * time.Minute, Now: func() time.Time { return h.now }})
	return h
}

func (h *harness) turn(t *testing.T, session, turnID, agentID string) (connector.TurnFinal, []string) {
	t.Helper()
	h.log = nil
	sink := &logSink{log: &h.log}
	if err := h.router.HandleTurn(t.Context(), connector.Turn{TenantID: tenantID, SessionID: session, TurnID: turnID, AgentID: agentID, Text: "hi"}, sink); err != nil {
		t.Fatalf("HandleTurn: %v", err)
	}
	h.router.Wait() // the save left for after the Final, so that the log is whole
	if len(sink.finals) != 1 {
		t.Fatalf("finals = %d, want 1 (log %q)", len(sink.finals), h.log)
	}
	return sink.finals[0], h.log
}

func completed(text, task, ctx string) reply {
	return reply{texts: []string{text}, result: connector.TurnResult{Outcome: connector.OutcomeCompleted, Text: text, TaskID: task, ContextID: ctx}}
}

func asks(question, task, ctx string) reply {
	return reply{result: connector.TurnResult{Outcome: connector.OutcomeInputRequired, Text: question, TaskID: task, ContextID: ctx}}
}

func TestRouter_no_hold_and_no_agent_is_NO_AGENT_without_calling_anyone(t *testing.T) {
	h := newHarness(t)
	f, log := h.turn(t, "s", "t1", "")
	if f.Outcome != connector.OutcomeNoAgent {
		t.Fatalf("outcome = %s", f.Outcome)
	}
	if diff := cmp.Diff([]string{"final NO_AGENT"}, log); diff != "" {
		t.Fatalf("log (-want +got):\n%s", diff)
	}
}

func TestRouter_a_completed_turn_sends_its_Final_before_saving(t *testing.T) {
	h := newHarness(t, completed("你好", "task-1", "ctx-1"), completed("再见", "task-2", "ctx-1"))
	_, log := h.turn(t, "s", "t1", agentA)
	want := []string{`started A held=false task=""`, "text 你好", "final COMPLETED", "save set=false release=true"}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Fatalf("log (-want +got):\n%s", diff)
	}
	// The session's context with the agent carries over to its next task.
	h.turn(t, "s", "t2", agentA)
	if got := h.inv.requests[1].ContextID; got != "ctx-1" {
		t.Fatalf("second turn's contextId = %q, want ctx-1", got)
	}
}

func TestRouter_input_required_holds_the_session_durably_before_the_Final(t *testing.T) {
	h := newHarness(t, asks("几点？", "task-1", "ctx-1"), completed("好的", "task-1", "ctx-1"))
	f, log := h.turn(t, "s", "t1", agentA)
	if f.Outcome != connector.OutcomeInputRequired || !f.HoldExpiresAt.Equal(h.now.Add(10*time.Minute)) {
		t.Fatalf("final = %+v", f)
	}
	want := []string{`started A held=false task=""`, "save set=true release=false", "final INPUT_REQUIRED"}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Fatalf("log (-want +got):\n%s", diff)
	}

	// The hold wins over the engine's choice of another agent, and continues the task.
	h.now = h.now.Add(time.Minute)
	f, log = h.turn(t, "s", "t2", agentB)
	want = []string{`started A held=true task="task-1"`, "text 好的", "save set=false release=true", "final COMPLETED"}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Fatalf("continued turn log (-want +got):\n%s", diff)
	}
	if req := h.inv.requests[1]; req.Agent.ID != agentA || req.TaskID != "task-1" || req.ContextID != "ctx-1" {
		t.Fatalf("continued request = agent %s task %q context %q", req.Agent.ID, req.TaskID, req.ContextID)
	}
	if f.Outcome != connector.OutcomeCompleted || !f.HoldExpiresAt.IsZero() {
		t.Fatalf("final = %+v", f)
	}
	// Both saves come before their Final: neither is left to the store for after it.
	if afterFinal, _ := h.store.saves(); !slices.Equal(afterFinal, []bool{false, false}) {
		t.Fatalf("saves after the Final %v, want [false false] (a hold set or released is durable before the Final)", afterFinal)
	}
}

func TestRouter_a_hold_that_cannot_be_saved_is_no_hold(t *testing.T) {
	h := newHarness(t, asks("几点？", "task-1", "ctx-1"))
	h.store.saveErr = errors.New("postgres: connection refused")
	f, _ := h.turn(t, "s", "t1", agentA)
	if f.Outcome != connector.OutcomeFailed || f.Err == nil || f.Err.Code != "internal" || !f.HoldExpiresAt.IsZero() {
		t.Fatalf("final = %+v (err %+v)", f, f.Err)
	}
	// Nothing will ever answer the agent's question: its task is canceled, not left waiting.
	if diff := cmp.Diff([]string{agentA + "/task-1"}, h.inv.canceled); diff != "" {
		t.Fatalf("canceled (-want +got):\n%s", diff)
	}
}

func TestRouter_a_turn_we_interrupted_keeps_the_hold_as_it_was(t *testing.T) {
	h := newHarness(t, asks("几点？", "task-1", "ctx-1"),
		reply{result: connector.TurnResult{Outcome: connector.OutcomeFailed, Interrupted: true, TaskID: "task-1",
			Err: &connector.TurnError{Code: connector.CodeTimeout, Message: "the agent did not finish in time"}}},
		completed("好的", "task-1", "ctx-1"))
	first, _ := h.turn(t, "s", "t1", agentA)
	h.now = h.now.Add(time.Minute)
	f, log := h.turn(t, "s", "t2", "")
	if f.Outcome != connector.OutcomeFailed || !f.HoldExpiresAt.Equal(first.HoldExpiresAt) {
		t.Fatalf("interrupted final = %+v, want FAILED with the first hold's expiry %v", f, first.HoldExpiresAt)
	}
	if diff := cmp.Diff([]string{`started A held=true task="task-1"`, "final FAILED", "save set=false release=false"}, log); diff != "" {
		t.Fatalf("log (-want +got):\n%s", diff)
	}
	if _, log := h.turn(t, "s", "t3", ""); log[0] != `started A held=true task="task-1"` {
		t.Fatalf("the hold did not survive the interrupted turn: %q", log)
	}
}

func TestRouter_a_hold_on_an_agent_that_was_disabled_is_dropped_for_good(t *testing.T) {
	h := newHarness(t, asks("几点？", "task-1", "ctx-1"), completed("我是B", "task-2", "ctx-2"))
	h.turn(t, "s", "t1", agentA)
	h.store.setEnabled(agentA, false)
	_, log := h.turn(t, "s", "t2", agentB)
	want := []string{"save set=false release=true", `started B held=false task=""`, "text 我是B", "final COMPLETED", "save set=false release=true"}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Fatalf("log (-want +got):\n%s", diff)
	}
	h.store.setEnabled(agentA, true)
	if f, _ := h.turn(t, "s", "t3", ""); f.Outcome != connector.OutcomeNoAgent {
		t.Fatalf("re-enabling the agent brought its hold back: %s", f.Outcome)
	}
}

func TestRouter_request_problems_are_errors_before_anything_is_sent(t *testing.T) {
	h := newHarness(t)
	h.store.setEnabled(agentB, false)
	for _, tc := range []struct {
		name, agent string
		want        error
	}{
		{"unknown agent", "0c0c0c0c-0000-4000-8000-00000000000c", connector.ErrNotFound},
		{"disabled agent", agentB, connector.ErrAgentDisabled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.log = nil
			err := h.router.HandleTurn(t.Context(), connector.Turn{TenantID: tenantID, SessionID: "s", TurnID: "t", AgentID: tc.agent}, &logSink{log: &h.log})
			if !errors.Is(err, tc.want) || len(h.log) != 0 {
				t.Fatalf("err = %v, log %q; want %v and nothing sent", err, h.log, tc.want)
			}
		})
	}
}

// The RPC ends with the Final: a save that changes nothing the engine reads runs after
// HandleTurn has returned. The session's next turn on this replica waits for it, so it still
// continues the context.
func TestRouter_a_save_after_the_Final_does_not_hold_up_the_RPC_but_the_next_turn_waits_for_it(t *testing.T) {
	h := newHarness(t, completed("你好", "task-1", "ctx-1"), completed("再见", "task-2", "ctx-1"))
	gate := make(chan struct{})
	h.store.saveGate = gate
	sink := &logSink{log: &h.log}
	returned := make(chan error, 1)
	go func() {
		returned <- h.router.HandleTurn(t.Context(), connector.Turn{TenantID: tenantID, SessionID: "s", TurnID: "t1", AgentID: agentA, Text: "hi"}, sink)
	}()
	select {
	case err := <-returned:
		if err != nil {
			t.Fatalf("HandleTurn: %v", err)
		}
	case <-time.After(10 * time.Second):
		close(gate)
		t.Fatal("HandleTurn did not return while its context's save was held: the RPC waits for the save")
	}
	if len(sink.finals) != 1 {
		t.Fatalf("HandleTurn returned with %d finals, want 1", len(sink.finals))
	}

	// The save is held at the gate: the next turn of the session must wait for it, here until
	// its own deadline, without calling the agent.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	err := h.router.HandleTurn(ctx, connector.Turn{TenantID: tenantID, SessionID: "s", TurnID: "t2", AgentID: agentA, Text: "hi"}, &logSink{log: new([]string)})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "previous turn's save") {
		t.Fatalf("second turn during the first one's save: err = %v, want it to wait for the save until its deadline", err)
	}
	if n := len(h.inv.requests); n != 1 {
		t.Fatalf("the agent was called %d times, want 1 (the waiting turn must not call it)", n)
	}
	// The save after the Final is the store's; the next turn of the session waited for it.
	if afterFinal, waited := h.store.saves(); !slices.Equal(afterFinal, []bool{true}) || waited != 1 {
		t.Fatalf("saves after the Final %v, waits for a pending save %d; want [true] and 1 (by the next turn)", afterFinal, waited)
	}
	// Another session does not wait.
	h.inv.replies = append([]reply{completed("ok", "task-x", "ctx-x")}, h.inv.replies...)
	other := &logSink{log: new([]string)}
	if err := h.router.HandleTurn(t.Context(), connector.Turn{TenantID: tenantID, SessionID: "other", TurnID: "t1", AgentID: agentB, Text: "hi"}, other); err != nil {
		t.Fatalf("a turn of another session: %v", err)
	}

	close(gate)
	h.router.Wait()
	h.turn(t, "s", "t3", agentA)
	if got := h.inv.requests[2].ContextID; got != "ctx-1" {
		t.Fatalf("the next turn's contextId = %q, want ctx-1 (saved after the first turn's Final)", got)
	}
}

func TestRouter_a_caller_gone_gets_no_Final_but_the_turn_is_saved(t *testing.T) {
	h := newHarness(t, asks("几点？", "task-1", "ctx-1"))
	ctx, cancel := context.WithCancel(t.Context())
	sink := &logSink{log: &h.log}
	h.inv.replies[0].texts = nil
	cancelling := &cancelOnStart{TurnSink: sink, cancel: cancel}
	err := h.router.HandleTurn(ctx, connector.Turn{TenantID: tenantID, SessionID: "s", TurnID: "t1", AgentID: agentA}, cancelling)
	if !errors.Is(err, context.Canceled) || len(sink.finals) != 0 {
		t.Fatalf("err = %v, finals %d; want context.Canceled and none", err, len(sink.finals))
	}
	if l, _ := h.store.LookupTurn(t.Context(), tenantID, "s", agentA, h.now); l.Hold == nil {
		t.Fatal("the agent's question was not remembered after the caller left")
	}
}

// cancelOnStart cancels the turn's context once it has started: the caller hung up.
type cancelOnStart struct {
	connector.TurnSink
	cancel context.CancelFunc
}

func (c *cancelOnStart) Started(a *connector.Agent, held bool, taskID string) error {
	c.cancel()
	return c.TurnSink.Started(a, held, taskID)
}

func TestRouter_release_cancels_the_held_task(t *testing.T) {
	h := newHarness(t, asks("几点？", "task-1", "ctx-1"))
	h.turn(t, "s", "t1", agentA)
	released, agent, err := h.router.Release(t.Context(), tenantID, "s")
	if err != nil || !released || agent != agentA {
		t.Fatalf("Release = %v, %s, %v", released, agent, err)
	}
	if diff := cmp.Diff([]string{agentA + "/task-1"}, h.inv.canceled); diff != "" {
		t.Fatalf("canceled (-want +got):\n%s", diff)
	}
	if released, _, _ := h.router.Release(t.Context(), tenantID, "s"); released {
		t.Fatal("a free session was released again")
	}
}

func TestSavesBeforeFinal(t *testing.T) {
	for _, tc := range []struct {
		kind ChangeKind
		held bool
		want bool
	}{
		{Set, false, true},
		{Set, true, true},
		{Release, true, true},
		{Release, false, false},
		{Keep, true, false},
		{Keep, false, false},
	} {
		if got := savesBeforeFinal(tc.kind, tc.held); got != tc.want {
			t.Errorf("savesBeforeFinal(%s, held=%v) = %v, want %v", tc.kind, tc.held, got, tc.want)
		}
	}
}

// gatedInvoker answers only once the engine has been told Started: an agent slower than
// StartedWithin.
type gatedInvoker struct {
	scriptedInvoker
	started <-chan struct{}
}

func (v *gatedInvoker) Turn(ctx context.Context, req connector.TurnRequest, emit func(connector.TurnEvent)) *connector.TurnResult {
	select {
	case <-v.started:
	case <-time.After(10 * time.Second): // 10,000× the StartedWithin below
		return &connector.TurnResult{Outcome: connector.OutcomeFailed, Err: &connector.TurnError{Code: "test", Message: "no Started while the agent was busy"}}
	}
	return v.scriptedInvoker.Turn(ctx, req, emit)
}

// startSignal closes started at Started.
type startSignal struct {
	logSink
	started chan struct{}
}

func (k *startSignal) Started(a *connector.Agent, held bool, taskID string) error {
	close(k.started)
	return k.logSink.Started(a, held, taskID)
}

// Started goes out with the agent's first event, so it does not delay the agent's request; an
// agent that takes longer than StartedWithin does not hold it back.
func TestRouter_sends_Started_while_a_slow_agent_works(t *testing.T) {
	h := newHarness(t)
	started := make(chan struct{})
	inv := &gatedInvoker{scriptedInvoker: scriptedInvoker{replies: []reply{completed("hello", "task-1", "ctx-1")}}, started: started}
	h.router = New(Config{Store: h.store, Invoker: inv, Now: func() time.Time { return h.now }, StartedWithin: time.Millisecond})
	sink := &startSignal{logSink: logSink{log: &h.log}, started: started}
	if err := h.router.HandleTurn(t.Context(), connector.Turn{TenantID: tenantID, SessionID: "s", TurnID: "t", AgentID: agentA, Text: "hi"}, sink); err != nil {
		t.Fatalf("HandleTurn: %v", err)
	}
	h.router.Wait()
	want := []string{`started A held=false task=""`, "text hello", "final COMPLETED"}
	if got := sinkEvents(h.log); !slices.Equal(got, want) {
		t.Errorf("events = %q; want %q", got, want)
	}
}

// Whatever the race between the timer and the agent's first event, the engine gets exactly one
// Started, before everything else.
func TestRouter_sends_one_Started_first_whatever_wins(t *testing.T) {
	for _, within := range []time.Duration{time.Nanosecond, time.Microsecond, 50 * time.Microsecond, time.Hour} {
		var replies []reply
		for range 50 {
			replies = append(replies, completed("hello", "task-1", "ctx-1"))
		}
		h := newHarness(t)
		h.router = New(Config{Store: h.store, Invoker: &scriptedInvoker{replies: replies}, Now: func() time.Time { return h.now }, StartedWithin: within})
		for i := range 50 {
			_, log := h.turn(t, "s"+strconv.Itoa(i), "t", agentA)
			want := []string{`started A held=false task=""`, "text hello", "final COMPLETED"}
			if log := sinkEvents(log); !slices.Equal(log, want) {
				t.Fatalf("StartedWithin %v, turn %d: events = %q; want %q", within, i, log, want)
			}
		}
	}
}

// sinkEvents is what the engine saw of a log: no store calls.
func sinkEvents(log []string) []string {
	return slices.DeleteFunc(slices.Clone(log), func(e string) bool {
		return !strings.HasPrefix(e, "started ") && !strings.HasPrefix(e, "text ") && !strings.HasPrefix(e, "final ")
	})
}

// A turn admitted before the router (grpcapi admits at the stream's start) brings its permit in
// its context: the router takes no second place under the tenant's cap of 1, adds the agent's
// cap to that permit, and leaves its release to the admitter. Without one it acquires its own.
func TestRouter_uses_the_permit_the_edge_admitted_the_turn_with(t *testing.T) {
	h := newHarness(t, completed("一", "task-1", "ctx-1"), completed("二", "task-2", "ctx-2"))
	lim := admission.New(admission.Config{Replica: 10, Tenant: 1, Agent: 1})
	h.router = New(Config{Store: h.store, Invoker: h.inv, HoldTTL: 10 * time.Minute, Now: func() time.Time { return h.now }, Admission: lim})
	ctx, release, err := lim.Admit(t.Context(), tenantID)
	if err != nil {
		t.Fatal(err)
	}
	sink := &logSink{log: &h.log}
	if err := h.router.HandleTurn(ctx, connector.Turn{TenantID: tenantID, SessionID: "s1", TurnID: "t1", AgentID: agentA, Text: "hi"}, sink); err != nil {
		t.Fatalf("the admitted turn: %v", err)
	}
	if n := lim.InFlight(); n != 1 {
		t.Errorf("in flight after the turn: %d, want 1 (the admitter releases)", n)
	}
	// The permit holds the agent's place too: a turn admitted apart is refused by the agent's cap.
	lim.SetOverrides(map[string]connector.TenantLimits{tenantID: {MaxTurns: 2}})
	err = h.router.HandleTurn(t.Context(), connector.Turn{TenantID: tenantID, SessionID: "s2", TurnID: "t2", AgentID: agentA, Text: "hi"}, sink)
	var refused *connector.RefusedError
	if !errors.As(err, &refused) || refused.Cap != connector.CapAgent {
		t.Errorf("a turn with a permit of its own to the same agent: %v, want the agent's cap", err)
	}
	release()
	if n := lim.InFlight(); n != 0 {
		t.Errorf("in flight after the release: %d", n)
	}
	h.router.Wait()
}
