package health

import (
	"context"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// Store is where the health rows live: internal/store's *Store. The Recorder adds and prunes
// rows; Summaries reads them.
type Store interface {
	AddHealth(ctx context.Context, rows []store.HealthMinute, failures []store.HealthFailure) error
	PruneHealth(ctx context.Context, cutoff time.Time, agents []store.HealthAgent, keep int) error
}

// Rows reads the health rows of one agent (internal/store's *Store).
type Rows interface {
	HealthMinutes(ctx context.Context, tenantID, agentID string, from, to time.Time) ([]store.HealthMinute, error)
	HealthFailures(ctx context.Context, tenantID, agentID string, since time.Time, limit int) ([]store.HealthFailure, error)
}

// The outcome counters of a row are the store's columns (a compile-time check).
var _ [store.HealthOutcomes]int64 = [len(outcomes)]int64{}

// Summaries reads agents' health summaries from the rows of every replica.
type Summaries struct {
	rows Rows
}

// NewSummaries returns the Summaries of rows.
func NewSummaries(rows Rows) *Summaries { return &Summaries{rows: rows} }

// Summary is an agent's health over the last hour and day, as of At.
type Summary struct {
	At        time.Time
	Hour, Day Window
	// Minutes are the last 60 minutes, oldest first, the current (partial) one last.
	Minutes []Minute
	// Failures are the newest failures of the last day, newest first, at most MaxFailures.
	Failures []Failure
}

// Window is the health of one period.
type Window struct {
	Turns int64
	// Outcomes counts the turns of each of the outcomes (all present, zeros included).
	Outcomes map[connector.Outcome]int64
	// Failures counts FAILED and ERROR turns.
	Failures  int64
	FirstText Latency
	Duration  Latency
}

// Latency are percentiles read from merged buckets: within RelativeError (see
// Buckets.Percentile). Count is the number of samples; the percentiles are zero without any.
type Latency struct {
	Count    int64
	P50, P95 time.Duration
}

// Minute is one minute of the chart.
type Minute struct {
	Start           time.Time
	Turns, Failures int64
}

// Failure is one failed turn: when, its outcome, code and the connector's message.
type Failure struct {
	At      time.Time
	Outcome connector.Outcome
	Code    string
	Message string
}

// windowAcc sums rows into a Window.
type windowAcc struct {
	outcomes            [len(outcomes)]int64
	firstText, duration Buckets
}

func (w *windowAcc) add(o *[len(outcomes)]int64, ft, du []int64) {
	for i := range w.outcomes {
		w.outcomes[i] += o[i]
	}
	for i := range min(len(ft), NumBuckets) {
		w.firstText[i] += ft[i]
	}
	for i := range min(len(du), NumBuckets) {
		w.duration[i] += du[i]
	}
}

func (w *windowAcc) window() Window {
	out := Window{Outcomes: make(map[connector.Outcome]int64, len(outcomes)),
		FirstText: latency(&w.firstText), Duration: latency(&w.duration)}
	for i, oc := range outcomes {
		out.Outcomes[oc] = w.outcomes[i]
		out.Turns += w.outcomes[i]
		if failed(oc) {
			out.Failures += w.outcomes[i]
		}
	}
	return out
}

func latency(b *Buckets) Latency {
	l := Latency{Count: b.Count()}
	l.P50, _ = b.Percentile(0.50)
	l.P95, _ = b.Percentile(0.95)
	return l
}

// Summary reads the health of one agent of one tenant as of now: the minute rows of every
// replica, summed, and the newest failures. An agent without turns has a zero Summary (with
// its 60 empty minutes); the caller checks that the agent exists in the tenant.
func (s *Summaries) Summary(ctx context.Context, tenantID, agentID string, now time.Time) (Summary, error) {
	cur := now.UTC().Truncate(time.Minute)
	hourStart, dayStart := cur.Add(-59*time.Minute), cur.Add(-(24*60-1)*time.Minute)
	out := Summary{At: now, Minutes: make([]Minute, 60)}
	for i := range out.Minutes {
		out.Minutes[i].Start = hourStart.Add(time.Duration(i) * time.Minute)
	}
	var hour, day windowAcc

	minutes, err := s.rows.HealthMinutes(ctx, tenantID, agentID, dayStart, cur)
	if err != nil {
		return Summary{}, err
	}
	for _, r := range minutes {
		day.add(&r.Outcomes, r.FirstText, r.Duration)
		if r.Minute.Before(hourStart) {
			continue
		}
		hour.add(&r.Outcomes, r.FirstText, r.Duration)
		m := &out.Minutes[int(r.Minute.Sub(hourStart)/time.Minute)]
		for i, oc := range outcomes {
			m.Turns += r.Outcomes[i]
			if failed(oc) {
				m.Failures += r.Outcomes[i]
			}
		}
	}
	out.Hour, out.Day = hour.window(), day.window()

	failures, err := s.rows.HealthFailures(ctx, tenantID, agentID, dayStart, MaxFailures)
	if err != nil {
		return Summary{}, err
	}
	out.Failures = make([]Failure, len(failures))
	for i, f := range failures {
		out.Failures[i] = Failure{At: f.At, Outcome: f.Outcome, Code: f.Code, Message: f.Message}
	}
	return out, nil
}
