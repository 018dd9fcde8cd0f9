package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// columns are the table's headings, in order; via names what the via phases called (-via), whose
// CPU, RSS and log the table shows.
func columns(via string) []string {
	return []string{
		"load",
		"direct turns/s",
		"via turns/s",
		"via % of direct",
		"direct p50/p99 ms",
		"via p50/p99 ms",
		"added p50 ms",
		"direct first text p50/p99 ms",
		"via first text p50/p99 ms",
		"added first text p50 ms",
		via + " CPU ms/turn",
		"Postgres CPU ms/turn",
		via + " peak RSS MiB",
		"agent streams open at most direct/via",
		"turns direct/via",
		"errors direct/via",
		via + " log ERROR/WARN",
	}
}

// cells is one row of the table as text; "—" where there is nothing to show.
func cells(r row) []string {
	d, v := r.direct, r.via
	const none = "—"
	c := []string{r.label}
	rate := func(s *phaseStats) string {
		if s == nil {
			return none
		}
		return num(s.rate())
	}
	pair := func(s *phaseStats, xs func(*phaseStats) []time.Duration) string {
		if s == nil || len(xs(s)) == 0 {
			return none
		}
		return ms(percentile(xs(s), 0.5)) + " / " + ms(percentile(xs(s), 0.99))
	}
	lat := func(s *phaseStats) []time.Duration { return s.lat }
	first := func(s *phaseStats) []time.Duration { return s.first }
	added := func(xs func(*phaseStats) []time.Duration) string {
		if d == nil || v == nil || len(xs(d)) == 0 || len(xs(v)) == 0 {
			return none
		}
		return signed(percentile(xs(v), 0.5) - percentile(xs(d), 0.5))
	}
	c = append(c, rate(d), rate(v))
	if d != nil && v != nil && d.rate() > 0 {
		c = append(c, strconv.FormatFloat(100*v.rate()/d.rate(), 'f', 0, 64)+" %")
	} else {
		c = append(c, none)
	}
	c = append(c, pair(d, lat), pair(v, lat), added(lat), pair(d, first), pair(v, first), added(first))
	if v != nil && v.turns > 0 {
		c = append(c, ms(v.perTurn(v.connectorCPU)))
		if v.hasPG {
			c = append(c, ms(v.perTurn(v.pgCPU)))
		} else {
			c = append(c, none)
		}
	} else {
		c = append(c, none, none)
	}
	if v != nil && v.connectorRSS > 0 {
		c = append(c, strconv.FormatFloat(float64(v.connectorRSS)/(1<<20), 'f', 0, 64))
	} else {
		c = append(c, none)
	}
	turns := func(s *phaseStats, f func(*phaseStats) int) string {
		if s == nil || f(s) < 0 {
			return none
		}
		return strconv.Itoa(f(s))
	}
	peak := func(s *phaseStats) int { return int(s.agentPeak) }
	c = append(c, turns(d, peak)+" / "+turns(v, peak))
	ok := func(s *phaseStats) int { return s.turns }
	bad := func(s *phaseStats) int { return s.errors }
	c = append(c, turns(d, ok)+" / "+turns(v, ok), turns(d, bad)+" / "+turns(v, bad))
	if v != nil && v.logged != nil {
		c = append(c, strconv.Itoa(v.logged.errors)+" / "+strconv.Itoa(v.logged.warnings))
	} else {
		c = append(c, none)
	}
	return c
}

// writeReport prints the settings, the table and the fresh-database line.
func writeReport(w io.Writer, o options, rows []row, notes []string, noisy *noisyResult, bursts []*burstResult, decay *phaseStats) {
	fmt.Fprintln(w, "loadgen: "+describe(o))
	fmt.Fprintln(w)
	if len(rows) > 0 {
		var body [][]string
		for _, r := range rows {
			body = append(body, cells(r))
		}
		writeTable(w, o.markdown, columns(o.via), body)
		fmt.Fprintln(w)
		fmt.Fprintln(w, "p50/p99: until the call ended (the RPC after its Final; the response body after the completed status). added = via − direct (p50). CPU and RSS from /proc over each measured window; Postgres CPU is the whole cluster's.")
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
	if noisy != nil {
		fmt.Fprintln(w)
		writeNoisy(w, o, noisy)
	}
	if len(bursts) > 0 {
		fmt.Fprintln(w)
		writeBurst(w, o, bursts)
	}
	if decay != nil {
		fmt.Fprintln(w)
		fmt.Fprintln(w, decayLine(o, decay))
	}
}

// writeTable prints a table as Markdown or aligned text.
func writeTable(w io.Writer, markdown bool, head []string, rows [][]string) {
	if markdown {
		fmt.Fprintln(w, "| "+strings.Join(head, " | ")+" |")
		fmt.Fprintln(w, "|"+strings.Repeat("---|", len(head)))
		for _, r := range rows {
			fmt.Fprintln(w, "| "+strings.Join(r, " | ")+" |")
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	tw.Flush()
}

// decayLine reports the rate at the start and the end of the run on the fresh database, and
// the rate in each window between.
func decayLine(o options, d *phaseStats) string {
	win := o.decayWindow
	first := d.rateBetween(0, win)
	last := d.rateBetween(o.decay-win, o.decay)
	pct := "—"
	if first > 0 {
		pct = strconv.FormatFloat(100*last/first, 'f', 0, 64) + " %"
	}
	var steps []string
	for from := time.Duration(0); from+win <= o.decay; from += win {
		steps = append(steps, num(d.rateBetween(from, from+win)))
	}
	line := fmt.Sprintf("fresh database, c=%d via the connector for %s: %s–%s s %s turns/s, %s–%s s %s turns/s (%s of the first window); every %s: %s; %d errors",
		o.decayC, o.decay, secs(0), secs(win), num(first), secs(o.decay-win), secs(o.decay), num(last), pct,
		win, strings.Join(steps, " · "), d.errors)
	if d.logged != nil {
		line += fmt.Sprintf(", connector log %d ERROR / %d WARN", d.logged.errors, d.logged.warnings)
	}
	return line
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }

// num formats a rate: no decimals from 100 up, one below.
func num(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	if x >= 100 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}

// ms formats milliseconds with about three significant digits.
func ms(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case math.Abs(x) >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case math.Abs(x) >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	default:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
}

func signed(x float64) string {
	if x >= 0 {
		return "+" + ms(x)
	}
	return ms(x)
}
