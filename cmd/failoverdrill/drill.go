package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
)

// quietFor is how long turns must succeed without a failure for a fault to count as over.
const quietFor = 3 * time.Second

// drill runs the three faults under load and reports.
type drill struct {
	o    options
	load *load
	out  io.Writer
	demo *agent.Agent
}

// fault is one measured fault.
type fault struct {
	name   string
	at     time.Time
	turns  []turn // turns that ended after at, until the fault was over
	healed time.Time
}

func (d *drill) run(ctx context.Context) error {
	var faults []fault
	var problems []error
	sleep(ctx, d.o.settle)

	// 1. postgres alone: Patroni restarts it in place.
	primary, err := waitRole(ctx, d.o.nodes, "sync", 2*time.Minute) // a synchronous standby is in place
	if err == nil {
		primary, err = waitRole(ctx, d.o.nodes, "primary", time.Minute)
	}
	if err != nil {
		return err
	}
	at := time.Now()
	if err := kill9(filepath.Join(primary.data, "postmaster.pid")); err != nil {
		return err
	}
	f, err := d.recovered(ctx, "kill -9 of the primary's postgres (Patroni restarts it)", at)
	faults = append(faults, f)
	if err != nil {
		problems = append(problems, err)
	}
	sleep(ctx, d.o.settle)

	// 2. the primary's node: Patroni and postgres killed, the standby is promoted.
	if _, err := waitRole(ctx, d.o.nodes, "sync", 2*time.Minute); err != nil {
		return err
	}
	if primary, err = waitRole(ctx, d.o.nodes, "primary", time.Minute); err != nil {
		return err
	}
	at = time.Now()
	if err := kill9(primary.pidfile); err != nil {
		return err
	}
	if err := kill9(filepath.Join(primary.data, "postmaster.pid")); err != nil {
		return err
	}
	f, err = d.recovered(ctx, "kill -9 of the primary's Patroni and postgres (failover)", at)
	faults = append(faults, f)
	if err != nil {
		problems = append(problems, err)
	}
	others := slices.DeleteFunc(slices.Clone(d.o.nodes), func(n node) bool { return n.name == primary.name })
	promoted, err := waitRole(ctx, others, "primary", time.Minute)
	if err != nil {
		return fmt.Errorf("after the failover: %w", err)
	}
	sleep(ctx, d.o.settle)

	// 3. the old primary comes back: Patroni rejoins it as a replica.
	rejoinAt := time.Now()
	at = rejoinAt
	if err := d.startNode(primary); err != nil {
		return err
	}
	if _, err := waitRole(ctx, []node{primary}, "replica", 3*time.Minute); err != nil {
		return fmt.Errorf("the old primary %s: %w", primary.name, err)
	}
	rejoined := time.Now()
	sleep(ctx, d.o.settle)
	turns, _, _ := d.load.snapshot()
	rejoin := fault{name: "the old primary rejoins as a replica", at: at, healed: time.Now()}
	for _, t := range turns {
		if t.end.After(at) {
			rejoin.turns = append(rejoin.turns, t)
		}
	}
	faults = append(faults, rejoin)
	if n := failed(rejoin.turns); n > 0 {
		problems = append(problems, fmt.Errorf("%d turns failed while the old primary rejoined", n))
	}
	recovery, sessions, err := d.oldPrimary(ctx, primary)
	if err != nil {
		problems = append(problems, err)
	} else if !recovery {
		problems = append(problems, fmt.Errorf("the old primary %s is not in recovery", primary.name))
	}

	// 4. a planned switchover back: Patroni demotes the promoted primary (it restarts
	// read-only, under the connector's pool) and promotes the old one.
	if _, err := waitRole(ctx, []node{primary}, "sync", 2*time.Minute); err != nil {
		return fmt.Errorf("the old primary %s as synchronous standby: %w", primary.name, err)
	}
	at = time.Now()
	if err := switchover(ctx, promoted, primary); err != nil {
		return err
	}
	f, err = d.recovered(ctx, "planned switchover (Patroni REST /switchover)", at)
	faults = append(faults, f)
	if err != nil {
		problems = append(problems, err)
	}

	d.load.stop()
	_, holds, unsaved := d.load.snapshot()
	lost := d.checkHolds(ctx, holds)
	notCanceled := d.checkCanceled(ctx, unsaved)

	fmt.Fprintf(d.out, "\nfailover drill: %d workers completing turns, %d opening holds; primary %s, standby %s (synchronous)\n\n",
		d.o.workers, d.o.holdWorkers, primary.name, promoted.name)
	fmt.Fprintln(d.out, "| fault | turns after it | failed | failing from → to (s after the fault) | served again (s) | failures |")
	fmt.Fprintln(d.out, "|---|---|---|---|---|---|")
	for _, f := range faults {
		fmt.Fprintln(d.out, f.row())
	}
	fmt.Fprintf(d.out, "\nold primary %s back as a replica after %.1f s: in recovery %v, connector sessions on it %d\n",
		primary.name, rejoined.Sub(rejoinAt).Seconds(), recovery, sessions)
	fmt.Fprintf(d.out, "holds confirmed to the engine: %d, lost: %d", len(holds), len(lost))
	for _, f := range slices.Concat(faults[:2], faults[3:]) {
		fmt.Fprintf(d.out, "; confirmed in the second before %q: %d", f.name, countIn(holds, f.at.Add(-time.Second), f.at))
	}
	fmt.Fprintf(d.out, "\nholds that could not be saved (FAILED internal): %d, their tasks not canceled at the agent: %d\n",
		len(unsaved), len(notCanceled))
	if len(lost) > 0 {
		problems = append(problems, fmt.Errorf("%d holds confirmed to the engine were lost: %s", len(lost), strings.Join(lost[:min(5, len(lost))], "; ")))
	}
	if len(notCanceled) > 0 {
		problems = append(problems, fmt.Errorf("%d unsaved holds' tasks were not canceled", len(notCanceled)))
	}
	return errors.Join(problems...)
}

// recovered waits until turns have succeeded for quietFor with no failure since a fault at at,
// and returns the fault with the turns that ended after at.
func (d *drill) recovered(ctx context.Context, name string, at time.Time) (fault, error) {
	f := fault{name: name, at: at}
	for deadline := at.Add(d.o.recoveryBound); ; sleep(ctx, 100*time.Millisecond) {
		turns, _, _ := d.load.snapshot()
		f.turns = f.turns[:0]
		var lastFailure, firstOK time.Time
		for _, t := range turns {
			if !t.end.After(at) {
				continue
			}
			f.turns = append(f.turns, t)
			if t.failure != "" {
				lastFailure = later(lastFailure, t.end)
			}
		}
		for _, t := range f.turns {
			if t.failure == "" && t.start.After(lastFailure) && (firstOK.IsZero() || t.end.Before(firstOK)) {
				firstOK = t.end
			}
		}
		now := time.Now()
		if !firstOK.IsZero() && now.Sub(firstOK) >= quietFor && now.Sub(lastFailure) >= quietFor {
			f.healed = firstOK
			return f, nil
		}
		if now.After(deadline) || ctx.Err() != nil {
			return f, fmt.Errorf("%s: turns still failing %s after it", name, d.o.recoveryBound)
		}
	}
}

// switchover asks Patroni to hand the primary role from leader to candidate, and waits for it.
func switchover(ctx context.Context, leader, candidate node) error {
	body := fmt.Sprintf(`{"leader": %q, "candidate": %q}`, leader.name, candidate.name)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, leader.rest+"/switchover", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		return fmt.Errorf("switchover: %w", err)
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("switchover: %s: %s", res.Status, msg)
	}
	return nil
}

// startNode starts a node's Patroni again, as the script did, and records its pid.
func (d *drill) startNode(n node) error {
	logFile, err := os.OpenFile(filepath.Join(filepath.Dir(n.config), "patroni.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	args := append(slices.Clone(d.o.startNode[1:]), n.config)
	cmd := exec.Command(d.o.startNode[0], args...)
	cmd.Env = append(os.Environ(), "HOME="+d.o.logDir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start Patroni of %s: %w", n.name, err)
	}
	// The script that started the cluster stops it, this node included, by its pid file.
	if err := os.WriteFile(n.pidfile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reaped when it exits; it outlives the drill otherwise
	return nil
}

// oldPrimary asks the old primary whether it is in recovery (a read-only replica) and how many
// of the connector's sessions are connected to it (pgx closes at once a connection that
// target_session_attrs=read-write refuses).
func (d *drill) oldPrimary(ctx context.Context, n node) (recovery bool, sessions int, err error) {
	conn, err := pgx.Connect(ctx, "postgres://postgres@"+n.pg+"/postgres?sslmode=disable&connect_timeout=2")
	if err != nil {
		return false, 0, fmt.Errorf("connect to the old primary: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	err = conn.QueryRow(ctx, `select pg_is_in_recovery(),
		(select count(*) from pg_stat_activity where application_name = $1)`, drillApp).Scan(&recovery, &sessions)
	if err != nil {
		return false, 0, fmt.Errorf("ask the old primary: %w", err)
	}
	return recovery, sessions, nil
}

// checkHolds continues every confirmed hold's session and returns those whose next turn did not
// go to the held task, or did not complete it there (the sum of 3 and 5).
func (d *drill) checkHolds(ctx context.Context, holds []hold) []string {
	var (
		mu   sync.Mutex
		lost []string
		wg   sync.WaitGroup
	)
	next := make(chan hold)
	for range 8 {
		wg.Go(func() {
			for h := range next {
				r, err := d.load.send(ctx, h.session, "", "3和5")
				if err == nil && r.held && r.taskID == h.taskID && r.outcome == pb.Outcome_OUTCOME_COMPLETED &&
					strings.Contains(r.text, "8") {
					continue
				}
				mu.Lock()
				lost = append(lost, fmt.Sprintf("%s (task %s, confirmed %s): held=%v task=%s %s %v",
					h.session, h.taskID, h.at.Format(time.TimeOnly), r.held, r.taskID, r.outcome, err))
				mu.Unlock()
			}
		})
	}
	for _, h := range holds {
		next <- h
	}
	close(next)
	wg.Wait()
	return lost
}

// checkCanceled returns the tasks the demo agent has not seen canceled (the cancel goes out in
// the background: it gets a generous while).
func (d *drill) checkCanceled(ctx context.Context, tasks []string) []string {
	deadline := time.Now().Add(30 * time.Second)
	for {
		missing := slices.DeleteFunc(slices.Clone(tasks), d.demo.Canceled)
		if len(missing) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return missing
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

// row is the fault's line of the report table.
func (f fault) row() string {
	kinds := map[string]int{}
	var first, last time.Time
	for _, t := range f.turns {
		if t.failure == "" {
			continue
		}
		kinds[t.failure]++
		if first.IsZero() || t.end.Before(first) {
			first = t.end
		}
		last = later(last, t.end)
	}
	span, served := "—", "—"
	if !first.IsZero() {
		span = fmt.Sprintf("%.2f → %.2f", first.Sub(f.at).Seconds(), last.Sub(f.at).Seconds())
	}
	if !f.healed.IsZero() {
		served = fmt.Sprintf("%.2f", f.healed.Sub(f.at).Seconds())
	}
	var parts []string
	for _, k := range slices.SortedFunc(maps.Keys(kinds), func(a, b string) int { return cmp.Compare(kinds[b], kinds[a]) }) {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, kinds[k]))
	}
	return fmt.Sprintf("| %s | %d | %d | %s | %s | %s |", f.name, len(f.turns), failed(f.turns), span, served, cmp.Or(strings.Join(parts, ", "), "—"))
}

func failed(turns []turn) int {
	n := 0
	for _, t := range turns {
		if t.failure != "" {
			n++
		}
	}
	return n
}

func countIn(holds []hold, from, to time.Time) int {
	n := 0
	for _, h := range holds {
		if !h.at.Before(from) && h.at.Before(to) {
			n++
		}
	}
	return n
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
