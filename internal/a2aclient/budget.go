package a2aclient

import (
	"sync"
	"time"
)

// Defaults of RetryBudgetOptions.
const (
	DefaultRetryBudgetPercent = 20
	DefaultRetryBudgetMin     = 1
	DefaultRetryBudgetWindow  = 10 * time.Second

	// budgetSlots divide the window: counts older than the window fall out one slot at a time.
	budgetSlots = 10
)

// RetryBudgetOptions configure a RetryBudget. Zero values mean the defaults, except Percent.
type RetryBudgetOptions struct {
	// Percent is the share of an endpoint's calls over Window that may be retried, from 0 (only
	// MinRetries) to 100; DefaultRetryBudgetPercent is 20.
	Percent int
	// MinRetries is how many retries an endpoint may get per Window whatever its traffic
	// (default 1), so that a quiet agent's single blip is still retried.
	MinRetries int
	// Window is the sliding window the counts cover (default 10s).
	Window time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// RetryBudget bounds retries per agent endpoint, as Envoy's retry budgets do per cluster: over a
// sliding window, retries may add at most Percent of the endpoint's calls, or MinRetries,
// whichever is more. An agent that fails every call then sees its calls plus at most that share
// again, never a multiple of them; and the retries it does get are spent where they help, on
// the rare failure of an agent that usually answers. It is safe for concurrent use; share one
// per process.
type RetryBudget struct {
	opts RetryBudgetOptions
	slot time.Duration

	mu      sync.Mutex
	windows map[string]*budgetWindow
	sweepAt time.Time
}

// budgetWindow counts one endpoint's calls and retries per slot; epoch[i] is the slot number
// (time since the zero time / slot width) whose counts slot i holds.
type budgetWindow struct {
	epoch    [budgetSlots]int64
	calls    [budgetSlots]int
	retries  [budgetSlots]int
	lastUsed int64
}

// NewRetryBudget returns a RetryBudget.
func NewRetryBudget(o RetryBudgetOptions) *RetryBudget {
	o.Percent = min(max(o.Percent, 0), 100)
	if o.MinRetries <= 0 {
		o.MinRetries = DefaultRetryBudgetMin
	}
	if o.Window <= 0 {
		o.Window = DefaultRetryBudgetWindow
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &RetryBudget{opts: o, slot: o.Window / budgetSlots, windows: map[string]*budgetWindow{}}
}

// epochOf is the slot number of t.
func (b *RetryBudget) epochOf(t time.Time) int64 { return t.UnixNano() / int64(b.slot) }

// window returns key's window with the current slot cleared for reuse, creating it if needed.
// Called with mu held.
func (b *RetryBudget) window(key string, now time.Time) (*budgetWindow, int64) {
	e := b.epochOf(now)
	b.sweep(now, e)
	w := b.windows[key]
	if w == nil {
		w = &budgetWindow{}
		b.windows[key] = w
	}
	i := e % budgetSlots
	if w.epoch[i] != e {
		w.epoch[i], w.calls[i], w.retries[i] = e, 0, 0
	}
	w.lastUsed = e
	return w, e
}

// sum is the calls and retries of the slots inside the window ending at epoch e.
func (w *budgetWindow) sum(e int64) (calls, retries int) {
	for i := range budgetSlots {
		if e-w.epoch[i] < budgetSlots {
			calls += w.calls[i]
			retries += w.retries[i]
		}
	}
	return calls, retries
}

// call counts a first attempt to key.
func (b *RetryBudget) call(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, e := b.window(key, b.opts.Now())
	w.calls[e%budgetSlots]++
}

// retry reports whether key may be retried now, and counts the retry when it may.
func (b *RetryBudget) retry(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, e := b.window(key, b.opts.Now())
	calls, retries := w.sum(e)
	if retries >= max(b.opts.MinRetries, calls*b.opts.Percent/100) {
		return false
	}
	w.retries[e%budgetSlots]++
	return true
}

// sweep drops the windows of endpoints not called for a whole window, once per window.
func (b *RetryBudget) sweep(now time.Time, e int64) {
	if now.Before(b.sweepAt) {
		return
	}
	b.sweepAt = now.Add(b.opts.Window)
	for k, w := range b.windows {
		if e-w.lastUsed >= budgetSlots {
			delete(b.windows, k)
		}
	}
}
