package console

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/a2a-connector/a2a-connector/internal/probe"
)

// Defaults of CheckLimit.
const (
	DefaultCheckBurst = 3
	DefaultCheckEvery = 20 * time.Second
	// DefaultCheckTenants bounds the tenants the limiter remembers.
	DefaultCheckTenants = 10_000
)

// CheckLimit bounds how often one tenant may run "check my agent" (each run calls the agent
// twice and fetches its card). The limit lives in this replica's memory: behind N replicas a
// tenant may run up to N times as many checks. That is enough to keep a tenant from hammering
// its own agent, or the connector's egress, by accident; it is not a quota.
type CheckLimit struct {
	// Burst checks may run back to back (default 3); after that, one more every Every
	// (default 20s).
	Burst int
	Every time.Duration
	// Tenants bounds how many tenants are remembered (default 10000); see checkLimiter.
	Tenants int
	// Now is the limiter's clock; nil means time.Now.
	Now func() time.Time
}

// checkLimiter is a token bucket per tenant. The map is bounded: when it is full, tenants whose
// bucket has filled up again are forgotten (a fresh bucket is the same), and if none has, one
// arbitrary tenant is, which at worst gives that tenant a fresh burst.
type checkLimiter struct {
	every   time.Duration
	burst   int
	max     int
	now     func() time.Time
	mu      sync.Mutex
	tenants map[string]*rate.Limiter
}

func newCheckLimiter(c CheckLimit) *checkLimiter {
	l := &checkLimiter{every: c.Every, burst: c.Burst, max: c.Tenants, now: c.Now, tenants: map[string]*rate.Limiter{}}
	if l.every <= 0 {
		l.every = DefaultCheckEvery
	}
	if l.burst <= 0 {
		l.burst = DefaultCheckBurst
	}
	if l.max <= 0 {
		l.max = DefaultCheckTenants
	}
	if l.now == nil {
		l.now = time.Now
	}
	return l
}

// allow takes one check from the tenant's bucket, or says how long until one is there.
func (l *checkLimiter) allow(tenantID string) (time.Duration, bool) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.tenants[tenantID]
	if !ok {
		if len(l.tenants) >= l.max {
			l.evict(now)
		}
		lim = rate.NewLimiter(rate.Every(l.every), l.burst)
		l.tenants[tenantID] = lim
	}
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}

func (l *checkLimiter) evict(now time.Time) {
	for id, lim := range l.tenants {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(l.tenants, id)
		}
	}
	for id := range l.tenants {
		if len(l.tenants) < l.max {
			return
		}
		delete(l.tenants, id)
	}
}

// checkResponse is the answer of POST /v1/agents/{id}/check.
type checkResponse struct {
	AgentID  string `json:"agentId"`
	Revision int    `json:"revision"`
	// Text is the message the probe sent.
	Text            string         `json:"text"`
	ProtocolVersion string         `json:"protocolVersion,omitempty"`
	AnsweredURL     string         `json:"answeredUrl,omitempty"`
	Summary         checkSummary   `json:"summary"`
	Checks          []probe.Result `json:"checks"`
	CheckedAt       time.Time      `json:"checkedAt"`
}

type checkSummary struct {
	Pass int `json:"pass"`
	Warn int `json:"warn"`
	Fail int `json:"fail"`
}

// checkAgent runs "check my agent": a conformance probe of the tenant's agent (internal/probe).
// It sends one harmless message through the same invoke path as real turns, outside any dialog
// session, and is rate-limited per tenant on this replica. Disabled agents can be checked too:
// checking before enabling is the point.
func (s *Server) checkAgent(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	tenantID := tenantFrom(r.Context()).ID
	a, key, err := s.agents.WithCredential(r.Context(), tenantID, id)
	if err != nil {
		return fmt.Errorf("check agent: %w", err)
	}
	if s.prober == nil {
		return &apiError{status: http.StatusNotImplemented, code: "not_implemented", detail: "Agent checks are not available on this server."}
	}
	if wait, ok := s.checks.allow(tenantID); !ok {
		secs := int(math.Ceil(wait.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		return &apiError{status: http.StatusTooManyRequests, code: "rate_limited",
			detail: fmt.Sprintf("Too many agent checks for this tenant; try again in %d seconds.", secs)}
	}
	// A check calls the agent like a turn: it counts against the same caps (in this process).
	permit, err := s.admit.Acquire(r.Context(), tenantID)
	if err != nil {
		return err
	}
	defer permit.Release()
	if err := permit.AcquireAgent(r.Context(), a.ID); err != nil {
		return err
	}
	revs, err := s.store.Revisions(r.Context(), tenantID, a.ID)
	if err != nil {
		return fmt.Errorf("check agent: %w", err)
	}
	var stored []byte
	for _, rv := range revs {
		if rv.Revision == a.Revision {
			stored = rv.Card
		}
	}
	rep := s.prober.Run(r.Context(), probe.Target{Agent: a, Credential: key, StoredCard: stored})
	out := checkResponse{AgentID: a.ID, Revision: a.Revision, Text: rep.Text, ProtocolVersion: rep.ProtocolVersion,
		AnsweredURL: rep.AnsweredURL, Checks: rep.Checks, CheckedAt: time.Now().UTC()}
	for _, c := range rep.Checks {
		switch c.Status {
		case probe.Pass:
			out.Summary.Pass++
		case probe.Warn:
			out.Summary.Warn++
		case probe.Fail:
			out.Summary.Fail++
		}
	}
	return writeJSON(w, http.StatusOK, out)
}
