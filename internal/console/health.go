package console

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/breaker"
	"github.com/a2a-connector/a2a-connector/internal/health"
)

// HealthSummaries summarises an agent's turns for GET /v1/agents/{id}/health
// (health.Summaries); the agent's breakers are read from the store.
type HealthSummaries interface {
	Summary(ctx context.Context, tenantID, agentID string, now time.Time) (health.Summary, error)
}

// healthJSON is the body of GET /v1/agents/{id}/health: the agent's turns over the last hour
// and day as the connector replicas flushed them (each flushes once a minute, so the newest
// minute may still be filling up).
type healthJSON struct {
	AgentID string `json:"agentId"`
	// EndpointURL, EndpointBinding and ProtocolVersion are the interface the turns call (the
	// agent resource's, as ListAgents has them): what the numbers below are about.
	EndpointURL     string `json:"endpointUrl"`
	EndpointBinding string `json:"endpointBinding"`
	ProtocolVersion string `json:"protocolVersion"`
	// At is the end of both windows (the server's clock).
	At       time.Time     `json:"at"`
	Hour     windowJSON    `json:"hour"`
	Day      windowJSON    `json:"day"`
	Minutes  []minuteJSON  `json:"minutes"`
	Failures []failureJSON `json:"failures"`
	// PercentileRelativeError bounds the error of every percentile (see internal/health).
	PercentileRelativeError float64 `json:"percentileRelativeError"`
	// Breakers are the agent's circuit breakers, one per endpoint, as the deployment keeps them
	// (every replica decides turns by it), each with every replica's copy.
	Breakers []breakerJSON `json:"breakers"`
}

// breakerJSON is the deployment's breaker of one agent endpoint.
type breakerJSON struct {
	Endpoint string `json:"endpoint"`
	// State is closed, open or half_open.
	State string `json:"state"`
	// Failures are the consecutive "down" turns counted across the deployment.
	Failures int       `json:"failures"`
	Since    time.Time `json:"since"`
	// Cause is the last failure that counted ("" when closed without failures).
	Cause string `json:"cause"`
	// RetryAt is when one replica may probe the agent next (open only); ProbeUntil, when the
	// probe under way stops holding the others back (half_open only).
	RetryAt    *time.Time `json:"retryAt"`
	ProbeUntil *time.Time `json:"probeUntil"`
	UpdatedAt  time.Time  `json:"updatedAt"`
	// Replicas are the processes' copies, as each reported it within the last 15 minutes.
	Replicas []replicaBreakerJSON `json:"replicas"`
}

// replicaBreakerJSON is one process's copy of a breaker.
type replicaBreakerJSON struct {
	Replica   string     `json:"replica"`
	State     string     `json:"state"`
	Since     time.Time  `json:"since"`
	Cause     string     `json:"cause"`
	RetryAt   *time.Time `json:"retryAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
}

type windowJSON struct {
	Turns           int64            `json:"turns"`
	Failures        int64            `json:"failures"`
	Outcomes        map[string]int64 `json:"outcomes"`
	TimeToFirstText latencyJSON      `json:"timeToFirstText"`
	Duration        latencyJSON      `json:"duration"`
}

// latencyJSON holds percentiles in milliseconds; null when there is no sample.
type latencyJSON struct {
	Count int64    `json:"count"`
	P50Ms *float64 `json:"p50Ms"`
	P95Ms *float64 `json:"p95Ms"`
}

type minuteJSON struct {
	Start    time.Time `json:"start"`
	Turns    int64     `json:"turns"`
	Failures int64     `json:"failures"`
}

type failureJSON struct {
	At      time.Time `json:"at"`
	Outcome string    `json:"outcome"`
	Code    string    `json:"code"`
	Message string    `json:"message"`
}

// agentHealth serves GET /v1/agents/{id}/health. The agent is looked up in the token's tenant
// first (another tenant's agent is 404), and the health query is scoped by that tenant too.
func (s *Server) agentHealth(w http.ResponseWriter, r *http.Request) error {
	if s.health == nil {
		return &apiError{status: http.StatusNotImplemented, code: "not_implemented", detail: "Agent health is not available on this server."}
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	tenantID := tenantFrom(r.Context()).ID
	agent, err := s.agents.Get(r.Context(), tenantID, id)
	if err != nil {
		return fmt.Errorf("agent health: %w", err)
	}
	sum, err := s.health.Summary(r.Context(), tenantID, id, time.Now())
	if err != nil {
		return fmt.Errorf("agent health: %w", err)
	}
	active := agent.ActiveInterface()
	out := healthJSON{AgentID: id, EndpointURL: active.URL, EndpointBinding: bindingName(active.Binding), ProtocolVersion: active.ProtocolVersion,
		At: sum.At.UTC(), Hour: toWindowJSON(sum.Hour), Day: toWindowJSON(sum.Day),
		Minutes: make([]minuteJSON, len(sum.Minutes)), Failures: make([]failureJSON, len(sum.Failures)),
		PercentileRelativeError: health.RelativeError}
	for i, m := range sum.Minutes {
		out.Minutes[i] = minuteJSON{Start: m.Start.UTC(), Turns: m.Turns, Failures: m.Failures}
	}
	for i, f := range sum.Failures {
		out.Failures[i] = failureJSON{At: f.At.UTC(), Outcome: string(f.Outcome), Code: f.Code, Message: f.Message}
	}
	if out.Breakers, err = s.breakers(r, tenantID, id); err != nil {
		return fmt.Errorf("agent health: %w", err)
	}
	return writeJSON(w, http.StatusOK, out)
}

// breakers returns the deployment's breakers of an agent, each with the replicas' copies. A copy
// of an endpoint the deployment keeps no breaker for (a replica that decided alone while
// Postgres was away) is listed under that endpoint's closed breaker.
func (s *Server) breakers(r *http.Request, tenantID, agentID string) ([]breakerJSON, error) {
	deployment, err := s.store.DeploymentBreakers(r.Context(), tenantID, agentID)
	if err != nil {
		return nil, err
	}
	replicas, err := s.store.ReplicaBreakers(r.Context(), tenantID, agentID)
	if err != nil {
		return nil, err
	}
	out := make([]breakerJSON, 0, len(deployment))
	at := map[string]int{}
	for _, b := range deployment {
		at[b.Endpoint] = len(out)
		out = append(out, breakerJSON{Endpoint: b.Endpoint, State: b.State, Failures: b.Failures, Since: b.Since.UTC(), Cause: b.Cause,
			RetryAt: timePtr(b.RetryAt), ProbeUntil: timePtr(b.ProbeUntil), UpdatedAt: b.UpdatedAt.UTC(), Replicas: []replicaBreakerJSON{}})
	}
	for _, b := range replicas {
		i, ok := at[b.Endpoint]
		if !ok {
			i = len(out)
			at[b.Endpoint] = i
			out = append(out, breakerJSON{Endpoint: b.Endpoint, State: breaker.Closed, Since: b.Since.UTC(), UpdatedAt: b.UpdatedAt.UTC(),
				Replicas: []replicaBreakerJSON{}})
		}
		out[i].Replicas = append(out[i].Replicas, replicaBreakerJSON{Replica: b.Replica, State: b.State, Since: b.Since.UTC(),
			Cause: b.Cause, RetryAt: timePtr(b.RetryAt), UpdatedAt: b.UpdatedAt.UTC()})
	}
	return out, nil
}

// timePtr is t in UTC, or nil when zero.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func toWindowJSON(w health.Window) windowJSON {
	out := windowJSON{Turns: w.Turns, Failures: w.Failures, Outcomes: make(map[string]int64, len(w.Outcomes)),
		TimeToFirstText: toLatencyJSON(w.FirstText), Duration: toLatencyJSON(w.Duration)}
	for oc, n := range w.Outcomes {
		out.Outcomes[string(oc)] = n
	}
	return out
}

func toLatencyJSON(l health.Latency) latencyJSON {
	out := latencyJSON{Count: l.Count}
	if l.Count > 0 {
		p50, p95 := ms(l.P50), ms(l.P95)
		out.P50Ms, out.P95Ms = &p50, &p95
	}
	return out
}

// ms is d in milliseconds, to a tenth.
func ms(d time.Duration) float64 {
	return float64(d.Round(100*time.Microsecond)) / float64(time.Millisecond)
}
