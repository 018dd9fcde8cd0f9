// Package health keeps per-agent turn statistics for the tenant's health view: turns by
// outcome, percentiles of the time to first text and of the turn duration, and the last
// failures, over the last hour and day.
//
// The turn path only calls Recorder.Record, an in-memory add under a short mutex. Once a minute
// (and at shutdown) the Recorder's flusher adds its per-minute counts to Postgres in one batch,
// so replicas and repeated flushes sum; latencies are fixed-bucket histograms (Buckets), which
// sum element by element, so percentiles over replicas and minutes come from merged buckets with
// a known error bound (see Percentile). Summaries.Summary reads a tenant's agent. The SQL is
// internal/store's, behind the interfaces this package declares (Store, Rows); every query is
// scoped by tenant.
//
// The package never sees the user's text or the agent's reply: a connector.TurnStat holds ids, the outcome,
// the error code, the connector's error message and durations. It is not a metrics system
// (operators have Prometheus); retention is short (Retention) and the data are per agent.
package health

import (
	"math"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
)

// failed reports whether a turn of this outcome counts as a failure (chart, failure list).
func failed(o connector.Outcome) bool {
	return o == connector.OutcomeFailed || o == connector.OutcomeError
}

// outcomes are the outcomes counted, in the order of the table's columns.
var outcomes = [...]connector.Outcome{connector.OutcomeCompleted, connector.OutcomeInputRequired,
	connector.OutcomeHandback, connector.OutcomeFailed, connector.OutcomeCanceled, connector.OutcomeError}

// outcomeIndex maps an outcome to its counter; an outcome the connector does not define (it
// never happens) is counted as ERROR rather than lost.
func outcomeIndex(o connector.Outcome) int {
	for i, x := range outcomes {
		if x == o {
			return i
		}
	}
	return len(outcomes) - 1
}

// Histogram layout. Bucket 0 holds durations under 1 ms; bucket i (1..NumBuckets-2) holds
// [2^((i-1)/4), 2^(i/4)) ms, i.e. four buckets per doubling, up to 2^17 ms (about 131 s); the
// last bucket holds everything longer. Changing the layout changes the meaning of stored rows:
// it needs a migration that empties agent_health_minutes.
const (
	bucketsPerDoubling = 4
	maxExponent        = 17 // last bounded bucket ends at 2^17 ms
	// NumBuckets is the length of every stored bucket-count array.
	NumBuckets = 1 + maxExponent*bucketsPerDoubling + 1
)

// RelativeError is the largest relative error of a percentile read from the buckets, for a
// true value between 1 ms and 2^17 ms: the value lies in a bucket [lo, hi) with hi/lo =
// 2^(1/4), and the reported value is the bucket's geometric middle √(lo·hi), so it is off by at
// most a factor 2^(1/8) ≈ 1.0905. (Across replicas nothing is lost: summed buckets are exactly
// the buckets of all the samples.)
const RelativeError = 0.0905077326652577 // 2^(1/8) - 1; TestRelativeError checks it

// Buckets is a histogram of durations: counts per bucket (see NumBuckets).
type Buckets [NumBuckets]int64

// bucketOf returns the index of d's bucket.
func bucketOf(d time.Duration) int {
	ms := float64(d) / float64(time.Millisecond)
	if ms < 1 {
		return 0
	}
	i := 1 + int(math.Floor(bucketsPerDoubling*math.Log2(ms)))
	return min(i, NumBuckets-1)
}

// Add counts d.
func (b *Buckets) Add(d time.Duration) { b[bucketOf(d)]++ }

// Merge adds o's counts to b.
func (b *Buckets) Merge(o *Buckets) {
	for i := range b {
		b[i] += o[i]
	}
}

// Count is the number of samples.
func (b *Buckets) Count() int64 {
	var n int64
	for _, c := range b {
		n += c
	}
	return n
}

// Percentile returns the q-quantile (0 < q ≤ 1) of the samples by nearest rank, as the middle
// of the bucket holding it: within RelativeError of the true sample between 1 ms and 2^17 ms;
// under 1 ms it reports 0.5 ms, and beyond 2^17 ms it reports 2^17 ms (a lower bound). ok is
// false when there are no samples.
func (b *Buckets) Percentile(q float64) (d time.Duration, ok bool) {
	n := b.Count()
	if n == 0 {
		return 0, false
	}
	rank := int64(math.Ceil(q * float64(n)))
	rank = max(1, min(rank, n))
	var cum int64
	for i, c := range b {
		cum += c
		if cum >= rank {
			return bucketValue(i), true
		}
	}
	return bucketValue(NumBuckets - 1), true // not reached: cum ends at n
}

// bucketValue is the value reported for bucket i.
func bucketValue(i int) time.Duration {
	var ms float64
	switch {
	case i == 0:
		ms = 0.5
	case i >= NumBuckets-1:
		ms = math.Pow(2, maxExponent)
	default:
		// Geometric middle of [2^((i-1)/4), 2^(i/4)).
		ms = math.Pow(2, (float64(i)-0.5)/bucketsPerDoubling)
	}
	return time.Duration(ms * float64(time.Millisecond))
}
