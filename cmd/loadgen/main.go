// Command loadgen measures the connector from outside, as the dialog engine sees it, against a
// bare A2A client calling the same agent directly, in one run (`make loadtest`).
//
// It starts the real connector and console-api binaries and a stub A2A agent (`loadgen agent`,
// this binary) as separate processes against a Postgres database the caller provides, migrates
// it, registers the agent through the console API, and then, for each load level, runs a phase
// of the bare client (net/http + SSE, no connector code) against the agent and a phase of
// HandleTurn over gRPC through the connector, alternating. It prints one table: rates,
// latencies, time to first text, what the connector adds, and the connector's CPU per turn and
// peak RSS read from /proc. Every turn is checked (completed, exact text); failures are counted,
// never hidden.
//
// With -via relay, the via phases go to `loadgen relay` (this binary) instead of the connector:
// a minimal relay with only the connector's required parts (relay.go), which measures how close
// any relay can get to the bare client on this machine. It is an instrument, not a product.
// With -via hop the same relay skips its session lookup: what the gRPC hop alone costs.
//
// With -bindings and -credentials, rows per binding (JSON-RPC, HTTP+JSON, gRPC) and per
// credential (API key, OAuth2 client credentials, AWS SigV4, mutual TLS) follow, each against the stub agent's face of
// that kind, its direct side speaking the same binding with the same credential (bindings.go).
//
// With -replicas N (3 by default), the concurrency rows and the burst row run again through N
// connector processes on the one database, the turns spread evenly over them. The burst row
// (burst.go) measures a tenant's fast turns while another tenant opens -burst streams at once,
// far over its cap.
//
// It does not judge the numbers: targets belong to the issue that set them, and tests never
// assert on speed. It runs on Linux only (it reads /proc).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/grpcapi"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

const usage = `usage: loadgen [run] [flags]     measure (default; loadgen -h for the flags)
       loadgen agent [flags]       serve the stub A2A agent alone (loadgen agent -h)
       loadgen relay [flags]       serve the minimal relay alone (loadgen relay -h; what -via relay and -via hop run)
       loadgen burst [flags]       the burst row's streams, in a process of their own (loadgen burst -h)

make loadtest builds the binaries, starts a private Postgres and runs loadgen.`

// options are the flags of a measurement.
type options struct {
	concurrency     []int
	duration        time.Duration
	warmup          time.Duration
	rounds          int
	chunks          int
	chunkDelay      time.Duration
	turnsPerSession int
	conns           int
	longStreams     int
	longChunks      int
	longDelay       time.Duration
	longRamp        time.Duration
	longBinding     string // "" (the plain JSON-RPC agent) or a -bindings name
	decay           time.Duration
	decayC          int
	decayWindow     time.Duration
	analyze         bool
	turnTimeout     time.Duration
	markdown        bool
	binDir          string
	databaseURL     string
	logDir          string
	agentHost       string
	debugAddr       string
	via             string // viaConnector or viaRelay
	// The noisy-neighbour row (noisy.go): tenant A's workers, cap, slow turns and retry pause;
	// tenant B's concurrency.
	noisy, noisyCap, noisyC, noisyChunks int
	noisyDelay, noisyRetry               time.Duration
	// burst: tenant A's streams opened at once in the burst row (burst.go), beside tenant B's
	// -noisy-c turns, against A's cap of -noisy-cap.
	burst int
	// replicas: the plain rows and the burst row run again through this many connector
	// processes on the one database (1: not).
	replicas int
	// tenantMetadata: HandleTurn calls name their tenant in the request metadata.
	tenantMetadata bool
	// The rows per binding and per credential (bindings.go), each at every level of bindingsC.
	bindings, credentials []string
	bindingsC             []int
}

// The values of -via: what the via phases' HandleTurn calls go to.
const (
	viaConnector = "connector" // bin/connector, the product
	viaRelay     = "relay"     // loadgen relay, the minimal relay: the architecture's floor
	viaHop       = "hop"       // loadgen relay -lookup=false: the gRPC hop alone
)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := "run"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "agent":
		return runAgent(ctx, args, stdout, stderr)
	case "relay":
		return runRelay(ctx, args, stderr)
	case "burst":
		return runBurst(ctx, args, os.Stdin, stdout, stderr)
	case "run":
		o, err := parseFlags(args, stderr)
		if err != nil {
			return err
		}
		return measure(ctx, o, stdout, stderr)
	default:
		fmt.Fprintln(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fmt.Fprintln(stderr, "\nflags:")
		fs.PrintDefaults()
	}
	conc := fs.String("c", "1,10,100", "concurrency levels, one table row each: concurrent turns, comma-separated")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured time of each side of a row (direct and via the connector), split over -rounds")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured time before each side's first round (a quarter of it before the later rounds)")
	fs.IntVar(&o.rounds, "rounds", 3, "each row's direct and via-connector phases alternate this many times, -duration split between them (a machine whose speed drifts during a run then slows both sides alike)")
	fs.IntVar(&o.chunks, "chunks", 3, "text chunks per turn (artifact-update events)")
	fs.DurationVar(&o.chunkDelay, "chunk-delay", 0, "agent's pause between chunks")
	fs.IntVar(&o.turnsPerSession, "turns-per-session", 1, "turns per dialog session (1: a new session every turn)")
	fs.IntVar(&o.conns, "conns", 4, "gRPC connections to the connector")
	fs.IntVar(&o.longStreams, "long-streams", 10000, "concurrent long streams of the last row; 0 skips the row")
	fs.IntVar(&o.longChunks, "long-chunks", 10, "text chunks per long stream")
	fs.DurationVar(&o.longDelay, "long-delay", time.Second, "agent's pause between the chunks of a long stream")
	fs.DurationVar(&o.longRamp, "long-ramp", 2*time.Second, "time over which the long streams are opened")
	fs.StringVar(&o.longBinding, "long-binding", "", "binding of the long streams' agent: jsonrpc (the default, A2A 0.3), rest or grpc (A2A 1.0)")
	fs.DurationVar(&o.decay, "decay", 40*time.Second, "first, on the fresh database: run this long at -decay-c through the connector and report the rate at its start and end; 0 skips")
	fs.IntVar(&o.decayC, "decay-c", 10, "concurrency of the -decay run")
	fs.DurationVar(&o.decayWindow, "decay-window", 10*time.Second, "the -decay run reports the rate in its first and its last window of this length")
	fs.BoolVar(&o.analyze, "analyze", true, "after the -decay run, ANALYZE the database before the rows (as autovacuum soon would)")
	fs.DurationVar(&o.turnTimeout, "turn-timeout", time.Minute, "client deadline of one turn (a turn past it is an error)")
	fs.BoolVar(&o.markdown, "markdown", false, "print the table as Markdown")
	fs.StringVar(&o.binDir, "bin", "", "folder holding the connector and console-api binaries (default: loadgen's own folder)")
	fs.StringVar(&o.databaseURL, "database-url", os.Getenv("DATABASE_URL"), "Postgres database to migrate and use (default $DATABASE_URL); a fresh one for the -decay figures")
	fs.StringVar(&o.logDir, "logs", "", "folder for the programs' logs (default: a temp folder, removed after a run without errors)")
	fs.StringVar(&o.debugAddr, "debug-addr", "", "A2AC_DEBUG_ADDR of the connector: serve its pprof profiles there during the run (e.g. 127.0.0.1:6060)")
	fs.StringVar(&o.via, "via", viaConnector, "what the via phases call: connector (bin/connector), relay (loadgen relay: the minimal relay, the floor of any relay on this machine, not the product; needs -decay 0) or hop (the minimal relay without its session lookup: what the gRPC hop alone costs; needs -decay 0)")
	fs.IntVar(&o.noisy, "noisy", 300, "noisy-neighbour row: tenant A's workers of slow turns, more than its cap lets in; 0 skips the row (so does -via relay or hop: the relay has no caps)")
	fs.IntVar(&o.noisyCap, "noisy-cap", 100, "tenant A's concurrent-turn cap, set through the admin API")
	fs.IntVar(&o.noisyC, "noisy-c", 10, "tenant B's concurrent fast turns in the noisy-neighbour row")
	fs.IntVar(&o.noisyChunks, "noisy-chunks", 10, "text chunks of tenant A's slow turns")
	fs.DurationVar(&o.noisyDelay, "noisy-delay", 100*time.Millisecond, "agent's pause between the chunks of tenant A's slow turns")
	fs.DurationVar(&o.noisyRetry, "noisy-retry", 100*time.Millisecond, "pause of a tenant A worker after a refusal before it tries again")
	fs.IntVar(&o.burst, "burst", 5000, "burst row: tenant A's slow streams (-noisy-chunks, -noisy-delay) opened at once against its cap of -noisy-cap, beside tenant B's -noisy-c fast turns; 0 skips the row (so does -via relay or hop)")
	fs.IntVar(&o.replicas, "replicas", 3, "after the one-replica rows, the -c rows and the burst row run again through this many connector processes on the same Postgres, turns spread evenly over them; 1 skips those rows (so does -via relay or hop)")
	fs.BoolVar(&o.tenantMetadata, "tenant-metadata", true, "name the tenant of each HandleTurn in the request metadata ("+grpcapi.TenantMetadataKey+"), as a dialog engine should; false: only in the request")
	fs.StringVar(&o.agentHost, "agent-host", "127.0.0.2", "loopback address the stub agent listens on (the only one the SSRF guard lets through)")
	bindings := fs.String("bindings", "", "rows per binding, at each -bindings-c: jsonrpc, rest (A2A 1.0 HTTP+JSON), grpc (A2A 1.0 gRPC), comma-separated; each row's direct side speaks the same binding")
	creds := fs.String("credentials", "", "rows per credential, at each -bindings-c: apikey, oauth2 (client credentials from a token endpoint the stub agent serves), identity (the API key and the caller's identity token), sigv4 (AWS Signature Version 4, checked with the AWS SDK's signer), mtls (a client certificate of a private CA, registered with credentials.mtls and tls.caPem), apikey-tls (the API key over TLS of the same CA: mtls's like), comma-separated; JSON-RPC agents")
	bindingsC := fs.String("bindings-c", "1,10", "concurrency levels of the -bindings and -credentials rows")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, f := range strings.Split(*conc, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return o, fmt.Errorf("-c %q: want positive integers, comma-separated", *conc)
		}
		o.concurrency = append(o.concurrency, n)
	}
	var bad []string
	check := func(ok bool, msg string) {
		if !ok {
			bad = append(bad, msg)
		}
	}
	o.bindings = splitList(*bindings)
	o.credentials = splitList(*creds)
	for _, b := range o.bindings {
		check(b == targetJSONRPC || b == targetREST || b == targetGRPC || b == targetVoice, fmt.Sprintf("-bindings %q: want jsonrpc, rest, grpc or voice", b))
	}
	check(o.longBinding == "" || o.longBinding == targetJSONRPC || o.longBinding == targetREST || o.longBinding == targetGRPC,
		fmt.Sprintf("-long-binding %q: want jsonrpc, rest or grpc", o.longBinding))
	check(o.longBinding == "" || o.via == viaConnector, fmt.Sprintf("-via %s: -long-binding needs the connector", o.via))
	for _, c := range o.credentials {
		check(slices.Contains([]string{targetAPIKey, targetOAuth2, targetIdentity, targetSigV4, targetMTLS, targetAPIKeyTLS}, c),
			fmt.Sprintf("-credentials %q: want apikey, oauth2, identity, sigv4, mtls or apikey-tls", c))
	}
	for _, f := range splitList(*bindingsC) {
		n, err := strconv.Atoi(f)
		check(err == nil && n >= 1, fmt.Sprintf("-bindings-c %q: want positive integers, comma-separated", *bindingsC))
		o.bindingsC = append(o.bindingsC, n)
	}
	hasTargets := len(o.bindings)+len(o.credentials) > 0
	check(!hasTargets || len(o.bindingsC) > 0, "-bindings-c is empty")
	// The relay calls one JSON-RPC agent without credentials.
	check(!hasTargets || o.via == viaConnector, fmt.Sprintf("-via %s: -bindings and -credentials need the connector", o.via))
	check(o.duration > 0, "-duration must be positive")
	check(o.warmup >= 0, "-warmup must not be negative")
	check(o.rounds >= 1 && o.duration/time.Duration(max(o.rounds, 1)) >= 100*time.Millisecond, "-rounds must be at least 1, each round at least 100ms of -duration")
	check(o.chunks >= 1 && o.chunks <= 10000, "-chunks: 1..10000")
	check(o.longChunks >= 1 && o.longChunks <= 10000, "-long-chunks: 1..10000")
	check(o.chunkDelay >= 0 && o.chunkDelay <= time.Minute, "-chunk-delay: 0..1m")
	check(o.longDelay >= 0 && o.longDelay <= time.Minute, "-long-delay: 0..1m")
	check(o.longRamp >= 0, "-long-ramp must not be negative")
	check(o.turnsPerSession >= 1, "-turns-per-session must be at least 1")
	check(o.conns >= 1, "-conns must be at least 1")
	check(o.longStreams >= 0, "-long-streams must not be negative")
	check(o.decay >= 0, "-decay must not be negative")
	check(o.decayC >= 1, "-decay-c must be at least 1")
	check(o.decay == 0 || (o.decayWindow > 0 && 2*o.decayWindow <= o.decay), "-decay-window must be positive and at most half of -decay")
	check(o.turnTimeout > 0, "-turn-timeout must be positive")
	check(o.via == viaConnector || o.via == viaRelay || o.via == viaHop, fmt.Sprintf("-via %q: want connector, relay or hop", o.via))
	// The -decay run measures the rate as the connector's sessions fill a fresh database; the
	// relay saves none, so there is nothing to age. It serves no profiles either.
	check(o.via == viaConnector || o.decay == 0, fmt.Sprintf("-via %s needs -decay 0 (the relay saves no sessions: its database does not age)", o.via))
	check(o.via == viaConnector || o.debugAddr == "", fmt.Sprintf("-via %s: -debug-addr is the connector's; the relay serves no profiles", o.via))
	check(o.databaseURL != "", "-database-url (or $DATABASE_URL) is required")
	check(o.noisy >= 0 && o.noisyCap >= 1 && o.noisyC >= 1, "-noisy must not be negative, -noisy-cap and -noisy-c at least 1")
	check(o.noisyChunks >= 1 && o.noisyChunks <= 10000, "-noisy-chunks: 1..10000")
	check(o.noisyDelay >= 0 && o.noisyDelay <= time.Minute && o.noisyRetry >= 0, "-noisy-delay: 0..1m; -noisy-retry must not be negative")
	check(o.burst >= 0, "-burst must not be negative")
	check(o.replicas >= 1 && o.replicas <= 9, "-replicas: 1..9")
	if o.via != viaConnector {
		// The relay has no caps, and is one process: nothing to measure.
		o.noisy, o.burst, o.replicas = 0, 0, 1
	}
	check(len(o.concurrency) > 0 || o.longStreams > 0 || o.decay > 0 || o.noisy > 0 || o.burst > 0 || hasTargets, "nothing to run: -c is empty, -long-streams 0, -noisy 0, -burst 0, -decay 0, no -bindings or -credentials")
	if len(bad) > 0 {
		return o, errors.New(strings.Join(bad, "; "))
	}
	if o.binDir == "" {
		self, err := os.Executable()
		if err != nil {
			return o, fmt.Errorf("find own binary (pass -bin): %w", err)
		}
		o.binDir = filepath.Dir(self)
	}
	return o, nil
}

// splitList splits a comma-separated flag, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// row is one line of the table: a load level, measured directly and through the connector.
type row struct {
	label       string
	direct, via *phaseStats
	// target and c place a row of -bindings or -credentials ("" for the others).
	target string
	c      int
}

// target is what a row's turns go to: the agent the connector calls and the bare client of the
// same binding and credential.
type target struct {
	agent  string
	direct turner
	// voice: the via side's turns carry a voice channel and an interruption (the voice row).
	voice bool
	// caller: the via side's turns name a user, one per worker (the identity row).
	caller bool
}

// measure is a whole run: the stack, the phases, the table.
func measure(ctx context.Context, o options, stdout, stderr io.Writer) error {
	limit, err := raiseFDLimit()
	if err != nil {
		return err
	}
	// A long-streams phase holds one socket per stream in the load generator (direct), the
	// agent and the connector (via), plus a margin for everything else.
	if need := uint64(o.longStreams) + 1024; o.longStreams > 0 && limit < need {
		return fmt.Errorf("open-files limit is %d, -long-streams %d needs about %d: raise it (ulimit -n) or lower -long-streams", limit, o.longStreams, need)
	}

	logDir := o.logDir
	if logDir == "" {
		if logDir, err = os.MkdirTemp("", "loadgen-logs-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	failed, err := measureIn(ctx, o, logDir, stdout, stderr)
	switch {
	case ctx.Err() != nil:
		err = errors.New("interrupted")
	case err != nil || failed > 0:
		fmt.Fprintf(stderr, "\nthe programs' logs are in %s\n", logDir)
	}
	// A temp log folder goes unless it may explain something: failed turns or programs.
	if o.logDir == "" && failed == 0 && (err == nil || ctx.Err() != nil) {
		os.RemoveAll(logDir)
	}
	return err
}

// measureIn runs the stack and the phases, prints the table (also of what was measured before
// an interruption or a failure) and returns how many turns failed.
func measureIn(ctx context.Context, o options, logDir string, stdout, stderr io.Writer) (failed int, err error) {
	s, err := startStack(ctx, o, logDir, stderr)
	if err != nil {
		return 0, err
	}
	defer s.stop()

	maxC := 1
	for _, c := range o.concurrency {
		maxC = max(maxC, c)
	}
	for _, c := range o.bindingsC {
		maxC = max(maxC, c)
	}
	direct := newDirectClient(s.agentURL+"/", max(maxC, o.decayC))
	via, err := newViaClient([]string{s.grpcAddr}, o.conns, s.tenantID, s.agentID, o.tenantMetadata)
	if err != nil {
		return 0, err
	}
	defer via.close()
	targets, tokensBefore, closeTargets, err := newTargets(ctx, o, s, direct, maxC)
	if err != nil {
		return 0, err
	}
	defer closeTargets()
	plain := target{agent: s.agentID, direct: direct}

	var runID [4]byte
	rand.Read(runID[:])
	r := &runner{o: o, s: s, via: via, addrs: []string{s.grpcAddr}, logs: []string{s.connector.log}, id: hex.EncodeToString(runID[:]), progress: stderr}
	w := watched{connectors: []int{s.connector.cmd.Process.Pid}, agent: s.agent.cmd.Process.Pid, pgRoot: s.pgRoot}

	var rows []row
	var decay *phaseStats
	var noisy *noisyResult
	var bursts []*burstResult
	count := func(ps ...*phaseStats) {
		for _, p := range ps {
			if p != nil {
				failed += p.errors
			}
		}
	}
	defer func() {
		if len(rows) > 0 || decay != nil || noisy != nil || len(bursts) > 0 {
			var notes []string
			if tokensBefore >= 0 {
				after, terr := s.tokensIssued(context.WithoutCancel(ctx))
				notes = targetNotes(o, rows, after-tokensBefore, terr)
			} else {
				notes = targetNotes(o, rows, 0, nil)
			}
			fmt.Fprintln(stdout)
			writeReport(stdout, o, rows, notes, noisy, bursts, decay)
		}
		if err != nil {
			err = r.fail(err)
		}
	}()

	if o.decay > 0 {
		decay, err = r.phase(ctx, "fresh database", false, phaseSpec{workers: o.decayC, duration: o.decay, turnTimeout: o.turnTimeout},
			w, o.chunks, o.chunkDelay, plain)
		count(decay)
		if err != nil {
			return failed, err
		}
		if o.analyze {
			// The run left thousands of rows behind in tables the planner last saw empty.
			// Autovacuum analyzes them within a minute or so in any deployment; doing it now
			// measures the rows below in that steady state, not in whatever state the
			// autovacuum launcher's timing happens to leave them.
			fmt.Fprintln(stderr, "== analyze (what autovacuum does soon after a deployment's first traffic; -analyze=false skips)")
			if err := analyze(ctx, o.databaseURL); err != nil {
				return failed, err
			}
		}
	}
	var levels []level
	for _, c := range o.concurrency {
		label := "c=" + strconv.Itoa(c)
		levels = append(levels, level{label: label, name: label, chunks: o.chunks, delay: o.chunkDelay,
			spec: phaseSpec{workers: c, warmup: o.warmup, duration: o.duration, turnTimeout: o.turnTimeout}})
	}
	plainLevels := slices.Clip(levels)
	// The rows per binding and credential follow the plain ones, a load level's rows next to
	// each other so that they run in the same stretch of the machine's time.
	for _, c := range o.bindingsC {
		for _, t := range append(slices.Clip(o.bindings), o.credentials...) {
			label := "c=" + strconv.Itoa(c) + " " + targetLabels[t]
			levels = append(levels, level{label: label, name: label, chunks: o.chunks, delay: o.chunkDelay, target: t, c: c,
				spec: phaseSpec{workers: c, warmup: o.warmup, duration: o.duration, turnTimeout: o.turnTimeout}})
		}
	}
	levelRows := func(r *runner, w watched, levels []level) error {
		for _, l := range levels {
			tg := plain
			if l.target != "" {
				tg = targets[l.target]
			}
			rw, err := r.level(ctx, l.name, l.spec, w, l.chunks, l.delay, tg)
			rw.label, rw.target, rw.c = l.label, l.target, l.c
			count(rw.direct, rw.via)
			if rw.direct != nil {
				rows = append(rows, rw)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	// The plain timed rows, the noisy neighbour (a table of its own), the rows per binding and
	// credential, the burst (a table of its own), the rows through several replicas, then the
	// long streams, which leave a large heap behind.
	if err := levelRows(r, w, plainLevels); err != nil {
		return failed, err
	}
	if err := r.noisyInto(ctx, w, &noisy, count); err != nil {
		return failed, err
	}
	if err := levelRows(r, w, levels[len(plainLevels):]); err != nil {
		return failed, err
	}
	var burstTenant, burstAgent string
	if o.burst > 0 {
		if burstTenant, burstAgent, err = r.s.addCappedTenant(ctx, "burst", o.noisyCap); err != nil {
			return failed, err
		}
		b, err := r.burstRow(ctx, w, burstTenant, burstAgent)
		if b != nil {
			bursts = append(bursts, b)
			count(b.quiet, b.during)
		}
		if err != nil {
			return failed, err
		}
	}
	if o.replicas > 1 && (len(plainLevels) > 0 || o.burst > 0) {
		fmt.Fprintf(stderr, "== starting %d more connector processes on the same database\n", o.replicas-1)
		if err := s.startReplicas(ctx, o.replicas); err != nil {
			return failed, err
		}
		rn, wn, closeRn, err := r.onReplicas(w)
		if err != nil {
			return failed, err
		}
		defer closeRn()
		for i := range plainLevels {
			plainLevels[i].label += ", " + replicasLabel(o.replicas)
			plainLevels[i].name = plainLevels[i].label
		}
		if err := levelRows(rn, wn, plainLevels); err != nil {
			return failed, err
		}
		if o.burst > 0 {
			b, err := rn.burstRow(ctx, wn, burstTenant, burstAgent)
			if b != nil {
				bursts = append(bursts, b)
				count(b.quiet, b.during)
			}
			if err != nil {
				return failed, err
			}
		}
		closeRn()
		s.stopReplicas()
	}
	if o.longStreams > 0 {
		label := fmt.Sprintf("%d long streams (%d×%s)", o.longStreams, o.longChunks, o.longDelay)
		if o.longBinding != "" {
			label += " " + targetLabels[o.longBinding]
		}
		err := levelRows(r, w, []level{{
			label: label, name: "long streams", target: o.longBinding,
			chunks: o.longChunks, delay: o.longDelay,
			spec: phaseSpec{workers: o.longStreams, oneShot: true, ramp: o.longRamp, turnTimeout: o.turnTimeout}}})
		if err != nil {
			return failed, err
		}
	}
	return failed, nil
}

// level is a row to measure.
type level struct {
	label, name string
	spec        phaseSpec
	chunks      int
	delay       time.Duration
	target      string // "" for the plain agent
	c           int
}

// onReplicas returns a runner like r whose via phases go to every connector process running
// now, evenly, and what it watches; close closes its client (twice is fine).
func (r *runner) onReplicas(w watched) (*runner, watched, func(), error) {
	rn := *r
	rn.addrs = r.s.addrs()
	via, err := newViaClient(rn.addrs, r.o.conns, r.s.tenantID, r.s.agentID, r.o.tenantMetadata)
	if err != nil {
		return nil, w, nil, err
	}
	rn.via, rn.logs, w.connectors = via, nil, nil
	for _, c := range r.s.connectors() {
		rn.logs = append(rn.logs, c.log)
		w.connectors = append(w.connectors, c.cmd.Process.Pid)
	}
	var once sync.Once
	return &rn, w, func() { once.Do(via.close) }, nil
}

// level measures one row: direct, then via the connector, alternating o.rounds times for a
// timed level, each round a share of the duration. The first round of each side warms up for
// the whole -warmup (the connector's agent connections, its pools); the later ones for a
// quarter of it, enough for the load to settle after the switch. A machine whose speed drifts
// during the run (a shared VM's does) then slows both sides alike, instead of whichever ran
// second.
func (r *runner) level(ctx context.Context, name string, spec phaseSpec, w watched, chunks int, delay time.Duration, tg target) (row, error) {
	rounds := r.o.rounds
	if spec.oneShot {
		rounds = 1
	}
	var rw row
	for i := range rounds {
		s := spec
		if !spec.oneShot {
			s.duration = (spec.duration / time.Duration(rounds)).Round(time.Millisecond)
			if i > 0 {
				s.warmup = spec.warmup / 4
			}
		}
		for _, direct := range []bool{true, false} {
			st, err := r.phase(ctx, name, direct, s, w, chunks, delay, tg)
			if direct {
				rw.direct = rw.direct.merge(st)
			} else {
				rw.via = rw.via.merge(st)
			}
			if err != nil {
				return rw, err
			}
		}
	}
	return rw, nil
}

// runner runs phases against one stack.
type runner struct {
	o   options
	s   *stack
	via *viaClient
	// addrs are the connector processes via calls, logs their logs.
	addrs    []string
	logs     []string
	id       string // this run's id, in session and turn ids
	progress io.Writer
	phases   int
}

// fail explains an error of a phase: a program that died says more than the turn that noticed.
func (r *runner) fail(err error) error {
	if dead := r.s.dead(); dead != "" {
		return fmt.Errorf("%w; %s", err, dead)
	}
	return err
}

// phase runs one phase, direct or through the connector, and prints a progress line.
func (r *runner) phase(ctx context.Context, label string, direct bool, spec phaseSpec, w watched, chunks int, delay time.Duration, tg target) (*phaseStats, error) {
	r.phases++
	prefix := r.id + "-p" + strconv.Itoa(r.phases)
	side := "via " + r.o.via
	if direct {
		side = "direct"
		w.connectors = nil // the connector idles; its RSS and CPU are not this phase's
	}
	newTurn := func(worker int) turnFunc {
		n, inSession := 0, 0
		session, contextID := "", ""
		return func(ctx context.Context) (turnTiming, error) {
			n++
			if inSession == 0 || inSession >= r.o.turnsPerSession {
				session, contextID, inSession = prefix+"-w"+strconv.Itoa(worker)+"-s"+strconv.Itoa(n), "", 0
			}
			inSession++
			id := prefix + "w" + strconv.Itoa(worker) + "n" + strconv.Itoa(n)
			text, want := turnText(id, chunks, delay), replyText(id, chunks)
			if direct {
				tt, next, err := tg.direct.turn(ctx, contextID, text, want)
				contextID = next
				return tt, err
			}
			if tg.voice {
				return r.via.voiceTurnTo(ctx, tg.agent, session, id, text, want)
			}
			if tg.caller {
				return r.via.callerTurnTo(ctx, tg.agent, session, id, "loadgen-user-"+strconv.Itoa(worker), text, want)
			}
			return r.via.turnTo(ctx, tg.agent, session, id, text, want)
		}
	}
	what := fmt.Sprintf("%d concurrent turns for %s after %s warmup", spec.workers, spec.duration, spec.warmup)
	if spec.oneShot {
		what = fmt.Sprintf("%d streams of %d chunks %s apart, opened over %s", spec.workers, chunks, delay, spec.ramp)
	}
	fmt.Fprintf(r.progress, "== %s %s: %s\n", label, side, what)
	_, _ = r.s.agentPeak(ctx) // starts the agent's count of streams open at once afresh
	logFrom := logSizes(r.logs)
	st, err := runPhase(ctx, spec, w, newTurn)
	if direct {
		tg.direct.closeIdle()
	}
	if err != nil {
		return nil, err // interrupted: a partial phase would read as a measurement
	}
	if !direct {
		lc := scanLogs(r.logs, logFrom)
		st.logged = &lc
	}
	if st.agentPeak, err = r.s.agentPeak(ctx); err != nil {
		st.agentPeak = -1
		fmt.Fprintf(r.progress, "   (streams open at once: %v)\n", err)
	}
	fmt.Fprintf(r.progress, "   %s %s: %s turns/s, p50 %s ms, first text p50 %s ms, %d turns, %d errors, %d streams open at most; CPU ms/turn: agent %s, loadgen %s",
		label, side, num(st.rate()), ms(percentile(st.lat, 0.5)), ms(percentile(st.first, 0.5)), st.turns, st.errors,
		st.agentPeak, ms(st.perTurn(st.agentCPU)), ms(st.perTurn(st.selfCPU)))
	if !direct {
		fmt.Fprintf(r.progress, ", %s %s", r.o.via, ms(st.perTurn(st.connectorCPU)))
		if st.hasPG {
			fmt.Fprintf(r.progress, ", postgres %s", ms(st.perTurn(st.pgCPU)))
		}
	}
	fmt.Fprintln(r.progress)
	for msg, n := range st.errSamples {
		fmt.Fprintf(r.progress, "      %d× %s\n", n, msg)
	}
	if st.logged != nil {
		for kind, n := range st.logged.kinds {
			fmt.Fprintf(r.progress, "      %s logged %d× %s\n", r.o.via, n, kind)
		}
	}
	if dead := r.s.dead(); dead != "" {
		return st, errors.New(dead)
	}
	return st, nil
}

// describe is the run's settings, printed above the table.
func describe(o options) string {
	session := "a new session per turn"
	if o.turnsPerSession > 1 {
		session = fmt.Sprintf("sessions of %d turns", o.turnsPerSession)
	}
	pause := "no pause between chunks"
	if o.chunkDelay > 0 {
		pause = o.chunkDelay.String() + " between chunks"
	}
	via := "the connector"
	switch o.via {
	case viaRelay:
		via = "the minimal relay (loadgen relay), not the connector"
	case viaHop:
		via = "the minimal relay without its session lookup (loadgen relay -lookup=false: the gRPC hop alone), not the connector"
	}
	phases := fmt.Sprintf("each phase %s after %s warmup, direct then via %s", o.duration, o.warmup, via)
	if o.rounds > 1 {
		phases = fmt.Sprintf("each row %s direct and %s via %s, alternating in %d rounds of %s (warmup %s, then %s)",
			o.duration, o.duration, via, o.rounds, (o.duration / time.Duration(o.rounds)).Round(time.Millisecond), o.warmup, o.warmup/4)
	}
	return fmt.Sprintf("%d text chunks per turn, %s; %s; %d gRPC connections; %s; the connector's concurrent-turn caps raised to %d; %d CPUs, %s/%s",
		o.chunks, pause, session, o.conns, phases, capsFor(o), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
}
