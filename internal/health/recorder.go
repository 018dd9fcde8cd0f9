package health

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// Defaults of RecorderOptions.
const (
	// DefaultInterval is how often the flusher writes: the health view lags at most this much.
	DefaultInterval = time.Minute
	// Retention is how long minute rows and failures are kept; the view reads the last day, the
	// rest is slack for a late reader and for clocks that differ between replicas.
	Retention = 48 * time.Hour
	// MaxFailures is how many failures are kept (and shown) per agent.
	MaxFailures = 20
	// maxMessageBytes caps a failure message (the connector's sentences are far shorter; one
	// quoting the agent is clipped).
	maxMessageBytes = 300
	// maxPendingCells bounds what a replica holds while Postgres is away: about 1.2 KB each, so
	// 20 000 is some 24 MB (an hour of 300 busy agents). Beyond it, turns are not counted and
	// the next flush logs how many.
	maxPendingCells = 20000
	// flushTimeout bounds one flush of Run.
	flushTimeout = 30 * time.Second
)

// RecorderOptions configure a Recorder.
type RecorderOptions struct {
	// Now is the clock that puts turns into minutes and decides retention; nil is time.Now.
	// Tests inject one, so that they never sleep.
	Now func() time.Time
	// Interval between flushes of Run; 0 is DefaultInterval.
	Interval time.Duration
	Logger   *slog.Logger
}

// Recorder counts turns in memory, per tenant, agent and minute, and flushes the counts to the
// Store. Record is safe for concurrent use; Run, Flush and Close are for one owner.
type Recorder struct {
	store    Store
	now      func() time.Time
	interval time.Duration
	log      *slog.Logger

	flushMu sync.Mutex // one flush at a time (Run's and Close's)

	mu       sync.Mutex // guards what follows; held only for in-memory adds and swaps
	cells    map[cellKey]*cell
	failures map[agentKey][]Failure
	dropped  int64 // turns not counted since the last flush (pending bound reached)
}

type agentKey struct{ tenantID, agentID string }

type cellKey struct {
	agentKey
	minute int64 // Unix minutes
}

// cell is one tenant, agent and minute of one replica, since its last flush.
type cell struct {
	outcomes  [len(outcomes)]int64
	firstText Buckets
	duration  Buckets
}

// NewRecorder returns a Recorder that flushes to st.
func NewRecorder(st Store, o RecorderOptions) *Recorder {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Recorder{store: st, now: o.Now, interval: o.Interval, log: o.Logger,
		cells: map[cellKey]*cell{}, failures: map[agentKey][]Failure{}}
}

// Record counts one turn. It never waits for I/O: it adds to memory under a mutex held for a
// few hundred nanoseconds. A turn whose tenant or agent id is not a UUID (no agent was routed)
// is ignored.
func (r *Recorder) Record(t connector.TurnStat) {
	if uuid.Validate(t.TenantID) != nil || uuid.Validate(t.AgentID) != nil {
		return
	}
	now := r.now()
	ak := agentKey{t.TenantID, t.AgentID}
	k := cellKey{ak, now.Unix() / 60}
	var f Failure
	isFailure := failed(t.Outcome)
	if isFailure {
		f = Failure{At: now, Outcome: t.Outcome, Code: t.ErrorCode, Message: clip(t.ErrorMessage, maxMessageBytes)}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.cells[k]
	if c == nil {
		if len(r.cells) >= maxPendingCells {
			r.dropped++
			return
		}
		c = &cell{}
		r.cells[k] = c
	}
	c.outcomes[outcomeIndex(t.Outcome)]++
	c.duration.Add(t.Duration)
	if t.HasText {
		c.firstText.Add(t.FirstText)
	}
	if isFailure {
		r.failures[ak] = appendFailure(r.failures[ak], f)
	}
}

// appendFailure appends f, keeping the newest MaxFailures.
func appendFailure(fs []Failure, f Failure) []Failure {
	if len(fs) == MaxFailures {
		copy(fs, fs[1:])
		fs = fs[:MaxFailures-1]
	}
	return append(fs, f)
}

// Run flushes every interval until ctx is done. It does not flush at the end: the owner calls
// Close once the turns that are still running have ended.
func (r *Recorder) Run(ctx context.Context) {
	tick := time.NewTicker(r.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			fctx, cancel := context.WithTimeout(ctx, flushTimeout)
			if err := r.Flush(fctx); err != nil && ctx.Err() == nil {
				r.log.Warn("health: flush", slog.Any("error", err))
			}
			cancel()
		}
	}
}

// Close flushes what is left; call it after Run returned and the last turn ended, before the
// pool closes.
func (r *Recorder) Close(ctx context.Context) error {
	return r.Flush(ctx)
}

// Flush writes the counts since the last flush to the Store, in one transaction that adds them
// to the stored rows, then prunes rows past Retention and failures beyond MaxFailures. When the
// write fails the counts are kept for the next flush (a flush whose commit succeeded but whose
// answer was lost would then count twice: rare, and documented).
func (r *Recorder) Flush(ctx context.Context) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()

	r.mu.Lock()
	cells, failures, dropped := r.cells, r.failures, r.dropped
	r.cells, r.failures, r.dropped = make(map[cellKey]*cell, len(cells)), map[agentKey][]Failure{}, 0
	r.mu.Unlock()

	if dropped > 0 {
		r.log.Warn("health: turns not counted while the database was away", slog.Int64("turns", dropped))
	}
	now := r.now()
	if err := r.store.AddHealth(ctx, rowsOf(cells), failureRowsOf(failures)); err != nil {
		r.restore(cells, failures, now)
		return fmt.Errorf("health: flush: %w", err)
	}
	agents := make([]store.HealthAgent, 0, len(failures))
	for ak := range failures {
		agents = append(agents, store.HealthAgent{TenantID: ak.tenantID, AgentID: ak.agentID})
	}
	if err := r.store.PruneHealth(ctx, now.Add(-Retention), agents, MaxFailures); err != nil {
		// The rows are written; pruning is tried again at the next flush.
		return fmt.Errorf("health: prune: %w", err)
	}
	return nil
}

// restore puts back the counts of a failed flush, dropping minutes past the retention.
func (r *Recorder) restore(cells map[cellKey]*cell, failures map[agentKey][]Failure, now time.Time) {
	cutoff := now.Add(-Retention).Unix() / 60
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, c := range cells {
		if k.minute < cutoff {
			continue
		}
		cur := r.cells[k]
		if cur == nil {
			if len(r.cells) >= maxPendingCells {
				r.dropped += sum(c.outcomes[:])
				continue
			}
			r.cells[k] = c
			continue
		}
		for i := range cur.outcomes {
			cur.outcomes[i] += c.outcomes[i]
		}
		cur.firstText.Merge(&c.firstText)
		cur.duration.Merge(&c.duration)
	}
	for ak, old := range failures {
		merged := append(old, r.failures[ak]...)
		r.failures[ak] = merged[max(0, len(merged)-MaxFailures):]
	}
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// rowsOf orders the cells by key: two replicas then lock the same rows in the same order and
// cannot deadlock.
func rowsOf(cells map[cellKey]*cell) []store.HealthMinute {
	rows := make([]store.HealthMinute, 0, len(cells))
	for k, c := range cells {
		rows = append(rows, store.HealthMinute{TenantID: k.tenantID, AgentID: k.agentID,
			Minute: time.Unix(k.minute*60, 0).UTC(), Outcomes: c.outcomes, FirstText: c.firstText[:], Duration: c.duration[:]})
	}
	slices.SortFunc(rows, func(a, b store.HealthMinute) int {
		return cmp.Or(cmp.Compare(a.TenantID, b.TenantID), cmp.Compare(a.AgentID, b.AgentID), a.Minute.Compare(b.Minute))
	})
	return rows
}

func failureRowsOf(failures map[agentKey][]Failure) []store.HealthFailure {
	var rows []store.HealthFailure
	for ak, fs := range failures {
		for _, f := range fs {
			rows = append(rows, store.HealthFailure{TenantID: ak.tenantID, AgentID: ak.agentID,
				At: f.At, Outcome: f.Outcome, Code: f.Code, Message: f.Message})
		}
	}
	return rows
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
