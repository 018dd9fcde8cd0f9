package a2aclient

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
)

// budgetClock is a clock the test moves by hand.
type budgetClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *budgetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *budgetClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestRetryBudget_a_failing_agent_sees_its_calls_plus_the_budget(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	clock := &budgetClock{now: time.Unix(1_800_000_000, 0)}
	budget := NewRetryBudget(RetryBudgetOptions{Percent: DefaultRetryBudgetPercent, Now: clock.Now})
	c := testClient(t, ClientOptions{RetryBudget: budget})
	const calls = 30
	for range calls {
		if _, err := c.SendMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("x")); err == nil {
			t.Fatal("SendMessage succeeded against a 503 agent")
		}
	}
	if got, want := int(hits.Load()), calls+calls*DefaultRetryBudgetPercent/100; got != want {
		t.Errorf("agent saw %d requests for %d calls, want %d (calls + %d%%)", got, calls, want, DefaultRetryBudgetPercent)
	}

	// A whole window later the counts are gone: the minimum allowance is back, and only it.
	clock.Add(DefaultRetryBudgetWindow)
	hits.Store(0)
	if _, err := c.SendMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("x")); err == nil {
		t.Fatal("SendMessage succeeded against a 503 agent")
	}
	if got := hits.Load(); got != 1+DefaultRetryBudgetMin {
		t.Errorf("after a window: %d requests, want %d (one call, its minimum retry)", got, 1+DefaultRetryBudgetMin)
	}
}

func TestRetryBudget_a_quiet_agents_blip_is_still_retried(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		req, _ := readRequest(t, r)
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		writeJSON(t, w, req.ID, a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}})
	})
	c := testClient(t, ClientOptions{RetryBudget: NewRetryBudget(RetryBudgetOptions{Percent: DefaultRetryBudgetPercent})})
	if _, err := c.SendMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("x")); err != nil {
		t.Fatalf("SendMessage: %v (the first failure of a quiet agent must be retried)", err)
	}
}

func TestRetryBudget_is_per_endpoint(t *testing.T) {
	t.Parallel()
	clock := &budgetClock{now: time.Unix(1_800_000_000, 0)}
	b := NewRetryBudget(RetryBudgetOptions{Percent: DefaultRetryBudgetPercent, Now: clock.Now})
	b.call("a")
	if !b.retry("a") || b.retry("a") {
		t.Error("endpoint a: want exactly its minimum retry")
	}
	b.call("b")
	if !b.retry("b") {
		t.Error("endpoint b: a's spent budget must not be b's")
	}
}
