package main

import (
	"context"
	"math"
	"os"
	"slices"
	"sync"
	"time"
)

// turnTiming is what one successful turn measured, both from the moment the request was sent.
type turnTiming struct {
	// total runs until the call has ended, as a caller timing its call sees it: the RPC's end
	// (after its Final) via the connector, the end of the response body (after the completed
	// status-update) directly.
	total     time.Duration
	firstText time.Duration // until the first text arrived
}

// turnFunc runs one turn of one worker; each worker gets its own, so it may keep session state.
type turnFunc func(ctx context.Context) (turnTiming, error)

// phaseSpec says how a phase is driven.
type phaseSpec struct {
	workers int
	// Timed phases: warmup (not counted), then duration; only turns that end inside the
	// measured window count, and CPU and RSS are read at its edges.
	warmup, duration time.Duration
	// oneShot phases (long streams): each worker runs exactly one turn, the workers starting
	// spread over ramp; the window runs from the first start until the last turn ended.
	oneShot bool
	ramp    time.Duration
	// turnTimeout is the client's deadline for one turn.
	turnTimeout time.Duration
}

// watched are the processes whose CPU a phase reads at its edges.
type watched struct {
	// connectors are the connector processes (the replicas): their CPU is summed, their peak
	// RSS is the largest one's. None: not watched.
	connectors    []int
	agent, pgRoot int // 0: not watched
}

// phaseStats is what a phase measured.
type phaseStats struct {
	turns  int           // successful turns in the window
	errors int           // failed turns, the whole phase (warmup and draining included)
	window time.Duration // length of the measured window
	lat    []time.Duration
	first  []time.Duration
	ends   []time.Duration // end of each counted turn, from the window's start
	// errSamples counts failures by message (the first few kinds).
	errSamples map[string]int
	// CPU spent in the window, by process.
	connectorCPU, agentCPU, pgCPU, selfCPU time.Duration
	hasPG                                  bool
	connectorRSS                           int64 // peak in the window; 0 when not watched
	// agentPeak is the most streams the agent had open at once in the phase; -1 unknown.
	agentPeak int64
	// logged is what the connector logged at WARN and ERROR during the phase (via phases).
	logged *logCounts
}

func (s *phaseStats) rate() float64 {
	if s.window <= 0 {
		return 0
	}
	return float64(s.turns) / s.window.Seconds()
}

// perTurn is d divided over the window's turns, in milliseconds.
func (s *phaseStats) perTurn(d time.Duration) float64 {
	if s.turns == 0 {
		return math.NaN()
	}
	return float64(d) / float64(time.Millisecond) / float64(s.turns)
}

// rateBetween is the rate of turns that ended in [from, to) of the window.
func (s *phaseStats) rateBetween(from, to time.Duration) float64 {
	n := 0
	for _, e := range s.ends {
		if e >= from && e < to {
			n++
		}
	}
	return float64(n) / (to - from).Seconds()
}

// merge adds o, a later phase of the same side and load, to s and returns the sum (s may be
// nil; o nil leaves s as it is). Latencies are pooled, the windows and CPU times added, so the
// rate and the CPU per turn are those of all the rounds together; o's turn ends are placed after
// s's window.
func (s *phaseStats) merge(o *phaseStats) *phaseStats {
	switch {
	case o == nil:
		return s
	case s == nil:
		return o
	}
	for _, e := range o.ends {
		s.ends = append(s.ends, s.window+e)
	}
	s.turns += o.turns
	s.errors += o.errors
	s.window += o.window
	s.lat, s.first = append(s.lat, o.lat...), append(s.first, o.first...)
	slices.Sort(s.lat)
	slices.Sort(s.first)
	for k, v := range o.errSamples {
		if _, ok := s.errSamples[k]; ok || len(s.errSamples) < maxErrorKinds {
			s.errSamples[k] += v
		}
	}
	s.connectorCPU += o.connectorCPU
	s.agentCPU += o.agentCPU
	s.pgCPU += o.pgCPU
	s.selfCPU += o.selfCPU
	s.hasPG = s.hasPG && o.hasPG
	s.connectorRSS = max(s.connectorRSS, o.connectorRSS)
	if s.agentPeak >= 0 && o.agentPeak >= 0 {
		s.agentPeak = max(s.agentPeak, o.agentPeak)
	} else {
		s.agentPeak = -1
	}
	if o.logged != nil {
		if s.logged == nil {
			s.logged = &logCounts{kinds: map[string]int{}}
		}
		s.logged.errors += o.logged.errors
		s.logged.warnings += o.logged.warnings
		for k, v := range o.logged.kinds {
			if _, ok := s.logged.kinds[k]; ok || len(s.logged.kinds) < maxErrorKinds {
				s.logged.kinds[k] += v
			}
		}
	}
	return s
}

// percentile is the nearest-rank p-quantile (0 < p ≤ 1) of sorted durations, in milliseconds.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return float64(sorted[i]) / float64(time.Millisecond)
}

// maxErrorKinds bounds how many distinct error messages a phase keeps.
const maxErrorKinds = 8

// cpuSnapshot reads the CPU time of every watched process.
type cpuSnapshot struct{ connector, agent, pg, self time.Duration }

func snapshot(w watched) cpuSnapshot {
	var s cpuSnapshot
	for _, pid := range w.connectors {
		s.connector += cpuOf(pid)
	}
	if w.agent > 0 {
		s.agent = cpuOf(w.agent)
	}
	if w.pgRoot > 0 {
		s.pg = treeCPU(w.pgRoot)
	}
	s.self = cpuOf(os.Getpid())
	return s
}

// runPhase drives newTurn's turns with spec.workers workers and measures them. It returns
// ctx's error when ctx ends first (a Ctrl-C), with what was measured so far.
func runPhase(ctx context.Context, spec phaseSpec, w watched, newTurn func(worker int) turnFunc) (*phaseStats, error) {
	st := &phaseStats{errSamples: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup

	var windowStart, windowEnd time.Time
	var s0, s1 cpuSnapshot
	var rss []*rssWatch
	finished := false
	begin := func() {
		s0 = snapshot(w)
		for _, pid := range w.connectors {
			rss = append(rss, watchRSS(pid))
		}
	}
	finish := func() {
		finished = true
		s1 = snapshot(w)
		for _, r := range rss {
			st.connectorRSS = max(st.connectorRSS, r.peak())
		}
	}

	// worker runs turns until stop says so, keeping what it measured to itself until the end.
	worker := func(turn turnFunc, first bool, stop func() bool) {
		defer wg.Done()
		var lat, ft, ends []time.Duration
		var errs int
		samples := map[string]int{}
		for first || !stop() {
			first = false
			tctx, cancel := context.WithTimeout(ctx, spec.turnTimeout)
			tt, err := turn(tctx)
			cancel()
			end := time.Now()
			if err != nil {
				if ctx.Err() != nil {
					break // interrupted, not a failure of the system under test
				}
				errs++
				if len(samples) < maxErrorKinds {
					samples[err.Error()]++
				}
				continue
			}
			if spec.oneShot || (!end.Before(windowStart) && end.Before(windowEnd)) {
				lat, ft = append(lat, tt.total), append(ft, tt.firstText)
				ends = append(ends, end.Sub(windowStart))
			}
		}
		mu.Lock()
		defer mu.Unlock()
		st.turns += len(lat)
		st.errors += errs
		st.lat, st.first, st.ends = append(st.lat, lat...), append(st.first, ft...), append(st.ends, ends...)
		for k, v := range samples {
			if _, ok := st.errSamples[k]; ok || len(st.errSamples) < maxErrorKinds {
				st.errSamples[k] += v
			}
		}
	}

	if spec.oneShot {
		windowStart = time.Now()
		begin()
		for i := range spec.workers {
			// Start worker i at its place on the ramp; sleeping until a point in time, not for
			// a gap, keeps the ramp's length whatever the timer resolution.
			at := windowStart.Add(spec.ramp * time.Duration(i) / time.Duration(spec.workers))
			if !sleepUntil(ctx, at) {
				break
			}
			wg.Add(1)
			go worker(newTurn(i), true, func() bool { return true })
		}
		wg.Wait()
		finish()
		st.window = time.Since(windowStart)
	} else {
		windowStart = time.Now().Add(spec.warmup)
		windowEnd = windowStart.Add(spec.duration)
		stop := func() bool { return ctx.Err() != nil || !time.Now().Before(windowEnd) }
		for i := range spec.workers {
			wg.Add(1)
			go worker(newTurn(i), false, stop)
		}
		if sleepUntil(ctx, windowStart) {
			begin()
			if sleepUntil(ctx, windowEnd) {
				finish()
			}
		}
		wg.Wait()
		if !finished {
			for _, r := range rss {
				r.peak() // interrupted: stop the sampler
			}
		}
		st.window = spec.duration
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	st.connectorCPU = s1.connector - s0.connector
	st.agentCPU = s1.agent - s0.agent
	st.pgCPU, st.hasPG = s1.pg-s0.pg, w.pgRoot > 0
	st.selfCPU = s1.self - s0.self
	slices.Sort(st.lat)
	slices.Sort(st.first)
	return st, nil
}

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
