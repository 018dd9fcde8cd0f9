package health_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"go.uber.org/goleak"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/health"
	"github.com/a2a-connector/a2a-connector/internal/pgtest"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// testDB is this package's own migrated database; tests keep apart by using their own tenant.
var testDB *pgtest.DB

// TestMain also checks that no flusher goroutine outlives its test.
func TestMain(m *testing.M) {
	code := pgtest.Run(m, &testDB)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// clock is a settable clock shared by the recorders of a test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

// base is an instant 20 s into a minute, so turns recorded at base+s stay in its minute. It is
// taken from the wall clock (an hour or so ago), never a fixed date: tests whose recorders use
// the real clock prune every row older than Retention, and a fixed date falls behind that
// cutoff two days after it was written, deleting the rows of the parallel tests that use base.
var base = time.Now().UTC().Add(-time.Hour).Truncate(time.Hour).Add(30*time.Minute + 20*time.Second)

// newAgent registers an agent in a new tenant and returns both ids.
func newAgent(t *testing.T) (tenantID, agentID string) {
	t.Helper()
	tenantID = testDB.NewTenant(t)
	return tenantID, addAgent(t, tenantID)
}

func addAgent(t *testing.T, tenantID string) string {
	t.Helper()
	id := uuid.NewString()
	_, err := store.New(testDB.Pool).CreateAgent(t.Context(), connector.NewAgent{
		ID: id, TenantID: tenantID, CardURL: "https://agent.example.com/" + id,
		ResolvedCardURL: "https://agent.example.com/" + id + "/.well-known/agent-card.json",
		Card:            json.RawMessage(`{"name": "Weather"}`), Enabled: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func newRecorder(c *clock) *health.Recorder {
	return health.NewRecorder(store.New(testDB.Pool), health.RecorderOptions{Now: c.now})
}

func completed(tenantID, agentID string, firstText, took time.Duration) connector.TurnStat {
	return connector.TurnStat{TenantID: tenantID, AgentID: agentID, Outcome: connector.OutcomeCompleted,
		FirstText: firstText, HasText: true, Duration: took}
}

func failedTurn(tenantID, agentID, code string, took time.Duration) connector.TurnStat {
	return connector.TurnStat{TenantID: tenantID, AgentID: agentID, Outcome: connector.OutcomeFailed,
		ErrorCode: code, ErrorMessage: "the agent did not finish within the turn timeout of 30s", Duration: took}
}

func outcomes(completed, inputRequired, handback, failed, canceled, errored int64) map[connector.Outcome]int64 {
	return map[connector.Outcome]int64{connector.OutcomeCompleted: completed,
		connector.OutcomeInputRequired: inputRequired, connector.OutcomeHandback: handback,
		connector.OutcomeFailed: failed, connector.OutcomeCanceled: canceled, connector.OutcomeError: errored}
}

func summary(t *testing.T, tenantID, agentID string, now time.Time) health.Summary {
	t.Helper()
	s, err := health.NewSummaries(store.New(testDB.Pool)).Summary(t.Context(), tenantID, agentID, now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func flush(t *testing.T, r *health.Recorder) {
	t.Helper()
	if err := r.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestRecordFlushRead(t *testing.T) {
	t.Parallel()
	tenantID, agentID := newAgent(t)
	c := &clock{t: base}
	r := newRecorder(c)
	r.Record(completed(tenantID, agentID, 100*time.Millisecond, 400*time.Millisecond))
	r.Record(connector.TurnStat{TenantID: tenantID, AgentID: agentID, Outcome: connector.OutcomeInputRequired,
		FirstText: 200 * time.Millisecond, HasText: true, Duration: time.Second})
	r.Record(connector.TurnStat{TenantID: tenantID, AgentID: agentID, Outcome: connector.OutcomeHandback, Duration: time.Second})
	c.set(base.Add(-2 * time.Hour)) // in the day, not in the hour
	r.Record(failedTurn(tenantID, agentID, "timeout", 30*time.Second))
	c.set(base.Add(5 * time.Second))
	r.Record(connector.TurnStat{TenantID: tenantID, AgentID: agentID, Outcome: connector.OutcomeError,
		ErrorCode: "api_key_missing", ErrorMessage: "the agent needs credentials and none are set"})
	flush(t, r)

	got := summary(t, tenantID, agentID, base.Add(10*time.Second))
	if diff := cmp.Diff(outcomes(1, 1, 1, 0, 0, 1), got.Hour.Outcomes); diff != "" {
		t.Errorf("hour outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(outcomes(1, 1, 1, 1, 0, 1), got.Day.Outcomes); diff != "" {
		t.Errorf("day outcomes (-want +got):\n%s", diff)
	}
	if got.Hour.Turns != 4 || got.Hour.Failures != 1 || got.Day.Turns != 5 || got.Day.Failures != 2 {
		t.Errorf("hour turns/failures %d/%d, day %d/%d; want 4/1, 5/2", got.Hour.Turns, got.Hour.Failures, got.Day.Turns, got.Day.Failures)
	}
	if got.Hour.FirstText.Count != 2 || got.Hour.Duration.Count != 4 {
		t.Errorf("hour samples: first text %d, duration %d; want 2, 4", got.Hour.FirstText.Count, got.Hour.Duration.Count)
	}
	// The current minute is the chart's last point.
	last := got.Minutes[len(got.Minutes)-1]
	if want := (health.Minute{Start: base.Truncate(time.Minute), Turns: 4, Failures: 1}); !last.Start.Equal(want.Start) || last.Turns != want.Turns || last.Failures != want.Failures {
		t.Errorf("last minute %+v, want %+v", last, want)
	}
	if len(got.Minutes) != 60 {
		t.Errorf("%d minutes, want 60", len(got.Minutes))
	}
	var codes []string
	for _, f := range got.Failures {
		codes = append(codes, string(f.Outcome)+" "+f.Code)
	}
	if diff := cmp.Diff([]string{"ERROR api_key_missing", "FAILED timeout"}, codes); diff != "" {
		t.Errorf("failures, newest first (-want +got):\n%s", diff)
	}
	if got.Failures[1].Message != "the agent did not finish within the turn timeout of 30s" {
		t.Errorf("failure message %q", got.Failures[1].Message)
	}
}

// Two replicas count turns of the same agent in the same minute: the row sums both, and the
// percentiles come from the merged buckets.
func TestReplicasSum(t *testing.T) {
	t.Parallel()
	tenantID, agentID := newAgent(t)
	c := &clock{t: base}
	a, b := newRecorder(c), newRecorder(c)
	for range 90 {
		a.Record(completed(tenantID, agentID, 50*time.Millisecond, 200*time.Millisecond))
	}
	for range 10 {
		b.Record(completed(tenantID, agentID, 800*time.Millisecond, 4*time.Second))
	}
	b.Record(failedTurn(tenantID, agentID, "timeout", 30*time.Second))
	flush(t, a)
	flush(t, b)

	got := summary(t, tenantID, agentID, base)
	if diff := cmp.Diff(outcomes(100, 0, 0, 1, 0, 0), got.Hour.Outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	// p50 is replica a's 50 ms, p95 replica b's 800 ms: neither replica alone knows the p95.
	within(t, "first text p50", got.Hour.FirstText.P50, 50*time.Millisecond)
	within(t, "first text p95", got.Hour.FirstText.P95, 800*time.Millisecond)
	within(t, "duration p50", got.Hour.Duration.P50, 200*time.Millisecond)
	within(t, "duration p95", got.Hour.Duration.P95, 4*time.Second)
}

func within(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if rel := math.Abs(float64(got-want)) / float64(want); rel > health.RelativeError {
		t.Errorf("%s = %v, want %v within %.1f%%", what, got, want, 100*health.RelativeError)
	}
}

// A flush writes what was recorded since the previous one: flushing twice in one minute, or
// flushing with nothing new, adds nothing twice.
func TestRepeatedFlushDoesNotDoubleCount(t *testing.T) {
	t.Parallel()
	tenantID, agentID := newAgent(t)
	c := &clock{t: base}
	r := newRecorder(c)
	r.Record(completed(tenantID, agentID, 10*time.Millisecond, 20*time.Millisecond))
	r.Record(failedTurn(tenantID, agentID, "agent_error", time.Second))
	flush(t, r)
	flush(t, r)
	c.set(base.Add(30 * time.Second))
	r.Record(completed(tenantID, agentID, 10*time.Millisecond, 20*time.Millisecond))
	flush(t, r)
	flush(t, r)

	got := summary(t, tenantID, agentID, c.now())
	if diff := cmp.Diff(outcomes(2, 0, 0, 1, 0, 0), got.Hour.Outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if got.Hour.Duration.Count != 3 || len(got.Failures) != 1 {
		t.Errorf("duration samples %d, failures %d; want 3, 1", got.Hour.Duration.Count, len(got.Failures))
	}
}

// Rows and failures past the retention are deleted by the next flush; failures beyond the
// newest MaxFailures of an agent too.
//
// Not parallel: the prune is global (every tenant's rows before the cutoff), and this test's
// clock runs two days ahead, so its flushes would delete the rows the other tests are about to
// read. Sequential tests finish before any parallel one starts.
func TestRetentionPrune(t *testing.T) {
	tenantID, agentID := newAgent(t)
	c := &clock{t: base}
	r := newRecorder(c)
	r.Record(failedTurn(tenantID, agentID, "old", time.Second))
	flush(t, r)
	c.set(base.Add(health.Retention - time.Hour))
	for i := range health.MaxFailures + 5 {
		c.set(base.Add(health.Retention - time.Hour + time.Duration(i)*time.Second))
		r.Record(failedTurn(tenantID, agentID, "new", time.Second))
	}
	flush(t, r)
	if n := count(t, "agent_health_minutes", tenantID); n != 2 {
		t.Errorf("%d minute rows before the old one expires, want 2", n)
	}
	if n := count(t, "agent_health_failures", tenantID); n != health.MaxFailures {
		t.Errorf("%d failures kept, want %d", n, health.MaxFailures)
	}

	c.set(base.Add(health.Retention + 2*time.Minute))
	flush(t, r) // nothing new: it only prunes
	if n := count(t, "agent_health_minutes", tenantID); n != 1 {
		t.Errorf("%d minute rows after the retention, want 1", n)
	}
	for _, f := range summary(t, tenantID, agentID, c.now()).Failures {
		if f.Code != "new" {
			t.Errorf("failure %q is older than the retention", f.Code)
		}
	}
}

func count(t *testing.T, table, tenantID string) int {
	t.Helper()
	var n int
	if err := testDB.Pool.QueryRow(t.Context(), "select count(*) from "+table+" where tenant_id = $1", tenantID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Summary reads one tenant's agent: the same agent id asked for under another tenant has no
// turns, and an agent's turns never show under its sibling.
func TestTenantScoping(t *testing.T) {
	t.Parallel()
	tenantID, agentID := newAgent(t)
	sibling := addAgent(t, tenantID)
	other := testDB.NewTenant(t)
	c := &clock{t: base}
	r := newRecorder(c)
	r.Record(failedTurn(tenantID, agentID, "timeout", time.Second))
	// A turn claiming another tenant for this agent id is not written: no such agent there.
	r.Record(failedTurn(other, agentID, "timeout", time.Second))
	flush(t, r)

	for _, tc := range []struct{ name, tenantID, agentID string }{
		{"other tenant", other, agentID},
		{"sibling agent", tenantID, sibling},
	} {
		got := summary(t, tc.tenantID, tc.agentID, base)
		if got.Day.Turns != 0 || len(got.Failures) != 0 {
			t.Errorf("%s: %d turns, %d failures; want none", tc.name, got.Day.Turns, len(got.Failures))
		}
	}
	if got := summary(t, tenantID, agentID, base); got.Day.Turns != 1 || len(got.Failures) != 1 {
		t.Errorf("own agent: %d turns, %d failures; want 1, 1", got.Day.Turns, len(got.Failures))
	}
}

// A deleted agent's pending counts are dropped at the flush, which still succeeds for the
// others; the agent's rows went with it.
func TestDeletedAgent(t *testing.T) {
	t.Parallel()
	tenantID, agentID := newAgent(t)
	kept := addAgent(t, tenantID)
	c := &clock{t: base}
	r := newRecorder(c)
	r.Record(failedTurn(tenantID, agentID, "timeout", time.Second))
	flush(t, r)
	r.Record(failedTurn(tenantID, agentID, "timeout", time.Second))
	r.Record(completed(tenantID, kept, time.Millisecond, time.Millisecond))
	if _, err := store.New(testDB.Pool).DeleteAgent(t.Context(), tenantID, agentID); err != nil {
		t.Fatal(err)
	}
	flush(t, r)
	if n := count(t, "agent_health_minutes", tenantID); n != 1 {
		t.Errorf("%d minute rows, want 1 (the kept agent's)", n)
	}
	if n := count(t, "agent_health_failures", tenantID); n != 0 {
		t.Errorf("%d failures of the deleted agent, want 0", n)
	}
}

// A flush that cannot write keeps its counts for the next one, merged with what came since.
func TestFailedFlushKeepsCounts(t *testing.T) {
	t.Parallel()
	tenantID, agentID := newAgent(t)
	c := &clock{t: base}
	r := newRecorder(c)
	r.Record(failedTurn(tenantID, agentID, "first", time.Second))
	gone, cancel := context.WithCancel(t.Context())
	cancel() // the database "does not answer": the write fails before it starts
	if err := r.Flush(gone); err == nil {
		t.Fatal("a flush with a canceled context succeeded")
	}
	r.Record(completed(tenantID, agentID, time.Millisecond, time.Millisecond))
	flush(t, r)
	got := summary(t, tenantID, agentID, base)
	if diff := cmp.Diff(outcomes(1, 0, 0, 1, 0, 0), got.Hour.Outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if len(got.Failures) != 1 || got.Failures[0].Code != "first" {
		t.Errorf("failures = %+v, want the one recorded before the failed flush", got.Failures)
	}
}

// Run flushes on its own, every interval, and returns when its context ends.
func TestRunFlushesEveryInterval(t *testing.T) {
	t.Parallel()
	tenantID, agentID := newAgent(t)
	r := health.NewRecorder(store.New(testDB.Pool), health.RecorderOptions{Interval: time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	r.Record(completed(tenantID, agentID, time.Millisecond, time.Millisecond))
	deadline := time.Now().Add(30 * time.Second) // only a failing test waits this long
	for summary(t, tenantID, agentID, time.Now()).Hour.Turns != 1 {
		if time.Now().After(deadline) {
			t.Fatal("Run never flushed the recorded turn")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
}

func TestRelativeError(t *testing.T) {
	if want := math.Pow(2, 1.0/8) - 1; math.Abs(health.RelativeError-want) > 1e-15 {
		t.Errorf("RelativeError = %v, want 2^(1/8)-1 = %v", health.RelativeError, want)
	}
}

func TestPercentileFromBuckets(t *testing.T) {
	t.Parallel()
	var b health.Buckets
	if _, ok := b.Percentile(0.5); ok {
		t.Error("percentile of no samples is ok")
	}
	// 1..1000 ms, one sample each: p50 = 500 ms, p95 = 950 ms (nearest rank).
	var lo, hi health.Buckets
	for ms := 1; ms <= 1000; ms++ {
		d := time.Duration(ms) * time.Millisecond
		b.Add(d)
		if ms%2 == 0 {
			lo.Add(d)
		} else {
			hi.Add(d)
		}
	}
	var merged health.Buckets
	merged.Merge(&lo)
	merged.Merge(&hi)
	if merged != b {
		t.Fatal("merged buckets differ from the buckets of all samples")
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.95, 950 * time.Millisecond}, {0.01, 10 * time.Millisecond}, {1, time.Second}} {
		got, ok := merged.Percentile(tc.q)
		if !ok {
			t.Fatal("no percentile")
		}
		within(t, "percentile", got, tc.want)
	}
	var edge health.Buckets
	edge.Add(100 * time.Microsecond)
	edge.Add(10 * time.Minute)
	if got, _ := edge.Percentile(0.5); got != 500*time.Microsecond {
		t.Errorf("under 1 ms: %v, want 0.5ms", got)
	}
	if got, _ := edge.Percentile(1); got != time.Duration(1<<17)*time.Millisecond {
		t.Errorf("beyond the last bound: %v, want 2^17 ms", got)
	}
}

// BenchmarkRecord measures the turn path's cost: one Record from many goroutines, as turns end
// concurrently, spread over a few agents.
func BenchmarkRecord(b *testing.B) {
	r := health.NewRecorder(nil, health.RecorderOptions{})
	tenantID := uuid.NewString()
	agents := []string{uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			r.Record(completed(tenantID, agents[i%len(agents)], 120*time.Millisecond, 900*time.Millisecond))
		}
	})
}
