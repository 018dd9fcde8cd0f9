package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/a2a-connector/a2a-connector/internal/pgtest"
)

var testDB *pgtest.DB

// testBin is where the package's tests build the programs, once (see buildBinaries).
var testBin struct {
	dir  string
	once sync.Once
	err  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "loadgen-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testBin.dir = dir
	code := pgtest.Run(m, &testDB)
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// buildBinaries builds connector, console-api and loadgen once for the package's tests, with
// the race detector when the tests have it, so the smoke run also checks the real programs.
func buildBinaries(t *testing.T) string {
	t.Helper()
	testBin.once.Do(func() {
		args := []string{"build", "-o", testBin.dir + string(os.PathSeparator)}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "../connector", "../console-api", ".")
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			testBin.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if testBin.err != nil {
		t.Fatal(testBin.err)
	}
	return testBin.dir
}

// tableRows parses the first Markdown table loadgen printed: heading cells, and each row by its
// first cell.
func tableRows(t *testing.T, out string) ([]string, map[string][]string) {
	t.Helper()
	var head []string
	rows := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "|") {
			if head != nil {
				break // the table ended; the noisy neighbour's is another
			}
			continue
		}
		if strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if head == nil {
			head = cells
			continue
		}
		if len(cells) != len(head) {
			t.Fatalf("row has %d cells, heading %d: %q", len(cells), len(head), line)
		}
		rows[cells[0]] = cells
	}
	return head, rows
}

// table parses the Markdown table loadgen printed with -via via, checks its heading, and returns
// each cell's column by heading and the rows by their first cell.
func table(t *testing.T, out, via string) (col map[string]int, rows map[string][]string) {
	t.Helper()
	head, rows := tableRows(t, out)
	if diff := cmp.Diff(columns(via), head); diff != "" {
		t.Errorf("table heading (-want +got):\n%s", diff)
	}
	col = map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	return col, rows
}

// runLoadgen runs the built loadgen end to end on a fresh database, its programs' logs in logs,
// with args after those, and returns what it printed; a failed run fails the test.
func runLoadgen(t *testing.T, logs string, args ...string) (stdout, stderr string) {
	t.Helper()
	bin := buildBinaries(t)
	cmd := exec.CommandContext(t.Context(), filepath.Join(bin, "loadgen"),
		append([]string{"-bin", bin, "-database-url", testDB.EmptyDatabase(t), "-logs", logs}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("loadgen: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	t.Log("\n" + out.String())
	return out.String(), errOut.String()
}

// TestSmokeRunPrintsEveryRowWithoutErrors runs the real programs end to end on a fresh
// database: a tiny run of every kind of phase. It asserts the table's shape and that no turn
// failed — never on speed.
func TestSmokeRunPrintsEveryRowWithoutErrors(t *testing.T) {
	logs := t.TempDir()
	out, errOut := runLoadgen(t, logs,
		"-c", "1,3", "-duration", "1s", "-warmup", "200ms", "-turns-per-session", "2", "-conns", "2",
		"-long-streams", "20", "-long-chunks", "2", "-long-delay", "20ms", "-long-ramp", "0s",
		"-decay", "2s", "-decay-window", "1s",
		"-noisy", "12", "-noisy-cap", "4", "-noisy-c", "2", "-noisy-chunks", "3", "-noisy-delay", "50ms", "-noisy-retry", "20ms",
		"-burst", "40", "-replicas", "2", "-markdown")

	col, rows := table(t, out, viaConnector)
	for _, label := range []string{"c=1", "c=3", "c=1, 2 replicas", "c=3, 2 replicas", "20 long streams (2×20ms)"} {
		r, ok := rows[label]
		if !ok {
			t.Errorf("no row %q in:\n%s", label, out)
			continue
		}
		if got := r[col["errors direct/via"]]; got != "0 / 0" {
			t.Errorf("%s: errors %q, want 0 / 0", label, got)
		}
		var d, v int
		if _, err := fmt.Sscanf(r[col["turns direct/via"]], "%d / %d", &d, &v); err != nil || d == 0 || v == 0 {
			t.Errorf("%s: turns %q, want some of both", label, r[col["turns direct/via"]])
		}
		if strings.HasPrefix(label, "20 long") && (d != 20 || v != 20) {
			t.Errorf("%s: %d / %d turns, want 20 / 20", label, d, v)
		}
		for _, name := range []string{"via turns/s", "added p50 ms", "connector CPU ms/turn", "connector peak RSS MiB"} {
			if r[col[name]] == "—" {
				t.Errorf("%s: %s is empty", label, name)
			}
		}
	}
	if len(rows) != 5 {
		t.Errorf("%d rows, want 5:\n%s", len(rows), out)
	}
	// The timed rows alternate in three rounds (the default), the long streams run once.
	for _, phase := range []string{"c=1 direct", "c=1 via connector", "c=3 direct", "c=3 via connector",
		"c=1, 2 replicas direct", "c=1, 2 replicas via connector"} {
		if n := strings.Count(errOut, "== "+phase+": "); n != 3 {
			t.Errorf("%d phases %q, want 3 rounds:\n%s", n, phase, errOut)
		}
	}
	if n := strings.Count(errOut, "== long streams direct: "); n != 1 {
		t.Errorf("%d long-stream phases direct, want 1:\n%s", n, errOut)
	}
	if !strings.Contains(out, "fresh database, c=10 via the connector for 2s: 0–1 s ") || !strings.Contains(out, "; 0 errors") {
		t.Errorf("no fresh-database line without errors in:\n%s", out)
	}

	checkNoisy(t, out)
	checkBurst(t, out, 40, "1 replica", "2 replicas")

	// Every program was stopped in order, not killed; the second replica too.
	checkShutDown(t, logs, "connector", "connector-2", "console-api")
}

// checkBurst checks the burst table: a row per stack size, tenant B's turns without errors,
// and tenant A's streams, in every round, each admitted or refused with RESOURCE_EXHAUSTED,
// some of both. Never on speed.
func checkBurst(t *testing.T, out string, streams int, labels ...string) {
	t.Helper()
	_, after, ok := strings.Cut(out, "\nburst: tenant B runs ")
	if !ok {
		t.Fatalf("no burst table in:\n%s", out)
	}
	head, rows := tableRows(t, after)
	if diff := cmp.Diff(burstColumns, head); diff != "" {
		t.Errorf("burst heading (-want +got):\n%s", diff)
	}
	if len(rows) != len(labels) {
		t.Errorf("%d burst rows, want %d:\n%s", len(rows), len(labels), after)
	}
	cell := func(r []string, name string) string { return r[slices.Index(burstColumns, name)] }
	for _, label := range labels {
		r, ok := rows[label]
		if !ok {
			t.Errorf("no burst row %q in:\n%s", label, after)
			continue
		}
		var quiet, during int
		if _, err := fmt.Sscanf(cell(r, "B turns quiet/during"), "%d / %d", &quiet, &during); err != nil || quiet == 0 {
			t.Errorf("%s: B turns %q, want some quiet ones", label, cell(r, "B turns quiet/during"))
		}
		if got := cell(r, "B errors"); got != "0" {
			t.Errorf("%s: %s errors of tenant B", label, got)
		}
		refused, _ := strconv.Atoi(cell(r, "A refused"))
		admitted, _ := strconv.Atoi(cell(r, "A admitted"))
		if refused == 0 || admitted == 0 || refused+admitted != 3*streams {
			t.Errorf("%s: A %d refused, %d admitted; want some of both, %d in all (3 rounds)", label, refused, admitted, 3*streams)
		}
		if got := cell(r, "A other errors"); got != "0" {
			t.Errorf("%s: %s other errors of tenant A", label, got)
		}
	}
}

// TestSmokeRunBindingsAndCredentials runs the rows per binding and per credential: every row
// is there with turns on both sides and no errors, the lines beside the table name each, and
// the connector asked the token endpoint once for all its OAuth2 turns. Never on speed.
func TestSmokeRunBindingsAndCredentials(t *testing.T) {
	logs := t.TempDir()
	out, _ := runLoadgen(t, logs, "-c", "", "-long-streams", "0", "-decay", "0", "-noisy", "0", "-burst", "0",
		"-bindings", "jsonrpc,rest,grpc,voice", "-credentials", "apikey,oauth2,identity,sigv4,mtls,apikey-tls", "-bindings-c", "2",
		"-duration", "600ms", "-warmup", "100ms", "-turns-per-session", "2", "-markdown")
	col, rows := table(t, out, viaConnector)
	for _, tg := range []string{targetJSONRPC, targetREST, targetGRPC, targetVoice, targetAPIKey, targetOAuth2, targetIdentity, targetSigV4, targetMTLS, targetAPIKeyTLS} {
		label := "c=2 " + targetLabels[tg]
		r, ok := rows[label]
		if !ok {
			t.Errorf("no row %q in:\n%s", label, out)
			continue
		}
		if got := r[col["errors direct/via"]]; got != "0 / 0" {
			t.Errorf("%s: errors %q, want 0 / 0", label, got)
		}
		var d, v int
		if _, err := fmt.Sscanf(r[col["turns direct/via"]], "%d / %d", &d, &v); err != nil || d == 0 || v == 0 {
			t.Errorf("%s: turns %q, want some of both", label, r[col["turns direct/via"]])
		}
		if !strings.Contains(out, targetLabels[tg]+" +") && !strings.Contains(out, targetLabels[tg]+" -") {
			t.Errorf("no added figures of %s beside the table:\n%s", label, out)
		}
	}
	if !strings.Contains(out, "OAuth2: the connector asked the token endpoint 1 times for its ") {
		t.Errorf("want one token request by the connector:\n%s", out)
	}
	checkShutDown(t, logs, "connector", "console-api")
}

// checkNoisy checks the noisy-neighbour table: tenant B's turns ran without errors on both
// sides, and tenant A, with 12 workers against a cap of 4, completed turns and was refused with
// RESOURCE_EXHAUSTED, without other errors. Never on speed.
func checkNoisy(t *testing.T, out string) {
	t.Helper()
	_, after, ok := strings.Cut(out, "\nnoisy neighbour: tenant B runs 2 concurrent turns")
	if !ok {
		t.Fatalf("no noisy-neighbour table in:\n%s", out)
	}
	head, rows := tableRows(t, after)
	if diff := cmp.Diff(noisyColumns, head); diff != "" {
		t.Errorf("noisy heading (-want +got):\n%s", diff)
	}
	for _, side := range []string{"quiet", "beside A"} {
		r, ok := rows[side]
		if !ok {
			t.Errorf("no noisy row %q in:\n%s", side, after)
			continue
		}
		if n, _ := strconv.Atoi(r[slices.Index(noisyColumns, "turns")]); n == 0 {
			t.Errorf("%s: no turns of tenant B", side)
		}
		if got := r[slices.Index(noisyColumns, "errors")]; got != "0" {
			t.Errorf("%s: %s errors of tenant B", side, got)
		}
	}
	var ratio string
	var turns, refused int
	line := after[strings.Index(after, "tenant B's p99"):]
	if _, err := fmt.Sscanf(strings.ReplaceAll(line, "(in p50/p99", ""), "tenant B's p99 beside A: %s its quiet p99. tenant A: %d turns completed, %d refused", &ratio, &turns, &refused); err != nil {
		t.Fatalf("tenant A's line %q: %v", line, err)
	}
	if !strings.Contains(line, " 0 other errors.") {
		t.Errorf("tenant A had errors other than refusals: %q", line)
	}
	if turns == 0 || refused == 0 {
		t.Errorf("tenant A: %d turns, %d refused; want some of both: %q", turns, refused, line)
	}
}

// TestSmokeRunViaRelay runs the minimal relay (loadgen relay) in place of the connector, with
// its session lookup (-via relay) and without (-via hop): the header and the headings say so,
// every turn through it succeeds, the connector never ran, the relay was started as asked, and
// it stopped in order. Never on speed.
func TestSmokeRunViaRelay(t *testing.T) {
	for _, tt := range []struct{ via, header, started string }{
		{via: viaRelay, header: "via the minimal relay (loadgen relay), not the connector", started: `"lookup":true`},
		{via: viaHop, header: "via the minimal relay without its session lookup (loadgen relay -lookup=false: the gRPC hop alone), not the connector",
			started: `"lookup":false`},
	} {
		t.Run(tt.via, func(t *testing.T) {
			logs := t.TempDir()
			out, errOut := runLoadgen(t, logs, "-via", tt.via, "-c", "1", "-duration", "600ms", "-warmup", "100ms",
				"-long-streams", "0", "-decay", "0", "-markdown")

			if !strings.Contains(out, tt.header) {
				t.Errorf("the header does not name the relay:\n%s", out)
			}
			col, rows := table(t, out, tt.via)
			r, ok := rows["c=1"]
			if !ok || len(rows) != 1 {
				t.Fatalf("want one row c=1 in:\n%s", out)
			}
			if got := r[col["errors direct/via"]]; got != "0 / 0" {
				t.Errorf("errors %q, want 0 / 0", got)
			}
			var d, v int
			if _, err := fmt.Sscanf(r[col["turns direct/via"]], "%d / %d", &d, &v); err != nil || d == 0 || v == 0 {
				t.Errorf("turns %q, want some of both", r[col["turns direct/via"]])
			}
			for _, name := range []string{" CPU ms/turn", " peak RSS MiB", " log ERROR/WARN"} {
				if r[col[tt.via+name]] == "—" {
					t.Errorf("%s%s is empty: the relay's process was not watched", tt.via, name)
				}
			}
			if n := strings.Count(errOut, "== c=1 via "+tt.via+": "); n != 3 {
				t.Errorf("%d phases via %s, want 3 rounds:\n%s", n, tt.via, errOut)
			}
			if _, err := os.Stat(filepath.Join(logs, "connector.log")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("connector.log: %v; want none, the connector must not run", err)
			}
			if b, err := os.ReadFile(filepath.Join(logs, "relay.log")); err != nil || !strings.Contains(string(b), tt.started) {
				t.Errorf("relay.log (%v) does not say %s:\n%s", err, tt.started, b)
			}
			checkShutDown(t, logs, "relay", "console-api")
		})
	}
}

// checkShutDown checks that each named server logged its orderly shutdown: it was stopped in
// order (SIGTERM, drain), not killed.
func checkShutDown(t *testing.T, logs string, names ...string) {
	t.Helper()
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(logs, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(`"msg":"shutting down"`)) {
			t.Errorf("%s did not shut down in order; log:\n%s", name, b)
		}
	}
}

// TestInterruptStopsEveryProgram sends SIGINT in the middle of a phase: loadgen must stop its
// programs (each logs its shutdown) and exit saying it was interrupted, leaving no process.
func TestInterruptStopsEveryProgram(t *testing.T) {
	bin := buildBinaries(t)
	logs := t.TempDir()
	cmd := exec.Command(filepath.Join(bin, "loadgen"),
		"-bin", bin, "-database-url", testDB.EmptyDatabase(t), "-logs", logs,
		"-c", "2", "-duration", "10m", "-warmup", "0s", "-long-streams", "0", "-decay", "0")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// Interrupt once the load runs.
	var errOut bytes.Buffer
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		errOut.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "== c=2 direct") {
			break
		}
	}
	pids := childPIDs(t, cmd.Process.Pid)
	if len(pids) != 3 {
		t.Fatalf("loadgen has %d children %v, want 3 (agent, console-api, connector); stderr:\n%s", len(pids), pids, errOut.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stderr)
	errOut.Write(rest)
	err = cmd.Wait()
	if err == nil || !strings.Contains(errOut.String(), "loadgen: interrupted") {
		t.Errorf("exit %v, want an error saying interrupted; stderr:\n%s", err, errOut.String())
	}
	for _, pid := range pids {
		// Signal 0 checks existence; loadgen waited for each child, so they are reaped too.
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("child %d still runs after loadgen exited", pid)
		}
	}
	checkShutDown(t, logs, "connector", "console-api")
}

// childPIDs lists the processes whose parent is pid.
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, err := readStat(p); err == nil && ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

func TestParseTurnText(t *testing.T) {
	t.Parallel()
	def := replySpec{id: "x", chunks: 3}
	tests := []struct {
		name    string
		text    string
		want    replySpec
		wantErr bool
	}{
		{name: "what_turnText_writes_reads_back", text: turnText("abc", 7, 250*time.Millisecond), want: replySpec{id: "abc", chunks: 7, delay: 250 * time.Millisecond}},
		{name: "missing_words_keep_the_defaults", text: "hello there", want: def},
		{name: "zero_chunks_is_refused", text: "chunks=0", wantErr: true},
		{name: "a_negative_delay_is_refused", text: "delay=-1s", wantErr: true},
		{name: "a_delay_over_a_minute_is_refused", text: "delay=2m", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseTurnText(tt.text, def)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestParseFlagsVia: -via takes connector, relay or hop, and the relay refuses what it cannot measure
// (the -decay run ages the connector's sessions, -debug-addr serves the connector's profiles).
func TestParseFlagsVia(t *testing.T) {
	t.Parallel()
	base := []string{"-database-url", "postgres://unused", "-bin", t.TempDir()}
	tests := []struct {
		name    string
		args    []string
		want    string // o.via
		wantErr string // part of the error; "" for none
	}{
		{name: "the_default_is_the_connector", want: viaConnector},
		{name: "relay_with_decay_0", args: []string{"-via", "relay", "-decay", "0"}, want: viaRelay},
		{name: "hop_with_decay_0", args: []string{"-via", "hop", "-decay", "0"}, want: viaHop},
		{name: "an_unknown_value_is_an_error", args: []string{"-via", "floor"}, wantErr: `-via "floor": want connector, relay or hop`},
		{name: "relay_with_the_default_decay_is_an_error", args: []string{"-via", "relay"}, wantErr: "-via relay needs -decay 0"},
		{name: "hop_with_the_default_decay_is_an_error", args: []string{"-via", "hop"}, wantErr: "-via hop needs -decay 0"},
		{name: "relay_with_debug_addr_is_an_error", args: []string{"-via", "relay", "-decay", "0", "-debug-addr", "127.0.0.1:0"}, wantErr: "-debug-addr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := parseFlags(append(slices.Clip(base), tt.args...), io.Discard)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
			case tt.wantErr == "" && o.via != tt.want:
				t.Errorf("via %q, want %q", o.via, tt.want)
			}
		})
	}
}

// TestParseFlagsBurstAndReplicas: the burst row and the three-replica rows are in the default
// run, 0 and 1 skip them, and the relay (one process, no caps) runs neither.
func TestParseFlagsBurstAndReplicas(t *testing.T) {
	t.Parallel()
	base := []string{"-database-url", "postgres://unused", "-bin", t.TempDir()}
	tests := []struct {
		name            string
		args            []string
		burst, replicas int
		tenantMetadata  bool
		wantErr         string
	}{
		{name: "the_default_run_has_both", burst: 5000, replicas: 3, tenantMetadata: true},
		{name: "zero_and_one_skip_them", args: []string{"-burst", "0", "-replicas", "1", "-tenant-metadata=false"}, burst: 0, replicas: 1},
		{name: "the_relay_runs_neither", args: []string{"-via", "relay", "-decay", "0"}, burst: 0, replicas: 1, tenantMetadata: true},
		{name: "a_negative_burst_is_an_error", args: []string{"-burst", "-1"}, wantErr: "-burst must not be negative"},
		{name: "zero_replicas_is_an_error", args: []string{"-replicas", "0"}, wantErr: "-replicas: 1..9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := parseFlags(append(slices.Clip(base), tt.args...), io.Discard)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
			case tt.wantErr == "" && (o.burst != tt.burst || o.replicas != tt.replicas || o.tenantMetadata != tt.tenantMetadata):
				t.Errorf("burst %d, replicas %d, tenant metadata %v; want %d, %d, %v", o.burst, o.replicas, o.tenantMetadata, tt.burst, tt.replicas, tt.tenantMetadata)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	ms := func(xs ...int) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   float64
	}{
		{name: "median_of_odd_count", sorted: ms(1, 2, 3), p: 0.5, want: 2},
		{name: "median_of_even_count_is_the_lower_middle", sorted: ms(1, 2, 3, 4), p: 0.5, want: 2},
		{name: "p99_of_100_is_the_99th", sorted: ms(seq(100)...), p: 0.99, want: 99},
		{name: "p99_of_few_is_the_largest", sorted: ms(1, 5, 9), p: 0.99, want: 9},
		{name: "single", sorted: ms(7), p: 0.5, want: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

// TestMergePoolsTheRounds: the rounds of one side add up to one phase: latencies pooled and
// sorted, windows and CPU added (so the rate and CPU per turn are the whole's), the peaks the
// highest, the later round's turn ends placed after the earlier window.
func TestMergePoolsTheRounds(t *testing.T) {
	t.Parallel()
	ms := func(x int) time.Duration { return time.Duration(x) * time.Millisecond }
	a := &phaseStats{turns: 2, errors: 1, window: ms(1000), lat: []time.Duration{ms(1), ms(5)}, first: []time.Duration{ms(1), ms(4)},
		ends: []time.Duration{ms(10), ms(900)}, errSamples: map[string]int{"x": 1}, connectorCPU: ms(4), agentCPU: ms(2), pgCPU: ms(1),
		selfCPU: ms(1), hasPG: true, connectorRSS: 50, agentPeak: 3, logged: &logCounts{warnings: 1, kinds: map[string]int{"WARN w": 1}}}
	b := &phaseStats{turns: 1, window: ms(500), lat: []time.Duration{ms(3)}, first: []time.Duration{ms(2)},
		ends: []time.Duration{ms(100)}, errSamples: map[string]int{}, connectorCPU: ms(2), agentCPU: ms(1), pgCPU: ms(2),
		selfCPU: ms(1), hasPG: true, connectorRSS: 70, agentPeak: 2, logged: &logCounts{errors: 2, kinds: map[string]int{"ERROR e": 2}}}
	got := (*phaseStats)(nil).merge(a).merge(b).merge(nil)
	want := &phaseStats{turns: 3, errors: 1, window: ms(1500), lat: []time.Duration{ms(1), ms(3), ms(5)},
		first: []time.Duration{ms(1), ms(2), ms(4)}, ends: []time.Duration{ms(10), ms(900), ms(1100)},
		errSamples: map[string]int{"x": 1}, connectorCPU: ms(6), agentCPU: ms(3), pgCPU: ms(3), selfCPU: ms(2), hasPG: true,
		connectorRSS: 70, agentPeak: 3, logged: &logCounts{errors: 2, warnings: 1, kinds: map[string]int{"WARN w": 1, "ERROR e": 2}}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(phaseStats{}, logCounts{})); diff != "" {
		t.Errorf("merged (-want +got):\n%s", diff)
	}
	if r := got.rate(); r != 2 {
		t.Errorf("rate %v, want 2 turns/s", r)
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// TestDirectClientChecksTheReply runs the bare client against the stub agent on a real
// loopback server: the right text passes, and a different expected text, or an agent error,
// is a failure — the client cannot report a turn it did not check.
func TestDirectClientChecksTheReply(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newStubAgent(3, 0))
	t.Cleanup(srv.Close)
	c := newDirectClient(srv.URL+"/", 2)
	t.Cleanup(c.closeIdle)
	ctx := t.Context()

	res, contextID, err := c.turn(ctx, "", turnText("t1", 4, time.Millisecond), replyText("t1", 4))
	if err != nil {
		t.Fatalf("turn: %v", err)
	}
	if res.firstText <= 0 || res.total < res.firstText || contextID == "" {
		t.Errorf("timing %+v, context %q: want first text before the end and a context id", res, contextID)
	}
	// A second turn of the session keeps its context.
	if _, again, err := c.turn(ctx, contextID, turnText("t2", 1, 0), replyText("t2", 1)); err != nil || again != contextID {
		t.Errorf("second turn: context %q, err %v; want %q, nil", again, err, contextID)
	}
	if _, _, err := c.turn(ctx, "", turnText("t3", 2, 0), replyText("t3", 3)); err == nil || !strings.Contains(err.Error(), "text") {
		t.Errorf("a wrong text passed: %v", err)
	}
	if _, _, err := c.turn(ctx, "", "chunks=0", ""); err == nil || !strings.Contains(err.Error(), "-32602") {
		t.Errorf("an agent error passed: %v", err)
	}
}

// TestStubAgentAnswersMessageSend covers the non-streaming method a client may also use.
func TestStubAgentAnswersMessageSend(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newStubAgent(3, 0))
	t.Cleanup(srv.Close)
	body := `{"jsonrpc":"2.0","id":"a","method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m","parts":[{"kind":"text","text":"id=s chunks=2"}]}}}`
	resp, err := srv.Client().Post(srv.URL+"/", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		ID     string `json:"id"`
		Result struct {
			Kind   string `json:"kind"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
			Artifacts []struct {
				Parts []struct{ Text string } `json:"parts"`
			} `json:"artifacts"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.ID != "a" || got.Result.Kind != "task" || got.Result.Status.State != "completed" ||
		len(got.Result.Artifacts) != 1 || len(got.Result.Artifacts[0].Parts) != 1 || got.Result.Artifacts[0].Parts[0].Text != replyText("s", 2) {
		t.Errorf("message/send answered %+v", got)
	}
}

func TestReadStatOfThisProcess(t *testing.T) {
	t.Parallel()
	s, ppid, err := readStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if ppid != os.Getppid() {
		t.Errorf("ppid %d, want %d", ppid, os.Getppid())
	}
	if s.cpu < 0 {
		t.Errorf("cpu %v", s.cpu)
	}
	rss, hwm, err := memStatus(os.Getpid())
	if err != nil || rss <= 0 || hwm < rss {
		t.Errorf("rss %d, hwm %d, err %v: want 0 < rss <= hwm", rss, hwm, err)
	}
}

func TestScanLogCountsWarningsAndErrorsFromTheOffset(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "connector.log")
	before := `{"level":"ERROR","msg":"old","error":"x"}` + "\n"
	after := `{"time":"t","level":"INFO","msg":"connector listening","addr":"127.0.0.1:1"}
{"level":"ERROR","msg":"save session after turn","error":"save turn of session \"a-1\": context deadline exceeded"}
{"level":"ERROR","msg":"save session after turn","error":"save turn of session \"b-2\": context deadline exceeded"}
{"level":"WARN","msg":"shutdown timeout: cutting remaining turns"}
not json "level":"ERROR"
`
	if err := os.WriteFile(path, []byte(before+after), 0o600); err != nil {
		t.Fatal(err)
	}
	got := scanLog(path, int64(len(before)))
	want := logCounts{errors: 2, warnings: 1, kinds: map[string]int{
		`ERROR save session after turn: save turn of session "…": context deadline exceeded`: 2,
		"WARN shutdown timeout: cutting remaining turns":                                     1,
	}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(logCounts{})); diff != "" {
		t.Errorf("scanLog (-want +got):\n%s", diff)
	}
}
