package health

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	connector "github.com/a2a-connector/a2a-connector"
)

// Store reads and writes the health tables (migrations/004_agent_health.sql).
type Store struct {
	pool *pgxpool.Pool
}

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// addMinute adds one replica's counts to a minute row. A row of an agent deleted meanwhile is
// not written: the agent row is locked (key share) so that a concurrent delete waits for this
// transaction instead of failing it with a foreign-key error.
const addMinute = `insert into agent_health_minutes as h
	(tenant_id, agent_id, minute, completed, input_required, handback, failed, canceled, errored, first_text, duration)
select $1::uuid, $2::uuid, $3::timestamptz, $4::bigint, $5::bigint, $6::bigint, $7::bigint, $8::bigint, $9::bigint, $10::bigint[], $11::bigint[]
where exists (select 1 from agents where tenant_id = $1::uuid and id = $2::uuid for key share)
on conflict (tenant_id, agent_id, minute) do update set
	completed = h.completed + excluded.completed,
	input_required = h.input_required + excluded.input_required,
	handback = h.handback + excluded.handback,
	failed = h.failed + excluded.failed,
	canceled = h.canceled + excluded.canceled,
	errored = h.errored + excluded.errored,
	first_text = health_add_counts(h.first_text, excluded.first_text),
	duration = health_add_counts(h.duration, excluded.duration)`

const addFailure = `insert into agent_health_failures (tenant_id, agent_id, at, outcome, code, message)
select $1::uuid, $2::uuid, $3::timestamptz, $4::text, $5::text, $6::text
where exists (select 1 from agents where tenant_id = $1::uuid and id = $2::uuid for key share)`

// add writes a flush in one transaction: all of it counts, or none.
func (s *Store) add(ctx context.Context, rows []minuteRow, failures []failureRow) error {
	if len(rows) == 0 && len(failures) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, r := range rows {
		o := r.c.outcomes
		b.Queue(addMinute, r.tenantID, r.agentID, r.minute, o[0], o[1], o[2], o[3], o[4], o[5],
			r.c.firstText[:], r.c.duration[:])
	}
	for _, f := range failures {
		b.Queue(addFailure, f.tenantID, f.agentID, f.At, string(f.Outcome), f.Code, f.Message)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("add %d minute rows and %d failures: %w", len(rows), len(failures), err)
		}
		return nil
	})
}

// prune deletes minute rows and failures older than cutoff, and the failures of the given
// agents beyond the newest MaxFailures.
func (s *Store) prune(ctx context.Context, cutoff time.Time, agents []agentKey) error {
	slices.SortFunc(agents, func(a, b agentKey) int {
		return strings.Compare(a.tenantID+a.agentID, b.tenantID+b.agentID)
	})
	b := &pgx.Batch{}
	b.Queue(`delete from agent_health_minutes where minute < $1`, cutoff)
	b.Queue(`delete from agent_health_failures where at < $1`, cutoff)
	for _, a := range agents {
		b.Queue(`delete from agent_health_failures where id in (
			select id from agent_health_failures where tenant_id = $1 and agent_id = $2
			order by at desc, id desc offset $3)`, a.tenantID, a.agentID, MaxFailures)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("prune before %s: %w", cutoff.Format(time.RFC3339), err)
	}
	return nil
}

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
func (s *Store) Summary(ctx context.Context, tenantID, agentID string, now time.Time) (Summary, error) {
	cur := now.UTC().Truncate(time.Minute)
	hourStart, dayStart := cur.Add(-59*time.Minute), cur.Add(-(24*60-1)*time.Minute)
	out := Summary{At: now, Minutes: make([]Minute, 60)}
	for i := range out.Minutes {
		out.Minutes[i].Start = hourStart.Add(time.Duration(i) * time.Minute)
	}
	var hour, day windowAcc

	rows, err := s.pool.Query(ctx, `select minute, completed, input_required, handback, failed, canceled, errored,
			first_text, duration
		from agent_health_minutes where tenant_id = $1 and agent_id = $2 and minute >= $3 and minute <= $4`,
		tenantID, agentID, dayStart, cur)
	if err != nil {
		return Summary{}, fmt.Errorf("health of agent %s: %w", agentID, err)
	}
	var (
		minute time.Time
		counts [len(outcomes)]int64
		ft, du []int64
	)
	_, err = pgx.ForEachRow(rows, []any{&minute, &counts[0], &counts[1], &counts[2], &counts[3],
		&counts[4], &counts[5], &ft, &du}, func() error {
		day.add(&counts, ft, du)
		if minute.Before(hourStart) {
			return nil
		}
		hour.add(&counts, ft, du)
		m := &out.Minutes[int(minute.Sub(hourStart)/time.Minute)]
		for i, oc := range outcomes {
			m.Turns += counts[i]
			if failed(oc) {
				m.Failures += counts[i]
			}
		}
		return nil
	})
	if err != nil {
		return Summary{}, fmt.Errorf("health of agent %s: %w", agentID, err)
	}
	out.Hour, out.Day = hour.window(), day.window()

	rows, err = s.pool.Query(ctx, `select at, outcome, code, message from agent_health_failures
		where tenant_id = $1 and agent_id = $2 and at >= $3
		order by at desc, id desc limit $4`, tenantID, agentID, dayStart, MaxFailures)
	if err != nil {
		return Summary{}, fmt.Errorf("failures of agent %s: %w", agentID, err)
	}
	out.Failures, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Failure, error) {
		var f Failure
		err := row.Scan(&f.At, &f.Outcome, &f.Code, &f.Message)
		return f, err
	})
	if err != nil {
		return Summary{}, fmt.Errorf("failures of agent %s: %w", agentID, err)
	}
	if out.Failures == nil {
		out.Failures = []Failure{}
	}
	return out, nil
}
