package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/a2a-connector/a2a-connector/internal/grpcapi"
)

// The burst row: tenant A opens -burst slow streams at once, far more than its cap (-noisy-cap)
// lets in, while tenant B, the run's own tenant, runs -noisy-c fast turns throughout. Each
// round, B runs alone through a quiet window, then A's streams all start. B's turns count as
// quiet when they ended in the quiet window, and as during the burst when they were open at any
// moment from the burst's start to its last answer: the last refusal, or the last admitted
// stream's first event. So the burst's figures are those of the moment the connector is flooded,
// not diluted by the second or so the admitted slow turns then run for.

// burstResult is the burst table's row of one stack size.
type burstResult struct {
	replicas      int
	quiet, during *phaseStats    // tenant B
	a             neighbourStats // A's streams: admitted and completed, refused, failed otherwise
	// answered is, per round, the time from the burst's start to its last answer.
	answered []time.Duration
	// connectorCPU is the connectors' CPU from each burst's start until its last stream ended;
	// clientCPU the burst client's, from the burst's start until its last stream ended.
	connectorCPU, clientCPU time.Duration
}

// burstTurn is one of B's turns.
type burstTurn struct {
	start, end time.Time
	tt         turnTiming
	err        error
}

// burstRow measures the row on the runner's replicas, in -rounds rounds; tenant A (capped by the
// caller) has agent agentA.
func (r *runner) burstRow(ctx context.Context, w watched, tenantA, agentA string) (*burstResult, error) {
	o := r.o
	res := &burstResult{replicas: len(r.addrs), a: neighbourStats{errSamples: map[string]int{}}}
	for i := range o.rounds {
		warmup := o.warmup
		if i > 0 {
			warmup /= 4
		}
		if err := r.burstRound(ctx, tenantA, agentA, i, warmup, w, res); err != nil {
			return res, err
		}
	}
	slices.Sort(res.a.refusedLat)
	if res.quiet != nil {
		slices.Sort(res.quiet.lat)
		slices.Sort(res.quiet.first)
	}
	if res.during != nil {
		slices.Sort(res.during.lat)
		slices.Sort(res.during.first)
	}
	return res, nil
}

// burstRound is one round: B's warmup and quiet window, then A's burst, until every stream of it
// has ended. A's streams come from a process of their own (`loadgen burst`), as another dialog
// engine's would, written frame by frame: 5,000 streams through grpc-go's client cost ~300 ms
// of CPU on this machine's two cores, which, in this process or beside it, would slow B's
// turns and be counted against the connector.
func (r *runner) burstRound(ctx context.Context, tenantA, agentA string, round int, warmup time.Duration, w watched, res *burstResult) error {
	o := r.o
	prefix := r.id + "-burst" + strconv.Itoa(res.replicas) + "r" + strconv.Itoa(round)
	quiet := (o.duration / time.Duration(o.rounds)).Round(time.Millisecond)
	fmt.Fprintf(r.progress, "== burst, %s: tenant B %d concurrent turns, %s warmup, %s quiet, then tenant A opens %d streams at once\n",
		replicasLabel(res.replicas), o.noisyC, warmup, quiet, o.burst)

	bc, err := r.startBurstClient(ctx, tenantA, agentA, prefix)
	if err != nil {
		return err
	}
	defer bc.stop()

	var stopB atomic.Bool
	turns := make([][]burstTurn, o.noisyC)
	var wgB sync.WaitGroup
	for wk := range turns {
		wgB.Go(func() {
			for n := 0; !stopB.Load() && ctx.Err() == nil; n++ {
				id := prefix + "b" + strconv.Itoa(wk) + "n" + strconv.Itoa(n)
				tctx, cancel := context.WithTimeout(ctx, o.turnTimeout)
				start := time.Now()
				tt, err := r.via.turn(tctx, id, id, turnText(id, o.chunks, 0), replyText(id, o.chunks))
				cancel()
				turns[wk] = append(turns[wk], burstTurn{start: start, end: time.Now(), tt: tt, err: err})
			}
		})
	}
	defer func() { stopB.Store(true); wgB.Wait() }()

	quietFrom := time.Now().Add(warmup)
	if !sleepUntil(ctx, quietFrom.Add(quiet)) {
		return ctx.Err()
	}
	profiled := r.profileConnector(ctx, prefix)
	s0 := snapshot(w)
	burstStart := time.Now()
	rep, err := bc.fire()
	profiled()
	s1 := snapshot(w)
	stopB.Store(true)
	wgB.Wait()
	if err != nil {
		return err
	}

	burstEnd := burstStart
	var a neighbourStats
	a.errSamples = map[string]int{}
	for _, c := range rep.Calls {
		burstEnd = later(burstEnd, time.Unix(0, c.Answered))
		switch c.Code {
		case codes.OK.String():
			a.turns++
		case codes.ResourceExhausted.String():
			a.refused++
			a.refusedLat = append(a.refusedLat, time.Duration(c.Took))
		default:
			a.errors++
			if len(a.errSamples) < maxErrorKinds {
				a.errSamples[c.Err]++
			}
		}
	}
	res.a.merge(&a)
	res.answered = append(res.answered, burstEnd.Sub(burstStart))
	res.connectorCPU += s1.connector - s0.connector
	res.clientCPU += time.Duration(rep.CPU)

	q := &phaseStats{errSamples: map[string]int{}, window: burstStart.Sub(quietFrom), agentPeak: -1}
	d := &phaseStats{errSamples: map[string]int{}, window: burstEnd.Sub(burstStart), agentPeak: -1}
	for _, ts := range turns {
		for _, t := range ts {
			var into *phaseStats
			switch {
			case t.start.Before(burstEnd) && t.end.After(burstStart):
				into = d
			case t.err != nil || (!t.end.Before(quietFrom) && t.end.Before(burstStart)):
				into = q // a failure counts wherever it happened
			default:
				continue // warmup, or after the burst
			}
			if t.err != nil {
				into.errors++
				if len(into.errSamples) < maxErrorKinds {
					into.errSamples[t.err.Error()]++
				}
				continue
			}
			into.turns++
			into.lat, into.first = append(into.lat, t.tt.total), append(into.first, t.tt.firstText)
		}
	}
	res.quiet, res.during = res.quiet.merge(q), res.during.merge(d)
	slices.Sort(a.refusedLat)
	slices.Sort(q.lat)
	slices.Sort(d.lat)
	fmt.Fprintf(r.progress, "   B quiet p99 %s ms (%d turns), during the burst p99 %s ms (%d turns in %s); A: %d refused in p50/p99 %s / %s ms, %d admitted and completed, %d other errors; CPU: connector %s ms, burst client %s ms\n",
		ms(percentile(q.lat, 0.99)), q.turns, ms(percentile(d.lat, 0.99)), d.turns, burstEnd.Sub(burstStart).Round(time.Millisecond),
		a.refused, ms(percentile(a.refusedLat, 0.5)), ms(percentile(a.refusedLat, 0.99)), a.turns, a.errors,
		ms(float64(s1.connector-s0.connector)/float64(time.Millisecond)), ms(float64(rep.CPU)/float64(time.Millisecond)))
	for _, st := range []*phaseStats{q, d} {
		for msg, n := range st.errSamples {
			fmt.Fprintf(r.progress, "      B: %d× %s\n", n, msg)
		}
	}
	for msg, n := range a.errSamples {
		fmt.Fprintf(r.progress, "      A: %d× %s\n", n, msg)
	}
	return nil
}

// profileConnector starts a CPU profile of the first connector when -debug-addr serves its
// profiles, for the next 3 s, into the log folder as name.connector.pprof; the returned func
// waits for it.
func (r *runner) profileConnector(ctx context.Context, name string) (wait func()) {
	if r.o.debugAddr == "" || len(r.addrs) > 1 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.o.debugAddr+"/debug/pprof/profile?seconds=3", nil)
		if err != nil {
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Fprintf(r.progress, "   (connector profile: %v)\n", err)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		_ = os.WriteFile(filepath.Join(r.s.logDir, name+".connector.pprof"), b, 0o644)
	}()
	time.Sleep(100 * time.Millisecond) // the profile has begun
	return func() { <-done }
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// replicasLabel is "1 replica" or "3 replicas".
func replicasLabel(n int) string {
	if n == 1 {
		return "1 replica"
	}
	return strconv.Itoa(n) + " replicas"
}

// burstColumns are the headings of the burst table.
var burstColumns = []string{"connector", "tenant B quiet p50/p99 ms", "B during the burst p50/p99 ms", "B p99 during / quiet",
	"B turns quiet/during", "B errors", "A refused", "A refusal p50/p99 ms", "A admitted", "A other errors",
	"burst answered in ms (slowest round)", "CPU ms per burst: connector / burst client"}

// writeBurst prints the burst table, a row per stack size.
func writeBurst(w io.Writer, o options, rs []*burstResult) {
	how := "named in the request metadata (" + grpcapi.TenantMetadataKey + ")"
	if !o.tenantMetadata {
		how = "not named in the request metadata"
	}
	fmt.Fprintf(w, "burst: tenant B runs %d concurrent turns (%d chunks, no pause); after a quiet window, tenant A opens %d slow streams (%d chunks %s apart) at once against its cap of %d (set through the admin API), its tenant %s; %d rounds. During the burst: B's turns open at any moment from its start to its last answer (a refusal, or an admitted stream's first event). A's streams come from a process of their own (loadgen burst). CPU: all the connector replicas' and the burst client's, from the burst's start until its last stream ended, B's turns included in the connector's.\n\n",
		o.noisyC, o.chunks, o.burst, o.noisyChunks, o.noisyDelay, o.noisyCap, how, o.rounds)
	var body [][]string
	for _, b := range rs {
		pair := func(s *phaseStats) string {
			if s == nil || len(s.lat) == 0 {
				return "—"
			}
			return ms(percentile(s.lat, 0.5)) + " / " + ms(percentile(s.lat, 0.99))
		}
		ratio := "—"
		if b.quiet != nil && b.during != nil && len(b.quiet.lat) > 0 && len(b.during.lat) > 0 {
			ratio = strconv.FormatFloat(percentile(b.during.lat, 0.99)/percentile(b.quiet.lat, 0.99), 'f', 2, 64) + "×"
		}
		count := func(f func(*phaseStats) int) string {
			if b.quiet == nil || b.during == nil {
				return "—"
			}
			return strconv.Itoa(f(b.quiet)) + " / " + strconv.Itoa(f(b.during))
		}
		errs := 0
		for _, s := range []*phaseStats{b.quiet, b.during} {
			if s != nil {
				errs += s.errors
			}
		}
		perBurst := "—"
		if n := len(b.answered); n > 0 {
			perBurst = ms(float64(b.connectorCPU)/float64(time.Millisecond)/float64(n)) + " / " +
				ms(float64(b.clientCPU)/float64(time.Millisecond)/float64(n))
		}
		body = append(body, []string{replicasLabel(b.replicas), pair(b.quiet), pair(b.during), ratio,
			count(func(s *phaseStats) int { return s.turns }), strconv.Itoa(errs),
			strconv.Itoa(b.a.refused), ms(percentile(b.a.refusedLat, 0.5)) + " / " + ms(percentile(b.a.refusedLat, 0.99)),
			strconv.Itoa(b.a.turns), strconv.Itoa(b.a.errors),
			ms(float64(slices.Max(append([]time.Duration{0}, b.answered...))) / float64(time.Millisecond)), perBurst})
	}
	writeTable(w, o.markdown, burstColumns, body)
}
