package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The noisy-neighbour row (admission caps, docs/operations.md): tenant A keeps more slow turns going than its cap lets
// in (the operator set the cap through the admin API, as in production), and keeps retrying
// the refused ones; tenant B, the run's own tenant, runs fast turns through the connector. B is
// measured alone (quiet) and beside A (noisy), alternating in -rounds rounds as the other rows
// alternate direct and via. The table says what B's latency did and what A got: its turns,
// and its refusals (RESOURCE_EXHAUSTED, and how fast they came).

// noisyResult is the row: B's two sides and A's count.
type noisyResult struct {
	quiet, noisy *phaseStats
	a            neighbourStats
}

// neighbourStats is what tenant A's workers got over all the noisy phases.
type neighbourStats struct {
	turns, refused, errors int
	refusedLat             []time.Duration // from the call to the RESOURCE_EXHAUSTED
	errSamples             map[string]int
}

// limitsRefresh is the connector's A2AC_LIMITS_REFRESH in loadgen's stack: short, so the
// operator's cap on tenant A is in force a moment after it is set.
const limitsRefresh = time.Second

// noisyInto measures the row into *into when -noisy asks for it, counting B's failed turns.
func (r *runner) noisyInto(ctx context.Context, w watched, into **noisyResult, count func(...*phaseStats)) error {
	if r.o.noisy == 0 {
		return nil
	}
	res, err := r.noisyRow(ctx, w)
	if res != nil {
		*into = res
		count(res.quiet, res.noisy)
	}
	return err
}

// noisyRow measures the row. A's workers run from the start of each noisy phase's warmup until
// its window ends; then they finish the turn they are in, so the next quiet phase is quiet.
func (r *runner) noisyRow(ctx context.Context, w watched) (*noisyResult, error) {
	o := r.o
	tenantA, agentA, err := r.s.addCappedTenant(ctx, "noisy neighbour", o.noisyCap)
	if err != nil {
		return nil, err
	}
	viaA, err := newViaClient(r.addrs, o.conns, tenantA, agentA, o.tenantMetadata)
	if err != nil {
		return nil, err
	}
	defer viaA.close()
	res := &noisyResult{a: neighbourStats{errSamples: map[string]int{}}}
	spec := phaseSpec{workers: o.noisyC, warmup: o.warmup, duration: o.duration, turnTimeout: o.turnTimeout}
	for i := range o.rounds {
		s := spec
		s.duration = (spec.duration / time.Duration(o.rounds)).Round(time.Millisecond)
		if i > 0 {
			s.warmup = spec.warmup / 4
		}
		quiet, err := r.phase(ctx, "noisy neighbour: B quiet,", false, s, w, o.chunks, 0, target{agent: r.s.agentID})
		res.quiet = res.quiet.merge(quiet)
		if err != nil {
			return res, err
		}
		nb := r.startNeighbour(ctx, viaA, i)
		noisy, err := r.phase(ctx, "noisy neighbour: B beside A,", false, s, w, o.chunks, 0, target{agent: r.s.agentID})
		nb.finish(&res.a)
		res.noisy = res.noisy.merge(noisy)
		if err != nil {
			return res, err
		}
	}
	slices.Sort(res.a.refusedLat)
	fmt.Fprintf(r.progress, "   tenant A: %d turns, %d refused (RESOURCE_EXHAUSTED), %d errors\n", res.a.turns, res.a.refused, res.a.errors)
	for msg, n := range res.a.errSamples {
		fmt.Fprintf(r.progress, "      %d× %s\n", n, msg)
	}
	return res, nil
}

// neighbour is tenant A's workers while they run.
type neighbour struct {
	wg   sync.WaitGroup
	stop chan struct{}
	mu   sync.Mutex
	st   neighbourStats
}

// startNeighbour starts o.noisy workers of tenant A, each in a loop: a slow turn; when refused,
// a pause of -noisy-retry, then again.
func (r *runner) startNeighbour(ctx context.Context, v *viaClient, round int) *neighbour {
	o := r.o
	nb := &neighbour{stop: make(chan struct{}), st: neighbourStats{errSamples: map[string]int{}}}
	prefix := r.id + "-noisy" + strconv.Itoa(round)
	for i := range o.noisy {
		nb.wg.Go(func() {
			var st neighbourStats
			st.errSamples = map[string]int{}
			defer nb.add(&st)
			for n := 0; ; n++ {
				select {
				case <-nb.stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				id := prefix + "w" + strconv.Itoa(i) + "n" + strconv.Itoa(n)
				tctx, cancel := context.WithTimeout(ctx, o.turnTimeout)
				start := time.Now()
				_, err := v.turn(tctx, id, id, turnText(id, o.noisyChunks, o.noisyDelay), replyText(id, o.noisyChunks))
				cancel()
				switch {
				case err == nil:
					st.turns++
					continue
				case ctx.Err() != nil:
					return
				case status.Code(err) == codes.ResourceExhausted:
					st.refused++
					st.refusedLat = append(st.refusedLat, time.Since(start))
				default:
					st.errors++
					if len(st.errSamples) < maxErrorKinds {
						st.errSamples[err.Error()]++
					}
				}
				t := time.NewTimer(o.noisyRetry)
				select {
				case <-t.C:
				case <-nb.stop:
					t.Stop()
					return
				case <-ctx.Done():
					t.Stop()
					return
				}
			}
		})
	}
	return nb
}

func (nb *neighbour) add(st *neighbourStats) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	nb.st.merge(st)
}

// finish stops the workers, waits for the turns they are in, and adds what they got to into.
func (nb *neighbour) finish(into *neighbourStats) {
	close(nb.stop)
	nb.wg.Wait()
	into.merge(&nb.st)
}

func (s *neighbourStats) merge(o *neighbourStats) {
	s.turns += o.turns
	s.refused += o.refused
	s.errors += o.errors
	s.refusedLat = append(s.refusedLat, o.refusedLat...)
	for k, v := range o.errSamples {
		if _, ok := s.errSamples[k]; ok || len(s.errSamples) < maxErrorKinds {
			s.errSamples[k] += v
		}
	}
}

// noisyColumns are the headings of the noisy-neighbour table.
var noisyColumns = []string{"tenant B", "turns/s", "p50/p99 ms", "first text p50/p99 ms", "connector CPU ms/turn", "agent streams open at most", "turns", "errors"}

// writeNoisy prints the noisy-neighbour table and the line about tenant A.
func writeNoisy(w io.Writer, o options, n *noisyResult) {
	fmt.Fprintf(w, "noisy neighbour: tenant B runs %d concurrent turns (%d chunks, no pause) alone, then beside tenant A: %d workers of slow turns (%d chunks %s apart) against A's cap of %d (set through the admin API), a refused worker retrying after %s; alternating in %d rounds\n\n",
		o.noisyC, o.chunks, o.noisy, o.noisyChunks, o.noisyDelay, o.noisyCap, o.noisyRetry, o.rounds)
	row := func(label string, s *phaseStats) []string {
		if s == nil {
			return []string{label, "—", "—", "—", "—", "—", "—", "—"}
		}
		pair := func(xs []time.Duration) string {
			return ms(percentile(xs, 0.5)) + " / " + ms(percentile(xs, 0.99))
		}
		return []string{label, num(s.rate()), pair(s.lat), pair(s.first), ms(s.perTurn(s.connectorCPU)),
			strconv.FormatInt(s.agentPeak, 10), strconv.Itoa(s.turns), strconv.Itoa(s.errors)}
	}
	writeTable(w, o.markdown, noisyColumns, [][]string{row("quiet", n.quiet), row("beside A", n.noisy)})
	fmt.Fprintln(w)
	ratio := "—"
	if n.quiet != nil && n.noisy != nil && len(n.quiet.lat) > 0 && len(n.noisy.lat) > 0 {
		ratio = strconv.FormatFloat(percentile(n.noisy.lat, 0.99)/percentile(n.quiet.lat, 0.99), 'f', 2, 64) + "×"
	}
	fmt.Fprintf(w, "tenant B's p99 beside A: %s its quiet p99. tenant A: %d turns completed, %d refused with RESOURCE_EXHAUSTED (in p50/p99 %s / %s ms), %d other errors.\n",
		ratio, n.a.turns, n.a.refused, ms(percentile(n.a.refusedLat, 0.5)), ms(percentile(n.a.refusedLat, 0.99)), n.a.errors)
}
